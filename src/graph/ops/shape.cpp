// Shape inference for data-movement and shape ops.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {
std::vector<ValueInfo> infer_reshape(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  need(in, 1, "shape");
  if (constants.size() < 2 || constants[1] == nullptr)
    fail(ErrorCode::unsupported, "the shape input must be a constant initializer");
  const Tensor& spec = *constants[1];
  if (spec.dtype() != DType::i64 || spec.shape().rank() != 1)
    fail(ErrorCode::invalid_model, "the shape input must be a 1-D i64 tensor");
  const bool allow_zero = node.attrs.get_int("allowzero", 0) != 0;
  std::vector<std::int64_t> dims(spec.values<std::int64_t>().begin(), spec.values<std::int64_t>().end());
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

}  // namespace

void register_shape_schemas(SchemaTable& table) {
  table["Reshape"] = {OpRole::view, infer_reshape, nullptr, {1}};
  table["Flatten"] = {OpRole::view, infer_flatten, nullptr, {}};
  table["Transpose"] = {OpRole::anchor, infer_transpose, nullptr, {}};
  table["Concat"] = {OpRole::anchor, infer_concat, nullptr, {}};
  table["Gather"] = {OpRole::anchor, infer_gather, nullptr, {}};
}

}  // namespace loom::graph
