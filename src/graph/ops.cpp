// The op registry (op_schema.hpp) and the planner-facing entry points over it
// (ops.hpp). The per-op facts live with their family in src/graph/ops/.
#include "graph/ops.hpp"

#include <algorithm>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {

const SchemaTable& schemas() {
  static const SchemaTable table = [] {
    SchemaTable t;
    register_linear_schemas(t);
    register_conv_schemas(t);
    register_elementwise_schemas(t);
    register_reduce_schemas(t);
    register_shape_schemas(t);
    register_recurrent_schemas(t);
    register_control_flow_schemas(t);
    register_quantize_schemas(t);
    return t;
  }();
  return table;
}

const OpSchema& schema_of(const Node& node) {
  const OpSchema* schema = find_schema(node.op_type);
  if (!schema) fail(ErrorCode::unsupported, "op type '" + node.op_type + "' is not supported");
  return *schema;
}

}  // namespace

const OpSchema* find_schema(std::string_view op_type) noexcept {
  const auto& table = schemas();
  const auto it = table.find(op_type);
  return it == table.end() ? nullptr : &it->second;
}

bool is_supported_op(std::string_view op_type) noexcept { return find_schema(op_type) != nullptr; }

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& entry : schemas()) names.push_back(entry.first);
  return names;
}

OpRole op_role(const Node& node) { return schema_of(node).role; }

bool reads_only_metadata(const Node& node) noexcept { return node.op_type == "Shape" || node.op_type == "Size"; }

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    fail(ErrorCode::invalid_model,
         "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> dims(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.rank() ? 1 : a[i - (rank - a.rank())];
    const std::int64_t db = i < rank - b.rank() ? 1 : b[i - (rank - b.rank())];
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::shape_mismatch, "shapes " + a.to_string() + " and " + b.to_string() + " do not broadcast");
    dims[i] = da == 1 ? db : da;
  }
  return Shape(dims);
}

std::vector<ValueInfo> infer_node(const Node& node, std::span<const ValueInfo* const> inputs,
                                  std::span<const Tensor* const> constants) {
  const OpSchema& schema = schema_of(node);
  if (!schema.infer) fail(ErrorCode::internal, "op '" + node.op_type + "' has no shape inference");
  return schema.infer(node, inputs, constants);
}

double node_flops(const Node& node, std::span<const ValueInfo* const> inputs,
                  std::span<const ValueInfo* const> outputs) {
  const OpSchema& schema = schema_of(node);
  // Some schemas read output 0's size; ops whose first output is omitted (LSTM/GRU giving only
  // Y_h) have FLOP functions that read only the inputs.
  if (!schema.flops) return 0.0;
  return schema.flops(node, inputs, outputs);
}

}  // namespace loom::graph
