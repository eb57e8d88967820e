// perf_analyzer's stability windows and sweeps for loom-bench.
#include "bench_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "cli_support.hpp"

namespace loom::bench {
namespace {

using cli::format;

// A sweep this long is a typo (1:1000000), not a measurement plan.
constexpr std::size_t kMaxSweepPoints = 1000;

// A number filling all of `text`; for `integral`, digits only.
bool parse_number(const std::string& text, bool integral, double& value) {
  if (text.empty()) return false;
  if (integral && text.find_first_not_of("0123456789") != std::string::npos) return false;
  try {
    std::size_t used = 0;
    value = std::stod(text, &used);
    return used == text.size() && std::isfinite(value);
  } catch (const std::exception&) {
    return false;
  }
}

// Requests of `model` in [from_ms, to_ms) by their end.
std::vector<const RequestTiming*> ended_between(const ModelTimings& model, double from_ms, double to_ms) {
  std::vector<const RequestTiming*> in;
  for (const auto& request : model.requests)
    if (request.end_ms >= from_ms && request.end_ms < to_ms) in.push_back(&request);
  return in;
}

bool within(const std::vector<double>& values, double percentage) {
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  for (double v : values)
    if (std::fabs(v - mean) > percentage / 100.0 * mean) return false;
  return true;
}

// 0 for no values: a row for a model that completed nothing still prints.
double percentile_or_zero(const std::vector<double>& sorted, double p) {
  return sorted.empty() ? 0 : nearest_rank(sorted, p);
}

double phase_mean(const ModelFigures& figures, const std::string& key) {
  for (const auto& phase : figures.phases)
    if (phase.key == key) return phase.summary.mean;
  return 0;
}

const char* const kPhaseKeys[] = {"queue", "h2d", "compute", "d2h", "post"};

// A CSV field, quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::vector<double> parse_sweep_range(const std::string& text, const std::string& flag, bool integral) {
  std::vector<std::string> parts;
  for (std::size_t begin = 0;;) {
    const std::size_t colon = text.find(':', begin);
    parts.push_back(text.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin));
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  const std::string kind = integral ? "whole numbers" : "numbers";
  const std::string usage = flag + ": expected START[:END[:STEP]] (" + kind + ", e.g. " +
                            (integral ? "1:8:1" : "100:400:100") + "), got '" + text + "'";
  if (parts.size() > 3) throw cli::UsageError(usage);
  double values[3] = {0, 0, 1};
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (!parse_number(parts[i], integral, values[i])) throw cli::UsageError(usage);
  if (parts.size() == 1) values[1] = values[0];
  const double start = values[0], end = values[1], step = values[2];
  if (!(start > 0)) throw cli::UsageError(flag + ": '" + text + "': START must be above 0");
  if (start > end)
    throw cli::UsageError(flag + ": '" + text + "': START " + format("%g", start) + " is above END " +
                          format("%g", end));
  if (!(step > 0)) throw cli::UsageError(flag + ": '" + text + "': STEP must be above 0");
  std::vector<double> points;
  // The tolerance lets 0.1:0.3:0.1 reach 0.3 despite rounding.
  for (std::size_t k = 0;; ++k) {
    const double value = start + static_cast<double>(k) * step;
    if (value > end + 1e-9 * end) break;
    if (points.size() == kMaxSweepPoints)
      throw cli::UsageError(flag + ": '" + text + "' has more than " + std::to_string(kMaxSweepPoints) + " points");
    points.push_back(value);
  }
  return points;
}

std::vector<WindowFigures> cut_windows(const LoadResult& result, double window_ms) {
  std::vector<WindowFigures> windows;
  for (std::size_t k = 0; k < result.windows; ++k) {
    WindowFigures window;
    for (const auto& model : result.models) {
      const auto in = ended_between(model, static_cast<double>(k) * window_ms, static_cast<double>(k + 1) * window_ms);
      std::vector<double> latencies;
      for (const auto* request : in) latencies.push_back(request->latency_ms());
      std::sort(latencies.begin(), latencies.end());
      window.requests.push_back(in.size());
      window.qps.push_back(static_cast<double>(in.size()) / (window_ms / 1000.0));
      window.p50_ms.push_back(percentile_or_zero(latencies, 50));
    }
    windows.push_back(std::move(window));
  }
  return windows;
}

bool windows_agree(const std::vector<WindowFigures>& last, double percentage) {
  if (last.empty()) return false;
  for (std::size_t m = 0; m < last.front().qps.size(); ++m) {
    std::vector<double> qps, p50;
    for (const auto& window : last) {
      if (window.requests.at(m) == 0) return false;
      qps.push_back(window.qps.at(m));
      p50.push_back(window.p50_ms.at(m));
    }
    if (!within(qps, percentage) || !within(p50, percentage)) return false;
  }
  return true;
}

MeasuredRun measure(Executor& executor, const std::vector<LoadTarget>& targets, LoadConfig config,
                    const StabilityOptions& stability, const std::function<void(const LoadProgress&)>& on_tick) {
  MeasuredRun run;
  if (stability.window_ms <= 0) {
    run.all = run_load(executor, targets, config, on_tick);
    run.reported = run.all;
    return run;
  }
  if (stability.max_trials < kStableWindows)
    throw std::invalid_argument("measure: max_trials must be at least " + std::to_string(kStableWindows));
  const double window_ms = stability.window_ms;
  config.window_ms = window_ms;
  config.min_requests = 1;
  // The open loop's arrivals must outlast the last window the trials may need.
  config.min_duration_s = static_cast<double>(stability.max_trials + 1) * window_ms / 1000.0;
  config.stop_after_window = [&](const LoadResult& so_far) {
    if (so_far.windows >= stability.max_trials) return true;
    if (so_far.windows < kStableWindows) return false;
    const auto windows = cut_windows(so_far, window_ms);
    return windows_agree({windows.end() - kStableWindows, windows.end()}, stability.percentage);
  };
  run.windowed = true;
  run.all = run_load(executor, targets, config, on_tick);
  run.windows = cut_windows(run.all, window_ms);
  const std::size_t count = std::min(kStableWindows, run.windows.size());
  run.stable = count == kStableWindows &&
               windows_agree({run.windows.end() - kStableWindows, run.windows.end()}, stability.percentage);
  // The figures describe the last windows, as perf_analyzer reports them.
  const double to_ms = static_cast<double>(run.windows.size()) * window_ms;
  const double from_ms = to_ms - static_cast<double>(count) * window_ms;
  run.reported.windows = count;
  run.reported.measured_s = (to_ms - from_ms) / 1000.0;
  for (const auto& model : run.all.models) {
    ModelTimings kept{model.model, model.warmup_requests, {}};
    for (const auto* request : ended_between(model, from_ms, to_ms)) kept.requests.push_back(*request);
    run.reported.models.push_back(std::move(kept));
  }
  return run;
}

SweepPoint summarize_point(double value, MeasuredRun run, const std::vector<double>& ps) {
  SweepPoint point;
  point.value = value;
  for (const auto& model : run.reported.models)
    point.models.push_back(model_figures(model.model, model.requests, run.reported.measured_s, ps));
  point.all = all_models_figures(run.reported, ps);
  point.run = std::move(run);
  return point;
}

nlohmann::ordered_json point_json(SweepKind kind, const SweepPoint& point, const StabilityOptions& stability,
                                  const std::vector<double>& ps) {
  nlohmann::ordered_json entry;
  entry[kind == SweepKind::concurrency ? "concurrency" : "request_rate_per_s"] = point.value;
  entry["throughput_qps"] = rounded(point.all.qps, 3);
  entry["models"] = nlohmann::ordered_json::array();
  for (const auto& model : point.models) entry["models"].push_back(model_json(model, ps));
  entry["all"] = model_json(point.all, ps);
  if (point.run.windowed) entry["stability"] = stability_json(point.run, stability);
  return entry;
}

std::string sweep_column(SweepKind kind) { return kind == SweepKind::concurrency ? "Concurrency" : "Request Rate"; }

SweepTable::SweepTable(SweepKind kind, const std::vector<std::string>& models, bool windowed)
    : kind_(kind), windowed_(windowed) {
  name_width_ = 5;  // "model"
  for (const auto& name : models) name_width_ = std::max(name_width_, static_cast<int>(name.size()));
}

std::vector<std::string> SweepTable::header() const {
  std::string line1 = pad(kind_ == SweepKind::concurrency ? "concurrency" : "rate", 11) + "  " +
                      pad("model", name_width_) + right("requests", 9) + right("throughput", 11);
  std::string line2 = pad(kind_ == SweepKind::concurrency ? "(per model)" : "(/s/model)", 11) + "  " +
                      pad("", name_width_) + right("", 9) + right("(qps)", 11);
  for (const char* column : {"p50", "p90", "p95", "p99", "avg", "queue", "h2d", "compute", "d2h", "post"}) {
    line1 += right(column, 9);
    line2 += right("(ms)", 9);
  }
  if (windowed_) line1 += right("stable", 8);
  return {line1, line2};
}

std::vector<std::string> SweepTable::rows(const SweepPoint& point) const {
  std::vector<std::string> rows;
  auto row = [&](const ModelFigures& figures) {
    std::string line = pad(format("%g", point.value), 11) + "  " + pad(figures.name, name_width_);
    line += format(" %8.0f", static_cast<double>(figures.requests)) + format(" %10.2f", figures.qps);
    for (double p : {50.0, 90.0, 95.0, 99.0}) line += format(" %8.3f", percentile_or_zero(figures.sorted_ms, p));
    line += format(" %8.3f", figures.latency.mean);
    for (const char* key : kPhaseKeys) line += format(" %8.3f", phase_mean(figures, key));
    if (windowed_) line += right(point.run.stable ? "yes" : "NO", 8);
    rows.push_back(line);
  };
  for (const auto& model : point.models) row(model);
  if (point.models.size() > 1) row(point.all);
  return rows;
}

std::string SweepTable::pad(const std::string& text, int width) {
  std::string padded = text;
  if (static_cast<int>(padded.size()) < width) padded.resize(static_cast<std::size_t>(width), ' ');
  return padded;
}

std::string SweepTable::right(const std::string& text, int width) {
  return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(text.size()))), ' ') + text;
}

