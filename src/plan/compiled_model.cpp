// compile(): partition into Steps, plan memory, count each Step's work.
#include "plan/compiled_model.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "graph/ops.hpp"

namespace loom::plan {

const Value& CompiledModel::storage_of(int id) const {
  const Value* v = &values.at(static_cast<std::size_t>(id));
  while (v->alias_of >= 0) v = &values[static_cast<std::size_t>(v->alias_of)];
  return *v;
}

namespace {

int root_of(const std::vector<Value>& values, int id) {
  while (values[static_cast<std::size_t>(id)].alias_of >= 0) id = values[static_cast<std::size_t>(id)].alias_of;
  return id;
}

// Offsets for arena values so that values whose Step lifetimes overlap never share bytes:
// largest first, each at the lowest offset clear of every overlapping value already placed.
std::uint64_t assign_arena_offsets(std::vector<Value>& values, const std::vector<int>& roots) {
  std::vector<int> order = roots;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return values[a].bytes > values[b].bytes; });
  std::vector<int> placed;
  std::uint64_t total = 0;
  for (int id : order) {
    Value& v = values[id];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;  // [begin, end) of overlapping values
    for (int other : placed) {
      const Value& o = values[other];
      if (o.def_step <= v.last_step && v.def_step <= o.last_step)
        busy.emplace_back(o.offset, o.offset + align_up(o.bytes));
    }
    std::sort(busy.begin(), busy.end());
    std::uint64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + align_up(v.bytes) <= begin) break;
      offset = std::max(offset, end);
    }
    v.offset = offset;
    total = std::max(total, offset + align_up(v.bytes));
    placed.push_back(id);
  }
  return total;
}

}  // namespace

