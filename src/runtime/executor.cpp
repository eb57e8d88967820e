// The Executor: three pipeline stages on their own threads, joined by bounded queues.
//   pre-process: take an arena from the pool, convert inputs to the device dtype, copy them in
//   execute:     the dispatcher asks the policy which live request's next Step runs, launches it
//                on that model's stream, and keeps a bounded number of Steps in flight
//   post-process: wait for the request's last Step, copy outputs out, convert back, complete
//
// Priorities and preemption (MISSION.md §3), all decided on the dispatcher thread:
//   - Who is offered to the policy, who pauses at a cancellation point (trace "pause"; "resume"
//     once its class runs again), who needs memory and who gives it up: the rules of
//     sched/admission.hpp, which the simulator obeys too. The dispatcher applies them.
//   - Memory (arena_memory_limit_bytes): arenas are charged to an ArenaBudget. The pre-process
//     stage never waits for memory: when the arena does not fit (or requests are already waiting
//     for memory) it hands the request on without one, and the dispatcher acquires the arena and
//     uploads the inputs when the request may run. A victim that has started is dumped (its
//     plan's live set at the boundary, Step::live_after, copied to pinned host memory on the
//     transfer stream, trace "dump") and gives its arena back; one that has not just gives its
//     arena back and uploads again later. A dumped request gets a new arena, its bytes copied back
//     to the same offsets (trace "restore"), before its next Step. Only the dispatcher waits for memory, and
//     only when no live request can run; it then polls the budget's refunds (post-process frees
//     arenas) and new arrivals, so there is no cycle of threads waiting on each other: every
//     arena is held by a request that can run, can be dumped, or is on its way to completion.
//   - Pausing inside a Step: a Step whose kernels include a device loop (StepInfo::pausable_inside:
//     an LSTM or GRU on the CPU backend) is a cancellation point after every iteration. Each
//     request of a model with such Steps has a PauseFlag. While the dispatcher runs one of those
//     Steps for a request, `running` (under running_mutex) names the request's flag and class;
//     pre-process, handing over a request of a higher class, sets that flag (on the CPU the
//     dispatcher is inside the Step, so only another thread can). The dispatcher sets it itself
//     when, at launch, a higher class is already live or handed over but not yet seen. The loop
//     saves its state into the request's arena and returns; the request is then paused inside the
//     Step (trace "pause" with the iteration), and resumes (trace "resume") from that iteration
//     like a request paused at a boundary. It keeps its arena: only boundary pauses are dumped.
//     The flag is cleared as the Step returns, paused or not. A pausable Step runs armed only once
//     a request of a class above its own has been submitted to this executor (top_class_submitted):
//     armed, a device loop costs a host wait on CUDA and cannot be a graph, so a workload of one
//     class pays nothing; the very first higher-class request may find a Step running unarmed.
//   - Deadlines: a request whose deadline passes before its first Step fails with
//     Error(deadline_exceeded), checked in pre-process and at each decision.
#include "loom/executor.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <shared_mutex>
#include <thread>

#include "backend/backend.hpp"
#include "backend/open_backend.hpp"
#include "loom/policy.hpp"
#include "profile/active_profile.hpp"
#include "runtime/bounded_queue.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/memory_pool.hpp"
#include "sched/admission.hpp"
#include "sched/cancellation.hpp"
#include "sched/device_shadow.hpp"
#include "sched/step_cost.hpp"
#include "trace/nvtx.hpp"
#include "trace/request_recorder.hpp"

