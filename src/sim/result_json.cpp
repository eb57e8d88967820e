// The JSON document loom-sim --json prints (keys listed in docs/simulator.md).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/model_info.hpp"
#include "loom/sim.hpp"

namespace loom::sim {
namespace {

void put_summary(nlohmann::ordered_json& entry, const LatencySummary& summary) {
  entry["requests"] = summary.requests;
  entry["mean_us"] = summary.mean_us;
  entry["p50_us"] = summary.p50_us;
  entry["p99_us"] = summary.p99_us;
  entry["max_us"] = summary.max_us;
}

// "urgent" for 1 and the other loom::Priority values; the number for any other class.
std::string priority_text(int priority) {
  if (priority >= -1 && priority <= 1) return std::string(priority_name(static_cast<Priority>(priority)));
  return std::to_string(priority);
}

}  // namespace

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
  doc["host_link_busy_us"] = result.host_link_busy_us;
  doc["host_cpu_busy_us"] = result.host_cpu_busy_us;
  doc["policy"] = policy;
  nlohmann::ordered_json options;
  options["preemption"] = result.options.preemption;
  options["cancellation_interval_us"] = result.options.cancellation_interval_us;
  options["cancellation_max_live_bytes"] = result.options.cancellation_max_live_bytes;
  options["host_link_bytes_per_us"] = result.options.host_link_bytes_per_us;
  options["device_memory_bytes"] = result.options.device_memory_bytes;
  options["tile_buffers"] = result.options.tile_buffers;
  doc["options"] = std::move(options);

  // Latency per model (in the workload's model order) and per priority class (highest first).
  doc["latency_by_model"] = nlohmann::ordered_json::array();
  for (std::size_t m = 0; m < workload.models.size(); ++m) {
    std::vector<double> latencies;
    for (const RequestResult& r : result.requests)
      if (r.model == workload.models[m].name) latencies.push_back(r.latency_us);
    if (latencies.empty()) continue;
    nlohmann::ordered_json entry;
    entry["model"] = workload.models[m].name;
    put_summary(entry, summarize_latencies(std::move(latencies)));
    entry["alone_us"] = m < result.model_alone_us.size() ? result.model_alone_us[m] : 0.0;
    doc["latency_by_model"].push_back(std::move(entry));
  }
  std::map<int, std::vector<double>, std::greater<>> by_priority;
  for (const RequestResult& r : result.requests) by_priority[r.priority].push_back(r.latency_us);
  doc["latency_by_priority"] = nlohmann::ordered_json::array();
  for (auto& [priority, latencies] : by_priority) {
    nlohmann::ordered_json entry;
    entry["priority"] = priority;
    entry["name"] = priority_text(priority);
    put_summary(entry, summarize_latencies(std::move(latencies)));
    doc["latency_by_priority"].push_back(std::move(entry));
  }

  doc["preemptions"] = nlohmann::ordered_json::array();
  for (const Preemption& p : result.preemptions) {
    nlohmann::ordered_json entry;
    entry["request"] = p.request;
    entry["model"] = p.request < workload.requests.size() ? workload.requests[p.request].model : "";
    entry["after_step"] = p.after_step;
    entry["paused_at_us"] = p.paused_at_us;
    entry["resumed_at_us"] = p.resumed_at_us;
    entry["bytes_dumped"] = p.bytes_dumped;
    entry["bytes_restored"] = p.bytes_restored;
    entry["dump_start_us"] = p.dump_start_us;
    entry["dump_end_us"] = p.dump_end_us;
    entry["restore_start_us"] = p.restore_start_us;
    entry["restore_end_us"] = p.restore_end_us;
    doc["preemptions"].push_back(std::move(entry));
  }

  doc["requests"] = nlohmann::ordered_json::array();
  for (const RequestResult& r : result.requests) {
    nlohmann::ordered_json entry;
    entry["model"] = r.model;
    entry["priority"] = r.priority;
    entry["submitted_us"] = r.submitted_us;
    entry["host_start_us"] = r.host_start_us;
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
    if (!s.tiles.empty()) {
      nlohmann::ordered_json tiles = nlohmann::ordered_json::array();
      for (const ScheduledTile& t : s.tiles)
        tiles.push_back({{"onchip_bytes", t.onchip_bytes},
                         {"memory_start_us", t.memory_start_us},
                         {"memory_end_us", t.memory_end_us},
                         {"compute_start_us", t.compute_start_us},
                         {"compute_end_us", t.compute_end_us}});
      entry["tiles"] = std::move(tiles);
    }
    doc["schedule"].push_back(std::move(entry));
  }
  return doc.dump(2) + "\n";
}

}  // namespace loom::sim
