// Compare mode (debug_compare.hpp): the reference twins, the Step-by-Step comparison the dispatcher
// asks for, and the report Executor::debug_report() hands out.
#include "runtime/debug_compare.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backend/open_backend.hpp"
#include "runtime/executor_impl.hpp"
#include "runtime/loaded_model.hpp"

namespace loom::runtime {

struct DebugCompare::Twin {
  std::unique_ptr<LoadedModel> model;
  DebugModelSummary summary;
  std::size_t load_index = 0;
};

namespace {

// The twin is compared Step by Step, node by node: the two plans must have the same Steps, each
// with the same nodes in the same order and outputs of the same shapes (dtypes differ: the device
// may compute in f16).
void check_same_steps(const plan::CompiledModel& device, const plan::CompiledModel& twin, const std::string& model) {
  const auto refuse = [&](const std::string& what) {
    throw Error(ErrorCode::unsupported, "debug compare: model '" + model +
                                            "' compiles differently for the CPU reference (" + what +
                                            "), so its Steps cannot be compared one by one");
  };
  if (device.steps.size() != twin.steps.size())
    refuse(std::to_string(device.steps.size()) + " Steps on the device, " + std::to_string(twin.steps.size()) +
           " on the CPU");
  if (device.input_ids.size() != twin.input_ids.size()) refuse("the inputs differ");
  for (std::size_t s = 0; s < device.steps.size(); ++s) {
    const plan::Step& a = device.steps[s];
    const plan::Step& b = twin.steps[s];
    const std::string where = "Step " + std::to_string(s) + " '" + a.name + "'";
    if (a.name != b.name || a.nodes.size() != b.nodes.size())
      refuse(where + " of " + std::to_string(a.nodes.size()) + " nodes is '" + b.name + "' of " +
             std::to_string(b.nodes.size()) + " on the CPU");
    for (std::size_t k = 0; k < a.nodes.size(); ++k) {
      const plan::PlannedNode& pa = device.nodes[a.nodes[k]];
      const plan::PlannedNode& pb = twin.nodes[b.nodes[k]];
      const Node& na = device.model.nodes[pa.node_index];
      const Node& nb = twin.model.nodes[pb.node_index];
      bool same = na.name == nb.name && na.op_type == nb.op_type && pa.is_alias == pb.is_alias &&
                  pa.outputs.size() == pb.outputs.size();
      for (std::size_t j = 0; same && j < pa.outputs.size(); ++j) {
        const int ia = pa.outputs[j], ib = pb.outputs[j];
        same = (ia < 0) == (ib < 0) && (ia < 0 || device.values[static_cast<std::size_t>(ia)].shape ==
                                                      twin.values[static_cast<std::size_t>(ib)].shape);
      }
      if (!same)
        refuse(where + ", node " + std::to_string(k) + ": '" + na.name + "' (" + na.op_type + ") on the device, '" +
               nb.name + "' (" + nb.op_type + ") on the CPU, or their outputs differ");
    }
  }
}

// One value a Step writes, named on both sides, and the node that writes it.
struct ComparedValue {
  int device_id = -1;
  int reference_id = -1;
  std::size_t node = 0;  // into the device plan's nodes
};

// The values Step `step` writes on both sides, in node order. Views are skipped (they alias a value
// compared where it is written), and so are values inside a fused kernel that nothing outside it
// reads (LoadedModel::value_written): their bytes are whatever was there before. The reference
// loads without fusion, so every value the device writes is compared.
std::vector<ComparedValue> compared_values(const LoadedModel& device, const LoadedModel& reference, std::size_t step) {
  const plan::CompiledModel& a = device.plan();
  const plan::CompiledModel& b = reference.plan();
  std::vector<ComparedValue> values;
  for (std::size_t k = 0; k < a.steps[step].nodes.size(); ++k) {
    const std::size_t n = a.steps[step].nodes[k];
    const plan::PlannedNode& node = a.nodes[n];
    if (node.is_alias) continue;
    const plan::PlannedNode& twin = b.nodes[b.steps[step].nodes[k]];  // check_same_steps matched them
    for (std::size_t j = 0; j < node.outputs.size(); ++j)
      if (node.outputs[j] >= 0 && device.value_written(node.outputs[j]))
        values.push_back({node.outputs[j], twin.outputs[j], n});
  }
  return values;
}

// The values `ids` of `model` for the request whose arena is `arena`, copied to the host. The
// copies go on the model's stream, after the Step.
std::vector<Tensor> copy_values(LoadedModel& model, const std::vector<int>& ids, void* arena) {
  const plan::CompiledModel& plan = model.plan();
  std::vector<Tensor> values;
  for (int id : ids) {
    const plan::Value& value = plan.values[static_cast<std::size_t>(id)];
    Tensor& copy = values.emplace_back(value.dtype, value.shape);
    model.stream().copy_to_host(copy.data(), model.address(id, arena), copy.bytes());
  }
  model.stream().synchronize();
  return values;
}

Tensor converted(const Tensor& tensor, DType dtype) { return tensor.dtype() == dtype ? tensor : tensor.to(dtype); }

}  // namespace

void check_debug_options(ExecutorOptions& options) {
  if (options.debug != DebugMode::off && options.debug != DebugMode::cpu && options.debug != DebugMode::compare)
    throw Error(ErrorCode::invalid_argument,
                "ExecutorOptions::debug = " + std::to_string(static_cast<int>(options.debug)) +
                    " is not a debug mode (off, cpu, compare)");
  if (options.debug_tolerance) check_debug_tolerance(*options.debug_tolerance);
  if (options.debug == DebugMode::cpu) options.compute_dtype = DType::f32;
}

DebugTolerance debug_tolerance(const ExecutorOptions& options) {
  return options.debug_tolerance.value_or(default_debug_tolerance(options.compute_dtype));
}

std::string debug_device_name(const ExecutorOptions& options, const std::string& device_name) {
  switch (options.debug) {
    case DebugMode::cpu:
      return device_name + " (debug=cpu: the CPU backend in place of device '" + options.device + "')";
    case DebugMode::compare:
      return device_name + " (debug=compare: each Step checked against the CPU)";
    case DebugMode::off:
      break;
  }
  return device_name;
}

DebugCompare::DebugCompare(DebugTolerance tolerance, std::string device_name)
    : tolerance_(tolerance),
      device_name_(std::move(device_name)),
      cpu_(backend::open_backend("cpu")),
      pool_(std::make_unique<MemoryPool>(*cpu_)) {}

DebugCompare::~DebugCompare() = default;

void DebugCompare::add_model(const Model& model, const LoadedModel& device_model) {
  auto twin = std::make_unique<Twin>();
  // One kernel per op, so that the reference writes every value of every Step, whatever the device
  // fuses. (The CPU backend's fusion changes no bit: a CPU device compares exactly equal.)
  twin->model = std::make_unique<LoadedModel>(
      model, device_model.name(), device_model.index(), DType::f32, *cpu_, *pool_,
      plan::DevicePeaks{cpu_->peak_flops(DType::f32), cpu_->peak_bandwidth()}, 0, 0, KernelFusion::off);
  check_same_steps(device_model.plan(), twin->model->plan(), device_model.name());
  twin->summary.model = device_model.name();
  twin->load_index = device_model.index();
  std::lock_guard lock(mutex_);
  if (!twins_.emplace(device_model.name(), std::move(twin)).second)
    throw Error(ErrorCode::invalid_argument, "a model named '" + device_model.name() + "' is already loaded");
}

DebugCompare::Twin& DebugCompare::twin_of(const LoadedModel& device_model) {
  std::lock_guard lock(mutex_);
  const auto it = twins_.find(device_model.name());
  if (it == twins_.end())
    throw Error(ErrorCode::internal, "debug compare: model '" + device_model.name() + "' has no CPU reference");
  return *it->second;
}

void DebugCompare::step_completed(Request& request, std::size_t step) {
  if (request.debug && !request.debug->twin_arena.get()) return;  // diverged already
  Twin& twin = twin_of(*request.model);
  try {
    if (!request.debug) {
      // The request's first Step: its inputs as the device got them, in the model's dtypes for the
      // report and in the twin's for its arena.
      auto state = std::make_unique<DebugRequestState>();
      const auto& declared = request.model->info().inputs;
      const plan::CompiledModel& reference = twin.model->plan();
      std::vector<Tensor> twin_inputs;
      for (std::size_t i = 0; i < request.inputs.size(); ++i) {
        state->inputs.push_back(converted(request.inputs[i], declared.at(i).dtype));
        const int id = reference.input_ids.at(i);
        twin_inputs.push_back(converted(state->inputs.back(), reference.values[static_cast<std::size_t>(id)].dtype));
      }
      state->twin_arena = pool_->acquire(twin.model->request_arena_bytes());
      twin.model->upload_inputs(state->twin_arena.get(), twin_inputs, twin.model->stream());
      twin.model->stream().synchronize();
      request.debug = std::move(state);
    }
    compare_step(request, twin, step);
  } catch (const Error& e) {
    throw Error(e.code(), "debug compare: model '" + request.model->name() + "', request " +
                              std::to_string(request.id) + ", Step " + std::to_string(step) + ": " + e.what());
  }
}

void DebugCompare::compare_step(Request& request, Twin& twin, std::size_t step) {
  LoadedModel& device = *request.model;
  LoadedModel& reference = *twin.model;
  void* twin_arena = request.debug->twin_arena.get();
  reference.run_step(step, twin_arena);
  const std::vector<ComparedValue> compared = compared_values(device, reference, step);
  std::vector<int> device_ids, reference_ids;
  for (const ComparedValue& value : compared) {
    device_ids.push_back(value.device_id);
    reference_ids.push_back(value.reference_id);
  }
  const std::vector<Tensor> on_device = copy_values(device, device_ids, request.arena.get());
  const std::vector<Tensor> on_reference = copy_values(reference, reference_ids, twin_arena);

  // The values in node order; the first beyond tolerance blames its node.
  const plan::CompiledModel& plan = device.plan();
  DebugModelSummary matched;  // this Step's figures
  for (std::size_t index = 0; index < compared.size(); ++index) {
    const TensorDifference diff = compare_tensors(on_device[index], on_reference[index], tolerance_);
    ++matched.values_compared;
    if (diff.beyond == 0) {
      matched.max_abs_diff = std::max(matched.max_abs_diff, diff.max_abs);
      matched.max_rel_diff = std::max(matched.max_rel_diff, diff.max_rel);
      continue;
    }
    DebugDivergence v;
    v.model = device.name();
    v.request_id = request.id;
    v.step_index = step;
    v.step_count = plan.steps.size();
    v.step_name = plan.steps[step].name;
    for (std::size_t m : plan.steps[step].nodes) {
      const Node& graph_node = plan.model.nodes[plan.nodes[m].node_index];
      v.step_nodes.push_back({graph_node.name, graph_node.op_type});
    }
    const Node& blamed = plan.model.nodes[plan.nodes[compared[index].node].node_index];
    const plan::Value& value = plan.values[static_cast<std::size_t>(compared[index].device_id)];
    v.node = blamed.name;
    v.op_type = blamed.op_type;
    v.value = value.name;
    v.value_shape = value.shape;
    v.difference = diff;
    v.tolerance = tolerance_;
    v.device = device_name_;
    for (const ValueInfo& input : device.info().inputs) v.input_names.push_back(input.name);
    v.inputs = std::move(request.debug->inputs);
    request.debug->twin_arena.reset();  // later Steps of this request are not compared
    std::lock_guard lock(mutex_);
    DebugModelSummary& summary = twin.summary;
    ++summary.requests_compared;
    ++summary.steps_compared;
    ++summary.divergent_requests;
    summary.values_compared += matched.values_compared;
    if (divergences_.size() < kMaxDebugDivergences) divergences_.push_back(std::move(v));
    return;
  }
  const bool last = step + 1 == plan.steps.size();
  if (last) request.debug->twin_arena.reset();
  std::lock_guard lock(mutex_);
  DebugModelSummary& summary = twin.summary;
  ++summary.steps_compared;
  summary.values_compared += matched.values_compared;
  summary.max_abs_diff = std::max(summary.max_abs_diff, matched.max_abs_diff);
  summary.max_rel_diff = std::max(summary.max_rel_diff, matched.max_rel_diff);
  if (last) ++summary.requests_compared;
}

DebugReport DebugCompare::report() const {
  DebugReport report;
  report.mode = DebugMode::compare;
  report.device = device_name_;
  report.tolerance = tolerance_;
  std::lock_guard lock(mutex_);
  std::vector<const Twin*> in_load_order;
  for (const auto& [name, twin] : twins_) in_load_order.push_back(twin.get());
  std::sort(in_load_order.begin(), in_load_order.end(),
            [](const Twin* a, const Twin* b) { return a->load_index < b->load_index; });
  for (const Twin* twin : in_load_order) report.models.push_back(twin->summary);
  report.divergences = divergences_;
  return report;
}

void DebugCompare::add_counts(ExecutorStats& stats) const {
  std::lock_guard lock(mutex_);
  for (const auto& [name, twin] : twins_) {
    stats.debug_steps_compared += twin->summary.steps_compared;
    stats.debug_divergences += twin->summary.divergent_requests;
  }
}

}  // namespace loom::runtime

namespace loom {

// The facade's one debug call lives here, beside what it reports.
DebugReport Executor::debug_report() const {
  if (impl_->debug_compare) return impl_->debug_compare->report();
  DebugReport report;
  report.mode = impl_->options.debug;
  report.device = impl_->device->device_name();
  return report;
}

}  // namespace loom
