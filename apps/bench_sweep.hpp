// perf_analyzer's ways of measuring, for loom-bench: stability windows (measure consecutive
// windows until the last three agree), sweeps over the closed loop's concurrency or the open loop's
// request rate (one measured point each, on the same Executor), and the table, CSV and JSON of
// the points.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bench_report.hpp"
#include "bench_runner.hpp"
#include "loom/executor.hpp"

namespace loom::bench {

// "A", "A:B" or "A:B:STEP" (perf_analyzer's --concurrency-range / --request-rate-range; STEP
// defaults to 1) -> the points A, A + STEP, ... up to B. `integral`: whole numbers only (a
// concurrency). Throws cli::UsageError naming `flag` unless A > 0, A <= B and STEP > 0.
std::vector<double> parse_sweep_range(const std::string& text, const std::string& flag, bool integral);

// How many consecutive windows must agree, and the figures reported come from (perf_analyzer: 3).
inline constexpr std::size_t kStableWindows = 3;

// perf_analyzer's stability: consecutive windows of `window_ms` until the last three agree.
struct StabilityOptions {
  double window_ms = 0;         // 0: no windows, one measured phase as LoadConfig says
  double percentage = 10;       // every model's throughput and p50 within this % of their mean
  std::size_t max_trials = 10;  // give up after this many windows (at least kStableWindows)
};

// One window's figures, per model in load order. A model that completed nothing in the window has
// qps 0 and p50_ms 0, and keeps the windows from agreeing.
struct WindowFigures {
  std::vector<std::size_t> requests;
  std::vector<double> qps;
  std::vector<double> p50_ms;
};

// Window k (from 0) of `result` holds the measured requests that ended in [k, k + 1) * window_ms.
// Returns result.windows windows.
std::vector<WindowFigures> cut_windows(const LoadResult& result, double window_ms);

// True when `last` (the most recent windows, at least one) agree: for every model, each window's
// throughput and p50 latency lie within `percentage` % of their mean over `last`, and every
// window completed at least one request of every model.
bool windows_agree(const std::vector<WindowFigures>& last, double percentage);

// One measured phase: everything it measured, and the requests its figures describe.
struct MeasuredRun {
  LoadResult all;       // every measured request (--exportTimes)
  LoadResult reported;  // windowed: the requests of the last kStableWindows windows, measured_s their
                        // span; otherwise the same as `all`
  bool windowed = false;
  bool stable = true;                  // windowed: the last windows agreed within max_trials
  std::vector<WindowFigures> windows;  // windowed: every window measured, oldest first
};

// Runs the load once (run_load()); with stability.window_ms > 0 in windows until the last
// kStableWindows agree or stability.max_trials windows have passed. Throws what run_load() throws,
// and std::invalid_argument for max_trials < kStableWindows.
MeasuredRun measure(Executor& executor, const std::vector<LoadTarget>& targets, LoadConfig config,
                    const StabilityOptions& stability, const std::function<void(const LoadProgress&)>& on_tick);

// What a sweep varies: the closed loop's concurrency or the open loop's rate, both per model.
enum class SweepKind { concurrency, request_rate };

struct SweepPoint {
  double value = 0;  // the concurrency or the rate (requests/s per model)
  MeasuredRun run;
  std::vector<ModelFigures> models;  // from run.reported, in load order
  ModelFigures all;                  // every model's requests pooled
};

// Summarises one measured point with the percentiles `ps`.
SweepPoint summarize_point(double value, MeasuredRun run, const std::vector<double>& ps);

// {"concurrency" or "request_rate_per_s": value, "throughput_qps", "models": [model_json per model],
// "all": model_json, and with windows "stability": stability_json}: one point of the JSON
// report's "sweep".
nlohmann::ordered_json point_json(SweepKind kind, const SweepPoint& point, const StabilityOptions& stability,
                                  const std::vector<double>& ps);

// "Concurrency" or "Request Rate": the first column's name, as perf_analyzer's CSV has it.
std::string sweep_column(SweepKind kind);

// The sweep table: a two-line header, then per point one line per model and, with several models,
// one for all of them: requests, throughput, p50/p90/p95/p99 and average latency, and the phase
// means, in ms; with windows, whether the point was stable.
class SweepTable {
 public:
  SweepTable(SweepKind kind, const std::vector<std::string>& models, bool windowed);
  std::vector<std::string> header() const;
  std::vector<std::string> rows(const SweepPoint& point) const;

 private:
  static std::string pad(const std::string& text, int width);    // left-aligned
  static std::string right(const std::string& text, int width);  // right-aligned
  SweepKind kind_;
  bool windowed_;
  int name_width_ = 0;
};

// perf_analyzer-style CSV: a header row, then per point one row per model and an "all" row.
// Times in µs as perf_analyzer writes them: the phase means, then p50/p90/p95/p99 and the average
// latency; Stable is 1 or 0 (1 without windows).
std::string sweep_csv(SweepKind kind, const std::vector<SweepPoint>& points);

// {"window_ms", "stability_percentage", "max_trials", "windows_measured", "reported_windows",
// "stable", "windows": [{"models": [{"name", "requests", "qps", "p50_ms"}]}]} of a windowed run;
// null without windows.
nlohmann::ordered_json stability_json(const MeasuredRun& run, const StabilityOptions& stability);

// The text summary's lines about the windows: how many, whether the last ones agreed, and each
// window's throughput and p50 per model. Empty without windows.
std::vector<std::string> stability_lines(const MeasuredRun& run, const StabilityOptions& stability);

}  // namespace loom::bench
