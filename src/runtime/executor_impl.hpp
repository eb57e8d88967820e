// The executor's insides, shared by the files that implement it (private to src/runtime):
//   executor.cpp   the public facade (load, submit, stats) and start/stop of the stages
//   stages.cpp     the pre-process and post-process stages (conversion, upload, download, completion)
//   dispatcher.cpp the dispatcher loop: arrivals, deadlines, who may run, the policy's pick, launch
//   preemption.cpp pausing (at boundaries and inside Steps), dumps, restores and memory for requests
//   debug_compare.cpp  debug = compare: each Step checked against a CPU twin (debug_compare.hpp)
//   stage_figures.cpp  what stats() reports of each stage and model; the host stages' re-balancing
// Threads: pre- and post-process have one or more each (runtime/stage_workers.hpp), the dispatcher
// one; a request is touched by one thread at a time, handed on through the queues.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "loom/executor.hpp"
#include "loom/policy.hpp"
#include "metrics/metrics_server.hpp"
#include "placement/place_model.hpp"
#include "profile/active_profile.hpp"
#include "runtime/bounded_queue.hpp"
#include "runtime/debug_compare.hpp"
#include "runtime/executor_test_hooks.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/memory_pool.hpp"
#include "runtime/shape_plans.hpp"
#include "runtime/stage_workers.hpp"
#include "sched/admission.hpp"
#include "trace/request_recorder.hpp"

namespace loom::runtime {

using Clock = std::chrono::steady_clock;

// A loaded model's figures for stats(), kept beside it.
struct ModelCounters {
  std::atomic<std::size_t> inflight_steps{0};  // dispatcher: launched and not yet seen finished
  std::atomic<std::size_t> max_inflight_steps{0};
  std::atomic<std::uint64_t> steps{0};  // dispatcher: Steps run to their end
  std::mutex mutex;                     // guards the rest: the post-process threads add to it
  ModelStats finished;                  // requests, latency and phases (steps filled by stats())
  double stream_busy_us = 0;            // its stream's Step time, from the timed events
  std::uint64_t timed_steps = 0;
};

// A copy stage's figures (guarded by Executor::Impl::figures_mutex).
struct CopyCounters {
  std::uint64_t items = 0;
  std::uint64_t bytes = 0;
  double busy_us = 0;
};

// One submitted request, from submit() to its completion callback.
struct Request {
  std::uint64_t id = 0;
  LoadedModel* model = nullptr;
  std::vector<Tensor> inputs;
  RequestOptions options;
  TimedCallback done;
  const LoadOptions* load = nullptr;  // its model's (the pre/post-process transforms)
  ModelCounters* counters = nullptr;
  Clock::time_point submitted_at;
  // The stream its inputs were last uploaded on (a pre-process thread's, or the dispatcher's
  // transfer stream): a failed request's arena waits for it.
  backend::Stream* upload_stream = nullptr;
  PooledBuffer arena;   // empty while waiting for memory or dumped
  BudgetCharge charge;  // the arena's share of arena_memory_limit_bytes
  std::unique_ptr<backend::Event> inputs_ready;
  std::unique_ptr<backend::Event> finished;
  // Its Steps' work on its model's stream belongs to this scope: on a backend whose kernels run
  // after their launch returned (CPU stream shares), a kernel failing there fails this request
  // only (the dispatcher retires it at its next round, post-process at the latest).
  std::shared_ptr<backend::FailureScope> failure_scope = std::make_shared<backend::FailureScope>();
  std::size_t next_step = 0;
  std::uint32_t passed_over = 0;
  Clock::time_point ready_at;
  std::exception_ptr error;
  std::uint64_t nvtx_range = 0;
  std::unique_ptr<trace::RequestRecorder> recorder;  // only when recording a timeline
  // Preemption state, used by the dispatcher only.
  bool deferred = false;  // pre-process handed it on without an arena (counted in arena_waiters)
  bool paused = false;    // stopped at a cancellation point for a higher class
  bool dumped = false;    // its live bytes are in `dump`, its arena given back
  HostBuffer dump;        // kept until the request ends: restores copy from it asynchronously
  StepCursor cursor;      // where Step next_step paused inside; at its start otherwise
  // Paused inside a Step while a higher class needs its memory: it finishes that Step, its flag
  // not armed, and goes on to a boundary cancellation point, where it can be dumped.
  bool needs_boundary = false;
  // Polled by the device loops of its model's pausable Steps; null when the model has none or
  // preemption is off. Set by whichever thread sees a higher class first (preemption.cpp).
  std::unique_ptr<backend::PauseFlag> pause_flag;
  // debug = compare: the CPU twin's side, from its first Step on (used by the dispatcher; freed with
  // the request, its twin arena with it).
  std::unique_ptr<DebugRequestState> debug;

