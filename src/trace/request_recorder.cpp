// Timed events of one request → its RequestTimes, its device figures and TraceEvents on the
// executor's timeline.
#include "trace/request_recorder.hpp"

#include <algorithm>
#include <string>

namespace loom::trace {

TimelineClock::TimelineClock(backend::Stream& stream) {
  host_origin_ = std::chrono::steady_clock::now();
  epoch_ = stream.record_timed();
  epoch_->synchronize();
}

double TimelineClock::host_now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - host_origin_).count();
}

double TimelineClock::device_us(backend::Event& event) const {
  event.synchronize();
  return event.microseconds_since(*epoch_);
}

RequestRecorder::RequestRecorder(std::uint64_t request, std::string model, double submitted_us)
    : request_(request), model_(std::move(model)), submitted_us_(submitted_us) {}

void RequestRecorder::begin(Span kind, backend::Stream& stream, std::size_t step, std::uint64_t bytes) {
  spans_.push_back({kind, step, bytes, stream.record_timed(), nullptr});
}

void RequestRecorder::end(backend::Stream& stream, std::int64_t paused_at_iteration) {
  if (spans_.empty() || spans_.back().end) return;
  spans_.back().end = stream.record_timed();
  spans_.back().paused_at_iteration = paused_at_iteration;
}

void RequestRecorder::picked(double at_us, std::size_t step, std::size_t candidates) {
  picks_.push_back({at_us, step, candidates});
}

void RequestRecorder::preempted(const char* action, double at_us, double duration_us, std::size_t step,
                                std::uint64_t bytes, std::int64_t iteration) {
  preemptions_.push_back({action, at_us, duration_us, step, bytes, iteration});
}

TraceEvent RequestRecorder::span_event(const PendingSpan& span, const std::vector<StepInfo>& steps) const {
  const std::string tag = model_ + "#" + std::to_string(request_);
  TraceEvent event;
  event.args["request"] = std::to_string(request_);
  event.args["model"] = model_;
  switch (span.kind) {
    case Span::upload:
      event.name = "H2D " + tag;
      event.category = "copy";
      event.track = "stream:upload";
      event.args["bytes"] = std::to_string(span.bytes);
      break;
    case Span::download:
      event.name = "D2H " + tag;
      event.category = "copy";
      event.track = "stream:download";
      event.args["bytes"] = std::to_string(span.bytes);
      break;
    case Span::step: {
      const bool known = span.step < steps.size();
      event.name = model_ + "/" + (known ? steps[span.step].name : "step " + std::to_string(span.step));
      event.category = "step";
      event.track = "stream:" + model_;
      event.args["step"] = std::to_string(span.step);
      std::string ops;
      if (known)
        for (const auto& op : steps[span.step].ops) ops += (ops.empty() ? "" : ",") + op;
      event.args["ops"] = ops;
      if (span.paused_at_iteration >= 0) event.args["paused_at_iteration"] = std::to_string(span.paused_at_iteration);
      break;
    }
  }
  return event;
}