namespace loom {

int cuda_device_count() noexcept { return backend::cuda_device_count(); }

const char* version() noexcept { return "0.1.0"; }

namespace {

using Clock = std::chrono::steady_clock;

struct Request {
  std::uint64_t id = 0;
  runtime::LoadedModel* model = nullptr;
  std::vector<Tensor> inputs;
  RequestOptions options;
  Callback done;
  runtime::PooledBuffer arena;   // empty while waiting for memory or dumped
  runtime::BudgetCharge charge;  // the arena's share of arena_memory_limit_bytes
  std::unique_ptr<backend::Event> inputs_ready;
  std::unique_ptr<backend::Event> finished;
  std::size_t next_step = 0;
  std::uint32_t passed_over = 0;
  Clock::time_point ready_at;
  std::exception_ptr error;
  std::uint64_t nvtx_range = 0;
  std::unique_ptr<trace::RequestRecorder> recorder;  // only when recording a timeline
  // Preemption state, used by the dispatcher only.
  bool deferred = false;       // pre-process handed it on without an arena (counted in arena_waiters)
  bool paused = false;         // stopped at a cancellation point for a higher class
  bool dumped = false;         // its live bytes are in `dump`, its arena given back
  runtime::HostBuffer dump;    // kept until the request ends: restores copy from it asynchronously
  runtime::StepCursor cursor;  // where Step next_step paused inside; at its start otherwise
  // Paused inside a Step while a higher class needs its memory: it finishes that Step, its flag
  // not armed, and goes on to a boundary cancellation point, where it can be dumped.
  bool needs_boundary = false;
  // Polled by the device loops of its model's pausable Steps; null when the model has none or
  // preemption is off. Set by whichever thread sees a higher class first (see the top of the file).
  std::unique_ptr<backend::PauseFlag> pause_flag;

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

}  // namespace

struct Executor::Impl {
  ExecutorOptions options;
  std::unique_ptr<backend::Backend> device_holder;
  backend::Backend* device = nullptr;
  std::unique_ptr<SchedulingPolicy> policy;
  std::unique_ptr<runtime::MemoryPool> pool;
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
  // The pausable Step now running and who handed what to the dispatcher (see the top of the file).
  struct RunningPausable {
    backend::PauseFlag* flag = nullptr;  // null: none running
    Priority priority = Priority::normal;
  };
  static constexpr std::size_t kClasses = 3;  // Priority::background .. Priority::urgent
  static std::size_t class_index(Priority p) noexcept { return static_cast<std::size_t>(static_cast<int>(p) + 1); }
  std::mutex running_mutex;
  std::condition_variable handed_over_changed;        // for pausable_step_hook's wait
  RunningPausable running;                            // guarded by running_mutex
  std::array<std::uint64_t, kClasses> handed_over{};  // per class, guarded by running_mutex
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

  explicit Impl(ExecutorOptions opts)
      : options(std::move(opts)),
        to_pre(options.queue_capacity),
        to_exec(options.queue_capacity),
        to_post(options.queue_capacity) {
    policy = make_policy(options.policy, options.policy_options);
    if (options.compute_dtype != DType::f32 && options.compute_dtype != DType::f16)
      throw Error(ErrorCode::invalid_argument, "compute_dtype must be f32 or f16");
    if (!(options.cancellation_interval_us >= 0) || !std::isfinite(options.cancellation_interval_us))
      throw Error(ErrorCode::invalid_argument, "cancellation_interval_us must be a finite time >= 0");
    device_holder = backend::open_backend(options.device);
    device = device_holder.get();
    profile = profile::resolve_profile(options.profile, device->device_name());
    if (options.compute_dtype == DType::f16 && device->kind() != backend::Kind::cuda)
      throw Error(ErrorCode::unsupported,
                  "f16 compute needs the CUDA backend; device '" + options.device + "' resolved to " + device->name());
    pool = std::make_unique<runtime::MemoryPool>(*device);
    budget = std::make_unique<runtime::ArenaBudget>(options.arena_memory_limit_bytes);
    upload_stream = device->create_stream(0);
    download_stream = device->create_stream(0);
    transfer_stream = device->create_stream(0);
    if (options.record_timeline) timeline_clock = std::make_unique<trace::TimelineClock>(*upload_stream);
    pre_thread = std::thread([this] { pre_process_loop(); });
    exec_thread = std::thread([this] { execute_loop(); });
    post_thread = std::thread([this] { post_process_loop(); });
  }

  ~Impl() { stop(); }

  void stop() {
    std::lock_guard lock(shutdown_mutex);
    if (stopped) return;
    stopped = true;
    accepting = false;
    to_pre.close();
    if (pre_thread.joinable()) pre_thread.join();
    if (exec_thread.joinable()) exec_thread.join();
    if (post_thread.joinable()) post_thread.join();
  }

  double now_us() const { return std::chrono::duration<double, std::micro>(Clock::now() - epoch).count(); }
  double trace_now_us() const { return timeline_clock->host_now_us(); }

  // Any stage may fail a request; completion always happens on the post-process thread.
  void fail(RequestPtr& request, std::exception_ptr error) {
    request->error = error;
    to_post.push(request);
  }

