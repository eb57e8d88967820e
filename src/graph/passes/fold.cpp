// Constant folding: shape-only computations (Shape → Gather → Concat → Reshape chains, Range over
// sizes, ConstantOfShape...) and anything else computable from initializers run once on the host,
// with the CPU backend's kernels, so the device never computes a shape and never waits for one.
#include <algorithm>
#include <set>

#include "backend/backend.hpp"
#include "graph/ops.hpp"
#include "graph/passes/passes.hpp"
#include "graph/passes/sequences.hpp"
#include "graph/subgraph.hpp"

namespace loom::graph::passes {
namespace {

std::string node_label(const Model& model, const Node& node, std::size_t index) {
  const auto source = model.metadata.find("source");
  return "model '" + model.name + "'" + (source != model.metadata.end() ? " (" + source->second + ")" : "") +
         ", node '" + (node.name.empty() ? "#" + std::to_string(index) : node.name) + "' (" + node.op_type + ")";
}

// Shape needs only its input's static shape (opset 15 start/end attributes, clamped).
Tensor shape_value(const Node& node, const Shape& shape) {
  const auto rank = static_cast<std::int64_t>(shape.rank());
  auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank); };
  const std::int64_t start = clamp(node.attrs.get_int("start", 0));
  const std::int64_t end = clamp(node.attrs.get_int("end", rank));
  std::vector<std::int64_t> dims;
  for (std::int64_t i = start; i < end; ++i) dims.push_back(shape[static_cast<std::size_t>(i)]);
  const auto count = static_cast<std::int64_t>(dims.size());
  return Tensor::from<std::int64_t>(Shape{count}, dims);
}

// Runs `node` once on the CPU backend; every present input is in `values`.
std::vector<Tensor> run_on_host(const Node& node, const std::vector<const ValueInfo*>& inputs,
                                const std::vector<const Tensor*>& values, const std::vector<ValueInfo>& outputs,
                                backend::Backend& cpu, backend::Stream& stream) {
  backend::KernelSpec spec;
  spec.node = &node;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    spec.inputs.push_back(inputs[i] ? backend::TensorDesc{inputs[i]->dtype, inputs[i]->shape, true}
                                    : backend::TensorDesc{DType::f32, Shape{}, false});
    spec.constants.push_back(values[i]);
  }
  std::vector<Tensor> results;
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    const bool present = !node.outputs[i].empty() && i < outputs.size();
    spec.outputs.push_back(present ? backend::TensorDesc{outputs[i].dtype, outputs[i].shape, true}
                                   : backend::TensorDesc{DType::f32, Shape{}, false});
    results.push_back(present ? Tensor(outputs[i].dtype, outputs[i].shape) : Tensor());
  }
  auto kernel = cpu.create_kernel(spec);
  std::vector<const void*> in_ptrs;
  for (const Tensor* v : values) in_ptrs.push_back(v ? v->data() : nullptr);
  std::vector<void*> out_ptrs;
  for (std::size_t i = 0; i < results.size(); ++i)
    out_ptrs.push_back(spec.outputs[i].present ? results[i].data() : nullptr);
  std::vector<std::byte> workspace(kernel->workspace_bytes());
  kernel->run(in_ptrs, out_ptrs, workspace.data(), stream);
  return results;
}

}  // namespace

