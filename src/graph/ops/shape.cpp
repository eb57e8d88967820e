// Shape inference for data-movement and shape ops: views (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity), copies (Transpose, Concat, Split, Slice, Gather, Expand, Tile) and generators (Shape,
// Constant, ConstantOfShape, Range).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <type_traits>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {
std::vector<ValueInfo> infer_reshape(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  need(in, 1, "shape");
  const Tensor& spec = need_constant(constants, 1, "shape");
  if (spec.dtype() != DType::i64 || spec.shape().rank() != 1)
    fail(ErrorCode::invalid_model, "the shape input must be a 1-D i64 tensor");
  const bool allow_zero = node.attrs.get_int("allowzero", 0) != 0;
  std::vector<std::int64_t> dims = constant_ints(spec, "shape");
  std::int64_t known = 1;
  int infer_at = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allow_zero) {
      if (i >= x.shape.rank())
        fail(ErrorCode::shape_mismatch, "shape has 0 at axis " + std::to_string(i) + " beyond the input's rank");
      dims[i] = x.shape[i];
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
    if (known == 0 || x.shape.numel() % known != 0)
      fail(ErrorCode::shape_mismatch, "cannot reshape " + x.shape.to_string() + " to the requested shape");
    dims[infer_at] = x.shape.numel() / known;
  }
  Shape y(dims);
  if (y.numel() != x.shape.numel())
    fail(ErrorCode::shape_mismatch, "cannot reshape " + x.shape.to_string() + " (" + std::to_string(x.shape.numel()) +
                                        " elements) to " + y.to_string());
  return {out(node, 0, x.dtype, y)};
}

std::vector<ValueInfo> infer_flatten(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "input");
  const auto r = static_cast<std::int64_t>(x.shape.rank());
  std::int64_t axis = node.attrs.get_int("axis", 1);
  if (axis < -r || axis > r) fail(ErrorCode::invalid_model, "axis " + std::to_string(axis) + " out of range");
  if (axis < 0) axis += r;
  std::int64_t outer = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= x.shape[i];
  return {out(node, 0, x.dtype, Shape{outer, outer == 0 ? 0 : x.shape.numel() / std::max<std::int64_t>(outer, 1)})};
}