  // The request's deadline has passed: it fails, named, without running.
  bool expire_if_late(RequestPtr& request, Clock::time_point now) {
    if (!request->has_deadline() || now <= request->options.deadline) return false;
    const double late_us = std::chrono::duration<double, std::micro>(now - request->options.deadline).count();
    ++requests_expired;
    fail(request, std::make_exception_ptr(
                      Error(ErrorCode::deadline_exceeded, "model '" + request->model->name() + "', request " +
                                                              std::to_string(request->id) + ": the deadline passed " +
                                                              std::to_string(static_cast<long long>(late_us)) +
                                                              " us before its first Step")));
    return true;
  }

  // The bytes charged to the budget for one arena of `model`.
  static std::uint64_t arena_charge(const runtime::LoadedModel& model) {
    return plan::align_up(std::max<std::uint64_t>(model.request_arena_bytes(), 1));
  }

  // Pre-process has put a request of class `priority` on the dispatcher's queue: a pausable Step
  // of a lower class that is running now pauses at its next iteration.
  void handed_over_to_dispatcher(Priority priority) {
    {
      std::lock_guard lock(running_mutex);
      ++handed_over[class_index(priority)];
      if (running.flag && priority > running.priority) running.flag->set();
    }
    handed_over_changed.notify_all();
  }

  // Copies the request's (converted) inputs into its arena on `stream`.
  void upload_inputs(Request& request, backend::Stream& stream) {
    const auto& model = *request.model;
    const auto& plan = model.plan();
    if (request.recorder) request.recorder->begin(trace::RequestRecorder::Span::upload, stream);
    for (std::size_t i = 0; i < plan.input_ids.size(); ++i)
      stream.copy_to_device(model.address(plan.input_ids[i], request.arena.get()), request.inputs[i].data(),
                            request.inputs[i].bytes());
    if (request.recorder) request.recorder->end(stream);
    request.inputs_ready = stream.record();
  }

  void pre_process_loop() {
    while (auto item = to_pre.pop()) {
      RequestPtr request = std::move(*item);
      try {
        if (request->has_deadline() && expire_if_late(request, Clock::now())) continue;
        auto& model = *request->model;
        const auto& plan = model.plan();
        // Format conversion happens here, on the host, so the device sees only its own dtype.
        for (std::size_t i = 0; i < plan.input_ids.size(); ++i) {
          const auto& value = plan.values[static_cast<std::size_t>(plan.input_ids[i])];
          if (request->inputs[i].dtype() != value.dtype) request->inputs[i] = request->inputs[i].to(value.dtype);
        }
        bool admitted = true;
        if (budget->limited()) {
          const std::uint64_t bytes = arena_charge(model);
          if (bytes > budget->limit())
            throw Error(ErrorCode::out_of_memory,
                        "model '" + model.name() + "', request " + std::to_string(request->id) + ": its arena needs " +
                            std::to_string(bytes) + " bytes, more than arena_memory_limit_bytes (" +
                            std::to_string(budget->limit()) + ")");
          admitted = arena_waiters == 0 && budget->try_charge(bytes);
          if (admitted) request->charge = runtime::BudgetCharge(budget.get(), bytes);
        }
        if (admitted) {
          request->arena = pool->acquire(model.request_arena_bytes());
          upload_inputs(*request, *upload_stream);
        } else {
          request->deferred = true;
          ++arena_waiters;
        }
        if (options.preemption && model.info().resume_bytes > 0) request->pause_flag = device->create_pause_flag();
        request->ready_at = Clock::now();
        const Priority priority = request->options.priority;
        if (to_exec.push(request)) handed_over_to_dispatcher(priority);
      } catch (...) {
        fail(request, std::current_exception());
      }
    }
    {
      std::lock_guard lock(running_mutex);
      pre_process_done = true;
    }
    handed_over_changed.notify_all();
    to_exec.close();
  }

  // ---- Dispatcher helpers (dispatcher thread only) ----

  // Stops a request at the cancellation point it has reached (or records that its Step paused
  // inside).
  void pause(Request& request) {
    request.paused = true;
    ++preemptions;
    if (request.inside_step()) ++pauses_inside_steps;
    record_preemption(request, "pause");
  }

  void resume(Request& request) {
    request.paused = false;
    record_preemption(request, "resume");
  }

