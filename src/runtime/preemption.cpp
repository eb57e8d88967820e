// Preemption on the dispatcher thread (MISSION.md §3): pausing at cancellation points and inside
// pausable Steps (the pause flags), dumping a paused request's live bytes to host memory and
// restoring them, and finding memory for a request by the rules of sched/admission.hpp.
//
// Pausing inside a Step: a Step whose kernels include a device loop (StepInfo::pausable_inside:
// an LSTM or GRU) is a cancellation point after every iteration. Each request of a model with
// such Steps has a PauseFlag. While the dispatcher runs one of those Steps for a request,
// `running` (under running_mutex) names the request's flag and class; pre-process, handing over a
// request of a higher class, sets that flag (on the CPU the dispatcher is inside the Step, so only
// another thread can). The dispatcher sets it itself when, at launch, a higher class is already
// live or handed over but not yet seen. The loop saves its state into the request's arena and
// returns; the request is then paused inside the Step (trace "pause" with the iteration), and
// resumes (trace "resume") from that iteration like a request paused at a boundary. It keeps its
// arena: only boundary pauses are dumped. The flag is cleared as the Step returns, paused or not.
// A pausable Step runs armed only once a request of a class above its own has been submitted to
// this executor (top_class_submitted): armed, a device loop costs a host wait on CUDA and cannot
// be a graph, so a workload of one class pays nothing; the very first higher-class request may
// find a Step running unarmed.
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/executor_impl.hpp"

namespace loom {

// Stops a request at the cancellation point it has reached (or records that its Step paused
// inside).
void Executor::Impl::pause(Request& request) {
  request.paused = true;
  ++preemptions;
  if (request.inside_step()) ++pauses_inside_steps;
  record_preemption(request, "pause");
}

void Executor::Impl::resume(Request& request) {
  request.paused = false;
  record_preemption(request, "resume");
}

void Executor::Impl::record_preemption(Request& request, const char* action) {
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
bool Executor::Impl::run_next_step(Request& request, Priority top, const ClassCounts& seen) {
  auto& model = *request.model;
  backend::PauseFlag* flag = request.pause_flag.get();
  const Priority priority = request.options.priority;
  const bool higher_class_seen =
      top_class_submitted.load() > static_cast<int>(class_index(priority)) || hooks.pausable_step;
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
  if (hooks.pausable_step) {
    std::uint64_t wait_for = 0;
    try {
      wait_for = hooks.pausable_step(model.name(), request.next_step, request.cursor.iteration);
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
void Executor::Impl::dump(Request& request) {
  const auto host_start = Clock::now();
  const double start = timeline_clock ? trace_now_us() : 0;
  auto& model = *request.model;
  const std::size_t boundary = request.next_step - 1;
  const std::uint64_t total = model.live_bytes_after(boundary);
  if (request.dump.bytes() < total) request.dump = runtime::HostBuffer(*device, total);
  // After the request's launched Steps (and whatever else the last one's stream holds).
  model.order_after_step(boundary, *transfer_stream);
  model.dump_live(boundary, request.arena.get(), request.dump.data(), *transfer_stream);
  // The pool does not order a block's reuse by stream: the copies must land before the arena
  // goes back to it.
  transfer_stream->synchronize();
  request.arena.reset();
  request.charge.reset();
  request.dumped = true;
  bytes_dumped += total;
  add_transfer(total, std::chrono::duration<double, std::micro>(Clock::now() - host_start).count());
  if (request.recorder) request.recorder->preempted("dump", start, trace_now_us() - start, boundary, total);
}

// Copies a dumped request's live bytes into its new arena, at the offsets they came from,
// ordered before its next Step.
void Executor::Impl::restore(Request& request) {
  const auto host_start = Clock::now();
  const double start = timeline_clock ? trace_now_us() : 0;
  auto& model = *request.model;
  const std::size_t boundary = request.next_step - 1;
  model.restore_live(boundary, request.arena.get(), request.dump.data(), *transfer_stream);
  const std::size_t next = std::min(request.next_step, model.plan().steps.size() - 1);
  model.order_step_after(next, *transfer_stream->record());
  request.dumped = false;
  add_transfer(model.live_bytes_after(boundary),
               std::chrono::duration<double, std::micro>(Clock::now() - host_start).count());
  if (request.recorder)
    request.recorder->preempted("restore", start, trace_now_us() - start, boundary, model.live_bytes_after(boundary));
}

// Gives an unstarted request's arena back; its inputs are uploaded again when it may run.
void Executor::Impl::release_unstarted(Request& request) {
  if (request.inputs_ready) request.inputs_ready->synchronize();
  request.arena.reset();
  request.charge.reset();
}

sched::AdmissionView Executor::Impl::admission_view(const Request& r) {
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
bool Executor::Impl::obtain_arena(std::size_t index, std::vector<RequestPtr>& live) {
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

}  // namespace loom
