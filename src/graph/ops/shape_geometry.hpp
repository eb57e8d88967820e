// The shape family's attribute parsing and geometry (Reshape, Transpose, Slice, Expand, Tile, Shape, Range,
// Constant, ConstantOfShape, Dropout), shared by shape inference and the kernels of every backend so they
// agree on every extent. Each function throws Error with a message about the attributes and
// values alone; shape inference adds model, node and op, the backends the node
// (backend::parse_for_node).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph {

// One sliced axis: its first index and output length, with ONNX's clamping; step != 0.
struct SlicedAxis {
  std::int64_t start = 0;
  std::int64_t length = 0;
};
SlicedAxis slice_axis(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step);

// Slice (opset 10+) over X: per input axis, the first index, the step and the output length
// (start 0, step 1, the whole axis for an axis not sliced). `axes` and `steps` may be nullptr
// (absent: axes 0.., steps 1). Throws Error(invalid_model) when starts, ends, axes and steps
// differ in length, an axis is out of range or repeated, or a step is 0.
struct SlicePlan {
  std::vector<std::int64_t> start, step, dims;  // one entry per axis of X; dims is the output shape
};
SlicePlan plan_slice(const Shape& x, const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& ends,
                     const std::vector<std::int64_t>* axes, const std::vector<std::int64_t>* steps);

// Reshape: X's shape after the target `shape` (a 0 copies X's dim unless `allowzero`, one -1 is
// inferred). Throws Error(invalid_model) for more than one -1 or another negative dimension,
// Error(shape_mismatch) for a 0 past X's rank or a shape with another element count.
Shape reshaped_shape(const Attributes& attrs, const Shape& x, std::vector<std::int64_t> shape);

// Transpose: `perm` (default: the dims reversed) with negative entries counted from the end.
// Throws Error(invalid_model) when it has another length than `rank` or is not a permutation.
std::vector<std::int64_t> transpose_perm(const Attributes& attrs, std::size_t rank);

// Expand: X broadcast (numpy rules, both ways) with `shape`. Throws Error(invalid_model) for a
// negative dimension, Error(shape_mismatch) when they do not broadcast.
Shape expanded_shape(const Shape& x, const std::vector<std::int64_t>& shape);

// Tile: dim d is x[d] * repeats[d]. Throws Error(invalid_model) when repeats has another length
// than X's rank or a negative entry.
Shape tiled_shape(const Shape& x, const std::vector<std::int64_t>& repeats);

// Shape (opset 15+): the dims [start, end) of an input of `rank` that the op returns, `start`
// and `end` clamped into [0, rank] (negative counting from the end); end >= start.
struct DimRange {
  std::int64_t start = 0;
  std::int64_t end = 0;
};
DimRange shape_op_range(const Attributes& attrs, std::size_t rank);

// Range: max(ceil((limit - start) / delta), 0) elements; scalars of one dtype, f32, i64 or i32.
// Throws Error(invalid_model) for delta 0, Error(unsupported) for another dtype.
std::int64_t range_length(const Tensor& start, const Tensor& limit, const Tensor& delta);

// Constant: the one value attribute (value, value_float(s), value_int(s)) as a tensor. Throws
// Error(unsupported) for sparse_value and the string forms, Error(invalid_model) unless exactly
// one value attribute is given.
Tensor constant_value(const Attributes& attrs);

// ConstantOfShape: the one-element `value` (default f32 0) as a [1] tensor. Throws
// Error(invalid_model) when `value` does not hold exactly one element.
Tensor fill_value(const Attributes& attrs);

// Dropout at inference: training_mode must be a bool scalar, and true only with a constant ratio
// of 0 (which drops nothing). `ratio` is nullptr when absent or not a constant. Throws
// Error(invalid_model) for a training_mode that is not a bool scalar, Error(unsupported) when the
// op would drop values.
void require_inference_dropout(const Tensor& training_mode, const Tensor* ratio);

}  // namespace loom::graph
