// The Executor: three pipeline stages on their own threads, joined by bounded queues.
//   pre-process:  take an arena from the pool, convert inputs to the device dtype, copy them in
//                 (stages.cpp)
//   execute:      the dispatcher asks the policy which live request's next Step runs, launches it
//                 on that model's stream, and keeps a bounded number of Steps in flight
//                 (dispatcher.cpp)
//   post-process: wait for the request's last Step, copy outputs out, convert back, complete
//                 (stages.cpp)
// This file is the facade (load, submit, stats) and starts and stops the stages;
// runtime/executor_impl.hpp holds the state they share.
//
// Priorities and preemption (MISSION.md §3), all decided on the dispatcher thread:
//   - Who is offered to the policy, who pauses at a cancellation point (trace "pause"; "resume"
//     once its class runs again), who needs memory and who gives it up: the rules of
//     sched/admission.hpp, which the simulator obeys too. The dispatcher applies them.
//   - Memory (arena_memory_limit_bytes): arenas are charged to an ArenaBudget. The pre-process
//     stage never waits for memory: when the arena does not fit (or requests are already waiting
//     for memory) it hands the request on without one, and the dispatcher acquires the arena and
//     uploads the inputs when the request may run. A victim that has started is dumped (its
//     plan's live set at the boundary copied to pinned host memory on the transfer stream, trace
//     "dump") and gives its arena back; one that has not just gives its arena back and uploads
//     again later. A dumped request gets a new arena, its bytes copied back to the same offsets
//     (trace "restore"), before its next Step. Only the dispatcher waits for memory, and only when
//     no live request can run; it then polls the budget's refunds (post-process frees arenas) and
//     new arrivals, so there is no cycle of threads waiting on each other: every arena is held by
//     a request that can run, can be dumped, or is on its way to completion.
//   - Pausing inside a Step (an LSTM or GRU device loop): preemption.cpp.
//   - Deadlines: a request whose deadline passes before its first Step fails with
//     Error(deadline_exceeded), checked in pre-process and at each decision.
#include "loom/executor.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "backend/open_backend.hpp"
#include "runtime/executor_impl.hpp"
#include "sched/cancellation.hpp"
#include "trace/nvtx.hpp"

