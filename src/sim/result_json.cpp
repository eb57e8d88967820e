// The JSON document loom-sim --json prints (keys listed in docs/simulator.md).
#include <nlohmann/json.hpp>

#include "loom/sim.hpp"

namespace loom::sim {

std::string result_json(const SimResult& result, const Workload& workload, const std::string& policy) {
  nlohmann::ordered_json doc;
  doc["makespan_us"] = result.makespan_us;
  doc["lower_bound_us"] = result.lower_bound_us;
  doc["resource_bound_us"] = result.resource_bound_us;
  doc["chain_bound_us"] = result.chain_bound_us;
  doc["compute_busy_us"] = result.compute_busy_us;
  doc["memory_busy_us"] = result.memory_busy_us;
  doc["compute_idle_us"] = result.compute_idle_us;
  doc["memory_idle_us"] = result.memory_idle_us;
  doc["policy"] = policy;
  doc["requests"] = nlohmann::ordered_json::array();
  for (const RequestResult& r : result.requests) {
    nlohmann::ordered_json entry;
    entry["model"] = r.model;
    entry["arrival_us"] = r.arrival_us;
    entry["start_us"] = r.start_us;
    entry["finish_us"] = r.finish_us;
    entry["latency_us"] = r.latency_us;
    doc["requests"].push_back(std::move(entry));
  }
  doc["schedule"] = nlohmann::ordered_json::array();
  for (const ScheduledStep& s : result.schedule) {
    // The model is looked up by name: the result may come from a workload that was edited since,
    // so an index out of range is reported rather than trusted.
    const std::string& model = s.request < workload.requests.size() ? workload.requests[s.request].model : "";
    std::string step_name;
    for (const SimModel& m : workload.models)
      if (m.name == model && s.step < m.steps.size()) step_name = m.steps[s.step].name;
    nlohmann::ordered_json entry;
    entry["request"] = s.request;
    entry["model"] = model;
    entry["step"] = s.step;
    entry["step_name"] = step_name;
    entry["decided_us"] = s.decided_us;
    entry["memory_start_us"] = s.memory_start_us;
    entry["memory_end_us"] = s.memory_end_us;
    entry["compute_start_us"] = s.compute_start_us;
    entry["compute_end_us"] = s.compute_end_us;
    doc["schedule"].push_back(std::move(entry));
  }
  return doc.dump(2) + "\n";
}

}  // namespace loom::sim
