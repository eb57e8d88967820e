// loom-bench --live: a view of the running benchmark on stderr, built from the executor's stats()
// and the load generator's progress at every tick: per-stage utilisation bars and queue depths, a
// scrolling timeline of the last second, and per-model throughput and p50/p99 so far. Rendering is
// pure (snapshots in, text out), so a frame can be checked against one worked out by hand.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "bench_runner.hpp"
#include "loom/stats.hpp"

namespace loom::bench {

// The view samples and redraws every kLiveRefreshMs; its timeline keeps one column per refresh,
// the last second's.
inline constexpr double kLiveRefreshMs = 100;
inline constexpr std::size_t kLiveTimelineColumns = 10;

// One stage over one refresh interval: its figures now, and how busy it was.
struct StageUse {
  StageStats stage;
  // Busy time added over the interval / (the interval × the threads serving it; device and copy
  // stages: 1), in [0, 1].
  double utilization = 0;
};

// Each stage of `current` over the uptime since `previous` (a stage `previous` lacks counts from
// zero busy time). All zero when no time passed.
std::vector<StageUse> stage_use(const ExecutorStats& previous, const ExecutorStats& current);

// A utilisation as one character of " ▁▂▃▄▅▆▇█" (UTF-8): blank when idle, ▁ for any busy time up to
// 1/8, █ from 7/8 up: ceil(8 × utilisation) eighths.
std::string shade(double utilization);
// "[####......]": `width` cells, round(fraction × width) of them filled.
std::string bar(double fraction, int width);

class LiveView {
 public:
  // `models`: the load targets, in order. `terminal`: redraw the frame in place with ANSI cursor
  // movement; otherwise one plain line per second of executor uptime, without escape codes.
  LiveView(std::vector<std::string> models, bool terminal);

  // A fresh run on a fresh executor (--compare: one per policy): forgets the history. `label`
  // heads the frame, e.g. "fifo (1/4)".
  void begin_run(std::string label);
  // One tick: takes in the snapshots and returns what to write to stderr (a frame, a line, or
  // nothing).
  std::string update(const ExecutorStats& stats, const LoadProgress& progress);
  // The run is over: a last frame (or line), the stages as the last tick saw them (a full
  // interval), throughput and percentiles over every measured request of `result`, as the
  // summary reports them.
  std::string finish(const LoadResult& result);

  // The current frame's lines, without escape codes.
  std::vector<std::string> frame_lines() const;
  // The plain-text line: the run, each stage's utilisation over the last second, each model's figures.
  std::string summary_line() const;

 private:
  struct ModelState {
    std::size_t completed = 0;
    std::vector<double> sorted_ms;                 // every measured latency seen, ascending
    std::deque<std::pair<double, double>> window;  // (measured_s, completed) over the last second
  };
  void take_stats(const ExecutorStats& stats);
  void take_progress(const LoadProgress& progress);
  std::string draw();
  double rate_last_second(const ModelState& model) const;

  std::vector<std::string> models_;
  bool terminal_;
  std::string label_;
  bool have_stats_ = false;
  ExecutorStats previous_;
  std::vector<StageUse> stages_;                        // the latest interval
  std::map<std::string, std::deque<double>> timeline_;  // per stage, oldest column first
  std::vector<ModelState> model_state_;
  bool warming_up_ = true;
  bool done_ = false;
  double fraction_ = 0;
  double measured_s_ = 0;
  double uptime_s_ = 0;
  double last_line_uptime_s_ = -1;  // plain mode: uptime of the last line printed
  std::size_t drawn_lines_ = 0;     // terminal mode: lines of the frame on screen
};

}  // namespace loom::bench