namespace loom {

int cuda_device_count() noexcept { return backend::cuda_device_count(); }

namespace {

void check_stage_threads(const StageThreadOptions& t) {
  const auto count = [](const char* stage, std::size_t n) {
    if (n == 0)
      throw Error(ErrorCode::invalid_argument,
                  std::string("stage_threads.") + stage + " = 0: a host stage needs at least one thread");
  };
  count("pre_process", t.pre_process);
  count("post_process", t.post_process);
  if (!t.automatic) return;
  if (t.thread_budget == 0)
    throw Error(ErrorCode::invalid_argument,
                "stage_threads.thread_budget = 0: the automatic re-balancing needs a budget of at least 2 threads "
                "(one per host stage)");
  if (t.thread_budget < t.pre_process + t.post_process)
    throw Error(ErrorCode::invalid_argument, "stage_threads.thread_budget = " + std::to_string(t.thread_budget) +
                                                 " is below the starting threads (pre_process " +
                                                 std::to_string(t.pre_process) + " + post_process " +
                                                 std::to_string(t.post_process) + ")");
  if (!(t.rebalance_interval_ms > 0) || !std::isfinite(t.rebalance_interval_ms))
    throw Error(ErrorCode::invalid_argument, "stage_threads.rebalance_interval_ms must be a finite time > 0");
}

}  // namespace

const char* version() noexcept { return "0.1.0"; }

Executor::Impl::Impl(ExecutorOptions opts, runtime::ExecutorTestHooks test_hooks)
    : options(std::move(opts)),
      hooks(std::move(test_hooks)),
      to_pre(options.queue_capacity),
      to_exec(options.queue_capacity),
      to_post(options.queue_capacity) {
  if (options.custom_policy) {
    policy = options.custom_policy;
    policy->reset();  // an object used before starts afresh, as in the simulator
  } else {
    policy = make_policy(options.policy, options.policy_options);
  }
  runtime::check_debug_options(options);
  if (options.compute_dtype != DType::f32 && options.compute_dtype != DType::f16)
    throw Error(ErrorCode::invalid_argument, "compute_dtype must be f32 or f16");
  if (!(options.cancellation_interval_us >= 0) || !std::isfinite(options.cancellation_interval_us))
    throw Error(ErrorCode::invalid_argument, "cancellation_interval_us must be a finite time >= 0");
  check_stage_threads(options.stage_threads);
  device_holder = backend::open_backend(options.debug == DebugMode::cpu ? "cpu" : options.device);
  device = device_holder.get();
  // Before any stream exists: the streams take the thread count and the mode as they are created.
  device->set_host_threading({options.cpu_threads, options.cpu_stream_shares});
  profile = profile::resolve_profile(options.profile, device->device_name());
  library = placement::resolve_function_library(options.function_library, device->device_name());
  if (options.compute_dtype == DType::f16 && !device->capabilities().f16_compute)
    throw Error(ErrorCode::unsupported, "f16 compute needs a backend that computes in f16 (CUDA); device '" +
                                            options.device + "' resolved to " + device->name());
  pool = std::make_unique<runtime::MemoryPool>(*device);
  if (options.debug == DebugMode::compare)
    debug_compare = std::make_unique<runtime::DebugCompare>(runtime::debug_tolerance(options), device->device_name());
  budget = std::make_unique<runtime::ArenaBudget>(options.arena_memory_limit_bytes);
  transfer_stream = device->create_stream(0);
  if (options.record_timeline || options.stage_timing)
    timeline_clock = std::make_unique<trace::TimelineClock>(*transfer_stream);
  try {
    start_host_stages();
    exec_thread = std::thread([this] { execute_loop(); });
    if (options.stage_threads.automatic) balancer_thread = std::thread([this] { balance_loop(); });
  } catch (...) {
    stop();  // the threads started so far leave with the queues closed
    throw;
  }
}

void Executor::Impl::stop() {
  std::lock_guard lock(shutdown_mutex);
  if (stopped) return;
  stopped = true;
  metrics_server.reset();
  accepting = false;
  {
    std::lock_guard balancer_lock(balancer_mutex);
    balancer_stop = true;
  }
  balancer_wake.notify_all();
  if (balancer_thread.joinable()) balancer_thread.join();
  to_pre.close();
  if (pre_workers) pre_workers->join();
  if (!pre_workers || pre_workers->threads() == 0) to_exec.close();  // no pre-process thread to close it
  if (exec_thread.joinable())
    exec_thread.join();
  else
    to_post.close();  // no dispatcher to close it
  if (post_workers) post_workers->join();
}

runtime::LoadedModel& Executor::Impl::find(const std::string& name) const {
  std::shared_lock lock(models_mutex);
  auto it = models.find(name);
  if (it == models.end()) {
    std::string known;
    for (const auto& [n, m] : models) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::unknown_model, "no model named '" + name + "' is loaded (loaded: " +
                                              (known.empty() ? std::string("none") : known) + ")");
  }
  return *it->second;
}

// Equal shares, the first `threads % models` streams one thread more; at least one each (more
// models than threads share cores through the OS). Shares are fixed partitions: a model with no
// work leaves its threads idle, as an SM partition does.
void Executor::Impl::assign_thread_shares() {
  if (!options.cpu_stream_shares || device->host_threads() == 0 || load_order.empty()) return;
  const std::size_t threads = device->host_threads();
  const std::size_t count = load_order.size();
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t share = std::max<std::size_t>(1, threads / count + (i < threads % count ? 1 : 0));
    models.at(load_order[i])->stream().set_thread_share(share);
  }
}

