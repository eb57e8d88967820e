// LoadedModel: kernels created and weights uploaded once per model.
#include "runtime/loaded_model.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "graph/ops.hpp"
#include "loom/error.hpp"
#include "profile/fingerprint.hpp"
#include "trace/nvtx.hpp"

namespace loom::runtime {

LoadedModel::LoadedModel(const Model& model, std::string name, std::size_t index, DType compute_dtype,
                         backend::Backend& device, MemoryPool& pool, const plan::DevicePeaks& peaks,
                         int stream_priority, int persistent_grid_max_sms, KernelFusion fusion,
                         LoadedModel* shares_with, const AcrossProcessors* across)
    : name_(std::move(name)), index_(index), device_(&device) {
  const bool many = across && across->assignment.processors.size() > 1;
  if (many && shares_with)
    throw Error(ErrorCode::internal, "model '" + name_ + "': a shape's plan cannot run across processors");
  try {
    plan_ = plan::compile(model, compute_dtype, peaks, many ? &across->assignment : nullptr);
  } catch (const Error& e) {
    if (!many) throw;
    throw Error(e.code(), "model '" + name_ + "': " + e.what());
  }
  if (shares_with) {
    stream_ = shares_with->stream_;
  } else {
    own_stream_ = device.create_stream(stream_priority);
    stream_ = own_stream_.get();
  }
  if (many)
    for (std::size_t p = 1; p < across->handles.size(); ++p)
      sides_.push_back(
          Side{across->handles[p], across->handles[p].backend->create_stream(stream_priority), {}, {}, {}});
  create_kernels(persistent_grid_max_sms, fusion);
  // Scratch per processor: the largest its kernels need.
  std::vector<std::size_t> workspace_on(sides_.size() + 1, 0);
  for (const auto& st : plan_.steps)
    for (std::size_t n : st.nodes)
      if (kernels_[n])
        workspace_on[static_cast<std::size_t>(st.processor)] =
            std::max(workspace_on[static_cast<std::size_t>(st.processor)], kernels_[n]->workspace_bytes());
  const std::size_t workspace = workspace_on[0];
  if (workspace > 0) workspace_ = pool.acquire(workspace);
  for (std::size_t p = 1; p < workspace_on.size(); ++p)
    if (workspace_on[p] > 0) sides_[p - 1].workspace = sides_[p - 1].handle.pool->acquire(workspace_on[p]);

  // The Steps as compiled; loading adds its facts to these, the plan stays as compiled.
  for (const auto& st : plan_.steps) info_.steps.push_back(StepInfo{st.info});

  // Steps that can pause inside, and the request-owned area their kernels resume from.
  std::uint64_t resume_state = 0;
  bool any_resumable = false;
  for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
    for (std::size_t n : plan_.steps[s].nodes) {
      if (!kernels_[n] || !kernels_[n]->resumable()) continue;
      info_.steps[s].pausable_inside = true;
      any_resumable = true;
      resume_state = std::max<std::uint64_t>(resume_state, kernels_[n]->resume_state_bytes());
    }
  }
  request_arena_bytes_ = plan_.arena_bytes;
  if (any_resumable) {
    progress_offset_ = plan::align_up(plan_.arena_bytes);
    resume_state_offset_ = progress_offset_ + plan::align_up(sizeof(backend::ResumeProgress));
    request_arena_bytes_ = resume_state_offset_ + plan::align_up(resume_state);
  }

  if (shares_with) {
    // Not on the shared stream: the dispatcher may be running, or capturing a graph of, a Step of
    // another shape there while this plan is made on a submitting thread.
    const std::unique_ptr<backend::Stream> upload = device.create_stream(0);
    upload_weights(pool, shares_with, *upload);
  } else {
    upload_weights(pool, nullptr, *stream_);
  }
  for (std::size_t p = 1; p <= sides_.size(); ++p) upload_side_weights(sides_[p - 1], static_cast<int>(p));

  info_.name = name_;
  info_.compute_dtype = plan_.compute_dtype;
  info_.inputs = plan_.model.inputs;
  info_.outputs = plan_.output_infos;
  for (const auto& st : plan_.steps) step_labels_.push_back(name_ + "/" + st.name);
  for (int id : plan_.output_ids) {
    const auto& value = plan_.values[static_cast<std::size_t>(id)];
    output_bytes_ += static_cast<std::uint64_t>(value.shape.numel()) * dtype_size(value.dtype);
  }
  info_.weight_bytes = own_weight_bytes_;
  info_.activation_bytes = request_arena_bytes_;
  info_.resume_bytes = request_arena_bytes_ - plan_.arena_bytes;
  info_.workspace_bytes = workspace;

