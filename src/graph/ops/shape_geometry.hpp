// The shape family's attribute parsing and geometry (Reshape, Transpose, Slice, Expand, Tile, Shape, Range,
// Constant, ConstantOfShape, Dropout), shared by shape inference and the kernels of every backend so they
// agree on every extent. Each function throws Error with a message about the attributes and
// values alone; shape inference adds model, node and op, the backends the node
// (backend::parse_for_node).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
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

// ScatterElements and ScatterND `reduction`: none (default), add, mul, max, min. Throws
// Error(invalid_model) for any other value.
enum class ScatterReduction { none, add, mul, max, min };
ScatterReduction scatter_reduction(const Attributes& attrs);

// ScatterND: indices (..., k) address slices of data (k <= rank); updates must have shape
// indices.shape[:-1] + data.shape[k:]. Throws Error(shape_mismatch) otherwise.
struct ScatterNdGeometry {
  std::int64_t tuples = 0;      // index tuples (product of indices.shape[:-1])
  std::int64_t tuple_size = 0;  // k
  std::int64_t slice = 1;       // elements per addressed slice (product of data.shape[k:])
};
ScatterNdGeometry scatter_nd_geometry(const Shape& data, const Shape& indices, const Shape& updates);

// GatherND with batch_dims b: indices (b..., ..., k) pick slices data[b..., i1..ik, ...]; the output
// is indices.shape[:-1] + data.shape[b+k:]. Throws Error(invalid_model / shape_mismatch).
struct GatherNdGeometry {
  std::int64_t batches = 1;                   // product of the first b dims
  std::int64_t tuples = 0;                    // index tuples per batch
  std::int64_t tuple_size = 0;                // k
  std::int64_t slice = 1;                     // elements per gathered slice
  std::vector<std::int64_t> data_batch_dims;  // data.shape[b : b+k], the extents the tuples index
  std::vector<std::int64_t> output;
};
GatherNdGeometry gather_nd_geometry(const Attributes& attrs, const Shape& data, const Shape& indices);

// DepthToSpace (mode DCR or CRD) and SpaceToDepth on an N, C, H, W input with `blocksize` b.
// Throws Error(invalid_model) for a bad mode or blocksize, Error(shape_mismatch) when C (or H, W)
// do not divide.
struct SpaceDepthGeometry {
  bool to_space = true;                                         // DepthToSpace
  bool crd = false;                                             // DepthToSpace mode CRD (else DCR)
  std::int64_t block = 1;                                       // b
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;  // the depth-side tensor: N, C, H, W
  std::vector<std::int64_t> output;
};
SpaceDepthGeometry space_depth_geometry(std::string_view op_type, const Attributes& attrs, const Shape& input);

// OneHot: the output is indices' shape with `depth` inserted at `axis` (default -1, in [-r-1, r]).
// Throws Error(invalid_model) for an axis out of range or depth < 1.
struct OneHotGeometry {
  std::int64_t outer = 1, depth = 0, inner = 1;  // the output as (outer, depth, inner)
  std::vector<std::int64_t> output;
};
OneHotGeometry one_hot_geometry(const Attributes& attrs, const Shape& indices, std::int64_t depth);
// OneHot's depth from its one-element tensor (f32, i64 or i32; a float truncates). Throws
// Error(unsupported) for another dtype.
std::int64_t one_hot_depth(const Tensor& depth);

// One flag per axis of a rank-`rank` tensor, set for each of `axes` (negative counting from the
// end). Throws Error(invalid_model) for an axis out of range or listed twice.
std::vector<bool> axis_mask(const std::vector<std::int64_t>& axes, std::size_t rank);

// Compress: the slices along `axis` (or the elements of the flattened input, without an axis)
// whose condition entry is true; entries past the axis' length are ignored.
struct CompressGeometry {
  std::int64_t outer = 1, length = 0, inner = 1;  // the input as (outer, length, inner)
  std::vector<std::int64_t> kept;                 // positions along `length` that are kept
  std::vector<std::int64_t> output;
};
CompressGeometry compress_geometry(const Attributes& attrs, const Shape& input, const Tensor& condition);

// ReverseSequence's batch_axis (default 1) and time_axis (default 0): one is 0, the other 1.
// Throws Error(invalid_model) otherwise or for an input of rank < 2.
struct ReverseSequenceAxes {
  std::size_t batch = 1, time = 0;
};
ReverseSequenceAxes reverse_sequence_axes(const Attributes& attrs, const Shape& input);

// DFT's output dims for `input` [..., 1 or 2]: the transformed axis (`axis`, default 1, never the
// last) becomes dft_length (default: its extent), or length / 2 + 1 with onesided; the last dim
// becomes 2 (real, imaginary). Throws Error(invalid_model) / Error(shape_mismatch).
std::vector<std::int64_t> dft_output_dims(const Attributes& attrs, const Shape& input,
                                          std::optional<std::int64_t> dft_length);

// STFT over signal [batch, length, 1 or 2]: frames of frame_length (given, else the window's
// length) every frame_step samples; bins = frame_length / 2 + 1 when onesided (default), else
// frame_length. Throws Error(invalid_model) / Error(shape_mismatch).
struct StftGeometry {
  std::int64_t batch = 0, length = 0, step = 0, frame_length = 0, frames = 0, bins = 0;
  bool complex_input = false;
};
StftGeometry stft_geometry(const Attributes& attrs, const Shape& signal, std::int64_t frame_step,
                           std::optional<std::int64_t> window_length, std::optional<std::int64_t> frame_length);

}  // namespace loom::graph
