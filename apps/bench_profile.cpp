// loom-bench's per-Step profile from a recorded timeline.
#include "bench_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "bench_report.hpp"
#include "bench_stats.hpp"

namespace loom::bench {
namespace {

std::string arg(const TraceEvent& event, const char* key) {
  const auto it = event.args.find(key);
  return it == event.args.end() ? std::string() : it->second;
}

// A whole number from an event argument; false for anything else.
bool index_arg(const TraceEvent& event, const char* key, std::size_t& value) {
  const std::string text = arg(event, key);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  value = std::stoul(text);
  return true;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return nearest_rank(values, 50);
}

std::string join_ops(const std::vector<std::string>& ops) {
  std::string text;
  for (const auto& op : ops) text += (text.empty() ? "" : ", ") + op;
  return text;
}

// One line of the --dumpProfile table, the label (the Step, or Total) last.
std::string profile_row(double total_ms, double average_ms, double median_ms, double percentage, std::size_t count,
                        const std::string& label) {
  char text[96];
  std::snprintf(text, sizeof text, "%11.3f %10.4f %10.4f %8.1f %6zu  ", total_ms, average_ms, median_ms, percentage,
                count);
  return text + label;
}

}  // namespace

std::vector<ModelProfile> step_profile(const Timeline& timeline, const std::vector<ModelInfo>& models) {
  std::map<std::string, std::size_t> index_of;
  for (std::size_t m = 0; m < models.size(); ++m) index_of.emplace(models[m].name, m);
  // Per model: per Step, the time of each request's run of it (parts of a paused run summed); and
  // per request, the time of all its Steps.
  std::vector<std::vector<std::map<std::string, double>>> runs(models.size());
  std::vector<std::map<std::string, double>> per_request(models.size());
  for (std::size_t m = 0; m < models.size(); ++m) runs[m].resize(models[m].steps.size());
  for (const auto& event : timeline.events()) {
    if (event.category != "step") continue;
    const auto model = index_of.find(arg(event, "model"));
    std::size_t step = 0;
    if (model == index_of.end() || !index_arg(event, "step", step) || step >= runs[model->second].size()) continue;
    const std::string request = arg(event, "request");
    runs[model->second][step][request] += event.duration_us / 1000.0;
    per_request[model->second][request] += event.duration_us / 1000.0;
  }
  std::vector<ModelProfile> profiles;
  for (std::size_t m = 0; m < models.size(); ++m) {
    ModelProfile profile;
    profile.model = models[m].name;
    profile.requests = per_request[m].size();
    std::vector<double> request_ms;
    for (const auto& [request, ms] : per_request[m]) {
      request_ms.push_back(ms);
      profile.total_ms += ms;
    }
    profile.median_request_ms = median_of(std::move(request_ms));
    for (std::size_t s = 0; s < models[m].steps.size(); ++s) {
      StepProfile step;
      step.step = s;
      step.name = models[m].name + "/" + models[m].steps[s].name;
      step.ops = models[m].steps[s].ops;
      std::vector<double> times;
      for (const auto& [request, ms] : runs[m][s]) {
        times.push_back(ms);
        step.total_ms += ms;
      }
      step.count = times.size();
      step.average_ms = step.count ? step.total_ms / static_cast<double>(step.count) : 0;
      step.median_ms = median_of(std::move(times));
      step.percentage = profile.total_ms > 0 ? step.total_ms / profile.total_ms * 100 : 0;
      profile.steps.push_back(std::move(step));
    }
    profiles.push_back(std::move(profile));
  }
  return profiles;
}

std::vector<std::string> profile_lines(const std::vector<ModelProfile>& profiles) {
  std::vector<std::string> lines;
  for (const auto& profile : profiles) {
    lines.push_back("=== Profile: " + profile.model + " (" + std::to_string(profile.requests) +
                    " requests of the measured phase) ===");
    lines.push_back("   Time(ms)   Avg.(ms) Median(ms)  Time(%)  Count  Step (ops)");
    for (const auto& step : profile.steps)
      lines.push_back(profile_row(step.total_ms, step.average_ms, step.median_ms, step.percentage, step.count,
                                  step.name + " (" + join_ops(step.ops) + ")"));
    const double average = profile.requests ? profile.total_ms / static_cast<double>(profile.requests) : 0;
    lines.push_back(profile_row(profile.total_ms, average, profile.median_request_ms, profile.total_ms > 0 ? 100 : 0,
                                profile.requests, "Total (Avg. and Median per request)"));
  }
  return lines;
}

nlohmann::ordered_json profile_json(const std::vector<ModelProfile>& profiles) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::array();
  for (const auto& profile : profiles) {
    nlohmann::ordered_json head;
    head["count"] = profile.requests;
    head["model"] = profile.model;
    head["timeMs"] = rounded(profile.total_ms, 4);
    head["medianMs"] = rounded(profile.median_request_ms, 4);
    doc.push_back(std::move(head));
    for (const auto& step : profile.steps) {
      nlohmann::ordered_json entry;
      entry["name"] = step.name;
      entry["timeMs"] = rounded(step.total_ms, 4);
      entry["averageMs"] = rounded(step.average_ms, 4);
      entry["medianMs"] = rounded(step.median_ms, 4);
      entry["percentage"] = rounded(step.percentage, 3);
      entry["count"] = step.count;
      entry["model"] = profile.model;
      entry["step"] = step.step;
      entry["ops"] = step.ops;
      doc.push_back(std::move(entry));
    }
  }
  return doc;
}

}  // namespace loom::bench