  // Graphs capture one stream's work; a model across processors hands over between streams.
  graphs_supported_ = device.supports_graphs() && sides_.empty();
  set_graphs_enabled(true);
}

namespace {

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

}  // namespace

// Weights: one block, converted to the device dtype, uploaded once. A weight the shared plan
// holds already (same name and contents) is read from its block instead.
void LoadedModel::upload_weights(MemoryPool& pool, const LoadedModel* shares_with, backend::Stream& upload) {
  weight_addresses_.assign(plan_.values.size(), nullptr);
  struct Own {
    std::size_t id;
    const Tensor* tensor;  // null: a weight value without an initializer, left zero
    std::uint64_t offset;
  };
  std::vector<Own> own;
  std::uint64_t bytes = 0;
  // Every weight the plan laid out (so an unshared plan's block is plan().weight_bytes), in its order.
  for (std::size_t id = 0; id < plan_.values.size(); ++id) {
    const auto& v = plan_.values[id];
    if (v.alias_of >= 0 || v.storage != plan::Storage::weight) continue;
    const auto initializer = plan_.model.initializers.find(v.name);
    const Tensor* tensor = initializer == plan_.model.initializers.end() ? nullptr : &initializer->second;
    if (shares_with && tensor) {
      const auto& other = shares_with->plan_;
      const auto shared_id = other.value_ids.find(v.name);
      const auto shared_tensor = other.model.initializers.find(v.name);
      if (shared_id != other.value_ids.end() && shared_tensor != other.model.initializers.end() &&
          other.values[static_cast<std::size_t>(shared_id->second)].dtype == v.dtype &&
          shares_with->weight_addresses_[static_cast<std::size_t>(shared_id->second)] &&
          same_tensor(shared_tensor->second, *tensor)) {
        weight_addresses_[id] = shares_with->weight_addresses_[static_cast<std::size_t>(shared_id->second)];
        continue;
      }
    }
    own.push_back({id, tensor, bytes});
    bytes += plan::align_up(v.bytes);
  }
  own_weight_bytes_ = bytes;
  if (bytes == 0) return;
  weights_ = pool.acquire(bytes);
  std::vector<std::byte> staging(bytes);
  for (const Own& w : own) {
    weight_addresses_[w.id] = static_cast<std::byte*>(weights_.get()) + w.offset;
    if (!w.tensor) continue;
    const auto& v = plan_.values[w.id];
    const Tensor converted = w.tensor->dtype() == v.dtype ? *w.tensor : w.tensor->to(v.dtype);
    std::memcpy(staging.data() + w.offset, converted.data(), converted.bytes());
  }
  upload.copy_to_device(weights_.get(), staging.data(), staging.size());
  upload.synchronize();
}

void LoadedModel::raise_request_arena_bytes(std::uint64_t bytes) noexcept {
  request_arena_bytes_ = std::max(request_arena_bytes_, bytes);
  info_.activation_bytes = request_arena_bytes_;
}

void LoadedModel::upload_side_weights(Side& side, int processor) {
  const auto p = static_cast<std::size_t>(processor);
  if (plan_.weight_bytes_on[p] == 0) return;
  side.weights = side.handle.pool->acquire(plan_.weight_bytes_on[p]);
  std::vector<std::byte> staging(plan_.weight_bytes_on[p]);
  for (int root : plan_.weights_on[p]) {
    const auto& v = plan_.values[static_cast<std::size_t>(root)];
    const Tensor& tensor = plan_.model.initializers.at(v.name);
    const Tensor converted = tensor.dtype() == v.dtype ? tensor : tensor.to(v.dtype);
    std::memcpy(staging.data() + plan_.weight_offsets[p][static_cast<std::size_t>(root)], converted.data(),
                converted.bytes());
  }
  side.stream->copy_to_device(side.weights.get(), staging.data(), staging.size());
  side.stream->synchronize();
}