  void record_preemption(Request& request, const char* action) {
    if (!request.recorder) return;
    if (request.inside_step()) {
      request.recorder->preempted(action, trace_now_us(), 0, request.next_step, request.model->info().resume_bytes,
                                  request.cursor.iteration);
    } else {
      const std::size_t step = request.next_step - 1;
      request.recorder->preempted(action, trace_now_us(), 0, step,
                                  request.model->plan().steps[step].info.live_bytes_after);
    }
  }

  // Runs (or resumes) the request's next Step; false when it paused inside. A pausable Step runs
  // with the request's pause flag armed: named in `running` for pre-process, and set at once when
  // a higher class than the request's is live (`top`) or handed over and not yet seen (`seen`).
  bool run_next_step(Request& request, Priority top, const std::array<std::uint64_t, kClasses>& seen) {
    auto& model = *request.model;
    backend::PauseFlag* flag = request.pause_flag.get();
    const Priority priority = request.options.priority;
    const bool higher_class_seen =
        top_class_submitted.load() > static_cast<int>(class_index(priority)) || options.pausable_step_hook;
    if (!flag || request.needs_boundary || !model.pausable_inside(request.next_step) ||
        (!higher_class_seen && request.cursor.at_start()))
      return model.run_step(request.next_step, request.arena.get(), request.cursor, nullptr);
    {
      std::lock_guard lock(running_mutex);
      running = {flag, priority};
      bool higher = top > priority;
      for (std::size_t c = class_index(priority) + 1; c < kClasses; ++c) higher |= handed_over[c] > seen[c];
      if (higher) flag->set();
    }
    // Disarms the flag however the Step ends: a pause asked for after its last check must not
    // reach its next run.
    struct Disarm {
      Impl& impl;
      backend::PauseFlag& flag;
      ~Disarm() {
        std::lock_guard lock(impl.running_mutex);
        impl.running = {};
        flag.clear();
      }
    } disarm{*this, *flag};
    if (options.pausable_step_hook) {
      std::uint64_t wait_for = 0;
      try {
        wait_for = options.pausable_step_hook(model.name(), request.next_step, request.cursor.iteration);
      } catch (...) {
        wait_for = 0;
      }
      std::unique_lock lock(running_mutex);
      handed_over_changed.wait(lock, [&] {
        std::uint64_t total = 0;
        for (auto n : handed_over) total += n;
        return pre_process_done || total >= wait_for;
      });
    }
    return model.run_step(request.next_step, request.arena.get(), request.cursor, flag->device_address());
  }

  // Copies a paused request's live bytes to host memory and gives its arena back.
  void dump(Request& request) {
    const double start = timeline_clock ? trace_now_us() : 0;
    auto& model = *request.model;
    const auto& plan = model.plan();
    const auto& boundary = plan.steps[request.next_step - 1];
    const std::uint64_t total = boundary.info.live_bytes_after;
    if (request.dump.bytes() < total) request.dump = runtime::HostBuffer(*device, total);
    // After the request's launched Steps (and whatever else the model's stream holds).
    transfer_stream->wait(*model.stream().record());
    std::uint64_t offset = 0;
    for (int id : boundary.live_after) {
      const auto bytes = plan.values[static_cast<std::size_t>(id)].bytes;
      transfer_stream->copy_to_host(request.dump.data() + offset, model.address(id, request.arena.get()), bytes);
      offset += bytes;
    }
    // The pool does not order a block's reuse by stream: the copies must land before the arena
    // goes back to it.
    transfer_stream->synchronize();
    request.arena.reset();
    request.charge.reset();
    request.dumped = true;
    bytes_dumped += total;
    if (request.recorder)
      request.recorder->preempted("dump", start, trace_now_us() - start, request.next_step - 1, total);
  }

  // Copies a dumped request's live bytes into its new arena, at the offsets they came from,
  // ordered before its next Step.
  void restore(Request& request) {
    const double start = timeline_clock ? trace_now_us() : 0;
    auto& model = *request.model;
    const auto& plan = model.plan();
    const auto& boundary = plan.steps[request.next_step - 1];
    std::uint64_t offset = 0;
    for (int id : boundary.live_after) {
      const auto bytes = plan.values[static_cast<std::size_t>(id)].bytes;
      transfer_stream->copy_to_device(model.address(id, request.arena.get()), request.dump.data() + offset, bytes);
      offset += bytes;
    }
    model.stream().wait(*transfer_stream->record());
    request.dumped = false;
    if (request.recorder)
      request.recorder->preempted("restore", start, trace_now_us() - start, request.next_step - 1,
                                  boundary.info.live_bytes_after);
  }

