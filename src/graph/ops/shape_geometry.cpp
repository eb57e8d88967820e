// Extents and values of the shape family's ops, computed once for shape inference and every
// backend (see shape_geometry.hpp).
#include "graph/ops/shape_geometry.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <type_traits>

#include "graph/ops.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {

SlicedAxis slice_axis(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  // Adding dim to INT64_MIN cannot overflow; INT64_MAX stays positive and is clamped below.
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, dim);
    end = std::clamp<std::int64_t>(end, 0, dim);
    return {start, end > start ? (end - start + step - 1) / step : 0};
  }
  if (dim == 0) return {0, 0};
  start = std::clamp<std::int64_t>(start, 0, dim - 1);
  end = std::clamp<std::int64_t>(end, -1, dim - 1);
  return {start, start > end ? (start - end - step - 1) / -step : 0};
}

SlicePlan plan_slice(const Shape& x, const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& ends,
                     const std::vector<std::int64_t>* axes, const std::vector<std::int64_t>* steps) {
  const std::size_t count = starts.size();
  if (ends.size() != count || (axes && axes->size() != count) || (steps && steps->size() != count))
    fail(ErrorCode::invalid_model, "starts, ends, axes and steps differ in length");
  const std::size_t rank = x.rank();
  SlicePlan plan{std::vector<std::int64_t>(rank, 0), std::vector<std::int64_t>(rank, 1), x.dims()};
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t given = axes ? (*axes)[i] : static_cast<std::int64_t>(i);
    const auto axis = static_cast<std::size_t>(normalize_axis(given, rank));
    if (seen[axis]) fail(ErrorCode::invalid_model, "axis " + std::to_string(given) + " is sliced twice");
    seen[axis] = true;
    const std::int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) fail(ErrorCode::invalid_model, "step 0 on axis " + std::to_string(given));
    const SlicedAxis sliced = slice_axis(x[axis], starts[i], ends[i], step);
    plan.start[axis] = sliced.start;
    plan.step[axis] = step;
    plan.dims[axis] = sliced.length;
  }
  return plan;
}

Shape reshaped_shape(const Attributes& attrs, const Shape& x, std::vector<std::int64_t> dims) {
  const bool allow_zero = attrs.get_int("allowzero", 0) != 0;
  std::int64_t known = 1;
  int infer_at = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allow_zero) {
      if (i >= x.rank())
        fail(ErrorCode::shape_mismatch, "shape has 0 at axis " + std::to_string(i) + " beyond the input's rank");
      dims[i] = x[i];
    }
    if (dims[i] == -1) {
      if (infer_at >= 0) fail(ErrorCode::invalid_model, "shape has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (dims[i] < 0) {
      fail(ErrorCode::invalid_model, "shape has a negative dimension");
    } else {
      known *= dims[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || x.numel() % known != 0)
      fail(ErrorCode::shape_mismatch, "cannot reshape " + x.to_string() + " to the requested shape");
    dims[infer_at] = x.numel() / known;
  }
  Shape y(dims);
  if (y.numel() != x.numel())
    fail(ErrorCode::shape_mismatch,
         "cannot reshape " + x.to_string() + " (" + std::to_string(x.numel()) + " elements) to " + y.to_string());
  return y;
}

std::vector<std::int64_t> transpose_perm(const Attributes& attrs, std::size_t rank) {
  std::vector<std::int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = attrs.get_ints("perm", perm);
  if (perm.size() != rank)
    fail(ErrorCode::invalid_model,
         "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (std::int64_t& p : perm) {
    p = normalize_axis(p, rank);
    if (seen[p]) fail(ErrorCode::invalid_model, "perm repeats axis " + std::to_string(p));
    seen[p] = true;
  }
  return perm;
}

Shape expanded_shape(const Shape& x, const std::vector<std::int64_t>& shape) {
  for (const auto d : shape)
    if (d < 0) fail(ErrorCode::invalid_model, "shape has a negative dimension " + std::to_string(d));
  return broadcast_shapes(x, Shape(shape));
}

Shape tiled_shape(const Shape& x, const std::vector<std::int64_t>& repeats) {
  if (repeats.size() != x.rank())
    fail(ErrorCode::invalid_model,
         "repeats has " + std::to_string(repeats.size()) + " entries for rank " + std::to_string(x.rank()));
  auto dims = x.dims();
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (repeats[d] < 0) fail(ErrorCode::invalid_model, "repeats has a negative entry");
    dims[d] *= repeats[d];
  }
  return Shape(dims);
}

DimRange shape_op_range(const Attributes& attrs, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const auto clamp = [r](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + r : v, 0, r); };
  const std::int64_t start = clamp(attrs.get_int("start", 0));
  return {start, std::max(start, clamp(attrs.get_int("end", r)))};
}