  bool inside_step() const noexcept { return !cursor.at_start(); }
  bool started() const noexcept { return next_step > 0 || inside_step(); }
  bool has_deadline() const noexcept { return options.deadline != Clock::time_point{}; }
  // It stands at a cancellation point: paused inside a Step, or the boundary after its last
  // launched Step is one.
  bool at_cancellation_point() const {
    return inside_step() || (next_step > 0 && model->info().steps[next_step - 1].cancellation_point);
  }
};
using RequestPtr = std::unique_ptr<Request>;

}  // namespace loom::runtime

namespace loom {

struct Executor::Impl {
  using Request = runtime::Request;
  using RequestPtr = runtime::RequestPtr;
  using Clock = runtime::Clock;

  ExecutorOptions options;
  runtime::ExecutorTestHooks hooks;  // empty outside Loom's own tests
  std::unique_ptr<backend::Backend> device_holder;
  backend::Backend* device = nullptr;
  std::shared_ptr<SchedulingPolicy> policy;  // the named one, or ExecutorOptions::custom_policy
  std::unique_ptr<runtime::MemoryPool> pool;
  // The processors beside `device` that models executed across processors use
  // (PlacementOptions::execute), by device string, opened at the first load that needs each.
  // Declared before the models, which hold their memory and streams.
  struct OpenedProcessor {
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<runtime::MemoryPool> pool;
  };
  std::map<std::string, OpenedProcessor> processors;     // guarded by models_mutex
  std::unique_ptr<runtime::DebugCompare> debug_compare;  // debug = compare only
  std::unique_ptr<runtime::ArenaBudget> budget;
  // One stream per pre-process thread (uploads) and per post-process thread (downloads), indexed
  // by the worker; grown (never shrunk) before a worker starts, under workers_streams_mutex.
  std::mutex worker_streams_mutex;
  std::vector<std::unique_ptr<backend::Stream>> upload_streams, download_streams;
  // The dispatcher's own copies: uploads of requests it admits, dumps and restores.
  std::unique_ptr<backend::Stream> transfer_stream;

  mutable std::shared_mutex models_mutex;
  std::map<std::string, std::unique_ptr<runtime::LoadedModel>> models;
  std::map<std::string, std::unique_ptr<runtime::ModelCounters>> model_counters;  // same keys
  std::vector<std::string> load_order;
  std::map<std::string, LoadOptions> load_options;  // pre/post-process transforms per model
  // Models loaded with LoadOptions::dim_ranges: their plans per request shape, the opt plan being
  // the one in `models`. Declared after `models`: the other shapes' plans share the opt plan's
  // stream and weights, so they go first.
  std::map<std::string, std::unique_ptr<runtime::ShapePlans>> shape_plans;

  runtime::BoundedQueue<RequestPtr> to_pre, to_exec, to_post;
  std::unique_ptr<runtime::StageWorkers<RequestPtr>> pre_workers, post_workers;
  std::thread exec_thread;
  std::atomic<bool> accepting{true};
  std::mutex shutdown_mutex;
  bool stopped = false;
  std::atomic<std::uint64_t> next_id{0}, submitted{0}, completed{0}, failed{0};
  // Requests handed to the dispatcher without an arena and not yet given one: while there are
  // any, pre-process defers new requests too, so memory goes to them in the dispatcher's order.
  std::atomic<std::uint64_t> arena_waiters{0};
  // Written by the dispatcher (expired also by pre-process), read by stats().
  std::atomic<std::uint64_t> steps_dispatched{0}, dispatch_host_ns{0}, preemptions{0}, pauses_inside_steps{0},
      bytes_dumped{0}, requests_expired{0}, cuda_graph_steps{0};
  // The pausable Step now running and who handed what to the dispatcher (preemption.cpp).
  struct RunningPausable {
    backend::PauseFlag* flag = nullptr;  // null: none running
    Priority priority = Priority::normal;
  };
  static constexpr std::size_t kClasses = 3;  // Priority::background .. Priority::urgent
  static std::size_t class_index(Priority p) noexcept { return static_cast<std::size_t>(static_cast<int>(p) + 1); }
  using ClassCounts = std::array<std::uint64_t, kClasses>;
  std::mutex running_mutex;
  std::condition_variable handed_over_changed;  // for hooks.pausable_step's wait
  RunningPausable running;                      // guarded by running_mutex
  ClassCounts handed_over{};                    // per class, guarded by running_mutex
  // The highest class ever submitted (class_index), -1 before the first request. A pausable Step
  // runs armed only when a class above its request's has been submitted at some point: arming
  // costs a host wait per device loop on CUDA (the progress read-back) and rules out its graph,
  // so with nothing of a higher class ever seen, pausable Steps run exactly as other Steps do.
  std::atomic<int> top_class_submitted{-1};
  bool pre_process_done = false;     // guarded by running_mutex
  profile::ActiveProfile profile;    // resolved from options.profile at start
  placement::ActiveLibrary library;  // resolved from options.function_library at start
  Timeline timeline;
  // Set when options.stage_timing or options.record_timeline: the device clock's epoch.
  std::unique_ptr<trace::TimelineClock> timeline_clock;
  // Stage figures (stage_figures.cpp).
  std::atomic<std::uint64_t> dispatcher_busy_ns{0};
  std::atomic<std::size_t> dispatcher_live{0};  // requests the dispatcher holds
  mutable std::mutex figures_mutex;             // guards the copy stages and the decisions
  runtime::CopyCounters h2d, d2h, transfer;
  std::deque<RebalanceDecision> rebalances;
  std::uint64_t thread_moves = 0;  // the decisions that changed a thread count, every one of them
  // The automatic re-balancing (StageThreadOptions::automatic).
  std::thread balancer_thread;
  std::mutex balancer_mutex;
  std::condition_variable balancer_wake;
  bool balancer_stop = false;
  Clock::time_point epoch = Clock::now();
  // The metrics endpoint (ExecutorOptions::metrics_port), stopped first by stop().
  std::unique_ptr<metrics::MetricsServer> metrics_server;