  // Gives an unstarted request's arena back; its inputs are uploaded again when it may run.
  void release_unstarted(Request& request) {
    if (request.inputs_ready) request.inputs_ready->synchronize();
    request.arena.reset();
    request.charge.reset();
  }

  static sched::AdmissionView admission_view(const Request& r) {
    sched::AdmissionView v;
    v.priority = static_cast<int>(r.options.priority);
    v.started = r.started();
    v.at_cancellation_point = r.at_cancellation_point();
    v.inside_step = r.inside_step();
    v.holds_arena = r.arena.get() != nullptr;
    v.paused = r.paused;
    v.needs_boundary = r.needs_boundary;
    return v;
  }

  // Gives live[index] an arena (restoring or uploading into it), making room by dumping paused and
  // releasing unstarted requests of lower classes. False when the memory is not there yet.
  bool obtain_arena(std::size_t index, std::vector<RequestPtr>& live) {
    Request& request = *live[index];
    const std::uint64_t bytes = arena_charge(*request.model);
    if (!budget->try_charge(bytes)) {
      // Victims in the order of the rules (sched/admission.hpp).
      std::vector<sched::AdmissionView> views;
      for (const auto& r : live) views.push_back(admission_view(*r));
      bool fits = false;
      for (std::size_t victim : sched::eviction_order(views, index)) {
        if (live[victim]->started())
          dump(*live[victim]);
        else
          release_unstarted(*live[victim]);
        if ((fits = budget->try_charge(bytes))) break;
      }
      if (!fits) {
        for (std::size_t leaving : sched::must_leave_step(views, index)) live[leaving]->needs_boundary = true;
        return false;
      }
    }
    request.charge = runtime::BudgetCharge(budget.get(), bytes);
    request.arena = pool->acquire(request.model->request_arena_bytes());
    if (request.dumped) {
      restore(request);
    } else {
      upload_inputs(request, *transfer_stream);
      if (request.deferred) {
        request.deferred = false;
        --arena_waiters;
      }
    }
    return true;
  }

