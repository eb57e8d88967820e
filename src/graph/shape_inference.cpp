// infer_shapes(): walks a model's nodes in order, checking each and fixing every value's type and
// shape; random_inputs(): request inputs that fit a model.
#include <set>

#include "core/random.hpp"
#include "graph/ops.hpp"
#include "loom/model.hpp"

namespace loom {

std::map<std::string, ValueInfo> infer_shapes(const Model& model) {
  // Imported models carry their file ("source" metadata), so errors point at it.
  const auto source = model.metadata.find("source");
  const std::string where =
      "model '" + model.name + "'" + (source != model.metadata.end() ? " (" + source->second + ")" : std::string());
  std::map<std::string, ValueInfo> values;
  for (const auto& input : model.inputs) {
    if (input.name.empty()) throw Error(ErrorCode::invalid_model, where + ": a graph input has no name");
    for (auto d : input.shape.dims())
      if (d < 0)
        throw Error(ErrorCode::invalid_model, where + ": input '" + input.name +
                                                  "' has a dynamic or negative dimension (" + input.shape.to_string() +
                                                  "); give concrete shapes");
    if (!values.emplace(input.name, input).second)
      throw Error(ErrorCode::invalid_model, where + ": input '" + input.name + "' is declared twice");
  }
  for (const auto& [name, tensor] : model.initializers)
    if (!values.emplace(name, ValueInfo{name, tensor.dtype(), tensor.shape(), {}}).second)
      throw Error(ErrorCode::invalid_model, where + ": '" + name + "' is both an input and an initializer");

  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& node = model.nodes[n];
    const std::string label =
        where + ", node '" + (node.name.empty() ? "#" + std::to_string(n) : node.name) + "' (" + node.op_type + ")";
    std::vector<const ValueInfo*> inputs;
    std::vector<const Tensor*> constants;
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        constants.push_back(nullptr);
        continue;
      }
      auto it = values.find(name);
      if (it == values.end())
        throw Error(ErrorCode::invalid_model,
                    label + ": input '" + name + "' is not a graph input, an initializer or an earlier node's output");
      inputs.push_back(&it->second);
      auto c = model.initializers.find(name);
      constants.push_back(c == model.initializers.end() ? nullptr : &c->second);
    }
    std::vector<ValueInfo> outputs;
    try {
      outputs = graph::infer_node(node, inputs, constants);
    } catch (const Error& e) {
      throw Error(e.code(), label + ": " + e.what());
    }
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      if (i >= outputs.size())
        throw Error(ErrorCode::invalid_model, label + ": has " + std::to_string(node.outputs.size()) +
                                                  " outputs, the op produces " + std::to_string(outputs.size()));
      outputs[i].name = node.outputs[i];
      if (!values.emplace(node.outputs[i], outputs[i]).second)
        throw Error(ErrorCode::invalid_model, label + ": output '" + node.outputs[i] + "' is already defined");
    }
  }
  if (model.outputs.empty()) throw Error(ErrorCode::invalid_model, where + ": declares no outputs");
  for (const auto& name : model.outputs)
    if (!values.count(name)) throw Error(ErrorCode::invalid_model, where + ": output '" + name + "' is never produced");
  return values;
}

std::vector<Tensor> random_inputs(const Model& model, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<Tensor> result;
  for (const auto& input : model.inputs) {
    Tensor t(input.dtype, input.shape);
    std::int64_t lo = 0, hi = 2;
    if (auto it = model.metadata.find("input_range:" + input.name); it != model.metadata.end()) {
      const auto comma = it->second.find(',');
      lo = std::stoll(it->second.substr(0, comma));
      hi = std::stoll(it->second.substr(comma + 1));
    }
    switch (input.dtype) {
      case DType::f32:
        for (auto& v : t.values<float>()) v = rng.uniform(-1.f, 1.f);
        break;
      case DType::f16:
        for (auto& v : t.values<f16_t>()) v = float_to_f16(rng.uniform(-1.f, 1.f));
        break;
      case DType::bf16:
        for (auto& v : t.values<bf16_t>()) v = float_to_bf16(rng.uniform(-1.f, 1.f));
        break;
      case DType::i64:
        for (auto& v : t.values<std::int64_t>()) v = rng.integer(lo, hi);
        break;
      case DType::i32:
        for (auto& v : t.values<std::int32_t>()) v = static_cast<std::int32_t>(rng.integer(lo, hi));
        break;
      case DType::boolean:
        for (auto& v : t.values<std::uint8_t>()) v = static_cast<std::uint8_t>(rng.next() & 1u);
        break;
    }
    result.push_back(std::move(t));
  }
  return result;
}

}  // namespace loom
