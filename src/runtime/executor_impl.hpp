// The executor's insides, shared by the files that implement it (private to src/runtime):
//   executor.cpp   the public facade (load, submit, stats) and start/stop of the stages
//   stages.cpp     the pre-process and post-process stages (conversion, upload, download, completion)
//   dispatcher.cpp the dispatcher loop: arrivals, deadlines, who may run, the policy's pick, launch
//   preemption.cpp pausing (at boundaries and inside Steps), dumps, restores and memory for requests
//   debug_compare.cpp  debug = compare: each Step checked against a CPU twin (debug_compare.hpp)
// Threads: each stage has its own; the dispatcher alone touches a request between the queues.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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
#include "profile/active_profile.hpp"
#include "runtime/bounded_queue.hpp"
#include "runtime/debug_compare.hpp"
#include "runtime/executor_test_hooks.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/memory_pool.hpp"
#include "sched/admission.hpp"
#include "trace/request_recorder.hpp"

namespace loom::runtime {

using Clock = std::chrono::steady_clock;

// One submitted request, from submit() to its completion callback.
struct Request {
  std::uint64_t id = 0;
  LoadedModel* model = nullptr;
  std::vector<Tensor> inputs;
  RequestOptions options;
  Callback done;
  PooledBuffer arena;   // empty while waiting for memory or dumped
  BudgetCharge charge;  // the arena's share of arena_memory_limit_bytes
  std::unique_ptr<backend::Event> inputs_ready;
  std::unique_ptr<backend::Event> finished;
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
  std::unique_ptr<runtime::DebugCompare> debug_compare;  // debug = compare only
  std::unique_ptr<runtime::ArenaBudget> budget;
  std::unique_ptr<backend::Stream> upload_stream, download_stream;
  // The dispatcher's own copies: uploads of requests it admits, dumps and restores.
  std::unique_ptr<backend::Stream> transfer_stream;

  mutable std::shared_mutex models_mutex;
  std::map<std::string, std::unique_ptr<runtime::LoadedModel>> models;

  runtime::BoundedQueue<RequestPtr> to_pre, to_exec, to_post;
  std::thread pre_thread, exec_thread, post_thread;
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
  bool pre_process_done = false;   // guarded by running_mutex
  profile::ActiveProfile profile;  // resolved from options.profile at start
  Timeline timeline;
  std::unique_ptr<trace::TimelineClock> timeline_clock;  // set when options.record_timeline
  Clock::time_point epoch = Clock::now();

  // executor.cpp
  explicit Impl(ExecutorOptions opts, runtime::ExecutorTestHooks test_hooks = {});
  ~Impl() { stop(); }
  void stop();
  double now_us() const { return std::chrono::duration<double, std::micro>(Clock::now() - epoch).count(); }
  double trace_now_us() const { return timeline_clock->host_now_us(); }
  runtime::LoadedModel& find(const std::string& name) const;
  void check_inputs(const runtime::LoadedModel& model, const std::vector<Tensor>& inputs) const;
  void enqueue(const std::string& name, std::vector<Tensor> inputs, Callback done, RequestOptions options);

  // stages.cpp
  void pre_process_loop();
  void post_process_loop();
  // Any stage may fail a request; completion always happens on the post-process thread.
  void fail(RequestPtr& request, std::exception_ptr error);
  bool expire_if_late(RequestPtr& request, Clock::time_point now);
  static std::uint64_t arena_charge(const runtime::LoadedModel& model);
  void handed_over_to_dispatcher(Priority priority);
  void upload_inputs(Request& request, backend::Stream& stream);
  void release_failed_arena(Request& request);

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
