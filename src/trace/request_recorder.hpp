// How the executor fills its timeline: each request gathers timed events around its copies and
// Steps, and the dispatcher's picks, while it moves through the pipeline; when it completes, the
// post-process thread turns them into TraceEvents. The dispatcher therefore never waits on timing.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/model_info.hpp"
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

// One request's part of the timeline. Created at submit when recording; used by one pipeline stage
// at a time, so it needs no lock.
class RequestRecorder {
 public:
  enum class Span { upload, step, download };

  RequestRecorder(std::uint64_t request, std::string model, double submitted_us);

  // Brackets device work enqueued on `stream` with two timed events (recorded now, resolved later).
  void begin(Span kind, backend::Stream& stream, std::size_t step = 0);
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

  // Adds the request's events to `timeline`: its copies and Steps (waiting for their events,
  // which the post-process thread has normally passed already), its picks, and its life from
  // submit to `completed_us`. `steps` names the model's Steps. A span whose events cannot be
  // read (a failed request, a broken device) is left out; never throws.
  void complete(const TimelineClock& clock, const std::vector<StepInfo>& steps, double completed_us, bool failed,
                Timeline& timeline) noexcept;

 private:
  struct PendingSpan {
    Span kind;
    std::size_t step;
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

  std::uint64_t request_;
  std::string model_;
  double submitted_us_;
  std::vector<PendingSpan> spans_;
  std::vector<Pick> picks_;
  std::vector<Preemption> preemptions_;
};

}  // namespace loom::trace
