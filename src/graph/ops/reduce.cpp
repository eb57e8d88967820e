// Shape inference for reductions and normalisations.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {
std::vector<ValueInfo> infer_softmax(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "X");
  need_float(x, "X");
  normalize_axis(node.attrs.get_int("axis", -1), x.shape.rank());
  return {out(node, 0, x.dtype, x.shape)};
}

std::vector<ValueInfo> infer_layer_norm(const Node& node, std::span<const ValueInfo* const> in,
                                        std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "X");
  const auto& scale = need(in, 1, "Scale");
  need_float(x, "X");
  need_same_dtype(x, scale);
  const auto axis = normalize_axis(node.attrs.get_int("axis", -1), x.shape.rank());
  Shape norm(std::vector<std::int64_t>(x.shape.begin() + axis, x.shape.end()));
  if (broadcast_shapes(scale.shape, norm) != norm)
    fail(ErrorCode::shape_mismatch,
         "Scale " + scale.shape.to_string() + " does not broadcast to the normalised " + norm.to_string());
  if (in.size() > 2 && in[2] && broadcast_shapes(in[2]->shape, norm) != norm)
    fail(ErrorCode::shape_mismatch,
         "B " + in[2]->shape.to_string() + " does not broadcast to the normalised " + norm.to_string());
  for (std::size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) fail(ErrorCode::unsupported, "Mean and InvStdDev outputs");
  return {out(node, 0, x.dtype, x.shape)};
}

double softmax_flops(const Node&, std::span<const ValueInfo* const>, std::span<const ValueInfo* const> outs) {
  return 5.0 * static_cast<double>(outs[0]->shape.numel());
}

double layer_norm_flops(const Node&, std::span<const ValueInfo* const>, std::span<const ValueInfo* const> outs) {
  return 8.0 * static_cast<double>(outs[0]->shape.numel());
}

}  // namespace

void register_reduce_schemas(SchemaTable& table) {
  table["Softmax"] = {OpRole::anchor, infer_softmax, softmax_flops, {}};
  table["LayerNormalization"] = {OpRole::anchor, infer_layer_norm, layer_norm_flops, {}};
}

}  // namespace loom::graph