CompiledModel compile(const Model& model, DType compute_dtype, const DevicePeaks& peaks) {
  if (compute_dtype != DType::f32 && compute_dtype != DType::f16)
    throw Error(ErrorCode::unsupported,
                "compute dtype " + std::string(dtype_name(compute_dtype)) + " (f32 or f16 only)");
  const auto infos = infer_shapes(model);

  CompiledModel cm;
  cm.model = model;
  cm.compute_dtype = compute_dtype;
  auto device_dtype = [&](DType d) { return is_floating(d) ? compute_dtype : d; };
  auto add_value = [&](const ValueInfo& info, Storage storage) {
    Value v;
    v.name = info.name;
    v.dtype = device_dtype(info.dtype);
    v.shape = info.shape;
    v.bytes = static_cast<std::uint64_t>(info.shape.numel()) * dtype_size(v.dtype);
    v.storage = storage;
    cm.value_ids[v.name] = static_cast<int>(cm.values.size());
    cm.values.push_back(std::move(v));
    return static_cast<int>(cm.values.size()) - 1;
  };
  for (const auto& input : model.inputs) cm.input_ids.push_back(add_value(infos.at(input.name), Storage::arena));
  for (const auto& [name, tensor] : model.initializers) {
    if (cm.value_ids.count(name)) continue;
    add_value(infos.at(name), Storage::weight);
  }

  // Steps: an anchor op opens a Step; pointwise and view ops join the Step before them.
  int step = -1;
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& node = model.nodes[n];
    const auto role = graph::op_role(node);
    if (step < 0 || role == graph::OpRole::anchor) {
      cm.steps.push_back(Step{});
      ++step;
      cm.steps.back().name = node.name.empty() ? node.op_type + "#" + std::to_string(n) : node.name;
    }
    PlannedNode pn;
    pn.node_index = n;
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        pn.inputs.push_back(-1);
        continue;
      }
      const int id = cm.value_ids.at(name);
      pn.inputs.push_back(id);
      Value& root = cm.values[root_of(cm.values, id)];
      root.last_step = std::max(root.last_step, step);
    }
    // A view of a value aliases it: same bytes, new shape.
    const bool view = role == graph::OpRole::view;
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) {
        pn.outputs.push_back(-1);
        continue;
      }
      const int id = add_value(infos.at(node.outputs[i]), Storage::arena);
      Value& v = cm.values[id];
      v.def_step = step;
      v.last_step = step;
      if (view) {
        const int root = root_of(cm.values, pn.inputs.at(0));
        v.alias_of = root;
        v.storage = cm.values[root].storage;
      }
      pn.outputs.push_back(id);
    }
    pn.is_alias = view;
    std::vector<const ValueInfo*> in_infos, out_infos;
    for (const auto& name : node.inputs) in_infos.push_back(name.empty() ? nullptr : &infos.at(name));
    for (const auto& name : node.outputs) out_infos.push_back(name.empty() ? nullptr : &infos.at(name));
    pn.flops = graph::node_flops(node, in_infos, out_infos);
    cm.steps.back().nodes.push_back(cm.nodes.size());
    cm.nodes.push_back(std::move(pn));
  }
  const int step_count = static_cast<int>(cm.steps.size());
  for (const auto& name : model.outputs) {
    const int id = cm.value_ids.at(name);
    cm.output_ids.push_back(id);
    cm.output_infos.push_back(infos.at(name));
    cm.values[root_of(cm.values, id)].last_step = step_count;
  }

  // Weights: one block, uploaded once. Arena: every request's inputs, intermediates and outputs.
  std::vector<int> arena_roots;
  for (std::size_t id = 0; id < cm.values.size(); ++id) {
    Value& v = cm.values[id];
    if (v.alias_of >= 0) continue;
    if (v.storage == Storage::weight) {
      v.offset = cm.weight_bytes;
      cm.weight_bytes += align_up(v.bytes);
    } else {
      arena_roots.push_back(static_cast<int>(id));
    }
  }
  cm.arena_bytes = assign_arena_offsets(cm.values, arena_roots);
  for (auto& v : cm.values)
    if (v.alias_of >= 0) {
      const Value& root = cm.values[root_of(cm.values, static_cast<int>(&v - cm.values.data()))];
      v.offset = root.offset;
      v.storage = root.storage;
    }

  // Work and traffic per Step, counted per op: Loom's kernels are not fused across ops, so each
  // op reads its inputs from and writes its outputs to device memory.
  for (int s = 0; s < step_count; ++s) {
    Step& st = cm.steps[s];
    StepWork& info = st.info;
    info.name = st.name;
    std::set<int> weights_touched, activations_touched;
    for (std::size_t n : st.nodes) {
      const PlannedNode& pn = cm.nodes[n];
      info.ops.push_back(model.nodes[pn.node_index].op_type);
      info.flops += pn.flops;
      if (pn.is_alias) continue;
      for (int id : pn.inputs) {
        if (id < 0) continue;
        const Value& root = cm.storage_of(id);
        const int root_id = root_of(cm.values, id);
        if (root.storage == Storage::weight) {
          if (weights_touched.insert(root_id).second) info.weight_bytes += root.bytes;
        } else {
          info.activation_bytes_read += cm.values[id].bytes;
          activations_touched.insert(root_id);
        }
      }
      for (int id : pn.outputs) {
        if (id < 0) continue;
        info.bytes_written += cm.values[id].bytes;
        activations_touched.insert(root_of(cm.values, id));
      }
    }
    info.working_set_bytes = info.weight_bytes;
    for (int id : activations_touched) info.working_set_bytes += cm.values[id].bytes;
    for (int id : arena_roots) {
      const Value& v = cm.values[id];
      if (v.def_step <= s && v.last_step > s) {
        st.live_after.push_back(id);
        info.live_bytes_after += v.bytes;
      }
    }
    info.compute_us = info.flops / peaks.flops * 1e6;
    info.memory_us = static_cast<double>(info.weight_bytes + info.activation_bytes_read + info.bytes_written) /
                     peaks.bandwidth * 1e6;
  }
  return cm;
}

}  // namespace loom::plan
