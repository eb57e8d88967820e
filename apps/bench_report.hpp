// What loom-bench reports about one model's measured requests (or all models' together): count,
// throughput, latency and its split into the executor's phases (queue wait, H2D, compute, D2H,
// post), summarised once and written as trtexec-style text lines or JSON by the summary, the
// sweep table and the CSV alike.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "bench_runner.hpp"
#include "bench_stats.hpp"

namespace loom::bench {

// JSON figures to 0.1 microsecond (ms values) or 0.001 qps: more digits would only be noise.
double rounded(double value, int decimals);

// A JSON array written one element per line ("[\n {...},\n {...}\n]\n"), as trtexec writes its
// profile and outputs: readable, and a large tensor's values stay on one line.
std::string one_element_per_line(const nlohmann::ordered_json& array);

// "percentile(99%)", as trtexec prints it.
std::string percentile_label(double p);

// Always in the JSON latency objects, whatever --percentile asks for, so scripts can rely on them.
inline const std::vector<double> kJsonPercentiles = {50, 90, 95, 99};

// One phase of RequestTimes over a model's measured requests, in ms.
struct PhaseFigures {
  std::string key;    // "queue", "h2d", "compute", "d2h", "post": the JSON and CSV name
  std::string label;  // "Queue wait", "H2D Latency", ...: the text summary's
  LatencySummary summary;
  std::vector<double> sorted_ms;
};

struct ModelFigures {
  std::string name;
  std::size_t requests = 0;
  double qps = 0;  // requests / the seconds they were measured over
  LatencySummary latency;
  std::vector<double> sorted_ms;  // measured latencies, ascending
  // queue, h2d, compute, d2h, post, in that order; empty when there are no requests. Their means
  // add up to executor_mean_ms.
  std::vector<PhaseFigures> phases;
  // Mean of RequestTimes::total_us in ms: submit() -> completion as the executor sees it. The
  // latency's mean is larger by what the client adds (in the open loop: from the scheduled
  // arrival to submit(); in both loops: until the callback is seen).
  double executor_mean_ms = 0;
};

// Summarises `requests` (any order; may be empty: then only name and zeros) measured over
// `seconds`, with the percentiles `ps` in every LatencySummary.
ModelFigures model_figures(std::string name, const std::vector<RequestTiming>& requests, double seconds,
                           const std::vector<double>& ps);

// The requests of every model of `result`, pooled under the name "all" (throughput over
// result.measured_s): the sweep table's and the CSV's total row.
ModelFigures all_models_figures(const LoadResult& result, const std::vector<double>& ps);

// "min = 1.000 ms, max = ..., mean = ..., median = ..., percentile(90%) = ..." for one summary.
std::string summary_text(const LatencySummary& summary);

// The breakdown as trtexec prints its latency lines, one per phase ("  Queue wait: min = ..."),
// then one line showing the phase means add up to the executor's mean and how far the latency's
// mean lies beyond it. Empty without requests.
std::vector<std::string> phase_lines(const ModelFigures& figures, const std::string& indent);

// {"min", "mean", "p50", "p90", "p95", "p99", then the extra percentiles of `ps` in the order
// given, "max"} of ascending `sorted_ms`, in ms to 0.1 µs; {} when empty.
nlohmann::ordered_json latency_json(const std::vector<double>& sorted_ms, const std::vector<double>& ps);

// {"queue": latency_json, ..., "post": ..., "executor_total_mean": ms}: the JSON report's
// "phases_ms" of one model.
nlohmann::ordered_json phases_json(const ModelFigures& figures, const std::vector<double>& ps);

// {"name", "requests", "qps", "latency_ms": latency_json, "phases_ms": phases_json}.
nlohmann::ordered_json model_json(const ModelFigures& figures, const std::vector<double>& ps);

}  // namespace loom::bench