RecordedRequest RequestRecorder::complete(const TimelineClock& clock, const std::vector<StepInfo>& steps,
                                          double completed_us, bool failed, Timeline* timeline) noexcept {
  RecordedRequest out;
  RequestTimes& t = out.times;
  t.total_us = std::max(0.0, completed_us - submitted_us_);
  // Where the request's device work began and ended, on the host clock.
  double first_step_start = -1, last_step_end = -1;
  for (auto& span : spans_) {
    if (!span.end) continue;  // the work between failed before its end was recorded
    try {
      const double start_us = clock.device_us(*span.start);
      // From the start event rather than the epoch: CUDA's float milliseconds keep sub-µs
      // resolution only over short intervals.
      span.end->synchronize();
      const double duration_us = std::max(0.0, span.end->microseconds_since(*span.start));
      switch (span.kind) {
        case Span::upload:
          t.h2d_us += duration_us;
          t.h2d_bytes += span.bytes;
          ++out.uploads;
          break;
        case Span::download:
          t.d2h_us += duration_us;
          t.d2h_bytes += span.bytes;
          ++out.downloads;
          break;
        case Span::step:
          out.steps_busy_us += duration_us;
          if (span.paused_at_iteration < 0) ++out.steps_run;  // a paused part is not a Step
          if (first_step_start < 0) first_step_start = start_us;
          last_step_end = std::max(last_step_end, start_us + duration_us);
          break;
      }
      if (timeline) {
        TraceEvent event = span_event(span, steps);
        event.start_us = start_us;
        event.duration_us = duration_us;
        timeline->add(std::move(event));
      }
    } catch (...) {
      // A span that cannot be timed is left out; the request's own outcome is reported elsewhere.
    }
  }
  // The phases partition [submit, completion]: compute from the first Step's start to the last
  // one's end, post from there on less the output copy, queue the rest less the input copy. The
  // device clock maps onto the host's within a few µs, and a copy's events may overlap a Step's by
  // as much, so each phase is bounded by what the ones before it left of the whole: their sum is
  // the whole exactly.
  t.h2d_us = std::min(t.h2d_us, t.total_us);
  t.d2h_us = std::min(t.d2h_us, t.total_us - t.h2d_us);
  const double left = t.total_us - t.h2d_us - t.d2h_us;
  if (first_step_start >= 0) {
    t.compute_us = std::clamp(last_step_end - first_step_start, 0.0, left);
    t.post_us = std::clamp(completed_us - last_step_end - t.d2h_us, 0.0, left - t.compute_us);
  } else {
    t.post_us = left;  // no Step ran (none, or it failed first)
  }
  t.queue_us = std::max(0.0, left - t.compute_us - t.post_us);
  if (timeline) add_host_events(steps, completed_us, failed, out.steps_run, *timeline);
  spans_.clear();
  picks_.clear();
  preemptions_.clear();
  return out;
}

void RequestRecorder::add_host_events(const std::vector<StepInfo>& steps, double completed_us, bool failed,
                                      std::size_t steps_run, Timeline& timeline) const {
  const std::string tag = model_ + "#" + std::to_string(request_);
  try {
    for (const auto& pick : picks_) {
      TraceEvent event;
      event.name = "pick " + tag + " step " + std::to_string(pick.step);
      event.category = "decision";
      event.track = "host:dispatcher";
      event.start_us = pick.at_us;
      event.args = {{"request", std::to_string(request_)},
                    {"model", model_},
                    {"step", std::to_string(pick.step)},
                    {"candidates", std::to_string(pick.candidates)}};
      timeline.add(std::move(event));
    }
    // On the dispatcher's row, where the decisions that caused them are.
    for (const auto& p : preemptions_) {
      const bool known = p.step < steps.size();
      const std::string step_name = known ? steps[p.step].name : "step " + std::to_string(p.step);
      TraceEvent event;
      event.name = std::string(p.action) + " " + tag + (p.iteration >= 0 ? " inside " : " after ") + step_name;
      if (p.iteration >= 0) event.name += " at iteration " + std::to_string(p.iteration);
      event.category = "preempt";
      event.track = "host:dispatcher";
      event.start_us = p.at_us;
      event.duration_us = p.duration_us;
      event.args = {{"action", p.action},     {"request", std::to_string(request_)},
                    {"model", model_},        {"step", std::to_string(p.step)},
                    {"step_name", step_name}, {"bytes", std::to_string(p.bytes)}};
      if (p.iteration >= 0) event.args["iteration"] = std::to_string(p.iteration);
      timeline.add(std::move(event));
    }
    TraceEvent life;
    life.name = tag;
    life.category = "request";
    life.track = "request:" + model_;
    life.start_us = submitted_us_;
    life.duration_us = std::max(0.0, completed_us - submitted_us_);
    life.args = {{"request", std::to_string(request_)},
                 {"model", model_},
                 {"status", failed ? "failed" : "ok"},
                 {"steps", std::to_string(steps_run)}};
    timeline.add(std::move(life));
  } catch (...) {
    // Out of memory while recording: the timeline misses this request, the pipeline carries on.
  }
}

}  // namespace loom::trace
