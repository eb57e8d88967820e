// Shape inference for elementwise ops: activations and broadcasting arithmetic.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {
std::vector<ValueInfo> infer_activation(const Node& node, std::span<const ValueInfo* const> in,
                                        std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "X");
  need_float(x, "X");
  if (node.op_type == "Gelu") {
    const auto mode = node.attrs.get_string("approximate", "none");
    if (mode != "none" && mode != "tanh") fail(ErrorCode::invalid_model, "approximate='" + mode + "'");
  }
  return {out(node, 0, x.dtype, x.shape)};
}

std::vector<ValueInfo> infer_binary(const Node& node, std::span<const ValueInfo* const> in,
                                    std::span<const Tensor* const>) {
  const auto& a = need(in, 0, "A");
  const auto& b = need(in, 1, "B");
  need_same_dtype(a, b);
  if (a.dtype == DType::boolean) fail(ErrorCode::dtype_mismatch, "bool operands");
  return {out(node, 0, a.dtype, broadcast_shapes(a.shape, b.shape))};
}

double per_output(const Node& node, std::span<const ValueInfo* const>, std::span<const ValueInfo* const> outs) {
  const double y = static_cast<double>(outs[0]->shape.numel());
  const std::string& op = node.op_type;
  if (op == "Sigmoid" || op == "Tanh") return 4.0 * y;
  if (op == "Gelu") return 8.0 * y;
  return y;
}

}  // namespace

void register_elementwise_schemas(SchemaTable& table) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Gelu"})
    table[op] = {OpRole::pointwise, infer_activation, per_output, {}};
  for (const char* op : {"Add", "Mul"}) table[op] = {OpRole::pointwise, infer_binary, per_output, {}};
}

}  // namespace loom::graph