backend::Backend& LoadedModel::backend_of(int processor) const {
  return processor == 0 ? *device_ : *sides_.at(static_cast<std::size_t>(processor) - 1).handle.backend;
}

backend::Stream& LoadedModel::step_stream(std::size_t step) {
  const int p = plan_.steps.at(step).processor;
  return p == 0 ? *stream_ : *sides_[static_cast<std::size_t>(p) - 1].stream;
}

std::vector<backend::Stream*> LoadedModel::streams() {
  std::vector<backend::Stream*> all{stream_};
  for (auto& side : sides_) all.push_back(side.stream.get());
  return all;
}

void LoadedModel::order_step_after(std::size_t step, backend::Event& event) {
  order_after(step_stream(step), backend_of(plan_.steps.at(step).processor), event, *device_);
}

void LoadedModel::order_after_step(std::size_t step, backend::Stream& consumer) {
  const int p = plan_.steps.at(step).processor;
  order_after(consumer, *device_, *step_stream(step).record(), backend_of(p));
}

std::byte* LoadedModel::arena_on(int processor, void* arena) {
  if (processor == 0) return static_cast<std::byte*>(arena);
  Side& side = sides_[static_cast<std::size_t>(processor) - 1];
  auto it = side.arenas.find(arena);
  if (it == side.arenas.end()) it = side.arenas.emplace(arena, side.handle.pool->acquire(request_arena_bytes_)).first;
  return static_cast<std::byte*>(it->second.get());
}

void* LoadedModel::address_on(int processor, int id, void* arena) {
  if (processor == 0 || id < 0) return address(id, arena);
  const auto& v = plan_.storage_of(id);
  if (v.storage == plan::Storage::arena) return arena_on(processor, arena) + v.offset;
  const auto p = static_cast<std::size_t>(processor);
  const std::uint64_t offset = plan_.weight_offsets[p][static_cast<std::size_t>(&v - plan_.values.data())];
  if (offset == plan::kNoOffset)
    throw Error(ErrorCode::internal,
                "model '" + name_ + "': weight '" + v.name + "' is not on processor '" + plan_.processors[p] + "'");
  return static_cast<std::byte*>(sides_[p - 1].weights.get()) + offset;
}

void LoadedModel::hand_over_before(std::size_t step, void* arena) {
  if (step == 0 || plan_.steps[step].processor == plan_.steps[step - 1].processor) return;
  auto it = handoffs_.find(arena);
  if (it == handoffs_.end()) return;
  order_after(step_stream(step), backend_of(plan_.steps[step].processor), *it->second,
              backend_of(plan_.steps[step - 1].processor));
  handoffs_.erase(it);
}

void LoadedModel::hand_over_after(std::size_t step, void* arena) {
  if (step + 1 >= plan_.steps.size() || plan_.steps[step + 1].processor == plan_.steps[step].processor) return;
  handoffs_[arena] = step_stream(step).record();
}

// A copy Step runs on the stream of its side off the host: host memory is the other side's arena.
void LoadedModel::launch_copies(std::size_t step, void* arena) {
  const auto& st = plan_.steps[step];
  backend::Stream& stream = step_stream(step);
  for (int id : st.copies) {
    void* dst = address_on(st.copy_to, id, arena);
    const void* src = address_on(st.copy_from, id, arena);
    const std::size_t bytes = plan_.values[static_cast<std::size_t>(id)].bytes;
    if (st.processor == st.copy_to)
      stream.copy_to_device(dst, src, bytes);
    else
      stream.copy_to_host(dst, src, bytes);
  }
}

backend::KernelSpec LoadedModel::kernel_spec(std::size_t node, int persistent_grid_max_sms) const {
  const auto& pn = plan_.nodes[node];
  backend::KernelSpec spec;
  spec.node = &plan_.model.nodes[pn.node_index];
  spec.persistent_grid_max_sms = persistent_grid_max_sms;
  spec.device_float_dtype = plan_.compute_dtype;
  auto describe = [&](int id) {
    if (id < 0) return backend::TensorDesc{DType::f32, Shape{}, false};
    const auto& v = plan_.values[static_cast<std::size_t>(id)];
    return backend::TensorDesc{v.dtype, v.shape, true};
  };
  for (int id : pn.inputs) {
    spec.inputs.push_back(describe(id));
    const Tensor* constant = nullptr;
    if (id >= 0) {
      auto it = plan_.model.initializers.find(plan_.values[static_cast<std::size_t>(id)].name);
      if (it != plan_.model.initializers.end()) constant = &it->second;
    }
    spec.constants.push_back(constant);
  }
  for (int id : pn.outputs) spec.outputs.push_back(describe(id));
  return spec;
}

