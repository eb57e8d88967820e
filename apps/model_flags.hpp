// Flags that tools running ONNX models share: input shapes (--shapes), sizes of symbolic
// dimensions (--dims), ranges of symbolic dimensions left open at load (--dim-range) and value ranges of integer inputs
// (--input-range), parsed into the forms OptimizeOptions and Model::metadata take. Every parse error is a
// cli::UsageError naming the flag.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/model.hpp"
#include "loom/model_info.hpp"
#include "loom/tensor.hpp"

namespace loom::cli {

// "name:1x3x224x224" items (the name may itself hold ':'; the last one splits) -> shapes by input
// name. Every dim must be a whole number >= 1; a name given twice is an error.
std::map<std::string, Shape> parse_shape_bindings(const std::vector<std::string>& items, const std::string& flag);

// "batch=8" items -> sizes of symbolic dimensions by name (>= 1).
std::map<std::string, std::int64_t> parse_dim_bindings(const std::vector<std::string>& items, const std::string& flag);

// "seq=1:16:128" items -> ranges of symbolic dims by name (LoadOptions::dim_ranges): whole numbers,
// 1 <= MIN <= OPT <= MAX; a name given twice is an error.
std::map<std::string, DimRange> parse_dim_ranges(const std::vector<std::string>& items, const std::string& flag);

// "name:lo,hi" items (integers, lo < hi) -> half-open ranges by input name.
std::map<std::string, std::pair<std::int64_t, std::int64_t>> parse_input_ranges(const std::vector<std::string>& items,
                                                                                const std::string& flag);

// "MODEL=VALUE" items -> values by model name (the last '=' splits; both sides non-empty); a
// model given twice is an error. Which values are valid is the caller's check.
std::map<std::string, std::string> parse_model_settings(const std::vector<std::string>& items, const std::string& flag);

// "MODEL=N" items -> whole numbers (may be negative) by model name.
std::map<std::string, std::int64_t> parse_model_integers(const std::vector<std::string>& items,
                                                         const std::string& flag);

// Records each range as the model's "input_range:<name>" metadata, which random_inputs() reads;
// ranges for inputs the model does not have are ignored.
void apply_input_ranges(Model& model, const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& ranges);

// True for the names tools treat as the batch dimension: batch, batch_size, batchsize, N, n
// (case-insensitive for the words).
bool is_batch_dim_name(const std::string& name);

// "images (batch x 3 x height x width) f32": an input as the model declares it, symbolic dims by
// name ("?" for an unnamed one).
std::string describe_declared_input(const ValueInfo& input);

}  // namespace loom::cli
