// loom-bench's per-Step profile of the measured run (--dumpProfile, --exportProfile), trtexec
// style: per model, each Step's count, total, average and median time and share of the model's
// time, from the Step events of the timeline the executor records.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "loom/model_info.hpp"
#include "loom/trace.hpp"

namespace loom::bench {

struct StepProfile {
  std::size_t step = 0;  // index in ModelInfo::steps
  std::string name;      // "model/step", as the timeline names it
  std::vector<std::string> ops;
  std::size_t count = 0;  // requests that ran it
  double total_ms = 0;
  double average_ms = 0;  // total / count
  double median_ms = 0;   // nearest-rank, over its requests (a Step paused and resumed counts once, whole)
  double percentage = 0;  // of the model's total
};

struct ModelProfile {
  std::string model;
  std::size_t requests = 0;        // requests with at least one Step event
  double total_ms = 0;             // Σ of its Steps' totals
  double median_request_ms = 0;    // median over its requests of their Steps' time
  std::vector<StepProfile> steps;  // every Step of the model, in order (count 0 when it never ran)
};

// Folds the "step" events of `timeline` (the measured phase: bench::measured_phase()) by model
// (the event's "model" arg), Step ("step") and request ("request"): a Step that paused and resumed
// leaves several events, summed into one run. One ModelProfile per entry of `models`, in order;
// events of other models are ignored. On the CPU backend a Step runs on the dispatcher's thread,
// so its time is its run time; on CUDA it is the time between timed events on the model's stream.
std::vector<ModelProfile> step_profile(const Timeline& timeline, const std::vector<ModelInfo>& models);

// --dumpProfile: per model a heading and one line per Step (Time(ms), Avg.(ms), Median(ms),
// Time(%), Count, the Step and its ops), then the Total line, as trtexec prints its layers.
std::vector<std::string> profile_lines(const std::vector<ModelProfile>& profiles);

// --exportProfile: trtexec's layout, one array: per model {"count": requests, "model", "timeMs",
// "medianMs"} then per Step {"name", "timeMs", "averageMs", "medianMs", "percentage", "count",
// "model", "step", "ops"}. With one model the first element and every Step's first five keys are
// exactly trtexec's.
nlohmann::ordered_json profile_json(const std::vector<ModelProfile>& profiles);

}  // namespace loom::bench
