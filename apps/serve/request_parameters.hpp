// The infer request parameters both front ends read ("priority", "timeout"), as Triton's clients
// send them, turned into InferRequest's fields by one rule (HTTP JSON and gRPC parameters alike),
// and the parameters of extensions both refuse; and what both say about the server and its models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/model_info.hpp"
#include "loom/tensor.hpp"
#include "service.hpp"

namespace loom::serve {

// Server metadata's name and model metadata's platform, in both protocols.
inline constexpr std::string_view kServerName = "loom";
inline constexpr std::string_view kModelPlatform = "onnx";
// A tensor's dims as a model config (Triton's format) shows them: without the batch axis when the
// model batches (max_batch_size > 0), as the metadata's shape otherwise.
std::vector<std::int64_t> config_dims(const ModelEntry& model, const TensorMetadata& tensor);

// A BOOL tensor sent as raw bytes (HTTP binary data, gRPC raw_input_contents) must hold 0 or 1 in
// each byte: the first other byte as "BOOL element K is byte B, not 0 or 1", else nullopt. One
// rule for both front ends.
std::optional<std::string> invalid_bool_byte(const Tensor& tensor);

// Triton's integer priority: 0 = the model's default (nullopt), 1 = the highest level (urgent),
// 2 = normal, 3 and above = background. Loom's names ("urgent", "normal", "background") are taken
// too. Throws Error(invalid_argument) for a negative level or an unknown name.
std::optional<Priority> priority_from_parameter(std::int64_t level);
std::optional<Priority> priority_from_parameter(std::string_view name);

// Triton's "timeout" parameter is in microseconds; InferRequest::timeout_ms in milliseconds.
// Throws Error(invalid_argument) for a negative or non-finite value.
double timeout_ms_from_parameter(double microseconds);

// The extensions Loom does not implement, which both front ends refuse (bad_request) rather than
// answer from something else than what the client meant:
// - a tensor parameter of the shared-memory extension: its name, else nullptr;
const char* shared_memory_parameter(std::string_view key) noexcept;
// - a request's "sequence_id" other than 0 or "" (sequence batching);
bool asks_sequence_batching(std::int64_t sequence_id) noexcept;
bool asks_sequence_batching(std::string_view sequence_id) noexcept;
// - a requested output's "classification" other than 0 (the classification extension).
bool asks_classification(std::int64_t classes) noexcept;

}  // namespace loom::serve
