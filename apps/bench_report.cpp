// loom-bench's per-model figures: latency and its phases, as text and JSON.
#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace loom::bench {
namespace {

struct PhaseField {
  const char* key;
  const char* label;
  double RequestTimes::*member;
};

// In the order a request lives them; RequestTimes says what each covers.
constexpr PhaseField kPhaseFields[] = {
    {"queue", "Queue wait", &RequestTimes::queue_us},  {"h2d", "H2D Latency", &RequestTimes::h2d_us},
    {"compute", "Compute", &RequestTimes::compute_us}, {"d2h", "D2H Latency", &RequestTimes::d2h_us},
    {"post", "Post", &RequestTimes::post_us},
};

std::string ms_text(double value) {
  char text[48];
  std::snprintf(text, sizeof text, "%.3f ms", value);
  return text;
}

}  // namespace

double rounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

std::string one_element_per_line(const nlohmann::ordered_json& array) {
  std::string text = "[";
  for (std::size_t i = 0; i < array.size(); ++i) text += (i ? ",\n " : "\n ") + array[i].dump();
  return text + "\n]\n";
}

std::string percentile_label(double p) {
  char text[48];
  std::snprintf(text, sizeof text, "percentile(%g%%)", p);
  return text;
}

ModelFigures model_figures(std::string name, const std::vector<RequestTiming>& requests, double seconds,
                           const std::vector<double>& ps) {
  ModelFigures figures;
  figures.name = std::move(name);
  figures.requests = requests.size();
  figures.qps = seconds > 0 ? static_cast<double>(requests.size()) / seconds : 0;
  if (requests.empty()) return figures;
  std::vector<double> latencies;
  double executor_total_us = 0;
  for (const auto& request : requests) {
    latencies.push_back(request.latency_ms());
    executor_total_us += request.times.total_us;
  }
  figures.latency = summarize(latencies, ps);
  std::sort(latencies.begin(), latencies.end());
  figures.sorted_ms = std::move(latencies);
  figures.executor_mean_ms = executor_total_us / 1000.0 / static_cast<double>(requests.size());
  for (const auto& field : kPhaseFields) {
    PhaseFigures phase;
    phase.key = field.key;
    phase.label = field.label;
    for (const auto& request : requests) phase.sorted_ms.push_back(request.times.*field.member / 1000.0);
    phase.summary = summarize(phase.sorted_ms, ps);
    std::sort(phase.sorted_ms.begin(), phase.sorted_ms.end());
    figures.phases.push_back(std::move(phase));
  }
  return figures;
}

ModelFigures all_models_figures(const LoadResult& result, const std::vector<double>& ps) {
  std::vector<RequestTiming> pooled;
  for (const auto& model : result.models) pooled.insert(pooled.end(), model.requests.begin(), model.requests.end());
  return model_figures("all", pooled, result.measured_s, ps);
}

std::string summary_text(const LatencySummary& s) {
  std::string text = "min = " + ms_text(s.min) + ", max = " + ms_text(s.max) + ", mean = " + ms_text(s.mean) +
                     ", median = " + ms_text(s.median);
  for (const auto& [p, value] : s.percentiles) text += ", " + percentile_label(p) + " = " + ms_text(value);
  return text;
}

std::vector<std::string> phase_lines(const ModelFigures& figures, const std::string& indent) {
  std::vector<std::string> lines;
  if (figures.phases.empty()) return lines;
  std::size_t width = 0;
  for (const auto& phase : figures.phases) width = std::max(width, phase.label.size() + 1);
  std::string sum;
  double total = 0;
  for (const auto& phase : figures.phases) {
    std::string label = phase.label + ":";
    label.resize(width, ' ');
    lines.push_back(indent + label + " " + summary_text(phase.summary));
    char term[64];
    std::snprintf(term, sizeof term, "%s%s %.3f", sum.empty() ? "" : " + ", phase.key.c_str(), phase.summary.mean);
    sum += term;
    total += phase.summary.mean;
  }
  // The means add up exactly (percentiles do not); the latency's mean adds what the client sees
  // outside the executor.
  char tail[200];
  std::snprintf(tail, sizeof tail,
                " = %.3f ms: the executor's submit -> completion; latency mean %.3f ms (%.3f ms outside the executor)",
                total, figures.latency.mean, figures.latency.mean - figures.executor_mean_ms);
  std::string label = "Phase means:";
  label.resize(std::max(width, label.size()), ' ');
  lines.push_back(indent + label + " " + sum + tail);
  return lines;
}

nlohmann::ordered_json latency_json(const std::vector<double>& sorted_ms, const std::vector<double>& ps) {
  nlohmann::ordered_json latency = nlohmann::ordered_json::object();
  if (sorted_ms.empty()) return latency;
  latency["min"] = rounded(sorted_ms.front(), 4);
  latency["mean"] =
      rounded(std::accumulate(sorted_ms.begin(), sorted_ms.end(), 0.0) / static_cast<double>(sorted_ms.size()), 4);
  // The fixed keys first, then any extra percentile asked for, in the order asked.
  std::vector<double> keys = kJsonPercentiles;
  for (double p : ps)
    if (std::find(keys.begin(), keys.end(), p) == keys.end()) keys.push_back(p);
  for (double p : keys) latency[percentile_key(p)] = rounded(nearest_rank(sorted_ms, p), 4);
  latency["max"] = rounded(sorted_ms.back(), 4);
  return latency;
}

nlohmann::ordered_json phases_json(const ModelFigures& figures, const std::vector<double>& ps) {
  nlohmann::ordered_json phases = nlohmann::ordered_json::object();
  for (const auto& phase : figures.phases) phases[phase.key] = latency_json(phase.sorted_ms, ps);
  phases["executor_total_mean"] = rounded(figures.executor_mean_ms, 4);
  return phases;
}

nlohmann::ordered_json model_json(const ModelFigures& figures, const std::vector<double>& ps) {
  nlohmann::ordered_json model;
  model["name"] = figures.name;
  model["requests"] = figures.requests;
  model["qps"] = rounded(figures.qps, 3);
  model["latency_ms"] = latency_json(figures.sorted_ms, ps);
  model["phases_ms"] = phases_json(figures, ps);
  return model;
}

}  // namespace loom::bench