namespace {

template <class T>
std::int64_t typed_range_length(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  const T s = start.values<T>()[0], l = limit.values<T>()[0], d = delta.values<T>()[0];
  if (d == T{0}) fail(ErrorCode::invalid_model, "delta is 0");
  if constexpr (std::is_floating_point_v<T>) {
    return std::max<std::int64_t>(static_cast<std::int64_t>(std::ceil((static_cast<double>(l) - s) / d)), 0);
  } else {
    const std::int64_t span = static_cast<std::int64_t>(l) - s;
    if ((span > 0) != (d > 0) || span == 0) return 0;
    return (span + d - (d > 0 ? 1 : -1)) / d;
  }
}

}  // namespace

std::int64_t range_length(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  switch (start.dtype()) {
    case DType::f32:
      return typed_range_length<float>(start, limit, delta);
    case DType::i64:
      return typed_range_length<std::int64_t>(start, limit, delta);
    case DType::i32:
      return typed_range_length<std::int32_t>(start, limit, delta);
    default:
      fail(ErrorCode::unsupported,
           "Range of dtype " + std::string(dtype_name(start.dtype())) + " (f32, i64 and i32 are supported)");
  }
}

Tensor constant_value(const Attributes& attrs) {
  int given = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) given += attrs.has(name);
  for (const char* name : {"sparse_value", "value_string", "value_strings"})
    if (attrs.has(name)) fail(ErrorCode::unsupported, std::string("attribute ") + name);
  if (given != 1) fail(ErrorCode::invalid_model, "needs exactly one value attribute, got " + std::to_string(given));
  if (const Tensor* t = attrs.get_tensor("value")) return *t;
  if (attrs.has("value_float")) return Tensor::from<float>(Shape{}, {attrs.get_float("value_float", 0.0f)});
  if (attrs.has("value_int")) return Tensor::from<std::int64_t>(Shape{}, {attrs.get_int("value_int", 0)});
  if (attrs.has("value_floats")) {
    const auto v = attrs.get_floats("value_floats");
    return Tensor::from<float>(Shape{static_cast<std::int64_t>(v.size())}, v);
  }
  const auto v = attrs.get_ints("value_ints");
  return Tensor::from<std::int64_t>(Shape{static_cast<std::int64_t>(v.size())}, v);
}

Tensor fill_value(const Attributes& attrs) {
  const Tensor* given = attrs.get_tensor("value");
  if (!given) return Tensor::from<float>(Shape{1}, {0.0f});
  if (given->numel() != 1) fail(ErrorCode::invalid_model, "value must hold exactly one element");
  return given->reshaped(Shape{1});
}

void require_inference_dropout(const Tensor& training_mode, const Tensor* ratio) {
  if (training_mode.dtype() != DType::boolean || training_mode.numel() != 1)
    fail(ErrorCode::invalid_model, "training_mode must be a bool scalar");
  if (training_mode.values<std::uint8_t>()[0] == 0) return;
  // Training with ratio 0 drops nothing, so it is the same as inference.
  const bool drops_nothing =
      ratio && is_floating(ratio->dtype()) && ratio->numel() == 1 && ratio->to(DType::f32).values<float>()[0] == 0.0f;
  if (!drops_nothing)
    fail(ErrorCode::unsupported,
         "training_mode = true with a ratio other than a constant 0 (Loom runs inference only)");
}

ScatterReduction scatter_reduction(const Attributes& attrs) {
  const std::string reduction = attrs.get_string("reduction", "none");
  if (reduction == "none") return ScatterReduction::none;
  if (reduction == "add") return ScatterReduction::add;
  if (reduction == "mul") return ScatterReduction::mul;
  if (reduction == "max") return ScatterReduction::max;
  if (reduction == "min") return ScatterReduction::min;
  throw Error(ErrorCode::invalid_model, "reduction='" + reduction + "' (expects none, add, mul, max or min)");
}

ScatterNdGeometry scatter_nd_geometry(const Shape& data, const Shape& indices, const Shape& updates) {
  ScatterNdGeometry g;
  if (indices.rank() == 0) throw Error(ErrorCode::shape_mismatch, "indices must have rank >= 1");
  g.tuple_size = indices[indices.rank() - 1];
  if (g.tuple_size < 1 || g.tuple_size > static_cast<std::int64_t>(data.rank()))
    throw Error(ErrorCode::shape_mismatch,
                "indices " + indices.to_string() + " index more axes than data " + data.to_string() + " has");
  std::vector<std::int64_t> expected(indices.dims().begin(), indices.dims().end() - 1);
  g.tuples = 1;
  for (const auto d : expected) g.tuples *= d;
  for (std::size_t d = static_cast<std::size_t>(g.tuple_size); d < data.rank(); ++d) {
    expected.push_back(data[d]);
    g.slice *= data[d];
  }
  if (updates != Shape(expected))
    throw Error(ErrorCode::shape_mismatch,
                "updates " + updates.to_string() + " must have shape " + Shape(expected).to_string());
  return g;
}

