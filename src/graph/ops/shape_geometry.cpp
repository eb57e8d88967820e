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

}  // namespace loom::graph
