// How the executor times a request: it gathers timed events around its copies and Steps, and the
// dispatcher's picks, while it moves through the pipeline; when it completes, the post-process
// thread turns them into the request's RequestTimes, the device stages' busy time and (when a
// timeline is recorded) TraceEvents. The dispatcher therefore never waits on timing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/model_info.hpp"
#include "loom/stats.hpp"
#include "loom/trace.hpp"

namespace loom::trace {

// The timeline's time origin. Device times are measured from an epoch timed event; host times
// from the host clock read just before that event was recorded, so that device work never appears
// to start before the host call that caused it (the two clocks agree to within the time an idle
// stream takes to pass an event, a few µs on a GPU, nanoseconds on the CPU backend).
class TimelineClock {
 public:
  // Records the epoch on `stream` (idle at the executor's start) and waits for it.
  explicit TimelineClock(backend::Stream& stream);

  double host_now_us() const;
  // Microseconds from the epoch to `event` (a timed event; waits for it).
  double device_us(backend::Event& event) const;

 private:
  std::chrono::steady_clock::time_point host_origin_;
  std::unique_ptr<backend::Event> epoch_;
};

// What one request's timed events came to.
struct RecordedRequest {
  RequestTimes times;
  double steps_busy_us = 0;     // its Steps' time on its model's stream (parts of paused Steps included)
  std::uint64_t steps_run = 0;  // Steps that ran to their end
  std::uint64_t uploads = 0;    // input copies (a request that gave its arena back uploads again)
  std::uint64_t downloads = 0;
};

// One request's timed events. Created at submit when timing; used by one pipeline stage at a time,
// so it needs no lock.
class RequestRecorder {
 public:
  enum class Span { upload, step, download };

  RequestRecorder(std::uint64_t request, std::string model, double submitted_us);

  // Brackets device work enqueued on `stream` with two timed events (recorded now, resolved later).
  // `bytes`: what a copy moves (carried on its trace event).
  void begin(Span kind, backend::Stream& stream, std::size_t step = 0, std::uint64_t bytes = 0);
  // `paused_at_iteration` >= 0: the Step span ends in a pause inside the Step, before that
  // iteration (its event carries the iteration; the rest of the Step is another span).
  void end(backend::Stream& stream, std::int64_t paused_at_iteration = -1);
  // The dispatcher chose this request's Step `step` among `candidates` at `at_us`.
  void picked(double at_us, std::size_t step, std::size_t candidates);
  // A preemption of this request at the boundary after Step `step` (host times): `action` is
  // "pause", "dump", "restore" or "resume"; `bytes` the live bytes at that boundary. With
  // `iteration` >= 0 it is inside Step `step` instead, before that iteration of its device loop
  // ("pause" or "resume"), and `bytes` the resume area kept in the request's arena.
  void preempted(const char* action, double at_us, double duration_us, std::size_t step, std::uint64_t bytes,
                 std::int64_t iteration = -1);

  // Resolves the request's events (waiting for them; the post-process thread has normally passed
  // them already) into its RequestTimes from submit to `completed_us` and its device figures, and,
  // when `timeline` is given, adds its copies, Steps, picks and its life to it. `steps` names the
  // model's Steps. A span whose events cannot be read (a failed request, a broken device) is left
  // out; never throws.
  RecordedRequest complete(const TimelineClock& clock, const std::vector<StepInfo>& steps, double completed_us,
                           bool failed, Timeline* timeline) noexcept;

 private:
  struct PendingSpan {
    Span kind;
    std::size_t step;
    std::uint64_t bytes;
    std::unique_ptr<backend::Event> start, end;
    std::int64_t paused_at_iteration = -1;
  };
  struct Pick {
    double at_us;
    std::size_t step, candidates;
  };
  struct Preemption {
    const char* action;
    double at_us, duration_us;
    std::size_t step;
    std::uint64_t bytes;
    std::int64_t iteration;
  };

  TraceEvent span_event(const PendingSpan& span, const std::vector<StepInfo>& steps) const;
  void add_host_events(const std::vector<StepInfo>& steps, double completed_us, bool failed, std::size_t steps_run,
                       Timeline& timeline) const;

  std::uint64_t request_;
  std::string model_;
  double submitted_us_;
  std::vector<PendingSpan> spans_;
  std::vector<Pick> picks_;
  std::vector<Preemption> preemptions_;
};

}  // namespace loom::trace