std::size_t fold_constants(Model& model, bool fold_outputs, LoweredValues* lowered_values,
                           std::vector<LoadTimeNode>* folded_nodes) {
  LoweredValues local_lowered;
  LoweredValues& lowered = lowered_values ? *lowered_values : local_lowered;
  // What a sequence or optional input shows the nodes that read it (the lowering replaces them).
  const ValueInfo lowered_placeholder{"(sequence or optional)", DType::f32, Shape{}, {}};
  std::map<std::string, ValueInfo> infos;
  for (const auto& input : model.inputs) infos[input.name] = input;
  for (const auto& [name, tensor] : model.initializers)
    infos[name] = ValueInfo{name, tensor.dtype(), tensor.shape(), {}};
  const std::set<std::string> graph_outputs(model.outputs.begin(), model.outputs.end());

  std::unique_ptr<backend::Backend> cpu;
  std::unique_ptr<backend::Stream> stream;
  std::vector<Node> kept;
  std::size_t folded = 0;
  std::set<std::string> names;  // every name in use, for the values control flow adds (filled on first use)
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    Node& node = model.nodes[n];
    std::vector<const ValueInfo*> inputs;
    std::vector<const Tensor*> constants;
    bool all_constant = true;
    auto gather_inputs = [&] {
      inputs.clear();
      constants.clear();
      all_constant = true;
      for (const auto& name : node.inputs) {
        if (name.empty()) {
          inputs.push_back(nullptr);
          constants.push_back(nullptr);
          continue;
        }
        if (lowered.contains(name)) {
          inputs.push_back(&lowered_placeholder);
          constants.push_back(nullptr);
          all_constant = false;
          continue;
        }
        const auto info = infos.find(name);
        if (info == infos.end())
          throw Error(ErrorCode::invalid_model,
                      node_label(model, node, n) + ": input '" + name +
                          "' is not a graph input, an initializer or an earlier node's output");
        inputs.push_back(&info->second);
        const auto value = model.initializers.find(name);
        constants.push_back(value == model.initializers.end() ? nullptr : &value->second);
        all_constant = all_constant && value != model.initializers.end();
      }
    };
    gather_inputs();
    // An expansion's new constants, and its nodes in place of node n (walked next).
    const auto add_initializers = [&](auto& expansion) {
      for (auto& [name, tensor] : expansion.initializers) {
        infos[name] = ValueInfo{name, tensor.dtype(), tensor.shape(), {}};
        model.initializers[name] = std::move(tensor);
      }
    };
    const auto replace_node = [&](auto& expansion) {
      model.nodes.erase(model.nodes.begin() + static_cast<std::ptrdiff_t>(n));
      model.nodes.insert(model.nodes.begin() + static_cast<std::ptrdiff_t>(n),
                         std::make_move_iterator(expansion.nodes.begin()),
                         std::make_move_iterator(expansion.nodes.end()));
      --n;  // the first replacement node is next (unsigned wrap-around is well defined)
    };
    // Sequences and optionals: lowered to tensor values (sequences.cpp); the nodes replacing one
    // are walked next.
    {
      if (names.empty()) names = defined_names(model);
      ControlFlowExpansion expansion;
      try {
        expansion = lower_sequence_node(node, inputs, constants, lowered, names);
      } catch (const Error& e) {
        throw Error(e.code(), node_label(model, node, n) + ": " + e.what());
      }
      if (expansion.replaced) {
        add_initializers(expansion);
        replace_node(expansion);
        continue;
      }
    }
    // Control flow: subgraphs specialised for these shapes and constants, or the node replaced by
    // the branch it takes or the iterations it makes (control_flow.cpp); those nodes fold in turn.
    if (has_subgraphs(node)) {
      if (names.empty()) names = defined_names(model);
      ControlFlowExpansion expansion;
      try {
        expansion = expand_control_flow(node, inputs, constants, names);
      } catch (const Error& e) {
        throw Error(e.code(), node_label(model, node, n) + ": " + e.what());
      }
      add_initializers(expansion);
      if (expansion.replaced) {
        replace_node(expansion);
        continue;
      }
      node = std::move(expansion.nodes.front());
      gather_inputs();  // its implicit inputs may have changed
    }
    std::vector<ValueInfo> outputs;
    try {
      outputs = infer_node(node, inputs, constants);
    } catch (const Error& e) {
      throw Error(e.code(), node_label(model, node, n) + ": " + e.what());
    }
    for (std::size_t i = 0; i < node.outputs.size() && i < outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      outputs[i].name = node.outputs[i];
      infos[node.outputs[i]] = outputs[i];
    }

    // A graph output stays a node: request outputs live in the request's memory, not the weights.
    const bool feeds_output =
        !fold_outputs && std::any_of(node.outputs.begin(), node.outputs.end(),
                                     [&](const std::string& o) { return graph_outputs.count(o) != 0; });
    // Shape and Size need only the input's shape, known here even when its values are not.
    const bool shape_only = graph::reads_only_metadata(node) && inputs.size() == 1 && inputs[0];
    if (feeds_output || !(all_constant || shape_only)) {
      kept.push_back(std::move(node));
      continue;
    }
    // Recorded before the outputs move into initializers (a kernel the CPU lacks unrecords it).
    const auto record_folded = [&] {
      if (!folded_nodes) return;
      bool scalar = true;
      for (std::size_t i = 0; i < node.outputs.size() && i < outputs.size(); ++i)
        scalar = scalar && (node.outputs[i].empty() || scalar_sized(outputs[i]));
      folded_nodes->push_back({node.name, node.op_type, scalar ? WorkClass::scalar : WorkClass::tensor});
    };
    if (shape_only) {
      record_folded();
      model.initializers[node.outputs[0]] = node.op_type == "Size"
                                                ? Tensor::from<std::int64_t>(Shape{}, {inputs[0]->shape.numel()})
                                                : shape_value(node, inputs[0]->shape);
      ++folded;
      continue;
    }
    if (!cpu) {
      cpu = backend::make_cpu_backend();
      // One thread: an OpenMP team opened by the loading thread would outlive the load and make
      // the streams' teams sleep at every barrier (docs/cpu-threads.md, "Only stream threads open
      // teams"); folded values are small.
      cpu->set_host_threading({1, false});
      stream = cpu->create_stream();
    }
    std::vector<Tensor> results;
    try {
      results = run_on_host(node, inputs, constants, outputs, *cpu, *stream);
    } catch (const Error& e) {
      // The CPU backend lacks this case (a dtype, say): leave the node for the device.
      if (e.code() == ErrorCode::unsupported) {
        kept.push_back(std::move(node));
        continue;
      }
      throw Error(e.code(), node_label(model, node, n) + ": while folding constants: " + e.what());
    }
    record_folded();
    for (std::size_t i = 0; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) model.initializers[node.outputs[i]] = std::move(results[i]);
    ++folded;
  }
  model.nodes = std::move(kept);
  if (!lowered_values)
    for (const auto& output : model.outputs)
      if (lowered.contains(output))
        throw Error(ErrorCode::unsupported,
                    "model '" + model.name + "': output '" + output + "' is " +
                        (lowered.absent.count(output) ? "an empty optional" : "a sequence") +
                        " inside a subgraph; Loom lowers sequences and optionals at load, so the If holding it "
                        "needs a cond known at load (a Loop: M and cond)");
  return folded;
}

}  // namespace loom::graph::passes