GatherNdGeometry gather_nd_geometry(const Attributes& attrs, const Shape& data, const Shape& indices) {
  GatherNdGeometry g;
  const std::int64_t b = attrs.get_int("batch_dims", 0);
  if (indices.rank() == 0 || data.rank() == 0)
    throw Error(ErrorCode::shape_mismatch, "data and indices must have rank >= 1");
  if (b < 0 || b >= static_cast<std::int64_t>(std::min(data.rank(), indices.rank())))
    throw Error(ErrorCode::invalid_model, "batch_dims " + std::to_string(b) + " out of range");
  g.tuple_size = indices[indices.rank() - 1];
  if (g.tuple_size < 1 || b + g.tuple_size > static_cast<std::int64_t>(data.rank()))
    throw Error(ErrorCode::shape_mismatch,
                "indices " + indices.to_string() + " index more axes than data " + data.to_string() + " has");
  for (std::int64_t d = 0; d < b; ++d) {
    if (data[d] != indices[d])
      throw Error(ErrorCode::shape_mismatch,
                  "the batch dims of data " + data.to_string() + " and indices " + indices.to_string() + " differ");
    g.batches *= data[d];
  }
  g.tuples = 1;
  for (std::size_t d = static_cast<std::size_t>(b); d + 1 < indices.rank(); ++d) g.tuples *= indices[d];
  for (std::int64_t d = b; d < b + g.tuple_size; ++d) g.data_batch_dims.push_back(data[d]);
  g.output.assign(indices.dims().begin(), indices.dims().end() - 1);
  for (std::size_t d = static_cast<std::size_t>(b + g.tuple_size); d < data.rank(); ++d) {
    g.output.push_back(data[d]);
    g.slice *= data[d];
  }
  return g;
}

SpaceDepthGeometry space_depth_geometry(std::string_view op_type, const Attributes& attrs, const Shape& input) {
  SpaceDepthGeometry g;
  g.to_space = op_type == "DepthToSpace";
  g.block = attrs.get_int("blocksize", 0);
  if (g.block < 1) throw Error(ErrorCode::invalid_model, "blocksize must be >= 1");
  if (g.to_space) {
    const std::string mode = attrs.get_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      throw Error(ErrorCode::invalid_model, "mode='" + mode + "' (expects DCR or CRD)");
    g.crd = mode == "CRD";
  }
  if (input.rank() != 4) throw Error(ErrorCode::shape_mismatch, "input must be N, C, H, W, got " + input.to_string());
  const std::int64_t b = g.block;
  if (g.to_space) {
    if (input[1] % (b * b) != 0)
      throw Error(ErrorCode::shape_mismatch, "channels " + std::to_string(input[1]) + " not divisible by blocksize^2");
    g.batch = input[0], g.channels = input[1], g.height = input[2], g.width = input[3];
    g.output = {input[0], input[1] / (b * b), input[2] * b, input[3] * b};
  } else {
    if (input[2] % b != 0 || input[3] % b != 0)
      throw Error(ErrorCode::shape_mismatch, "H and W of " + input.to_string() + " not divisible by blocksize");
    g.batch = input[0], g.channels = input[1] * b * b, g.height = input[2] / b, g.width = input[3] / b;
    g.output = {g.batch, g.channels, g.height, g.width};
  }
  return g;
}

OneHotGeometry one_hot_geometry(const Attributes& attrs, const Shape& indices, std::int64_t depth) {
  OneHotGeometry g;
  if (depth < 1) throw Error(ErrorCode::invalid_model, "depth must be >= 1, got " + std::to_string(depth));
  const auto rank = static_cast<std::int64_t>(indices.rank());
  std::int64_t axis = attrs.get_int("axis", -1);
  if (axis < -rank - 1 || axis > rank)
    throw Error(ErrorCode::invalid_model, "axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += rank + 1;
  g.depth = depth;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d == axis) g.output.push_back(depth);
    g.output.push_back(indices[static_cast<std::size_t>(d)]);
    (d < axis ? g.outer : g.inner) *= indices[static_cast<std::size_t>(d)];
  }
  if (axis == rank) g.output.push_back(depth);
  return g;
}

std::int64_t one_hot_depth(const Tensor& depth) {
  if (depth.numel() != 1) throw Error(ErrorCode::shape_mismatch, "depth must be a scalar");
  switch (depth.dtype()) {
    case DType::f32:
      return static_cast<std::int64_t>(depth.values<float>()[0]);
    case DType::i64:
      return depth.values<std::int64_t>()[0];
    case DType::i32:
      return depth.values<std::int32_t>()[0];
    default:
      throw Error(ErrorCode::unsupported,
                  "depth dtype " + std::string(dtype_name(depth.dtype())) + " (expects f32, i64 or i32)");
  }
}