  void execute_loop() {
    std::vector<RequestPtr> live;
    std::deque<std::unique_ptr<backend::Event>> inflight;
    std::vector<StepCandidate> candidates;
    std::vector<sched::AdmissionView> views;  // of `live`, for the rules
    sched::Admission admission;               // offered: the live index of each candidate
    std::uint64_t arrivals = 0, hold_until = 0;
    std::array<std::uint64_t, kClasses> seen{};  // arrivals per class
    std::size_t with_deadline = 0;               // live requests that have not started and carry a deadline
    auto arrive = [&](RequestPtr request) {
      ++arrivals;
      ++seen[class_index(request->options.priority)];
      if (request->has_deadline()) ++with_deadline;
      live.push_back(std::move(request));
    };
    // Removes live[i] and hands it to post-process (done or failed).
    auto retire = [&](std::size_t i) {
      RequestPtr done = std::move(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      if (done->has_deadline() && !done->started()) --with_deadline;
      if (done->deferred) --arena_waiters;
      to_post.push(done);
    };
    // The AcceleratorState policies see: the Steps launched, placed by their estimated costs.
    AcceleratorState empty;
    empty.onchip_capacity_bytes = device->onchip_bytes();
    sched::DeviceShadow shadow(empty);
    for (;;) {
      if (live.empty() || arrivals < hold_until) {
        auto item = to_exec.pop();
        if (!item) {
          if (live.empty()) break;
          hold_until = 0;  // shut down while a test hook held the dispatcher
        } else {
          arrive(std::move(*item));
        }
        continue;  // re-check the hold, then take whatever else has arrived
      }
      while (auto item = to_exec.try_pop()) arrive(std::move(*item));
      // A model whose outputs are all constants or inputs compiles to no Steps: its requests only
      // wait for their inputs to land before the outputs are copied out.
      for (std::size_t i = 0; i < live.size();) {
        Request& r = *live[i];
        if (!r.model->plan().steps.empty() || !r.arena.get()) {
          ++i;
          continue;
        }
        try {
          auto& stream = r.model->stream();
          stream.wait(*r.inputs_ready);
          r.finished = stream.record();
        } catch (...) {
          r.error = std::current_exception();
        }
        retire(i);
      }
      if (with_deadline > 0) {
        const auto now = Clock::now();
        for (std::size_t i = 0; i < live.size();) {
          if (!live[i]->started() && live[i]->has_deadline() && now > live[i]->options.deadline) {
            --with_deadline;
            if (live[i]->deferred) {
              live[i]->deferred = false;
              --arena_waiters;
            }
            RequestPtr late = std::move(live[i]);
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
            expire_if_late(late, now);
          } else {
            ++i;
          }
        }
      }
      if (live.empty()) continue;

      // Who may run (sched/admission.hpp).
      views.clear();
      for (const auto& r : live) views.push_back(admission_view(*r));
      sched::decide_admission(views, options.preemption, admission);
      const auto top = static_cast<Priority>(admission.running_class);
      for (std::size_t i : admission.pause) pause(*live[i]);
      std::vector<std::size_t>& offered = admission.offered;
      {
        // Memory for the requests that may run without an arena, most urgent first.
        const std::vector<std::size_t>& needing = admission.need_memory;
        if (!needing.empty()) {
          const std::uint64_t refunds_seen = budget->refunds();
          bool obtained = false;
          for (std::size_t i : needing) {
            try {
              if (obtain_arena(i, live)) {
                obtained = true;
                if (!admission.draining) offered.push_back(i);
              }
            } catch (...) {
              live[i]->error = std::current_exception();
            }
          }
          // Requests that failed to get memory (an allocation error, not a wait) end here.
          for (std::size_t i = live.size(); i-- > 0;)
            if (live[i]->error) {
              retire(i);
              offered.clear();  // indices moved: decide again
              obtained = true;
            }
          // A model without Steps is finished at the top of the next round, now that it has memory.
          std::erase_if(offered, [&](std::size_t i) { return live[i]->model->plan().steps.empty(); });
          if (offered.empty()) {
            // Requests just asked to leave their Step run in the next round: no wait for them.
            const bool leaving = std::any_of(live.begin(), live.end(),
                                             [](const RequestPtr& r) { return r->needs_boundary && r->paused; });
            if (!obtained && !leaving) budget->wait_for_refund(refunds_seen, std::chrono::milliseconds(1));
            continue;
          }
          std::sort(offered.begin(), offered.end());  // candidates in arrival order
        }
        for (std::size_t i : offered)
          if (live[i]->paused) resume(*live[i]);
      }

      const auto decision_start = Clock::now();
      candidates.clear();
      for (std::size_t i : offered) {
        const auto& r = live[i];
        const auto& step = r->model->info().steps[r->next_step];
        StepCandidate c;
        c.request_id = r->id;
        c.model_index = r->model->index();
        c.step_index = r->next_step;
        c.step_count = r->model->plan().steps.size();
        c.arrival_us = std::chrono::duration<double, std::micro>(r->ready_at - epoch).count();
        // Measured Step times (device profile) where there are some, else the roofline.
        const StepCost cost = sched::scheduling_cost(step);
        c.compute_us = cost.compute_us;
        c.memory_us = cost.memory_us;
        c.bytes = step.weight_bytes + step.activation_bytes_read + step.bytes_written;
        c.working_set_bytes = step.working_set_bytes;
        c.passed_over = r->passed_over;
        c.priority = static_cast<int>(r->options.priority);
        const auto& steps = r->model->info().steps;
        c.lookahead_count = std::min(kMaxLookahead, steps.size() - r->next_step - 1);
        for (std::size_t k = 0; k < c.lookahead_count; ++k) {
          c.lookahead[k] = sched::scheduling_cost(steps[r->next_step + 1 + k]);
        }
        candidates.push_back(c);
      }
      shadow.advance_to(now_us());
      std::size_t pick = policy->pick(candidates, shadow.state());
      if (pick >= candidates.size()) pick = 0;  // a policy bug must not crash the executor
      for (std::size_t k = 0; k < offered.size(); ++k)
        if (k != pick) ++live[offered[k]]->passed_over;
      const std::size_t chosen = offered[pick];
      live[chosen]->passed_over = 0;  // its next Step is a new candidate
      shadow.launch(candidates[pick].cost());

      RequestPtr& request = live[chosen];
      auto& model = *request->model;
      bool finished = false, completed = true;
      try {
        auto* recorder = request->recorder.get();
        if (recorder) recorder->picked(timeline_clock->host_now_us(), request->next_step, candidates.size());
        const bool first_launch = !request->started();
        if (first_launch) model.stream().wait(*request->inputs_ready);
        // The timed events bracket the Step on its stream, after the wait for the inputs.
        if (recorder) recorder->begin(trace::RequestRecorder::Span::step, model.stream(), request->next_step);
        // Dispatch cost: from the policy's input to the Step's launch. On the CPU backend a
        // launch runs the Step to completion, so there it ends where the launch begins.
        const auto launch_start = Clock::now();
        {
          trace::ScopedRange range(model.step_label(request->next_step));
          completed = run_next_step(*request, top, seen);
        }
        const auto launch_end = device->kind() == backend::Kind::cpu ? launch_start : Clock::now();
        if (model.last_step_was_graph()) ++cuda_graph_steps;
        dispatch_host_ns += static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(launch_end - decision_start).count());
        if (completed) ++steps_dispatched;
        if (recorder) recorder->end(model.stream(), completed ? -1 : request->cursor.iteration);
        if (first_launch && request->has_deadline()) --with_deadline;
        if (completed) {
          ++request->next_step;
          request->needs_boundary = false;
        } else {
          pause(*request);  // inside the Step: it resumes from request->cursor
        }
        inflight.push_back(model.stream().record());
        // Bound the work queued ahead of the device so the policy's later choices still matter.
        while (policy->bounded() && inflight.size() > options.max_inflight_steps) {
          inflight.front()->synchronize();
          inflight.pop_front();
        }
        while (!inflight.empty() && inflight.front()->ready()) inflight.pop_front();
        if (inflight.empty()) shadow.idle_at(now_us());
        if (request->next_step == model.plan().steps.size()) {
          request->finished = model.stream().record();
          finished = true;
        }
      } catch (...) {
        request->error = std::current_exception();
        finished = true;
      }
      const std::size_t steps_launched = request->next_step;
      if (finished) retire(chosen);
      if (options.after_step_hook && completed) {
        try {
          hold_until = options.after_step_hook(model.name(), steps_launched);
        } catch (...) {
          hold_until = 0;
        }
      }
    }
    to_post.close();
  }