std::string sweep_csv(SweepKind kind, const std::vector<SweepPoint>& points) {
  std::string csv = sweep_column(kind) +
                    ",Model,Inferences/Second,Requests,Queue,H2D,Compute,D2H,Post,Outside Executor,"
                    "p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,Stable\n";
  // One field after a comma, in µs. Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on
  // "," + a temporary string.
  auto add_us = [&csv](double ms) {
    csv += ',';
    csv += format("%.1f", ms * 1000.0);
  };
  for (const auto& point : points) {
    std::vector<const ModelFigures*> rows;
    for (const auto& model : point.models) rows.push_back(&model);
    rows.push_back(&point.all);
    for (const auto* figures : rows) {
      csv += format("%g", point.value) + "," + csv_field(figures->name) + "," + format("%.3f", figures->qps) + "," +
             std::to_string(figures->requests);
      for (const char* key : kPhaseKeys) add_us(phase_mean(*figures, key));
      const bool any = figures->requests > 0;
      add_us(any ? figures->latency.mean - figures->executor_mean_ms : 0);
      for (double p : {50.0, 90.0, 95.0, 99.0}) add_us(percentile_or_zero(figures->sorted_ms, p));
      add_us(any ? figures->latency.mean : 0);
      csv += point.run.stable ? ",1\n" : ",0\n";
    }
  }
  return csv;
}

