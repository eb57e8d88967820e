// Structural passes: no-op removal, BatchNorm folded into Conv, dead-code elimination.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "graph/passes/passes.hpp"

namespace loom::graph::passes {
namespace {

// How many node inputs and graph outputs read each value.
std::map<std::string, int> use_counts(const Model& model) {
  std::map<std::string, int> uses;
  for (const auto& node : model.nodes)
    for (const auto& name : node.inputs)
      if (!name.empty()) ++uses[name];
  for (const auto& name : model.outputs) ++uses[name];
  return uses;
}

// Reads a float tensor as f32 values; nullopt for other dtypes.
std::optional<std::vector<float>> float_values(const Tensor& t) {
  if (!is_floating(t.dtype())) return std::nullopt;
  const Tensor f = t.to(DType::f32);
  const auto v = f.values<float>();
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace

std::size_t remove_no_ops(Model& model) {
  const std::set<std::string> graph_outputs(model.outputs.begin(), model.outputs.end());
  std::size_t removed = 0;
  std::vector<Node> kept;
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    Node& node = model.nodes[n];
    bool no_op = false;
    if (node.op_type == "Identity") no_op = node.inputs.size() == 1 && node.outputs.size() == 1;
    if (node.op_type == "Dropout") {
      // Inference: output 0 is input 0. A used mask output, or training_mode given, keeps the node.
      const bool mask_used = node.outputs.size() > 1 && !node.outputs[1].empty();
      const bool training_given = node.inputs.size() > 2 && !node.inputs[2].empty();
      no_op = !mask_used && !training_given && !node.inputs.empty() && !node.inputs[0].empty();
    }
    if (!no_op || graph_outputs.count(node.outputs[0]) || node.inputs[0].empty()) {
      kept.push_back(std::move(node));
      continue;
    }
    const std::string from = node.outputs[0], to = node.inputs[0];
    for (std::size_t later = n + 1; later < model.nodes.size(); ++later)
      for (auto& name : model.nodes[later].inputs)
        if (name == from) name = to;
    ++removed;
  }
  model.nodes = std::move(kept);
  return removed;
}

std::size_t fuse_batch_norm(Model& model) {
  std::size_t fused = 0;
  auto uses = use_counts(model);
  std::map<std::string, std::size_t> producer;
  for (std::size_t n = 0; n < model.nodes.size(); ++n)
    for (const auto& name : model.nodes[n].outputs)
      if (!name.empty()) producer[name] = n;
  std::vector<bool> drop(model.nodes.size(), false);
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& bn = model.nodes[n];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() != 5 || bn.outputs.size() != 1) continue;
    if (bn.attrs.get_int("training_mode", 0) != 0) continue;
    const auto from = producer.find(bn.inputs[0]);
    if (from == producer.end() || uses[bn.inputs[0]] != 1) continue;
    Node& conv = model.nodes[from->second];
    if (conv.op_type != "Conv" || conv.outputs.size() != 1) continue;
    const auto weight = model.initializers.find(conv.inputs.size() > 1 ? conv.inputs[1] : "");
    if (weight == model.initializers.end() || weight->second.dtype() != DType::f32) continue;
    const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    if (has_bias && !model.initializers.count(conv.inputs[2])) continue;
    std::vector<std::vector<float>> params;
    for (std::size_t i = 1; i <= 4; ++i) {
      const auto p = model.initializers.find(bn.inputs[i]);
      if (p == model.initializers.end()) break;
      auto values = float_values(p->second);
      if (!values) break;
      params.push_back(std::move(*values));
    }
    const std::int64_t out_channels = weight->second.shape().rank() > 0 ? weight->second.shape()[0] : 0;
    if (params.size() != 4 || out_channels <= 0) continue;
    bool sizes_ok = true;
    for (const auto& p : params) sizes_ok = sizes_ok && static_cast<std::int64_t>(p.size()) == out_channels;
    if (!sizes_ok) continue;

    // y = scale * (conv(x) + b - mean) / sqrt(var + eps) + shift
    //   = conv_{W * k}(x) + (b - mean) * k + shift,   with k = scale / sqrt(var + eps) per channel.
    const float epsilon = bn.attrs.get_float("epsilon", 1e-5f);
    const auto& scale = params[0];
    const auto& shift = params[1];
    const auto& mean = params[2];
    const auto& var = params[3];
    Tensor new_weight = weight->second;
    auto w = new_weight.values<float>();
    const std::size_t per_channel = w.size() / static_cast<std::size_t>(out_channels);
    std::vector<float> bias(static_cast<std::size_t>(out_channels), 0.0f);
    if (has_bias) {
      const auto b = float_values(model.initializers.at(conv.inputs[2]));
      if (!b || b->size() != bias.size()) continue;
      bias = *b;
    }
    for (std::size_t c = 0; c < bias.size(); ++c) {
      const float k = scale[c] / std::sqrt(var[c] + epsilon);
      for (std::size_t i = 0; i < per_channel; ++i) w[c * per_channel + i] *= k;
      bias[c] = (bias[c] - mean[c]) * k + shift[c];
    }
    // New initializer names: the originals may be shared with other nodes.
    const std::string weight_name = conv.outputs[0] + ":fused_weight";
    const std::string bias_name = conv.outputs[0] + ":fused_bias";
    model.initializers[weight_name] = std::move(new_weight);
    model.initializers[bias_name] = Tensor::from<float>(Shape{out_channels}, bias);
    conv.inputs.resize(3);
    conv.inputs[1] = weight_name;
    conv.inputs[2] = bias_name;
    conv.outputs[0] = bn.outputs[0];
    drop[n] = true;
    ++fused;
  }
  std::vector<Node> kept;
  for (std::size_t n = 0; n < model.nodes.size(); ++n)
    if (!drop[n]) kept.push_back(std::move(model.nodes[n]));
  model.nodes = std::move(kept);
  return fused;
}

std::size_t remove_dead_code(Model& model) {
  std::set<std::string> needed(model.outputs.begin(), model.outputs.end());
  std::vector<bool> live(model.nodes.size(), false);
  for (std::size_t n = model.nodes.size(); n-- > 0;) {
    const Node& node = model.nodes[n];
    live[n] = std::any_of(node.outputs.begin(), node.outputs.end(),
                          [&](const std::string& o) { return !o.empty() && needed.count(o); });
    if (live[n])
      for (const auto& name : node.inputs)
        if (!name.empty()) needed.insert(name);
  }
  std::size_t removed = 0;
  std::vector<Node> kept;
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    if (live[n])
      kept.push_back(std::move(model.nodes[n]));
    else
      ++removed;
  }
  model.nodes = std::move(kept);
  for (auto it = model.initializers.begin(); it != model.initializers.end();)
    it = needed.count(it->first) ? std::next(it) : model.initializers.erase(it);
  return removed;
}

}  // namespace loom::graph::passes