std::vector<bool> axis_mask(const std::vector<std::int64_t>& axes, std::size_t rank) {
  std::vector<bool> mask(rank, false);
  for (const auto a : axes) {
    const auto axis = static_cast<std::size_t>(normalize_axis(a, rank));
    if (mask[axis]) throw Error(ErrorCode::invalid_model, "axis " + std::to_string(a) + " is listed twice");
    mask[axis] = true;
  }
  return mask;
}

CompressGeometry compress_geometry(const Attributes& attrs, const Shape& input, const Tensor& condition) {
  CompressGeometry g;
  if (condition.dtype() != DType::boolean || condition.shape().rank() != 1)
    throw Error(ErrorCode::invalid_model, "condition must be a 1-D bool tensor");
  const bool has_axis = attrs.has("axis");
  std::size_t axis = 0;
  if (has_axis) {
    axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", 0), input.rank()));
    for (std::size_t d = 0; d < input.rank(); ++d) (d < axis ? g.outer : g.inner) *= d == axis ? 1 : input[d];
    g.length = input[axis];
  } else {
    g.length = input.numel();
  }
  const auto flags = condition.values<std::uint8_t>();  // bool is one byte
  for (std::int64_t i = 0; i < std::min<std::int64_t>(g.length, condition.numel()); ++i)
    if (flags[static_cast<std::size_t>(i)]) g.kept.push_back(i);
  if (has_axis) {
    g.output = input.dims();
    g.output[axis] = static_cast<std::int64_t>(g.kept.size());
  } else {
    g.output = {static_cast<std::int64_t>(g.kept.size())};
  }
  return g;
}

ReverseSequenceAxes reverse_sequence_axes(const Attributes& attrs, const Shape& input) {
  const std::int64_t batch = attrs.get_int("batch_axis", 1), time = attrs.get_int("time_axis", 0);
  if (input.rank() < 2) throw Error(ErrorCode::invalid_model, "input must have rank >= 2");
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0)))
    throw Error(ErrorCode::invalid_model, "batch_axis and time_axis must be 0 and 1 (in either order)");
  return {static_cast<std::size_t>(batch), static_cast<std::size_t>(time)};
}

std::vector<std::int64_t> dft_output_dims(const Attributes& attrs, const Shape& input,
                                          std::optional<std::int64_t> dft_length) {
  if (input.rank() < 2 || (input[input.rank() - 1] != 1 && input[input.rank() - 1] != 2))
    throw Error(ErrorCode::shape_mismatch, "input must be [..., 1 or 2], got " + input.to_string());
  const auto axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", 1), input.rank()));
  if (axis == input.rank() - 1) throw Error(ErrorCode::invalid_model, "axis must not be the last (complex) axis");
  const std::int64_t length = dft_length.value_or(input[axis]);
  if (length < 1) throw Error(ErrorCode::invalid_model, "dft_length must be >= 1");
  if (attrs.get_int("onesided", 0) != 0 && attrs.get_int("inverse", 0) != 0)
    throw Error(ErrorCode::invalid_model, "onesided and inverse together are not supported");
  std::vector<std::int64_t> dims = input.dims();
  dims[axis] = attrs.get_int("onesided", 0) != 0 ? length / 2 + 1 : length;
  dims.back() = 2;
  return dims;
}

StftGeometry stft_geometry(const Attributes& attrs, const Shape& signal, std::int64_t frame_step,
                           std::optional<std::int64_t> window_length, std::optional<std::int64_t> frame_length) {
  StftGeometry g;
  if (signal.rank() != 3 || (signal[2] != 1 && signal[2] != 2))
    throw Error(ErrorCode::shape_mismatch, "signal must be [batch, length, 1 or 2], got " + signal.to_string());
  if (!window_length && !frame_length) throw Error(ErrorCode::invalid_model, "STFT needs a window or a frame_length");
  g.frame_length = frame_length.value_or(window_length.value_or(0));
  if (window_length && *window_length != g.frame_length)
    throw Error(ErrorCode::shape_mismatch, "the window's length differs from frame_length");
  if (frame_step < 1 || g.frame_length < 1 || g.frame_length > signal[1])
    throw Error(ErrorCode::invalid_model, "frame_step must be >= 1 and frame_length in [1, signal length]");
  g.batch = signal[0];
  g.length = signal[1];
  g.step = frame_step;
  g.complex_input = signal[2] == 2;
  g.frames = (g.length - g.frame_length) / frame_step + 1;
  g.bins = attrs.get_int("onesided", 1) != 0 ? g.frame_length / 2 + 1 : g.frame_length;
  return g;
}

}  // namespace loom::graph