nlohmann::ordered_json stability_json(const MeasuredRun& run, const StabilityOptions& stability) {
  if (!run.windowed) return nullptr;
  nlohmann::ordered_json doc;
  doc["window_ms"] = stability.window_ms;
  doc["stability_percentage"] = stability.percentage;
  doc["max_trials"] = stability.max_trials;
  doc["windows_measured"] = run.windows.size();
  doc["reported_windows"] = run.reported.windows;
  doc["stable"] = run.stable;
  doc["windows"] = nlohmann::ordered_json::array();
  for (const auto& window : run.windows) {
    nlohmann::ordered_json models = nlohmann::ordered_json::array();
    for (std::size_t m = 0; m < window.qps.size(); ++m)
      models.push_back({{"name", run.all.models.at(m).model},
                        {"requests", window.requests[m]},
                        {"qps", rounded(window.qps[m], 3)},
                        {"p50_ms", rounded(window.p50_ms[m], 4)}});
    doc["windows"].push_back({{"models", std::move(models)}});
  }
  return doc;
}

std::vector<std::string> stability_lines(const MeasuredRun& run, const StabilityOptions& stability) {
  std::vector<std::string> lines;
  if (!run.windowed) return lines;
  const std::string windows =
      std::to_string(run.windows.size()) + " window(s) of " + format("%g", stability.window_ms) + " ms";
  const std::string last = "the last " + std::to_string(kStableWindows);
  const std::string criterion =
      " within " + format("%g", stability.percentage) + "% (every model's throughput and p50 against their mean)";
  if (run.stable)
    lines.push_back("Stable after " + windows + ": " + last + " agree" + criterion + "; the figures are theirs.");
  else
    lines.push_back("NOT STABLE after " + windows + " (--max-trials=" + std::to_string(stability.max_trials) +
                    "): " + last + " do not agree" + criterion + "; the figures are over the last " +
                    std::to_string(run.reported.windows) +
                    " windows anyway. A longer --measurement-interval or a larger --stability-percentage may help.");
  for (std::size_t k = 0; k < run.windows.size(); ++k) {
    std::string line = "  window " + std::to_string(k + 1) + ":";
    for (std::size_t m = 0; m < run.windows[k].qps.size(); ++m)
      line += (m ? ", " : " ") + run.all.models.at(m).model + " " + format("%.2f", run.windows[k].qps[m]) +
              " qps p50 " + format("%.3f", run.windows[k].p50_ms[m]) + " ms";
    lines.push_back(line);
  }
  return lines;
}

}  // namespace loom::bench
