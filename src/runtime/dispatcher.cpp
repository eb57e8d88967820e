// The dispatcher: one thread that takes the requests pre-process hands on, decides at every
// scheduling point which live request's next Step runs (who may run by the rules of
// sched/admission.hpp, then the policy's pick among them) and launches it on its model's stream,
// keeping a bounded number of Steps in flight. Deadlines of requests that have not started are
// checked at each decision.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <vector>

#include "runtime/executor_impl.hpp"
#include "sched/device_shadow.hpp"
#include "sched/step_cost.hpp"
#include "trace/nvtx.hpp"

namespace loom {

class Executor::Impl::Dispatcher {
 public:
  explicit Dispatcher(Impl& impl) : impl_(impl), shadow_(empty_state(impl)) {}

  void run() {
    for (;;) {
      if (!take_arrivals()) break;
      // Busy from here to the launch's return: deciding, and on a backend whose launches run to
      // completion, running the Step.
      const auto busy_from = Clock::now();
      run_round();
      impl_.dispatcher_busy_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - busy_from).count());
      impl_.dispatcher_live = live_.size();
    }
    impl_.dispatcher_live = 0;
    impl_.to_post.close();
  }

 private:
  void run_round() {
    if (live_.empty()) return;
    retire_failed_work();
    finish_stepless();
    expire_late();
    if (live_.empty()) return;
    if (!decide_who_may_run()) return;
    launch(pick());
  }

  static AcceleratorState empty_state(const Impl& impl) {
    AcceleratorState empty;
    empty.onchip_capacity_bytes = impl.device->onchip_bytes();
    // A backend whose launches run to completion runs one Step at a time: nothing overlaps.
    empty.steps_overlap = !impl.device->capabilities().synchronous_launches;
    // Each model's Steps go to the model's one stream (LoadedModel::stream()).
    empty.one_stream_per_model = true;
    return empty;
  }

  // Waits for work when there is none (or a test hook holds the dispatcher for more arrivals),
  // then takes whatever has arrived. False once the queue is closed and nothing is live.
  bool take_arrivals() {
    while (live_.empty() || arrivals_ < hold_until_) {
      auto item = impl_.to_exec.pop();
      if (!item) {
        if (live_.empty()) return false;
        hold_until_ = 0;  // shut down while a test hook held the dispatcher
        break;
      }
      arrive(std::move(*item));
    }
    while (auto item = impl_.to_exec.try_pop()) arrive(std::move(*item));
    return true;
  }

  void arrive(RequestPtr request) {
    ++arrivals_;
    impl_.dispatcher_live = live_.size() + 1;
    ++seen_[Impl::class_index(request->options.priority)];
    if (request->has_deadline()) ++with_deadline_;
    live_.push_back(std::move(request));
  }

  // Removes live_[i] and hands it to post-process (done or failed).
  void retire(std::size_t i) {
    RequestPtr done = std::move(live_[i]);
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
    if (done->has_deadline() && !done->started()) --with_deadline_;
    if (done->deferred) --impl_.arena_waiters;
    impl_.to_post.push(done);
  }

  // Requests whose work failed on the device after its launch returned (a CPU stream's worker:
  // FailureScope) end here with that failure: nothing more is launched for them, and what is
  // queued of theirs is skipped. Other requests, and the model, carry on.
  void retire_failed_work() {
    for (std::size_t i = live_.size(); i-- > 0;) {
      if (!live_[i]->failure_scope->failed()) continue;
      live_[i]->error = live_[i]->failure_scope->failure();
      retire(i);
    }
  }

  // A model whose outputs are all constants or inputs compiles to no Steps: its requests only
  // wait for their inputs to land before the outputs are copied out.
  void finish_stepless() {
    for (std::size_t i = 0; i < live_.size();) {
      Request& r = *live_[i];
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
  }

  // Requests whose deadline passed before their first Step fail, named, without running.
  void expire_late() {
    if (with_deadline_ == 0) return;
    const auto now = Clock::now();
    for (std::size_t i = 0; i < live_.size();) {
      if (live_[i]->started() || !live_[i]->has_deadline() || now <= live_[i]->options.deadline) {
        ++i;
        continue;
      }
      --with_deadline_;
      if (live_[i]->deferred) {
        live_[i]->deferred = false;
        --impl_.arena_waiters;
      }
      RequestPtr late = std::move(live_[i]);
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
      impl_.expire_if_late(late, now);
    }
  }

  // Applies the rules: pauses, memory for the requests that need it (most urgent first), the
  // candidates in admission_.offered (arrival order), resumed where paused. False when nothing
  // can run this round (after waiting briefly for memory to come back when nothing changed).
  bool decide_who_may_run() {
    views_.clear();
    for (const auto& r : live_) views_.push_back(Impl::admission_view(*r));
    sched::decide_admission(views_, impl_.options.preemption, admission_);
    for (std::size_t i : admission_.pause) impl_.pause(*live_[i]);
    std::vector<std::size_t>& offered = admission_.offered;
    if (!admission_.need_memory.empty()) {
      const std::uint64_t refunds_seen = impl_.budget->refunds();
      bool obtained = false;
      // need_memory runs most urgent first, so a request that did not fit after taking every
      // victim it could leaves none for a later one (whose victims, of lower classes, are among
      // its own): a later one that needs as many bytes or more cannot fit this round either and
      // is not tried. Without this, each of thousands of waiting requests would rebuild the views
      // of all the others at every decision.
      std::uint64_t smallest_refused = UINT64_MAX;
      for (std::size_t i : admission_.need_memory) {
        const std::uint64_t bytes = Impl::arena_charge(*live_[i]->model);
        if (bytes >= smallest_refused) continue;
        try {
          if (impl_.obtain_arena(i, live_)) {
            obtained = true;
            if (!admission_.draining) offered.push_back(i);
          } else {
            smallest_refused = bytes;
          }
        } catch (...) {
          live_[i]->error = std::current_exception();
        }
      }
      // Requests that failed to get memory (an allocation error, not a wait) end here.
      for (std::size_t i = live_.size(); i-- > 0;)
        if (live_[i]->error) {
          retire(i);
          offered.clear();  // indices moved: decide again
          obtained = true;
        }
      // A model without Steps is finished at the top of the next round, now that it has memory.
      std::erase_if(offered, [&](std::size_t i) { return live_[i]->model->plan().steps.empty(); });
      if (offered.empty()) {
        // Requests just asked to leave their Step run in the next round: no wait for them.
        const bool leaving =
            std::any_of(live_.begin(), live_.end(), [](const RequestPtr& r) { return r->needs_boundary && r->paused; });
        if (!obtained && !leaving) impl_.budget->wait_for_refund(refunds_seen, std::chrono::milliseconds(1));
        return false;
      }
      std::sort(offered.begin(), offered.end());  // candidates in arrival order
    }
    for (std::size_t i : offered)
      if (live_[i]->paused) impl_.resume(*live_[i]);
    return true;
  }

  // The policy's choice among the offered requests; returns its index in live_.
  std::size_t pick() {
    decision_start_ = Clock::now();
    const std::vector<std::size_t>& offered = admission_.offered;
    candidates_.clear();
    for (std::size_t i : offered) candidates_.push_back(candidate(*live_[i]));
    shadow_.advance_to(impl_.now_us());
    std::size_t pick = impl_.policy->pick(candidates_, shadow_.state());
    if (pick >= candidates_.size()) pick = 0;  // a policy bug must not crash the executor
    for (std::size_t k = 0; k < offered.size(); ++k)
      if (k != pick) ++live_[offered[k]]->passed_over;
    const std::size_t chosen = offered[pick];
    live_[chosen]->passed_over = 0;  // its next Step is a new candidate
    shadow_.launch(candidates_[pick].cost());
    picked_from_ = candidates_.size();
    return chosen;
  }

  StepCandidate candidate(const Request& r) const {
    const auto& steps = r.model->info().steps;
    const auto& step = steps[r.next_step];
    StepCandidate c;
    c.request_id = r.id;
    c.model_index = r.model->index();
    c.step_index = r.next_step;
    c.step_count = steps.size();
    c.arrival_us = std::chrono::duration<double, std::micro>(r.ready_at - impl_.epoch).count();
    // Measured Step times (device profile) where there are some, else the roofline.
    const StepCost cost = sched::scheduling_cost(step);
    c.compute_us = cost.compute_us;
    c.memory_us = cost.memory_us;
    c.bytes = step.weight_bytes + step.activation_bytes_read + step.bytes_written;
    c.working_set_bytes = step.working_set_bytes;
    c.passed_over = r.passed_over;
    c.priority = static_cast<int>(r.options.priority);
    c.lookahead_count = std::min(kMaxLookahead, steps.size() - r.next_step - 1);
    for (std::size_t k = 0; k < c.lookahead_count; ++k)
      c.lookahead[k] = sched::scheduling_cost(steps[r.next_step + 1 + k]);
    return c;
  }

  // Launches live_[chosen]'s next Step (or resumes it inside), bounds the work in flight, and
  // retires the request after its last Step or a failure.
  void launch(std::size_t chosen) {
    RequestPtr& request = live_[chosen];
    auto& model = *request->model;
    bool finished = false, completed = true;
    // What this launch queues on the Step's stream is the request's: a failure there is its own.
    // (A model executed across processors has a stream per processor: the Step's is its processor's.)
    const std::size_t launched_step = request->next_step;
    backend::Stream& stream = model.step_stream(launched_step);
    struct ScopeGuard {
      backend::Stream& stream;
      ~ScopeGuard() { stream.set_failure_scope(nullptr); }
    } scope_guard{stream};
    stream.set_failure_scope(request->failure_scope);
    try {
      auto* recorder = request->recorder.get();
      if (recorder) recorder->picked(impl_.timeline_clock->host_now_us(), request->next_step, picked_from_);
      const bool first_launch = !request->started();
      if (first_launch) model.order_step_after(launched_step, *request->inputs_ready);
      // The timed events bracket the Step on its stream, after the wait for the inputs.
      if (recorder) recorder->begin(trace::RequestRecorder::Span::step, stream, request->next_step);
      // Dispatch cost: from the policy's input to the Step's launch. On the CPU backend a
      // launch runs the Step to completion, so there it ends where the launch begins.
      const auto launch_start = Clock::now();
      {
        trace::ScopedRange range(model.step_label(request->next_step));
        completed = impl_.run_next_step(*request, static_cast<Priority>(admission_.running_class), seen_);
      }
      const auto launch_end = impl_.device->capabilities().synchronous_launches ? launch_start : Clock::now();
      if (model.last_step_was_graph()) ++impl_.cuda_graph_steps;
      impl_.dispatch_host_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(launch_end - decision_start_).count());
      if (completed) {
        ++impl_.steps_dispatched;
        ++request->counters->steps;
      }
      if (recorder) recorder->end(stream, completed ? -1 : request->cursor.iteration);
      if (first_launch && request->has_deadline()) --with_deadline_;
      if (completed) {
        ++request->next_step;
        request->needs_boundary = false;
      } else {
        impl_.pause(*request);  // inside the Step: it resumes from request->cursor
      }
      if (completed && impl_.debug_compare) {
        // The comparison reads the Step's outputs: they must be there, and must not be the
        // leftovers of a kernel that failed after its launch returned.
        stream.synchronize();
        if (auto failure = request->failure_scope->failure()) std::rethrow_exception(failure);
        impl_.debug_compare->step_completed(*request, request->next_step - 1);
      }
      bound_inflight(stream.record(), *request->counters);
      if (request->next_step == model.plan().steps.size()) {
        // On the device's stream, which post-process's download stream can wait for.
        if (&stream != &model.stream()) model.order_after_step(launched_step, model.stream());
        request->finished = model.stream().record();
        finished = true;
      }
    } catch (...) {
      request->error = std::current_exception();
      finished = true;
    }
    const std::size_t steps_launched = request->next_step;
    if (finished) retire(chosen);
    if (impl_.hooks.after_step && completed) {
      try {
        hold_until_ = impl_.hooks.after_step(model.name(), steps_launched);
      } catch (...) {
        hold_until_ = 0;
      }
    }
  }

  // Bounds the work queued ahead of the device so the policy's later choices still matter:
  // finished Steps leave the count wherever they are (one model's Step may finish before an
  // older one of another model); past max_inflight_steps the thread waits for the oldest
  // unfinished one. The simulator's GPU model applies the same rule (sim/simulator.cpp).
  void bound_inflight(std::unique_ptr<backend::Event> launched, runtime::ModelCounters& counters) {
    inflight_.push_back({std::move(launched), &counters});
    const std::size_t depth = ++counters.inflight_steps;
    if (depth > counters.max_inflight_steps) counters.max_inflight_steps = depth;
    const auto finished = [](const InFlight& f) {
      if (!f.event->ready()) return false;
      --f.counters->inflight_steps;
      return true;
    };
    std::erase_if(inflight_, finished);
    while (impl_.policy->bounded() && inflight_.size() > impl_.options.max_inflight_steps) {
      inflight_.front().event->synchronize();
      --inflight_.front().counters->inflight_steps;
      inflight_.pop_front();
      std::erase_if(inflight_, finished);
    }
    if (inflight_.empty()) shadow_.idle_at(impl_.now_us());
  }

  // A Step launched and not yet seen finished, and the model it counts for.
  struct InFlight {
    std::unique_ptr<backend::Event> event;
    runtime::ModelCounters* counters;
  };

  Impl& impl_;
  std::vector<RequestPtr> live_;  // in arrival order
  std::deque<InFlight> inflight_;
  std::vector<StepCandidate> candidates_;
  std::vector<sched::AdmissionView> views_;  // of live_, for the rules
  sched::Admission admission_;               // offered: the live_ index of each candidate
  std::uint64_t arrivals_ = 0, hold_until_ = 0;
  Impl::ClassCounts seen_{};       // arrivals per class
  std::size_t with_deadline_ = 0;  // live requests that have not started and carry a deadline
  std::size_t picked_from_ = 0;    // candidates at the last decision
  Clock::time_point decision_start_;
  // The AcceleratorState policies see: the Steps launched, placed by their estimated costs.
  sched::DeviceShadow shadow_;
};

void Executor::Impl::execute_loop() { Dispatcher(*this).run(); }

}  // namespace loom
