// compile(): partition into Steps, plan memory, count each Step's work.
#include "plan/compiled_model.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "graph/ops.hpp"
#include "loom/error.hpp"

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

// Which processors hold each arena root, one bit per processor.
using Holders = std::vector<std::uint32_t>;

// The Step that copies `roots` from processor `from` to `to`, run on the stream of the side that is
// not the host (it copies between its own memory and host memory the other side's arena lives in).
Step copy_step(const ProcessorAssignment& a, std::vector<int> roots, int from, int to, const std::string& before) {
  const bool from_host = a.host[static_cast<std::size_t>(from)];
  const bool to_host = a.host[static_cast<std::size_t>(to)];
  if (!from_host && !to_host)
    throw Error(ErrorCode::invalid_argument,
                "placement: values cross from '" + a.processors[static_cast<std::size_t>(from)] + "' to '" +
                    a.processors[static_cast<std::size_t>(to)] +
                    "', and neither is the host: Loom copies only between the host and one other processor");
  Step st;
  st.name = "copy " + a.processors[static_cast<std::size_t>(from)] + "->" + a.processors[static_cast<std::size_t>(to)] +
            " " + before;
  st.processor = from_host ? to : from;
  st.copy_from = from;
  st.copy_to = to;
  std::sort(roots.begin(), roots.end());
  st.copies = std::move(roots);
  return st;
}

// Inserts the copy Steps of a plan across processors (see compile()), renumbers every value's
// def_step and last_step, and returns which processors hold each root after each Step.
std::vector<Holders> insert_copies(CompiledModel& cm, const ProcessorAssignment& a) {
  const std::size_t processors = a.processors.size();
  const int old_count = static_cast<int>(cm.steps.size());
  Holders held(cm.values.size(), 0);
  for (int id : cm.input_ids) held[static_cast<std::size_t>(root_of(cm.values, id))] = 1u;
  cm.weights_on.assign(processors, {});
  std::vector<std::set<int>> weights_read(processors);
  std::vector<Step> steps;
  std::vector<int> new_index(static_cast<std::size_t>(old_count) + 1, 0);
  std::vector<Holders> held_after;
  // Groups `roots` by the processor they come from (the lowest that holds each), one copy Step each.
  auto add_copies = [&](const std::vector<int>& roots, int to, const std::string& before) {
    std::map<int, std::vector<int>> by_source;
    for (int root : roots) {
      const std::uint32_t bits = held[static_cast<std::size_t>(root)];
      int from = 0;
      while (!(bits & (1u << from))) ++from;
      by_source[from].push_back(root);
    }
    for (auto& [from, group] : by_source) {
      for (int root : group) held[static_cast<std::size_t>(root)] |= 1u << to;
      steps.push_back(copy_step(a, std::move(group), from, to, before));
      held_after.push_back(held);
    }
  };
  for (int s = 0; s < old_count; ++s) {
    Step& st = cm.steps[static_cast<std::size_t>(s)];
    const int p = st.processor;
    std::vector<int> missing;
    for (std::size_t n : st.nodes) {
      // Shape and Size read no bytes: their input need not be there.
      if (graph::reads_only_metadata(cm.model.nodes[cm.nodes[n].node_index])) continue;
      for (int id : cm.nodes[n].inputs) {
        if (id < 0) continue;
        const int root = root_of(cm.values, id);
        const Value& v = cm.values[static_cast<std::size_t>(root)];
        if (v.storage == Storage::weight) {
          weights_read[static_cast<std::size_t>(p)].insert(root);
          continue;
        }
        if (v.def_step == s || (held[static_cast<std::size_t>(root)] & (1u << p))) continue;
        if (std::find(missing.begin(), missing.end(), root) == missing.end()) missing.push_back(root);
      }
    }
    add_copies(missing, p, "before " + st.name);
    new_index[static_cast<std::size_t>(s)] = static_cast<int>(steps.size());
    for (std::size_t n : st.nodes)
      for (int id : cm.nodes[n].outputs)
        if (id >= 0 && !cm.nodes[n].is_alias) held[static_cast<std::size_t>(root_of(cm.values, id))] = 1u << p;
    steps.push_back(std::move(st));
    held_after.push_back(held);
  }
  std::vector<int> outputs_elsewhere;
  for (int id : cm.output_ids) {
    const int root = root_of(cm.values, id);
    if (cm.values[static_cast<std::size_t>(root)].storage == Storage::weight ||
        (held[static_cast<std::size_t>(root)] & 1u))
      continue;
    if (std::find(outputs_elsewhere.begin(), outputs_elsewhere.end(), root) == outputs_elsewhere.end())
      outputs_elsewhere.push_back(root);
  }
  add_copies(outputs_elsewhere, 0, "for the outputs");
  const int new_count = static_cast<int>(steps.size());
  new_index[static_cast<std::size_t>(old_count)] = new_count;  // graph outputs: read after the last Step
  for (Value& v : cm.values) {
    if (v.def_step >= 0) v.def_step = new_index[static_cast<std::size_t>(v.def_step)];
    // A root's last reader is a Step of nodes or the end: each copy of it comes before a reader.
    if (v.last_step >= 0) v.last_step = new_index[static_cast<std::size_t>(v.last_step)];
  }
  cm.steps = std::move(steps);
  for (std::size_t p = 0; p < processors; ++p) cm.weights_on[p].assign(weights_read[p].begin(), weights_read[p].end());
  return held_after;
}

