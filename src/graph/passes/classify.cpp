// Classification (MISSION.md §2, the source text's 运算分析): which nodes are tensor work and which
// scalar work (shape arithmetic, loop counts, small index math, control decisions). The placement
// pass looks scalar work up as such in the function library; optimize() reports the class of what
// it folds.
#include <algorithm>
#include <map>
#include <set>

#include "graph/op_schema.hpp"
#include "graph/ops.hpp"
#include "graph/passes/passes.hpp"

namespace loom::graph::passes {
namespace {

// Inputs that carry a control decision the host must see: an If's condition. (A Loop's trip count
// and condition are host_inputs of its schema already.)
std::vector<std::size_t> control_inputs(const Node& node) {
  if (node.op_type == "If") return {0};
  return {};
}

std::vector<std::size_t> scalar_argument_positions(const Node& node) {
  std::set<std::size_t> positions;
  if (const OpSchema* schema = find_schema(node.op_type))
    positions.insert(schema->host_inputs.begin(), schema->host_inputs.end());
  for (std::size_t k : control_inputs(node)) positions.insert(k);
  return {positions.begin(), positions.end()};
}

// What classification knows of each value: its type and shape where inference got that far.
struct KnownValues {
  std::map<std::string, ValueInfo> infos;
  std::set<std::string> constants;  // initializers

  bool small(const std::string& name) const {
    const auto it = infos.find(name);
    return it != infos.end() && scalar_sized(it->second);
  }
};

KnownValues infer_what_can_be(const Model& model) {
  KnownValues known;
  for (const auto& input : model.inputs)
    if (input.kind == ValueKind::tensor) known.infos[input.name] = input;
  for (const auto& [name, tensor] : model.initializers) {
    known.infos[name] = ValueInfo{name, tensor.dtype(), tensor.shape(), {}};
    known.constants.insert(name);
  }
  for (const Node& node : model.nodes) {
    std::vector<const ValueInfo*> inputs;
    std::vector<const Tensor*> constants;
    bool complete = true;
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        constants.push_back(nullptr);
        continue;
      }
      const auto info = known.infos.find(name);
      complete = complete && info != known.infos.end();
      inputs.push_back(info == known.infos.end() ? nullptr : &info->second);
      const auto value = model.initializers.find(name);
      constants.push_back(value == model.initializers.end() ? nullptr : &value->second);
    }
    if (!complete || !is_supported_op(node.op_type)) continue;
    try {
      const std::vector<ValueInfo> outputs = infer_node(node, inputs, constants);
      for (std::size_t i = 0; i < node.outputs.size() && i < outputs.size(); ++i)
        if (!node.outputs[i].empty()) known.infos[node.outputs[i]] = outputs[i];
    } catch (const Error&) {
      // A shape that depends on a computed value (not folded yet): its outputs stay unknown, and
      // an unknown value is never scalar-sized.
    }
  }
  return known;
}

}  // namespace

bool scalar_sized(const ValueInfo& value) noexcept {
  if (!(is_integer(value.dtype) || value.dtype == DType::boolean)) return false;
  for (const auto d : value.shape.dims())
    if (d < 0) return false;
  return value.shape.numel() <= kScalarMaxElements;
}

std::vector<NodeWork> classify_work(const Model& model) {
  const KnownValues known = infer_what_can_be(model);
  const std::size_t count = model.nodes.size();
  std::vector<NodeWork> work(count);

  // Who produces each value, and where each value is read: as a scalar argument or as data.
  std::map<std::string, std::size_t> producer;
  for (std::size_t n = 0; n < count; ++n)
    for (const auto& output : model.nodes[n].outputs)
      if (!output.empty()) producer[output] = n;
  struct Use {
    std::size_t node;
    bool scalar_argument;
  };
  std::map<std::string, std::vector<Use>> uses;
  for (std::size_t n = 0; n < count; ++n) {
    const Node& node = model.nodes[n];
    const std::vector<std::size_t> positions = scalar_argument_positions(node);
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.inputs[k].empty()) continue;
      const bool argument = std::find(positions.begin(), positions.end(), k) != positions.end();
      uses[node.inputs[k]].push_back({n, argument});
      if (argument) work[n].scalar_arguments.push_back(node.inputs[k]);
    }
  }
  const std::set<std::string> graph_outputs(model.outputs.begin(), model.outputs.end());

  std::vector<bool> scalar(count, false);
  const auto all_small = [&](const std::vector<std::string>& names) {
    bool any = false;
    for (const auto& name : names) {
      if (name.empty()) continue;
      if (!known.small(name)) return false;
      any = true;
    }
    return any;
  };
  // From constants and scalar nodes' outputs only: index math on shapes.
  const auto computes_from_scalars = [&](const Node& node) {
    for (const auto& name : node.inputs) {
      if (name.empty() || known.constants.count(name)) continue;
      const auto from = producer.find(name);
      if (from == producer.end() || !scalar[from->second]) return false;
    }
    return true;
  };
  // Every output read only as a scalar argument or by scalar nodes (and none a graph output).
  const auto feeds_only_scalars = [&](const Node& node) {
    bool any = false;
    for (const auto& name : node.outputs) {
      if (name.empty()) continue;
      if (graph_outputs.count(name)) return false;
      const auto it = uses.find(name);
      if (it == uses.end()) continue;
      for (const Use& use : it->second)
        if (!use.scalar_argument && !scalar[use.node]) return false;
      any = true;
    }
    return any;
  };

  for (std::size_t n = 0; n < count; ++n) {
    const Node& node = model.nodes[n];
    if (graph::reads_only_metadata(node)) {
      scalar[n] = true;
      work[n].rule = "shape metadata";
    }
  }
  // Forward (index math) and backward (what scalar arguments are computed from) until no node
  // changes: each round only adds scalar nodes, so it ends within `count` rounds.
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t n = 0; n < count; ++n) {
      const Node& node = model.nodes[n];
      if (scalar[n] || !all_small(node.inputs) || !all_small(node.outputs) || !computes_from_scalars(node)) continue;
      scalar[n] = changed = true;
      work[n].rule = "index math on scalar values";
    }
    for (std::size_t n = count; n-- > 0;) {
      const Node& node = model.nodes[n];
      if (scalar[n] || !all_small(node.inputs) || !all_small(node.outputs) || !feeds_only_scalars(node)) continue;
      scalar[n] = changed = true;
      work[n].rule = "computes shape or control inputs";
    }
  }
  for (std::size_t n = 0; n < count; ++n) {
    work[n].work_class = scalar[n] ? WorkClass::scalar : WorkClass::tensor;
    if (!scalar[n]) work[n].rule = "tensor work";
  }
  return work;
}

}  // namespace loom::graph::passes
