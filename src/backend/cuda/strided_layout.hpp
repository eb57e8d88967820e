// Host-side stride arithmetic for the strided-copy and broadcast kernels: numpy broadcasting,
// contiguous strides, and merging dims so kernels index over as few dims as possible.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "elementwise.cuh"
#include "loom/tensor.hpp"
#include "strided_copy.cuh"

namespace loom::backend::cuda {

// Row-major element strides of a dense tensor with `dims`.
std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& dims);

// The numpy broadcast of two shapes; nullopt when they are incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// Element strides of dense `input` read along the dims of `output` under numpy broadcasting
// (aligned from the right, 0 where input is broadcast); nullopt when input does not broadcast.
std::optional<std::vector<std::int64_t>> broadcast_strides(const Shape& input, const Shape& output);

// Drops size-1 dims and merges neighbours that are contiguous with each other in every operand.
// `strides[k]` are operand k's strides along `dims`; all are rewritten in place.
void coalesce_dims(std::vector<std::int64_t>& dims, std::vector<std::vector<std::int64_t>>& strides);

// Coalesced layouts for the kernels; nullopt when more dims than the kernel handles remain.
std::optional<kernels::StridedCopyLayout> make_copy_layout(std::vector<std::int64_t> dims,
                                                           std::vector<std::int64_t> src_strides,
                                                           std::vector<std::int64_t> dst_strides);
std::optional<kernels::BroadcastLayout> make_broadcast_layout(std::vector<std::int64_t> dims,
                                                              std::vector<std::int64_t> a_strides,
                                                              std::vector<std::int64_t> b_strides);

}  // namespace loom::backend::cuda