  // executor.cpp
  explicit Impl(ExecutorOptions opts, runtime::ExecutorTestHooks test_hooks = {});
  ~Impl() { stop(); }
  void stop();
  double now_us() const { return std::chrono::duration<double, std::micro>(Clock::now() - epoch).count(); }
  double trace_now_us() const { return timeline_clock->host_now_us(); }
  runtime::LoadedModel& find(const std::string& name) const;
  // With ExecutorOptions::cpu_stream_shares: each loaded model's stream gets its share of the
  // backend's threads (called by load() under models_mutex, as the model count changes).
  void assign_thread_shares();
  // The processor of that device string, opened once (called by load() under models_mutex).
  runtime::ProcessorHandle open_processor(const std::string& name);
  void check_inputs(const runtime::LoadedModel& model, const std::vector<Tensor>& inputs) const;
  // What load() adds to a freshly made plan (of a model, or of one shape of it): profile times,
  // graphs, NVTX op ranges, cancellation points.
  void prepare_plan(runtime::LoadedModel& loaded) const;
  // The plan a request with `inputs` runs on: the model's, or its shape's (ShapePlans::plan_for).
  runtime::LoadedModel& plan_for(const std::string& name, const std::vector<Tensor>& inputs);
  void enqueue(const std::string& name, std::vector<Tensor> inputs, TimedCallback done, RequestOptions options);

  // executor_metrics.cpp: serves `executor`'s stats() when options.metrics_port is set.
  void start_metrics(const Executor& executor);

  // stages.cpp
  void start_host_stages();
  void pre_process(std::size_t worker, RequestPtr request);
  void post_process(std::size_t worker, RequestPtr request);
  void pre_process_finished();
  void complete(Request& request, Outputs outputs);
  // Any stage may fail a request; completion always happens on the post-process thread.
  void fail(RequestPtr& request, std::exception_ptr error);
  bool expire_if_late(RequestPtr& request, Clock::time_point now);
  static std::uint64_t arena_charge(const runtime::LoadedModel& model);
  void handed_over_to_dispatcher(Priority priority);
  void upload_inputs(Request& request, backend::Stream& stream);
  void release_failed_arena(Request& request, backend::Stream& download);

  // stage_figures.cpp
  void add_figures(Request& request, const trace::RecordedRequest& recorded, const RequestTimes& times);
  void add_transfer(std::uint64_t bytes, double busy_us);
  std::vector<StageStats> stage_stats() const;
  std::vector<ModelStats> model_stats() const;
  void balance_loop();

  // dispatcher.cpp
  class Dispatcher;  // the loop's own state and steps
  void execute_loop();

  // preemption.cpp (dispatcher thread only)
  void pause(Request& request);
  void resume(Request& request);
  void record_preemption(Request& request, const char* action);
  bool run_next_step(Request& request, Priority top, const ClassCounts& seen);
  void dump(Request& request);
  void restore(Request& request);
  void release_unstarted(Request& request);
  static sched::AdmissionView admission_view(const Request& r);
  bool obtain_arena(std::size_t index, std::vector<RequestPtr>& live);
};

}  // namespace loom
