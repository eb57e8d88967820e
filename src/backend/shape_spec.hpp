// Where the shape family's copies read from, parsed and checked once for every backend: Slice,
// Expand and Tile are each a dense output read through a strided view of the input, and Split is
// a list of part sizes. The extents and values come from graph/ops/shape_geometry (shared with
// shape inference); each parser checks the planner's output shapes against them and throws
// Error(unsupported|shape_mismatch) naming the node.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "graph/ops/shape_geometry.hpp"

namespace loom::backend {

// The output, walked row-major over `dims`, takes input element
// src_offset + sum(coord[d] * src_strides[d]). Strides are in elements and may be negative (a
// Slice step below 0) or 0 (a broadcast axis).
struct StridedView {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> src_strides;
  std::int64_t src_offset = 0;
};

// Row-major element strides of a dense tensor.
std::vector<std::int64_t> dense_strides(const Shape& shape);

// Slice (opset 10+): starts, ends and the optional axes and steps must be constants (i64 or i32);
// starts and ends are clamped as ONNX specifies.
StridedView parse_slice_view(const KernelSpec& spec);
// Expand: the input broadcast (numpy rules, both ways) to the output shape; the shape input, when
// it is a constant, must give that output shape.
StridedView parse_expand_view(const KernelSpec& spec);
// Tile: output dim d is input dim d times repeats[d]. The view has two dims per input dim
// (repeat, element) so that the output stays dense in walk order.
StridedView parse_tile_view(const KernelSpec& spec);
// One of the three above, by the node's op type.
StridedView parse_strided_view(const KernelSpec& spec);

// Split: the normalised axis and the size of every output along it (0 for an absent output),
// taken from the output shapes and checked against the `split` input when it is a constant.
struct SplitSpec {
  std::size_t axis = 0;
  std::vector<std::int64_t> sizes;
};
SplitSpec parse_split_spec(const KernelSpec& spec);

// The generators' values, checked against the planner's output. Constant: the one value
// attribute (value, value_float(s), value_int(s)). Shape: the input's dims from `start` to `end`
// (clamped, negative counting from the end) as i64. ConstantOfShape: the one-element `value`
// tensor (default f32 0) the output is filled with.
Tensor parse_constant_value(const KernelSpec& spec);
Tensor parse_shape_value(const KernelSpec& spec);
Tensor parse_fill_value(const KernelSpec& spec);

// Range: start, limit and delta are scalars of the output's dtype (f32, i64 or i32); when all three
// are constants the output length must be max(ceil((limit - start) / delta), 0). The values are
// read at run time (output[i] = start + i * delta), so they need not be constants.
void check_range(const KernelSpec& spec);

// Dropout at inference: output 0 is the input, optional output 1 a bool mask of the same shape
// (all true). training_mode, when given, must be a constant false, or true with a constant ratio
// of 0 (which drops nothing); otherwise Error(unsupported).
void check_dropout(const KernelSpec& spec);

}  // namespace loom::backend