backend::FusionCandidate LoadedModel::fusion_candidate(std::size_t step, int persistent_grid_max_sms) const {
  backend::FusionCandidate candidate;
  for (std::size_t n : plan_.steps[step].nodes) {
    const auto& pn = plan_.nodes[n];
    candidate.nodes.push_back({kernel_spec(n, persistent_grid_max_sms), pn.inputs, pn.outputs, pn.is_alias});
    for (int id : pn.outputs)
      if (id >= 0 && plan_.storage_of(id).last_step > static_cast<int>(step)) candidate.read_after_step.push_back(id);
  }
  return candidate;
}

void LoadedModel::create_kernels(int persistent_grid_max_sms, KernelFusion fusion) {
  kernels_.resize(plan_.nodes.size());
  fused_members_.resize(plan_.nodes.size());
  fused_away_.assign(plan_.nodes.size(), false);
  value_written_.assign(plan_.values.size(), false);
  try {
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
      const auto& nodes = plan_.steps[s].nodes;
      backend::Backend& device = backend_of(plan_.steps[s].processor);
      // Fusion is offered once per Step, at the anchor that opens it.
      if (fusion == KernelFusion::allowed && !nodes.empty() && !plan_.nodes[nodes.front()].is_alias &&
          graph::op_role(plan_.model.nodes[plan_.nodes[nodes.front()].node_index]) == graph::OpRole::anchor) {
        const backend::FusionCandidate candidate = fusion_candidate(s, persistent_grid_max_sms);
        if (std::optional<backend::FusedKernel> fused = device.create_fused_kernel(candidate)) {
          backend::check_fused_kernel(candidate, *fused);
          if (fused->kernel->resumable())
            throw Error(ErrorCode::internal, "a fused kernel cannot pause inside (" + fused->kernel->op_type() + ")");
          for (std::size_t m : fused->members) {
            const std::size_t n = nodes[m];
            fused_members_[nodes.front()].push_back(n);
            fused_away_[n] = m != 0;
            for (int id : plan_.nodes[n].outputs)
              if (id >= 0 && candidate.needed_outside(id, fused->members))
                value_written_[static_cast<std::size_t>(id)] = true;
          }
          kernels_[nodes.front()] = std::move(fused->kernel);
        }
      }
      for (std::size_t n : nodes) {
        if (plan_.nodes[n].is_alias || kernels_[n] || fused_away_[n]) continue;
        kernels_[n] = device.create_kernel(kernel_spec(n, persistent_grid_max_sms));
        for (int id : plan_.nodes[n].outputs)
          if (id >= 0) value_written_[static_cast<std::size_t>(id)] = true;
      }
    }
  } catch (const Error& e) {
    throw Error(e.code(), "model '" + name_ + "': " + e.what());
  }
}

void LoadedModel::set_graphs_enabled(bool enabled) {
  if (!enabled || !graphs_supported_) {
    graphs_.reset();
    return;
  }
  if (graphs_) return;
  // A Step whose nodes are all views launches nothing: there is nothing to capture. A Step with a
  // kernel that reads device data on the host (OpKernel::capturable(): control flow on a request's
  // condition) always runs with plain launches.
  std::vector<bool> capturable(plan_.steps.size(), false);
  for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
    for (std::size_t n : plan_.steps[s].nodes)
      if (!plan_.nodes[n].is_alias) capturable[s] = true;
    for (std::size_t n : plan_.steps[s].nodes)
      if (kernels_[n] && !kernels_[n]->capturable()) capturable[s] = false;
  }
  graphs_ = std::make_unique<StepGraphs>(std::move(capturable));
}

void LoadedModel::apply_profile(const profile::ActiveProfile& active) {
  info_.fingerprint = profile::plan_fingerprint(plan_);
  info_.cost_source = profile::apply_profile(active, info_.fingerprint, plan_.compute_dtype, info_.steps);
}

