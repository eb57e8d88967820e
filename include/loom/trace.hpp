// Timelines: what ran where and when, recorded by the executor (per stream: Steps and copies; on
// the host: scheduling decisions and each request's life) and by the simulator (the compute and
// memory-access resources), exported as Chrome trace JSON (Perfetto, chrome://tracing) and
// summarised as busy time per track.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace loom {

struct TraceEvent {
  std::string name;                         // e.g. "bert/MatMul_3", "H2D", "pick bert#12 step 3"
  std::string category;                     // "step", "copy", "decision", "request", "preempt", ...
  std::string track;                        // the row it belongs to: "stream:bert", "host:dispatcher", "sim:compute"
  double start_us = 0;                      // from the timeline's origin
  double duration_us = 0;                   // 0 = an instant event
  std::map<std::string, std::string> args;  // shown in the viewer's details pane
};

struct TrackUtilization {
  std::string track;
  double busy_us = 0;        // union of the track's events (overlaps counted once)
  double busy_fraction = 0;  // busy_us / the timeline's span
};

struct UtilizationSummary {
  double span_us = 0;  // first event start to last event end
  std::vector<TrackUtilization> tracks;
  // Union of every device track's busy time ("stream:" and "sim:" tracks) over the span: how
  // much of the time the device was doing anything at all.
  double device_busy_fraction = 0;
};

// A thread-safe collection of events.
class Timeline {
 public:
  Timeline() = default;
  Timeline(const Timeline& other);
  Timeline& operator=(const Timeline& other);

  void add(TraceEvent event);
  std::vector<TraceEvent> events() const;   // sorted by start, then track
  std::vector<std::string> tracks() const;  // sorted, unique
  void clear();
  bool empty() const;

  UtilizationSummary utilization() const;

  // Chrome trace event format (JSON object with "traceEvents"): one process, one thread (row)
  // per track, named by metadata events; complete events ("X") and instant events ("i").
  void write_chrome_trace(std::ostream& out) const;
  // Writes to `path`; throws Error(invalid_argument) naming the path when it cannot be written.
  void write_chrome_trace(const std::string& path) const;

 private:
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
};

// Parses a Chrome trace written by Timeline::write_chrome_trace back into events (tracks by
// their thread names). Throws Error(invalid_argument) for malformed input.
Timeline read_chrome_trace(std::istream& in);

}  // namespace loom