runtime::ProcessorHandle Executor::Impl::open_processor(const std::string& name) {
  auto it = processors.find(name);
  if (it == processors.end()) {
    OpenedProcessor opened;
    opened.backend = backend::open_backend(name);
    // Its streams run each call to completion: stream shares are the executor's device's.
    opened.backend->set_host_threading({options.cpu_threads, false});
    opened.pool = std::make_unique<runtime::MemoryPool>(*opened.backend);
    it = processors.emplace(name, std::move(opened)).first;
  }
  return {it->second.backend.get(), it->second.pool.get()};
}

void Executor::Impl::check_inputs(const runtime::LoadedModel& model, const std::vector<Tensor>& inputs) const {
  const auto& expected = model.info().inputs;
  const std::string where = "model '" + model.name() + "'";
  if (inputs.size() != expected.size())
    throw Error(ErrorCode::invalid_argument, where + " takes " + std::to_string(expected.size()) + " input(s), got " +
                                                 std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != expected[i].dtype)
      throw Error(ErrorCode::dtype_mismatch, where + ", input " + std::to_string(i) + " '" + expected[i].name +
                                                 "': expected " + std::string(dtype_name(expected[i].dtype)) +
                                                 ", got " + std::string(dtype_name(inputs[i].dtype())));
    if (inputs[i].shape() != expected[i].shape)
      throw Error(ErrorCode::shape_mismatch, where + ", input " + std::to_string(i) + " '" + expected[i].name +
                                                 "': expected shape " + expected[i].shape.to_string() + ", got " +
                                                 inputs[i].shape().to_string());
  }
}

runtime::LoadedModel& Executor::Impl::plan_for(const std::string& name, const std::vector<Tensor>& inputs) {
  auto& model = find(name);
  runtime::ShapePlans* plans = nullptr;
  {
    std::shared_lock lock(models_mutex);
    const auto it = shape_plans.find(name);
    if (it != shape_plans.end()) plans = it->second.get();
  }
  return plans ? plans->plan_for(plans->sizes_of(inputs)) : model;
}

void Executor::Impl::prepare_plan(runtime::LoadedModel& loaded) const {
  loaded.apply_profile(profile);
  loaded.set_graphs_enabled(options.cuda_graphs);
  loaded.set_op_ranges(options.nvtx_op_ranges);
  // Cancellation points from each Step's estimated time: its measured time when the profile has
  // one, else the roofline estimate max(compute, memory) (the two resources overlap).
  const auto& steps = loaded.info().steps;
  std::vector<double> step_us;
  std::vector<std::uint64_t> live_bytes;
  for (const auto& step : steps) {
    step_us.push_back(step.measured_us > 0 ? step.measured_us : std::max(step.compute_us, step.memory_us));
    live_bytes.push_back(step.live_bytes_after);
  }
  loaded.set_cancellation_points(sched::choose_cancellation_points(
      step_us, live_bytes, {options.cancellation_interval_us, options.cancellation_max_live_bytes}));
}

void Executor::Impl::enqueue(const std::string& name, std::vector<Tensor> inputs, TimedCallback done,
                             RequestOptions options) {
  if (!accepting) throw Error(ErrorCode::shutdown, "the executor is shut down; request for '" + name + "' refused");
  // A model with dim_ranges has load refuse pre_process, so its inputs here are the model's own.
  auto& model = plan_for(name, inputs);
  const LoadOptions* load = nullptr;
  runtime::ModelCounters* counters = nullptr;
  {
    std::shared_lock lock(models_mutex);
    load = &load_options.at(name);
    counters = model_counters.at(name).get();
  }
  // With a pre_process transform, the inputs are the application's: checked after it.
  if (!load->pre_process) check_inputs(model, inputs);
  const int cls = static_cast<int>(class_index(options.priority));
  for (int top = top_class_submitted.load(); cls > top && !top_class_submitted.compare_exchange_weak(top, cls);) {
  }
  auto request = std::make_unique<Request>();
  request->id = next_id++;
  request->model = &model;
  request->load = load;
  request->counters = counters;
  request->submitted_at = Clock::now();
  request->inputs = std::move(inputs);
  request->options = options;
  request->done = std::move(done);
  request->nvtx_range = trace::start_range("request " + std::to_string(request->id) + " " + name);
  if (timeline_clock)
    request->recorder = std::make_unique<trace::RequestRecorder>(request->id, name, timeline_clock->host_now_us());
  if (!to_pre.push(request)) {
    trace::end_range(request->nvtx_range);
    throw Error(ErrorCode::shutdown, "the executor is shut down; request for '" + name + "' refused");
  }
  ++submitted;
}