void LoadedModel::set_cancellation_points(const std::vector<bool>& points) {
  if (points.size() != plan_.steps.size())
    throw Error(ErrorCode::internal, "model '" + name_ + "': " + std::to_string(points.size()) +
                                         " cancellation flags for " + std::to_string(plan_.steps.size()) + " Steps");
  for (std::size_t s = 0; s < points.size(); ++s)
    info_.steps[s].cancellation_point = points[s] && plan_.steps[s].live_on_first_processor_only;
}

void* LoadedModel::address(int id, void* arena) const {
  if (id < 0) return nullptr;
  const auto& v = plan_.storage_of(id);
  if (v.storage == plan::Storage::weight) return weight_addresses_[static_cast<std::size_t>(&v - plan_.values.data())];
  return static_cast<std::byte*>(arena) + v.offset;
}

void LoadedModel::upload_inputs(void* arena, const std::vector<Tensor>& inputs, backend::Stream& stream) const {
  if (inputs.size() != plan_.input_ids.size())
    throw Error(ErrorCode::internal, "model '" + name_ + "': " + std::to_string(inputs.size()) + " inputs for " +
                                         std::to_string(plan_.input_ids.size()));
  for (std::size_t i = 0; i < plan_.input_ids.size(); ++i)
    stream.copy_to_device(address(plan_.input_ids[i], arena), inputs[i].data(), inputs[i].bytes());
}

std::vector<Tensor> LoadedModel::download_outputs(void* arena, backend::Stream& stream) const {
  std::vector<Tensor> outputs;
  outputs.reserve(plan_.output_ids.size());
  for (int id : plan_.output_ids) {
    const auto& value = plan_.values[static_cast<std::size_t>(id)];
    outputs.emplace_back(value.dtype, value.shape);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i)
    stream.copy_to_host(outputs[i].data(), address(plan_.output_ids[i], arena), outputs[i].bytes());
  return outputs;
}

void LoadedModel::dump_live(std::size_t step, void* arena, std::byte* host, backend::Stream& stream) const {
  std::uint64_t offset = 0;
  for (int id : plan_.steps.at(step).live_after) {
    const auto bytes = plan_.values[static_cast<std::size_t>(id)].bytes;
    stream.copy_to_host(host + offset, address(id, arena), bytes);
    offset += bytes;
  }
}

void LoadedModel::restore_live(std::size_t step, void* arena, const std::byte* host, backend::Stream& stream) const {
  std::uint64_t offset = 0;
  for (int id : plan_.steps.at(step).live_after) {
    const auto bytes = plan_.values[static_cast<std::size_t>(id)].bytes;
    stream.copy_to_device(address(id, arena), host + offset, bytes);
    offset += bytes;
  }
}

void LoadedModel::run_step(std::size_t step, void* arena) {
  last_step_was_graph_ = false;
  if (step >= plan_.steps.size())
    throw Error(ErrorCode::internal,
                "model '" + name_ + "': Step " + std::to_string(step) + " of " + std::to_string(plan_.steps.size()));
  if (!sides_.empty()) {
    hand_over_before(step, arena);
    launch_step(step, arena);
    hand_over_after(step, arena);
    return;
  }
  if (!graphs_ || !graphs_->capturable(step)) return launch_step(step, arena);
  if (backend::Graph* graph = graphs_->find(step, arena)) {
    graph->launch(*stream_);
    last_step_was_graph_ = true;
    return;
  }
  if (!graphs_->warmed(step)) {
    launch_step(step, arena);
    graphs_->mark_warmed(step);
    return;
  }
  // Capture. Nothing recorded runs, so after a failed capture the plain launches start the Step
  // from scratch; the failure stays private to this Step (a genuine kernel error then surfaces
  // from the plain run).
  std::unique_ptr<backend::Graph> graph;
  try {
    stream_->begin_capture();
    try {
      launch_step(step, arena);
    } catch (...) {
      (void)stream_->end_capture();
      throw;
    }
    graph = stream_->end_capture();
  } catch (const Error&) {
    graph.reset();
  }
  if (!graph) {
    graphs_->disable(step);
    return launch_step(step, arena);
  }
  graph->launch(*stream_);
  graphs_->store(step, arena, std::move(graph));
  last_step_was_graph_ = true;
}