  // A request that failed or expired may still have work queued that touches its arena: the
  // upload of its inputs (upload or transfer stream), its launched Steps and any partly launched
  // one (its model's stream), a restore (transfer stream), a partial download. Nothing more will
  // be queued for it, so an event recorded now on each of those streams marks the end of all of
  // it, and the pool reuses the arena only once they are reached (without this thread waiting).
  void release_failed_arena(Request& request) {
    if (!request.arena.get()) return;
    backend::Stream* streams[] = {upload_stream.get(), transfer_stream.get(), download_stream.get(),
                                  &request.model->stream()};
    std::vector<std::unique_ptr<backend::Event>> after;
    try {
      for (backend::Stream* stream : streams) after.push_back(stream->record());
    } catch (...) {
      // Recording failed (a failed device): wait for the streams instead. A stream that cannot
      // be waited for belongs to a context whose work has been abandoned.
      for (backend::Stream* stream : streams) {
        try {
          stream->synchronize();
        } catch (...) {
        }
      }
      request.arena.reset();
      return;
    }
    pool->release_after(std::move(request.arena), std::move(after));
  }

  void post_process_loop() {
    while (auto item = to_post.pop()) {
      RequestPtr request = std::move(*item);
      Outputs outputs;
      if (!request->error) {
        try {
          auto& model = *request->model;
          const auto& plan = model.plan();
          download_stream->wait(*request->finished);
          const auto& infos = model.info().outputs;
          std::vector<Tensor> device_outputs;
          for (std::size_t i = 0; i < plan.output_ids.size(); ++i) {
            const auto& value = plan.values[static_cast<std::size_t>(plan.output_ids[i])];
            device_outputs.emplace_back(value.dtype, value.shape);
          }
          if (request->recorder) request->recorder->begin(trace::RequestRecorder::Span::download, *download_stream);
          for (std::size_t i = 0; i < plan.output_ids.size(); ++i)
            download_stream->copy_to_host(device_outputs[i].data(),
                                          model.address(plan.output_ids[i], request->arena.get()),
                                          device_outputs[i].bytes());
          if (request->recorder) request->recorder->end(*download_stream);
          download_stream->synchronize();
          for (std::size_t i = 0; i < device_outputs.size(); ++i)
            outputs.push_back(device_outputs[i].dtype() == infos[i].dtype ? std::move(device_outputs[i])
                                                                          : device_outputs[i].to(infos[i].dtype));
        } catch (...) {
          request->error = std::current_exception();
        }
      }
      if (request->error)
        release_failed_arena(*request);
      else
        request->arena.reset();  // its download was synchronised: nothing queued touches it
      request->charge.reset();
      trace::end_range(request->nvtx_range);
      // Before the counters and the callback: whoever saw the request complete sees its events.
      if (request->recorder)
        request->recorder->complete(*timeline_clock, request->model->info().steps, timeline_clock->host_now_us(),
                                    request->error != nullptr, timeline);
      (request->error ? failed : completed)++;
      try {
        request->done(request->error, std::move(outputs));
      } catch (...) {
        // A throwing user callback must not take the pipeline down with it.
      }
    }
  }

