// Checks and small helpers every CPU kernel uses while it is created: input/output counts,
// dtypes, axes and broadcasting. They throw through throw_unsupported/throw_bad_shape so every
// message names the node and op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// Throws unless the spec has between min and max inputs (absent optional ones included).
void require_input_count(const KernelSpec& spec, std::size_t min, std::size_t max);
// Throws unless the spec has between min and max outputs, the first present. Outputs past the
// ones this backend produces must be absent.
void require_output_count(const KernelSpec& spec, std::size_t min, std::size_t max);
// Throws unless inputs[index] is present.
void require_present(const KernelSpec& spec, std::size_t index, const char* role);

// Throws Error(unsupported) unless every present input and output is f32; f16/bf16 get a message
// saying they need the CUDA backend.
void require_f32(const KernelSpec& spec);
// The same for every present input but `skipped_input` (an index input such as sequence_lens).
void require_f32_except(const KernelSpec& spec, std::size_t skipped_input);
void require_dtype(const KernelSpec& spec, const TensorDesc& desc, DType expected, const char* role);

// Maps a possibly negative axis into [0, rank); throws shape_mismatch when out of range.
std::int64_t normalize_axis(const KernelSpec& spec, std::int64_t axis, std::int64_t rank, const char* role = "axis");

// Element strides of a row-major tensor of shape `in` viewed as the (numpy-broadcast) shape `out`:
// right-aligned, 0 along broadcast dimensions. nullopt when `in` does not broadcast to `out`.
std::optional<std::vector<std::int64_t>> broadcast_strides(const Shape& in, const Shape& out);

// Throws shape_mismatch unless `actual` equals `expected`.
void require_shape(const KernelSpec& spec, const Shape& actual, const Shape& expected, const char* role);

std::int64_t product(const std::vector<std::int64_t>& dims, std::size_t begin, std::size_t end);

// Smallest multiple of `multiple` that is >= value (value >= 0, multiple > 0).
constexpr std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace loom::backend::cpu
