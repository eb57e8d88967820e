// Shape inference for data-movement and shape ops: views (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity), copies (Transpose, Concat, Split, Slice, Gather, Expand, Tile) and generators (Shape,
// Constant, ConstantOfShape, Range). Extents the kernels compute too come from shape_geometry.
#include <algorithm>
#include <optional>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"
#include "graph/ops/shape_geometry.hpp"

namespace loom::graph {
namespace {
std::vector<ValueInfo> infer_reshape(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  need(in, 1, "shape");
  const Tensor& spec = need_constant(constants, 1, "shape");
  if (spec.dtype() != DType::i64 || spec.shape().rank() != 1)
    fail(ErrorCode::invalid_model, "the shape input must be a 1-D i64 tensor");
  return {out(node, 0, x.dtype, reshaped_shape(node.attrs, x.shape, constant_ints(spec, "shape")))};
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
  const std::vector<std::int64_t> perm = transpose_perm(node.attrs, x.shape.rank());
  std::vector<std::int64_t> dims(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) dims[i] = x.shape[static_cast<std::size_t>(perm[i])];
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
  if (optional_input(in, 2))
    require_inference_dropout(need_constant(constants, 2, "training_mode"),
                              optional_input(in, 1) && constants.size() > 1 ? constants[1] : nullptr);
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

std::vector<ValueInfo> infer_slice(const Node& node, std::span<const ValueInfo* const> in,
                                   std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  need(in, 1, "starts");
  need(in, 2, "ends");
  const auto starts = constant_ints(need_constant(constants, 1, "starts"), "starts");
  const auto ends = constant_ints(need_constant(constants, 2, "ends"), "ends");
  std::optional<std::vector<std::int64_t>> axes, steps;
  if (optional_input(in, 3)) axes = constant_ints(need_constant(constants, 3, "axes"), "axes");
  if (optional_input(in, 4)) steps = constant_ints(need_constant(constants, 4, "steps"), "steps");
  const SlicePlan plan = plan_slice(x.shape, starts, ends, axes ? &*axes : nullptr, steps ? &*steps : nullptr);
  return {out(node, 0, x.dtype, Shape(plan.dims))};
}

std::vector<ValueInfo> infer_expand(const Node& node, std::span<const ValueInfo* const> in,
                                    std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "input");
  need(in, 1, "shape");
  const auto shape = constant_ints(need_constant(constants, 1, "shape"), "shape");
  return {out(node, 0, x.dtype, expanded_shape(x.shape, shape))};
}

std::vector<ValueInfo> infer_tile(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "input");
  need(in, 1, "repeats");
  const auto repeats = constant_ints(need_constant(constants, 1, "repeats"), "repeats");
  return {out(node, 0, x.dtype, tiled_shape(x.shape, repeats))};
}

std::vector<ValueInfo> infer_shape(const Node& node, std::span<const ValueInfo* const> in,
                                   std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "data");
  const DimRange range = shape_op_range(node.attrs, x.shape.rank());
  return {out(node, 0, DType::i64, Shape{range.end - range.start})};
}

std::vector<ValueInfo> infer_constant(const Node& node, std::span<const ValueInfo* const>,
                                      std::span<const Tensor* const>) {
  const Tensor value = constant_value(node.attrs);
  return {out(node, 0, value.dtype(), value.shape())};
}

std::vector<ValueInfo> infer_constant_of_shape(const Node& node, std::span<const ValueInfo* const> in,
                                               std::span<const Tensor* const> constants) {
  need(in, 0, "input");
  const auto dims = constant_ints(need_constant(constants, 0, "input"), "input");
  for (const auto d : dims)
    if (d < 0) fail(ErrorCode::invalid_model, "shape has a negative dimension " + std::to_string(d));
  return {out(node, 0, fill_value(node.attrs).dtype(), Shape(dims))};
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
  return {out(node, 0, values[0]->dtype(), Shape{range_length(*values[0], *values[1], *values[2])})};
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