Executor::Executor(ExecutorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->start_metrics(*this);
}

Executor::Executor(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

std::unique_ptr<Executor> runtime::ExecutorTestHooks::make_executor(ExecutorOptions options, ExecutorTestHooks hooks) {
  return std::unique_ptr<Executor>(
      new Executor(std::make_unique<Executor::Impl>(std::move(options), std::move(hooks))));
}

// Stopped here rather than in ~Impl: the metrics endpoint calls this object's stats().
Executor::~Executor() {
  if (impl_) impl_->stop();
}

void Executor::load(const Model& model, std::string name) {
  LoadOptions options;
  options.name = std::move(name);
  load(model, options);
}

void Executor::load(const Model& original, const LoadOptions& options) {
  std::string name = options.name.empty() ? original.name : options.name;
  if (name.empty()) throw Error(ErrorCode::invalid_argument, "load: the model has no name; pass one");
  if (!impl_->accepting) throw Error(ErrorCode::shutdown, "the executor is shut down; cannot load '" + name + "'");
  if (options.persistent_grid_max_sms < 0)
    throw Error(ErrorCode::invalid_argument,
                "load '" + name + "': persistent_grid_max_sms = " + std::to_string(options.persistent_grid_max_sms) +
                    " is negative (0 = no cap)");
  {
    std::shared_lock lock(impl_->models_mutex);
    if (impl_->models.count(name))
      throw Error(ErrorCode::invalid_argument, "a model named '" + name + "' is already loaded");
  }
  const bool ranged = !options.dim_ranges.empty();
  if (ranged) {
    runtime::check_dim_ranges(original, options, name);
    if (options.pre_process)
      throw Error(ErrorCode::unsupported, "load '" + name +
                                              "': dim_ranges with a pre_process transform: the plan of a request "
                                              "is chosen from its shapes at submit, before the transform runs");
    if (impl_->debug_compare)
      throw Error(ErrorCode::unsupported, "load '" + name +
                                              "': dim_ranges under debug = compare: the CPU reference is one twin "
                                              "per model, not per shape; load with fixed shapes to compare");
    if (options.placement.execute)
      throw Error(ErrorCode::unsupported, "load '" + name +
                                              "': dim_ranges with placement.execute: each shape's plan runs on the "
                                              "executor's device alone; load with fixed shapes to run across "
                                              "processors");
  }
  trace::ScopedRange range("load " + name);
  OptimizeReport optimized;
  // With ranges, the plan at opt is the model's plan: what model_info() shows.
  const Model model = optimize(
      original, ranged ? runtime::bind_dim_sizes(options, runtime::opt_sizes(options.dim_ranges)) : options.optimize,
      &optimized);
  // Where each node runs (docs/placement.md): recorded, and executed with placement.execute.
  ModelPlacement placement;
  if (options.placement.enabled) {
    std::vector<std::string> available;
    for (const backend::BackendEntry& entry : backend::registered_backends())
      if (entry.device_count() > 0) available.push_back(entry.name);
    try {
      const auto processors =
          placement::choose_processors(options.placement, impl_->device->name(), impl_->library.library, available);
      placement = placement::place_model(model, optimized, impl_->library, processors, options.placement);
    } catch (const Error& e) {
      throw Error(e.code(), "load '" + name + "': " + e.what());
    }
  }
  // Executed across processors (docs/placement.md): the processors the placement chose.
  std::optional<runtime::AcrossProcessors> across;
  if (options.placement.execute) {
    try {
      runtime::AcrossProcessors chosen;
      chosen.assignment = runtime::assign_processors(placement, model, impl_->device->name(), impl_->library.library);
      if (chosen.assignment.processors.size() > 1) {
        std::string names;
        for (const auto& p : chosen.assignment.processors) names += (names.empty() ? "" : ", ") + p;
        if (impl_->debug_compare)
          throw Error(ErrorCode::invalid_argument,
                      "placement.execute across processors (" + names +
                          ") cannot be combined with debug = compare: the comparison reads every value on the "
                          "executor's device");
        across = std::move(chosen);
      }
    } catch (const Error& e) {
      throw Error(e.code(), "load '" + name + "': " + e.what());
    }
  }
  std::unique_lock lock(impl_->models_mutex);
  if (across) {
    try {
      across->handles.push_back({impl_->device, impl_->pool.get()});
      for (std::size_t p = 1; p < across->assignment.processors.size(); ++p) {
        across->handles.push_back(impl_->open_processor(across->assignment.processors[p]));
        // Timed events of different backends cannot be compared with each other.
        if (impl_->timeline_clock &&
            across->handles.back().backend->capabilities().accelerator != impl_->device->capabilities().accelerator)
          throw Error(ErrorCode::invalid_argument,
                      "placement.execute across '" + impl_->device->name() + "' and '" +
                          across->assignment.processors[p] +
                          "' cannot be combined with stage_timing or record_timeline: their timed events do not "
                          "share a clock");
      }
    } catch (const Error& e) {
      throw Error(e.code(), "load '" + name + "': " + e.what());
    }
  }
  const plan::DevicePeaks peaks = profile::roofline_peaks(impl_->profile, *impl_->device, impl_->options.compute_dtype);
  auto loaded = std::make_unique<runtime::LoadedModel>(model, name, impl_->models.size(), impl_->options.compute_dtype,
                                                       *impl_->device, *impl_->pool, peaks, options.stream_priority,
                                                       options.persistent_grid_max_sms, runtime::KernelFusion::allowed,
                                                       nullptr, across ? &*across : nullptr);
  impl_->prepare_plan(*loaded);
  loaded->set_placement(std::move(placement));
  if (impl_->debug_compare) impl_->debug_compare->add_model(model, *loaded);
  std::unique_ptr<runtime::ShapePlans> plans;
  if (ranged) {
    // Another shape's plan: the graph optimized for its sizes (the shape subgraphs folded on the
    // CPU for them), compiled, its kernels created; on the opt plan's stream, reading its weights.
    auto make = [impl = impl_.get(), source = std::make_shared<const Model>(original), options, name, peaks,
                 opt_plan = loaded.get()](const runtime::DimSizes& sizes) {
      trace::ScopedRange plan_range("plan " + name);
      const Model shaped = optimize(*source, runtime::bind_dim_sizes(options, sizes));
      auto plan = std::make_unique<runtime::LoadedModel>(
          shaped, name, opt_plan->index(), impl->options.compute_dtype, *impl->device, *impl->pool, peaks,
          options.stream_priority, options.persistent_grid_max_sms, runtime::KernelFusion::allowed, opt_plan);
      impl->prepare_plan(*plan);
      return plan;
    };
    plans = std::make_unique<runtime::ShapePlans>(name, original.inputs, options.dim_ranges, *loaded, std::move(make));
  }
  if (impl_->models.count(name))
    throw Error(ErrorCode::invalid_argument, "a model named '" + name + "' is already loaded");
  if (plans) impl_->shape_plans.emplace(name, std::move(plans));
  auto counters = std::make_unique<runtime::ModelCounters>();
  counters->finished.name = name;
  impl_->model_counters.emplace(name, std::move(counters));
  impl_->load_options.emplace(name, options);
  impl_->load_order.push_back(name);
  impl_->models.emplace(name, std::move(loaded));
  impl_->assign_thread_shares();
}

std::vector<std::string> Executor::models() const {
  std::shared_lock lock(impl_->models_mutex);
  std::vector<std::string> names;
  for (const auto& [name, model] : impl_->models) names.push_back(name);
  return names;
}

ModelInfo Executor::model_info(const std::string& name) const {
  ModelInfo info = impl_->find(name).info();
  std::shared_lock lock(impl_->models_mutex);
  if (const auto it = impl_->shape_plans.find(name); it != impl_->shape_plans.end()) {
    info.dim_ranges = it->second->ranges();
    info.shape_plans = it->second->count();
  }
  return info;
}

std::future<Outputs> Executor::submit(const std::string& model, std::vector<Tensor> inputs, RequestOptions options) {
  auto promise = std::make_shared<std::promise<Outputs>>();
  auto future = promise->get_future();
  impl_->enqueue(
      model, std::move(inputs),
      [promise](std::exception_ptr error, Outputs outputs, const RequestTimes&) {
        if (error)
          promise->set_exception(error);
        else
          promise->set_value(std::move(outputs));
      },
      options);
  return future;
}

void Executor::submit(const std::string& model, std::vector<Tensor> inputs, Callback done, RequestOptions options) {
  if (!done) throw Error(ErrorCode::invalid_argument, "submit: the callback is empty");
  impl_->enqueue(
      model, std::move(inputs),
      [done = std::move(done)](std::exception_ptr error, Outputs outputs, const RequestTimes&) {
        done(std::move(error), std::move(outputs));
      },
      options);
}

void Executor::submit(const std::string& model, std::vector<Tensor> inputs, TimedCallback done,
                      RequestOptions options) {
  if (!done) throw Error(ErrorCode::invalid_argument, "submit: the callback is empty");
  impl_->enqueue(model, std::move(inputs), std::move(done), options);
}

void Executor::shutdown() { impl_->stop(); }

std::string Executor::device_name() const {
  return runtime::debug_device_name(impl_->options, impl_->device->device_name());
}
std::string Executor::backend_name() const { return impl_->device->name(); }
std::string Executor::policy_name() const { return std::string(impl_->policy->name()); }

std::string Executor::profile_path() const { return impl_->profile.path; }
Timeline Executor::timeline() const { return impl_->timeline; }

ExecutorStats Executor::stats() const {
  ExecutorStats s;
  s.requests_submitted = impl_->submitted;
  s.requests_completed = impl_->completed;
  s.requests_failed = impl_->failed;
  const auto pool = impl_->pool->stats();
  s.pool_bytes_reserved = pool.bytes_reserved;
  s.pool_allocations = pool.allocations;
  s.pool_reuses = pool.reuses;
  s.steps_dispatched = impl_->steps_dispatched;
  s.dispatch_host_us = static_cast<double>(impl_->dispatch_host_ns.load()) / 1000.0;
  s.preemptions = impl_->preemptions;
  s.pauses_inside_steps = impl_->pauses_inside_steps;
  s.bytes_dumped = impl_->bytes_dumped;
  s.requests_expired = impl_->requests_expired;
  s.cuda_graph_steps = impl_->cuda_graph_steps;
  s.uptime_us = impl_->now_us();
  s.stages = impl_->stage_stats();
  s.models = impl_->model_stats();
  {
    std::lock_guard lock(impl_->figures_mutex);
    s.rebalances.assign(impl_->rebalances.begin(), impl_->rebalances.end());
    s.thread_moves = impl_->thread_moves;
  }
  if (impl_->debug_compare) impl_->debug_compare->add_counts(s);
  return s;
}

}  // namespace loom