// Each processor's weight block: processor 0 the whole block at Value::offset, the others only the
// weights their Steps read, packed in value order.
void lay_out_processor_weights(CompiledModel& cm) {
  const std::size_t processors = cm.processors.size();
  cm.weight_offsets.assign(processors, std::vector<std::uint64_t>(cm.values.size(), kNoOffset));
  cm.weight_bytes_on.assign(processors, 0);
  for (std::size_t id = 0; id < cm.values.size(); ++id)
    if (cm.values[id].alias_of < 0 && cm.values[id].storage == Storage::weight)
      cm.weight_offsets[0][id] = cm.values[id].offset;
  cm.weight_bytes_on[0] = cm.weight_bytes;
  for (std::size_t p = 1; p < processors; ++p)
    for (int root : cm.weights_on[p]) {
      cm.weight_offsets[p][static_cast<std::size_t>(root)] = cm.weight_bytes_on[p];
      cm.weight_bytes_on[p] += align_up(cm.values[static_cast<std::size_t>(root)].bytes);
    }
}

}  // namespace

CompiledModel compile(const Model& model, DType compute_dtype, const DevicePeaks& peaks,
                      const ProcessorAssignment* assignment) {
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

  const bool across = assignment && assignment->processors.size() > 1;
  if (across && (assignment->node_processor.size() != model.nodes.size() ||
                 assignment->host.size() != assignment->processors.size() || assignment->processors.size() > 32))
    throw Error(ErrorCode::internal, "compile: a processor assignment of " +
                                         std::to_string(assignment->node_processor.size()) + " nodes for " +
                                         std::to_string(model.nodes.size()));

  // Steps: an anchor op opens a Step; pointwise and view ops join the Step before them. Across
  // processors, a non-view node placed elsewhere than the open Step opens one too.
  int step = -1;
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& node = model.nodes[n];
    const auto role = graph::op_role(node);
    const int processor = across ? assignment->node_processor[n] : 0;
    if (step < 0 || role == graph::OpRole::anchor ||
        (role != graph::OpRole::view && processor != cm.steps.back().processor)) {
      cm.steps.push_back(Step{});
      ++step;
      cm.steps.back().name = node.name.empty() ? node.op_type + "#" + std::to_string(n) : node.name;
      cm.steps.back().processor = processor;
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
  for (const auto& name : model.outputs) {
    const int id = cm.value_ids.at(name);
    cm.output_ids.push_back(id);
    cm.output_infos.push_back(infos.at(name));
    cm.values[root_of(cm.values, id)].last_step = static_cast<int>(cm.steps.size());
  }
  std::vector<Holders> held_after;
  if (across) {
    cm.processors = assignment->processors;
    held_after = insert_copies(cm, *assignment);
  }
  const int step_count = static_cast<int>(cm.steps.size());

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

  if (across) lay_out_processor_weights(cm);

  // Work and traffic per Step, counted per op: Loom's kernels are not fused across ops, so each
  // op reads its inputs from and writes its outputs to device memory.
  for (int s = 0; s < step_count; ++s) {
    Step& st = cm.steps[s];
    StepWork& info = st.info;
    info.name = st.name;
    if (across) {
      info.processor = cm.processors[static_cast<std::size_t>(st.processor)];
      if (st.is_copy()) {
        info.copy_from = cm.processors[static_cast<std::size_t>(st.copy_from)];
        info.copy_to = cm.processors[static_cast<std::size_t>(st.copy_to)];
      }
    }
    // A copy Step is memory work: its bytes read on one side and written on the other, no FLOPs.
    for (int id : st.copies) {
      info.ops.push_back("Copy");
      info.activation_bytes_read += cm.values[static_cast<std::size_t>(id)].bytes;
      info.bytes_written += cm.values[static_cast<std::size_t>(id)].bytes;
    }
    std::set<int> weights_touched, activations_touched(st.copies.begin(), st.copies.end());
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
        if (across && held_after[static_cast<std::size_t>(s)][static_cast<std::size_t>(id)] != 1u)
          st.live_on_first_processor_only = false;
      }
    }
    info.compute_us = info.flops / peaks.flops * 1e6;
    info.memory_us = static_cast<double>(info.weight_bytes + info.activation_bytes_read + info.bytes_written) /
                     peaks.bandwidth * 1e6;
  }
  return cm;
}

}  // namespace loom::plan
