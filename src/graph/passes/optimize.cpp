// optimize(): the pass pipeline, and binding symbolic input dimensions to sizes.
#include <algorithm>
#include <set>

#include "graph/passes/passes.hpp"
#include "graph/passes/sequences.hpp"
#include "loom/model.hpp"

namespace loom {
namespace graph::passes {
namespace {

std::string describe_dim(const ValueInfo& input, std::size_t axis) {
  const bool named = axis < input.dim_params.size() && !input.dim_params[axis].empty();
  return named ? "'" + input.dim_params[axis] + "'" : "axis " + std::to_string(axis);
}

}  // namespace

std::map<std::string, Shape> bind_inputs(Model& model, const OptimizeOptions& options) {
  const std::string where = "model '" + model.name + "'";
  for (const auto& [name, shape] : options.input_shapes) {
    bool found = false;
    for (const auto& input : model.inputs) found = found || input.name == name;
    if (!found)
      throw Error(ErrorCode::invalid_argument, where + ": a shape is given for '" + name + "', which is not an input");
  }
  for (const auto& [name, value] : options.constant_inputs) {
    bool found = false;
    for (const auto& input : model.inputs) found = found || input.name == name;
    if (!found)
      throw Error(ErrorCode::invalid_argument,
                  where + ": a constant value is given for '" + name + "', which is not an input");
  }

  // Sizes seen for each named dimension, so inputs sharing "batch" or "sequence" agree.
  std::map<std::string, std::pair<std::int64_t, std::string>> seen;
  std::map<std::string, Shape> bound;
  for (auto& input : model.inputs) {
    std::vector<std::int64_t> dims = input.shape.dims();
    const auto given = options.input_shapes.find(input.name);
    const auto constant = options.constant_inputs.find(input.name);
    const Shape* forced = given != options.input_shapes.end()         ? &given->second
                          : constant != options.constant_inputs.end() ? &constant->second.shape()
                                                                      : nullptr;
    if (forced) {
      if (forced->rank() != dims.size())
        throw Error(ErrorCode::invalid_argument, where + ": input '" + input.name + "' has rank " +
                                                     std::to_string(dims.size()) + ", the shape given is " +
                                                     forced->to_string());
      for (std::size_t axis = 0; axis < dims.size(); ++axis) {
        if (dims[axis] >= 0 && dims[axis] != (*forced)[axis])
          throw Error(ErrorCode::invalid_argument, where + ": input '" + input.name + "' is " +
                                                       input.shape.to_string() + " with a fixed " +
                                                       std::to_string(dims[axis]) + " at axis " + std::to_string(axis) +
                                                       "; the shape given is " + forced->to_string());
        if ((*forced)[axis] < 0)
          throw Error(ErrorCode::invalid_argument,
                      where + ": the shape given for '" + input.name + "' has a negative dimension");
        dims[axis] = (*forced)[axis];
      }
    } else {
      for (std::size_t axis = 0; axis < dims.size(); ++axis) {
        if (dims[axis] >= 0) continue;
        const std::string name = axis < input.dim_params.size() ? input.dim_params[axis] : std::string();
        const auto value = name.empty() ? options.dim_values.end() : options.dim_values.find(name);
        if (value != options.dim_values.end()) {
          dims[axis] = value->second;
        } else if (const auto earlier = seen.find(name); !name.empty() && earlier != seen.end()) {
          dims[axis] = earlier->second.first;
        } else if (options.default_dim_value > 0) {
          dims[axis] = options.default_dim_value;
        } else {
          throw Error(ErrorCode::invalid_argument,
                      where + ": input '" + input.name + "' axis " + std::to_string(axis) + " (" +
                          (name.empty() ? "symbolic" : "symbolic dim '" + name + "'") +
                          ") has no size; bind it with OptimizeOptions::input_shapes[\"" + input.name + "\"]" +
                          (name.empty() ? "" : ", dim_values[\"" + name + "\"]") +
                          " or default_dim_value (loom-bench: --shapes=" + input.name + ":DIMS" +
                          (name.empty() ? "" : " or --dims=" + name + "=N") + ")");
        }
        if (dims[axis] <= 0)
          throw Error(ErrorCode::invalid_argument, where + ": dimension " + describe_dim(input, axis) + " of '" +
                                                       input.name + "' must be positive, got " +
                                                       std::to_string(dims[axis]));
      }
    }
    for (std::size_t axis = 0; axis < dims.size() && axis < input.dim_params.size(); ++axis) {
      const std::string& name = input.dim_params[axis];
      if (name.empty()) continue;
      const auto [it, inserted] = seen.emplace(name, std::make_pair(dims[axis], input.name));
      if (!inserted && it->second.first != dims[axis])
        throw Error(ErrorCode::invalid_argument,
                    where + ": dimension '" + name + "' is " + std::to_string(it->second.first) + " in input '" +
                        it->second.second + "' but " + std::to_string(dims[axis]) + " in input '" + input.name + "'");
    }
    input.shape = Shape(dims);
    input.dim_params.clear();
    bound[input.name] = input.shape;
  }

  // Inputs fixed at load become initializers and leave the request's input list.
  for (const auto& [name, value] : options.constant_inputs) {
    auto it =
        std::find_if(model.inputs.begin(), model.inputs.end(), [&](const ValueInfo& v) { return v.name == name; });
    if (it->dtype != value.dtype())
      throw Error(ErrorCode::invalid_argument, where + ": input '" + name + "' is " +
                                                   std::string(dtype_name(it->dtype)) + ", the value given is " +
                                                   std::string(dtype_name(value.dtype())));
    model.initializers[name] = value;
    model.inputs.erase(it);
  }
  return bound;
}

}  // namespace graph::passes

bool has_symbolic_dims(const Model& model) noexcept {
  for (const auto& input : model.inputs)
    for (auto d : input.shape.dims())
      if (d < 0) return true;
  return false;
}

Model optimize(const Model& model, const OptimizeOptions& options, OptimizeReport* report) {
  Model result = model;
  OptimizeReport local;
  local.nodes_before = model.nodes.size();
  // Sequence and optional inputs become tensor inputs first, so that binding sees only tensors.
  graph::passes::LoweredValues lowered;
  graph::passes::lower_sequence_inputs(result, options, lowered);
  local.bound_inputs = graph::passes::bind_inputs(result, options);
  // Classes of the nodes as given (shape chains still in place), for what folding takes out.
  std::map<std::string, WorkClass> class_before;
  {
    const auto work = graph::passes::classify_work(result);
    for (std::size_t n = 0; n < result.nodes.size(); ++n) class_before[result.nodes[n].name] = work[n].work_class;
  }
  if (options.fold_constants || !lowered.empty() || graph::uses_lowered_ops(result)) {
    // The lowering of sequence and optional ops happens while folding, so it runs for them anyway.
    local.folded_nodes = graph::passes::fold_constants(result, false, &lowered, &local.folded);
    graph::passes::expand_sequence_outputs(result, lowered);
  }
  for (auto& folded : local.folded)
    if (const auto it = class_before.find(folded.name); it != class_before.end()) folded.work_class = it->second;
  if (options.remove_dead_code) local.removed_nodes += graph::passes::remove_no_ops(result);
  if (options.fuse_batch_norm) local.fused_batch_norms = graph::passes::fuse_batch_norm(result);
  if (options.remove_dead_code) local.removed_nodes += graph::passes::remove_dead_code(result);
  infer_shapes(result);  // the compiled graph must be consistent; errors name node and op
  local.nodes_after = result.nodes.size();
  {
    std::set<std::string> accounted;
    for (const auto& node : result.nodes) accounted.insert(node.name);
    for (const auto& folded : local.folded) accounted.insert(folded.name);
    for (const auto& node : model.nodes)
      if (!accounted.count(node.name)) {
        const auto it = class_before.find(node.name);
        local.removed.push_back({node.name, node.op_type, it != class_before.end() ? it->second : WorkClass::tensor});
      }
  }
  if (report) *report = std::move(local);
  return result;
}

}  // namespace loom