std::vector<ValueInfo> infer_transpose(const Node& node, std::span<const ValueInfo* const> in,
                                       std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "data");
  const auto r = x.shape.rank();
  std::vector<std::int64_t> perm(r);
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = node.attrs.get_ints("perm", perm);
  if (perm.size() != r)
    fail(ErrorCode::invalid_model,
         "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  std::vector<std::int64_t> dims(r);
  for (std::size_t i = 0; i < r; ++i) {
    const auto p = normalize_axis(perm[i], r);
    if (seen[p]) fail(ErrorCode::invalid_model, "perm repeats axis " + std::to_string(p));
    seen[p] = true;
    dims[i] = x.shape[p];
  }
  return {out(node, 0, x.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_concat(const Node& node, std::span<const ValueInfo* const> in,
                                    std::span<const Tensor* const>) {
  if (in.empty() || !in[0]) fail(ErrorCode::invalid_model, "Concat needs at least one input");
  const auto& first = *in[0];
  if (!node.attrs.has("axis")) fail(ErrorCode::invalid_model, "axis is required");
  const auto axis = normalize_axis(node.attrs.get_int("axis", 0), first.shape.rank());
  auto dims = first.shape.dims();
  dims[axis] = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto& v = need(in, i, "input");
    need_same_dtype(first, v);
    if (v.shape.rank() != first.shape.rank())
      fail(ErrorCode::shape_mismatch,
           "input '" + v.name + "' " + v.shape.to_string() + " differs in rank from " + first.shape.to_string());
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (static_cast<std::int64_t>(d) != axis && v.shape[d] != first.shape[d])
        fail(ErrorCode::shape_mismatch, "input '" + v.name + "' " + v.shape.to_string() + " differs from " +
                                            first.shape.to_string() + " outside axis " + std::to_string(axis));
    dims[axis] += v.shape[axis];
  }
  return {out(node, 0, first.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_gather(const Node& node, std::span<const ValueInfo* const> in,
                                    std::span<const Tensor* const>) {
  const auto& data = need(in, 0, "data");
  const auto& indices = need(in, 1, "indices");
  if (indices.dtype != DType::i64 && indices.dtype != DType::i32)
    fail(ErrorCode::dtype_mismatch, "indices must be i64 or i32, got " + std::string(dtype_name(indices.dtype)));
  const auto axis = normalize_axis(node.attrs.get_int("axis", 0), data.shape.rank());
  std::vector<std::int64_t> dims(data.shape.begin(), data.shape.begin() + axis);
  dims.insert(dims.end(), indices.shape.begin(), indices.shape.end());
  dims.insert(dims.end(), data.shape.begin() + axis + 1, data.shape.end());
  return {out(node, 0, data.dtype, Shape(dims))};
}

// Axes listed by input 1 when it is present (a constant), else by the older `axes` attribute;
// nullopt when neither gives any.
std::optional<std::vector<std::int64_t>> axes_of(const Node& node, std::span<const ValueInfo* const> in,
                                                 std::span<const Tensor* const> constants) {
  if (optional_input(in, 1)) return constant_ints(need_constant(constants, 1, "axes"), "axes");
  if (node.attrs.has("axes")) return node.attrs.get_ints("axes");
  return std::nullopt;
}

// Normalises every axis against `rank`, rejecting repeats.
std::vector<bool> axis_mask(const std::vector<std::int64_t>& axes, std::size_t rank) {
  std::vector<bool> mask(rank, false);
  for (const auto a : axes) {
    const auto axis = normalize_axis(a, rank);
    if (mask[axis]) fail(ErrorCode::invalid_model, "axis " + std::to_string(a) + " is listed twice");
    mask[axis] = true;
  }
  return mask;
}

std::vector<ValueInfo> infer_squeeze(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  const auto axes = axes_of(node, in, constants);
  std::vector<std::int64_t> dims;
  if (!axes) {
    for (const auto d : x.shape)
      if (d != 1) dims.push_back(d);
    return {out(node, 0, x.dtype, Shape(dims))};
  }
  const auto mask = axis_mask(*axes, x.shape.rank());
  for (std::size_t d = 0; d < x.shape.rank(); ++d) {
    if (!mask[d]) {
      dims.push_back(x.shape[d]);
    } else if (x.shape[d] != 1) {
      fail(ErrorCode::shape_mismatch, "cannot squeeze axis " + std::to_string(d) + " of size " +
                                          std::to_string(x.shape[d]) + " in " + x.shape.to_string());
    }
  }
  return {out(node, 0, x.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_unsqueeze(const Node& node, std::span<const ValueInfo* const> in,
                                       std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  const auto axes = axes_of(node, in, constants);
  if (!axes) fail(ErrorCode::invalid_model, "missing required input 1 (axes)");
  const std::size_t rank = x.shape.rank() + axes->size();
  const auto mask = axis_mask(*axes, rank);  // negative axes count from the end of the output
  std::vector<std::int64_t> dims;
  std::size_t next = 0;
  for (std::size_t d = 0; d < rank; ++d) dims.push_back(mask[d] ? 1 : x.shape[next++]);
  return {out(node, 0, x.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_same(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "input");
  return {out(node, 0, x.dtype, x.shape)};
}

std::vector<ValueInfo> infer_dropout(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  if (optional_input(in, 2)) {
    const Tensor& training = need_constant(constants, 2, "training_mode");
    if (training.dtype() != DType::boolean || training.numel() != 1)
      fail(ErrorCode::invalid_model, "training_mode must be a bool scalar");
    // Training with ratio 0 drops nothing, so it is the same as inference.
    const Tensor* ratio = optional_input(in, 1) && constants.size() > 1 ? constants[1] : nullptr;
    const bool drops_nothing =
        ratio && is_floating(ratio->dtype()) && ratio->numel() == 1 && ratio->to(DType::f32).values<float>()[0] == 0.0f;
    if (training.values<std::uint8_t>()[0] != 0 && !drops_nothing)
      fail(ErrorCode::unsupported,
           "training_mode = true with a ratio other than a constant 0 (Loom runs inference only)");
  }
  return {out(node, 0, x.dtype, x.shape), out(node, 1, DType::boolean, x.shape)};
}

// Output sizes of Split along its axis: the `split` input (or older attribute), else
// `num_outputs` chunks of ceil(dim / n) with a smaller last one, else equal parts per output.
std::vector<std::int64_t> split_sizes(const Node& node, std::span<const ValueInfo* const> in,
                                      std::span<const Tensor* const> constants, std::int64_t dim) {
  std::vector<std::int64_t> sizes;
  if (optional_input(in, 1)) {
    sizes = constant_ints(need_constant(constants, 1, "split"), "split");
  } else if (node.attrs.has("split")) {
    sizes = node.attrs.get_ints("split");
  } else {
    const std::int64_t n = node.attrs.get_int("num_outputs", static_cast<std::int64_t>(node.outputs.size()));
    if (n <= 0) fail(ErrorCode::invalid_model, "Split needs at least one output");
    if (node.attrs.has("num_outputs")) {
      const std::int64_t chunk = (dim + n - 1) / n;
      sizes.assign(static_cast<std::size_t>(n), chunk);
      sizes.back() = dim - chunk * (n - 1);
    } else {
      if (dim % n != 0)
        fail(ErrorCode::shape_mismatch,
             "axis of size " + std::to_string(dim) + " does not split into " + std::to_string(n) + " equal parts");
      sizes.assign(static_cast<std::size_t>(n), dim / n);
    }
  }
  std::int64_t total = 0;
  for (const auto s : sizes) {
    if (s < 0) fail(ErrorCode::invalid_model, "split has a negative size " + std::to_string(s));
    total += s;
  }
  if (total != dim)
    fail(ErrorCode::shape_mismatch,
         "split sizes add up to " + std::to_string(total) + ", the axis has " + std::to_string(dim));
  if (sizes.size() != node.outputs.size())
    fail(ErrorCode::invalid_model, "split gives " + std::to_string(sizes.size()) + " parts for " +
                                       std::to_string(node.outputs.size()) + " outputs");
  return sizes;
}

std::vector<ValueInfo> infer_split(const Node& node, std::span<const ValueInfo* const> in,
                                   std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "input");
  const auto axis = normalize_axis(node.attrs.get_int("axis", 0), x.shape.rank());
  const auto sizes = split_sizes(node, in, constants, x.shape[axis]);
  std::vector<ValueInfo> outs;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    Shape s = x.shape;
    s[axis] = sizes[i];
    outs.push_back(out(node, i, x.dtype, s));
  }
  return outs;
}

// Output length of one sliced axis, with ONNX's clamping of starts and ends.
std::int64_t sliced_length(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, dim);
    end = std::clamp<std::int64_t>(end, 0, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  if (dim == 0) return 0;
  start = std::clamp<std::int64_t>(start, 0, dim - 1);
  end = std::clamp<std::int64_t>(end, -1, dim - 1);
  return start > end ? (start - end - step - 1) / -step : 0;
}

std::vector<ValueInfo> infer_slice(const Node& node, std::span<const ValueInfo* const> in,
                                   std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  need(in, 1, "starts");
  need(in, 2, "ends");
  const auto starts = constant_ints(need_constant(constants, 1, "starts"), "starts");
  const auto ends = constant_ints(need_constant(constants, 2, "ends"), "ends");
  const std::size_t rank = x.shape.rank();
  std::vector<std::int64_t> axes(starts.size()), steps(starts.size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (optional_input(in, 3)) axes = constant_ints(need_constant(constants, 3, "axes"), "axes");
  if (optional_input(in, 4)) steps = constant_ints(need_constant(constants, 4, "steps"), "steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(ErrorCode::invalid_model, "starts, ends, axes and steps differ in length");
  axis_mask(axes, rank);  // range and repeats
  auto dims = x.shape.dims();
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (steps[i] == 0) fail(ErrorCode::invalid_model, "a step is 0");
    const auto axis = normalize_axis(axes[i], rank);
    dims[axis] = sliced_length(x.shape[axis], starts[i], ends[i], steps[i]);
  }
  return {out(node, 0, x.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_expand(const Node& node, std::span<const ValueInfo* const> in,
                                    std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "input");
  need(in, 1, "shape");
  const auto shape = constant_ints(need_constant(constants, 1, "shape"), "shape");
  for (const auto d : shape)
    if (d < 0) fail(ErrorCode::invalid_model, "shape has a negative dimension " + std::to_string(d));
  return {out(node, 0, x.dtype, broadcast_shapes(x.shape, Shape(shape)))};
}

std::vector<ValueInfo> infer_tile(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "input");
  need(in, 1, "repeats");
  const auto repeats = constant_ints(need_constant(constants, 1, "repeats"), "repeats");
  if (repeats.size() != x.shape.rank())
    fail(ErrorCode::invalid_model,
         "repeats has " + std::to_string(repeats.size()) + " entries for rank " + std::to_string(x.shape.rank()));
  auto dims = x.shape.dims();
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (repeats[d] < 0) fail(ErrorCode::invalid_model, "repeats has a negative entry");
    dims[d] *= repeats[d];
  }
  return {out(node, 0, x.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_shape(const Node& node, std::span<const ValueInfo* const> in,
                                   std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "data");
  const auto rank = static_cast<std::int64_t>(x.shape.rank());
  const auto clamp_end = [rank](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const std::int64_t start = clamp_end(node.attrs.get_int("start", 0));
  const std::int64_t end = clamp_end(node.attrs.get_int("end", rank));
  return {out(node, 0, DType::i64, Shape{std::max<std::int64_t>(end - start, 0)})};
}

std::vector<ValueInfo> infer_constant(const Node& node, std::span<const ValueInfo* const>,
                                      std::span<const Tensor* const>) {
  const auto& attrs = node.attrs;
  int given = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) given += attrs.has(name);
  for (const char* name : {"sparse_value", "value_string", "value_strings"})
    if (attrs.has(name)) fail(ErrorCode::unsupported, std::string("attribute ") + name);
  if (given != 1) fail(ErrorCode::invalid_model, "needs exactly one value attribute, got " + std::to_string(given));
  if (const Tensor* t = attrs.get_tensor("value")) return {out(node, 0, t->dtype(), t->shape())};
  if (attrs.has("value_float")) return {out(node, 0, DType::f32, Shape{})};
  if (attrs.has("value_int")) return {out(node, 0, DType::i64, Shape{})};
  if (attrs.has("value_floats"))
    return {out(node, 0, DType::f32, Shape{static_cast<std::int64_t>(attrs.get_floats("value_floats").size())})};
  return {out(node, 0, DType::i64, Shape{static_cast<std::int64_t>(attrs.get_ints("value_ints").size())})};
}

std::vector<ValueInfo> infer_constant_of_shape(const Node& node, std::span<const ValueInfo* const> in,
                                               std::span<const Tensor* const> constants) {
  need(in, 0, "input");
  const auto dims = constant_ints(need_constant(constants, 0, "input"), "input");
  for (const auto d : dims)
    if (d < 0) fail(ErrorCode::invalid_model, "shape has a negative dimension " + std::to_string(d));
  DType dtype = DType::f32;
  if (const Tensor* value = node.attrs.get_tensor("value")) {
    if (value->numel() != 1) fail(ErrorCode::invalid_model, "value must hold exactly one element");
    dtype = value->dtype();
  }
  return {out(node, 0, dtype, Shape(dims))};
}

// Elements of Range(start, limit, delta): max(ceil((limit - start) / delta), 0).
template <class T>
std::int64_t range_length(const Tensor& start, const Tensor& limit, const Tensor& delta) {
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

std::vector<ValueInfo> infer_range(const Node& node, std::span<const ValueInfo* const> in,
                                   std::span<const Tensor* const> constants) {
  const char* names[] = {"start", "limit", "delta"};
  const Tensor* values[3];
  for (std::size_t i = 0; i < 3; ++i) {
    need(in, i, names[i]);
    values[i] = &need_constant(constants, i, names[i]);
    if (values[i]->numel() != 1) fail(ErrorCode::invalid_model, std::string(names[i]) + " must be a scalar");
    if (values[i]->dtype() != values[0]->dtype())
      fail(ErrorCode::dtype_mismatch, "start, limit and delta differ in dtype");
  }
  std::int64_t n = 0;
  switch (values[0]->dtype()) {
    case DType::f32:
      n = range_length<float>(*values[0], *values[1], *values[2]);
      break;
    case DType::i64:
      n = range_length<std::int64_t>(*values[0], *values[1], *values[2]);
      break;
    case DType::i32:
      n = range_length<std::int32_t>(*values[0], *values[1], *values[2]);
      break;
    default:
      fail(ErrorCode::unsupported,
           "Range of dtype " + std::string(dtype_name(values[0]->dtype())) + " (f32, i64 and i32 are supported)");
  }
  return {out(node, 0, values[0]->dtype(), Shape{n})};
}

}  // namespace

void register_shape_schemas(SchemaTable& table) {
  table["Reshape"] = {OpRole::view, infer_reshape, nullptr, {1}};
  table["Flatten"] = {OpRole::view, infer_flatten, nullptr, {}};
  table["Transpose"] = {OpRole::anchor, infer_transpose, nullptr, {}};
  table["Concat"] = {OpRole::anchor, infer_concat, nullptr, {}};
  table["Gather"] = {OpRole::anchor, infer_gather, nullptr, {}};
  table["Squeeze"] = {OpRole::view, infer_squeeze, nullptr, {1}};
  table["Unsqueeze"] = {OpRole::view, infer_unsqueeze, nullptr, {1}};
  table["Identity"] = {OpRole::view, infer_same, nullptr, {}};
  // Not a view: its optional mask output would alias the data too.
  table["Dropout"] = {OpRole::pointwise, infer_dropout, nullptr, {1, 2}};
  table["Split"] = {OpRole::anchor, infer_split, nullptr, {1}};
  table["Slice"] = {OpRole::anchor, infer_slice, nullptr, {1, 2, 3, 4}};
  table["Expand"] = {OpRole::anchor, infer_expand, nullptr, {1}};
  table["Tile"] = {OpRole::anchor, infer_tile, nullptr, {1}};
  table["Shape"] = {OpRole::anchor, infer_shape, nullptr, {}};
  table["Constant"] = {OpRole::anchor, infer_constant, nullptr, {}};
  table["ConstantOfShape"] = {OpRole::anchor, infer_constant_of_shape, nullptr, {0}};
  table["Range"] = {OpRole::anchor, infer_range, nullptr, {0, 1, 2}};
}

}  // namespace loom::graph