  runtime::LoadedModel& find(const std::string& name) const {
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

  void check_inputs(const runtime::LoadedModel& model, const std::vector<Tensor>& inputs) const {
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

  void enqueue(const std::string& name, std::vector<Tensor> inputs, Callback done, RequestOptions options) {
    if (!accepting) throw Error(ErrorCode::shutdown, "the executor is shut down; request for '" + name + "' refused");
    auto& model = find(name);
    check_inputs(model, inputs);
    const int cls = static_cast<int>(class_index(options.priority));
    for (int top = top_class_submitted.load(); cls > top && !top_class_submitted.compare_exchange_weak(top, cls);) {
    }
    auto request = std::make_unique<Request>();
    request->id = next_id++;
    request->model = &model;
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
};

Executor::Executor(ExecutorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Executor::~Executor() = default;

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
  trace::ScopedRange range("load " + name);
  const Model model = optimize(original, options.optimize);
  std::unique_lock lock(impl_->models_mutex);
  auto loaded = std::make_unique<runtime::LoadedModel>(
      model, name, impl_->models.size(), impl_->options.compute_dtype, *impl_->device, *impl_->pool,
      profile::roofline_peaks(impl_->profile, *impl_->device, impl_->options.compute_dtype), options.stream_priority,
      options.persistent_grid_max_sms);
  loaded->apply_profile(impl_->profile);
  loaded->set_graphs_enabled(impl_->options.cuda_graphs);
  // Cancellation points from each Step's estimated time: its measured time when the profile has
  // one, else the roofline estimate max(compute, memory) (the two resources overlap).
  {
    const auto& steps = loaded->info().steps;
    std::vector<double> step_us;
    std::vector<std::uint64_t> live_bytes;
    for (const auto& step : steps) {
      step_us.push_back(step.measured_us > 0 ? step.measured_us : std::max(step.compute_us, step.memory_us));
      live_bytes.push_back(step.live_bytes_after);
    }
    loaded->set_cancellation_points(sched::choose_cancellation_points(
        step_us, live_bytes, {impl_->options.cancellation_interval_us, impl_->options.cancellation_max_live_bytes}));
  }
  if (!impl_->models.emplace(name, std::move(loaded)).second)
    throw Error(ErrorCode::invalid_argument, "a model named '" + name + "' is already loaded");
}

std::vector<std::string> Executor::models() const {
  std::shared_lock lock(impl_->models_mutex);
  std::vector<std::string> names;
  for (const auto& [name, model] : impl_->models) names.push_back(name);
  return names;
}

ModelInfo Executor::model_info(const std::string& name) const { return impl_->find(name).info(); }

std::future<Outputs> Executor::submit(const std::string& model, std::vector<Tensor> inputs, RequestOptions options) {
  auto promise = std::make_shared<std::promise<Outputs>>();
  auto future = promise->get_future();
  impl_->enqueue(
      model, std::move(inputs),
      [promise](std::exception_ptr error, Outputs outputs) {
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
  impl_->enqueue(model, std::move(inputs), std::move(done), options);
}

void Executor::shutdown() { impl_->stop(); }

std::string Executor::device_name() const { return impl_->device->device_name(); }
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
  return s;
}

}  // namespace loom