bool LoadedModel::run_step(std::size_t step, void* arena, StepCursor& cursor, const volatile std::int32_t* pause) {
  if (pause == nullptr && cursor.at_start()) {
    run_step(step, arena);
    return true;
  }
  last_step_was_graph_ = false;
  if (step >= plan_.steps.size())
    throw Error(ErrorCode::internal,
                "model '" + name_ + "': Step " + std::to_string(step) + " of " + std::to_string(plan_.steps.size()));
  if (sides_.empty()) return launch_step_from(step, arena, cursor, pause);
  if (cursor.at_start()) hand_over_before(step, arena);
  const bool finished = launch_step_from(step, arena, cursor, pause);
  if (finished) hand_over_after(step, arena);
  return finished;
}

bool LoadedModel::launch_step_from(std::size_t step, void* arena, StepCursor& cursor,
                                   const volatile std::int32_t* pause) {
  const auto& nodes = plan_.steps[step].nodes;
  if (cursor.node >= std::max<std::size_t>(nodes.size(), 1))
    throw Error(ErrorCode::internal, "model '" + name_ + "': Step " + std::to_string(step) + " resumed at node " +
                                         std::to_string(cursor.node) + " of " + std::to_string(nodes.size()));
  if (plan_.steps[step].is_copy()) {
    launch_copies(step, arena);
    cursor = {};
    return true;
  }
  const int processor = plan_.steps[step].processor;
  backend::Stream& stream = step_stream(step);
  void* workspace = processor == 0 ? workspace_.get() : sides_[static_cast<std::size_t>(processor) - 1].workspace.get();
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  auto* base = arena_on(processor, arena);
  auto* progress = reinterpret_cast<backend::ResumeProgress*>(base + progress_offset_);
  for (std::size_t k = cursor.node; k < nodes.size(); ++k) {
    const std::size_t n = nodes[k];
    const auto& pn = plan_.nodes[n];
    if (pn.is_alias || fused_away_[n]) continue;
    inputs.clear();
    outputs.clear();
    if (fused_members_[n].empty()) {
      for (int id : pn.inputs) inputs.push_back(address_on(processor, id, arena));
      for (int id : pn.outputs) outputs.push_back(address_on(processor, id, arena));
    } else {
      for (std::size_t m : fused_members_[n])
        for (int id : plan_.nodes[m].inputs) inputs.push_back(address_on(processor, id, arena));
      for (std::size_t m : fused_members_[n])
        for (int id : plan_.nodes[m].outputs) outputs.push_back(address_on(processor, id, arena));
    }
    auto& kernel = *kernels_[n];
    std::optional<trace::ScopedRange> op_range;
    if (!op_labels_.empty()) op_range.emplace(op_labels_[n]);
    const std::int32_t start = k == cursor.node ? cursor.iteration : 0;
    if (!kernel.resumable() || (pause == nullptr && start == 0)) {
      kernel.run(inputs, outputs, workspace, stream);
      continue;
    }
    backend::ResumeContext context;
    context.state = base + resume_state_offset_;
    context.start_iteration = start;
    context.pause = pause;
    context.progress = progress;
    kernel.run_resumable(inputs, outputs, workspace, context, stream);
    backend::ResumeProgress report;
    stream.copy_to_host(&report, progress, sizeof(report));
    stream.synchronize();
    if (!report.paused) continue;
    if (report.next_iteration <= start || report.next_iteration >= kernel.resume_iterations())
      throw Error(ErrorCode::internal, "model '" + name_ + "', " + kernel.op_type() + " node '" + kernel.node_name() +
                                           "': paused at iteration " + std::to_string(report.next_iteration) +
                                           " after starting at " + std::to_string(start) + " of " +
                                           std::to_string(kernel.resume_iterations()));
    cursor = {k, report.next_iteration};
    return false;
  }
  cursor = {};
  return true;
}

void LoadedModel::set_op_ranges(bool enabled) {
  op_labels_.clear();
  if (!enabled) return;
  for (const auto& pn : plan_.nodes) {
    const Node& node = plan_.model.nodes[pn.node_index];
    op_labels_.push_back(name_ + "/" + node.name + " (" + node.op_type + ")");
  }
}

void LoadedModel::launch_step(std::size_t step, void* arena) {
  StepCursor start;
  launch_step_from(step, arena, start, nullptr);  // without a flag nothing pauses: plain launches
}

}  // namespace loom::runtime
