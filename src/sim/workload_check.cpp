// Validation of a Workload built in code (the file parser checks the same rules with file paths).
#include "sim/workload_check.hpp"

#include <charconv>
#include <cmath>
#include <map>

#include "loom/error.hpp"

namespace loom::sim::detail {

std::string number_text(double value) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return ec == std::errc{} ? std::string(text, end) : std::to_string(value);
}

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& problem) {
  throw Error(ErrorCode::invalid_argument, "workload: " + field + ": " + problem);
}

void check_time(double value, const std::string& field) {
  if (!std::isfinite(value)) fail(field, "not a finite number");
  if (value < 0) fail(field, "negative time " + number_text(value) + " (times are microseconds >= 0)");
}

}  // namespace

std::vector<std::size_t> check_workload(const Workload& workload) {
  std::map<std::string, std::size_t> by_name;
  for (std::size_t m = 0; m < workload.models.size(); ++m) {
    const SimModel& model = workload.models[m];
    const std::string field = "models[" + std::to_string(m) + "]";
    if (model.name.empty()) fail(field + ".name", "empty model name");
    if (!by_name.emplace(model.name, m).second) fail(field + ".name", "model '" + model.name + "' is defined twice");
    if (model.steps.empty()) fail(field + ".steps", "model '" + model.name + "' has no Steps");
    for (std::size_t s = 0; s < model.steps.size(); ++s) {
      const SimStep& step = model.steps[s];
      const std::string step_field = field + ".steps[" + std::to_string(s) + "]";
      check_time(step.compute_us, step_field + ".compute_us");
      check_time(step.memory_us, step_field + ".memory_us");
      // A Step larger than the on-chip capacity is no error: the simulator runs it as tiles.
    }
  }
  std::vector<std::size_t> model_of;
  model_of.reserve(workload.requests.size());
  for (std::size_t r = 0; r < workload.requests.size(); ++r) {
    const SimRequest& request = workload.requests[r];
    const std::string field = "requests[" + std::to_string(r) + "]";
    const auto found = by_name.find(request.model);
    if (found == by_name.end()) {
      std::string known;
      for (const auto& [name, index] : by_name) known += (known.empty() ? "" : ", ") + name;
      fail(field + ".model", "unknown model '" + request.model + "' (known: " + known + ")");
    }
    check_time(request.arrival_us, field + ".arrival_us");
    check_time(request.host_us, field + ".host_us");
    if (request.follows && *request.follows >= r)
      fail(field + ".follows", "request " + std::to_string(*request.follows) +
                                   " is not an earlier request (a request may only follow one listed before it)");
    model_of.push_back(found->second);
  }
  return model_of;
}

}  // namespace loom::sim::detail
