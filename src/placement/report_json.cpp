// The placement report (loom-run --placement-report): a loaded model's placement as JSON, in the
// order of docs/placement.md, "The report".
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"
#include "loom/placement.hpp"

namespace loom {
namespace {

using ordered_json = nlohmann::ordered_json;

// JSON has no infinity: an unbounded threshold is null.
ordered_json threshold(double value) { return std::isfinite(value) ? ordered_json(value) : ordered_json(nullptr); }

ordered_json terms_json(const PlacementTerms& terms) {
  return {{"t_us", terms.transfer_us},
          {"a_us", terms.accumulated_us},
          {"s_us", terms.speed_us},
          {"o_us", terms.complexity_us}};
}

}  // namespace

std::string placement_report_json(const ModelInfo& info) {
  const ModelPlacement& placement = info.placement;
  if (!placement.enabled)
    throw Error(ErrorCode::invalid_argument,
                "model '" + info.name + "': no placement to report (LoadOptions::placement.enabled is false)");
  std::map<std::string, std::size_t> by_processor, by_class, by_reason;
  ordered_json nodes = ordered_json::array();
  for (const NodePlacement& p : placement.nodes) {
    ++by_processor[p.processor];
    ++by_class[std::string(work_class_name(p.work_class))];
    ++by_reason[std::string(placement_reason_name(p.reason))];
    ordered_json evaluated = ordered_json::array();
    for (const ProcessorEvaluation& e : p.evaluated) {
      ordered_json entry{{"processor", e.processor}};
      entry.update(terms_json(e.terms));
      entry["cost_us"] = e.terms.cost();
      entry["benefit_us"] = e.terms.benefit();
      entry["passed"] = e.passed;
      evaluated.push_back(std::move(entry));
    }
    ordered_json node{{"name", p.node},
                      {"op", p.op},
                      {"class", std::string(work_class_name(p.work_class))},
                      {"processor", p.processor},
                      {"reason", std::string(placement_reason_name(p.reason))},
                      {"fused_with_previous", p.fused_with_previous},
                      {"cost_us", p.cost_us},
                      {"benefit_us", p.benefit_us},
                      {"terms", terms_json(p.terms)},
                      {"scalar_arguments", p.scalar_arguments},
                      {"evaluated", std::move(evaluated)}};
    nodes.push_back(std::move(node));
  }
  const ordered_json doc{{"model", info.name},
                         {"library", placement.library},
                         {"processors", placement.processors},
                         {"thresholds",
                          {{"benefit_us", threshold(placement.benefit_threshold_us)},
                           {"cost_us", threshold(placement.cost_threshold_us)}}},
                         {"summary",
                          {{"entries", placement.nodes.size()},
                           {"graph_nodes", placement.graph_nodes},
                           {"by_class", by_class},
                           {"by_processor", by_processor},
                           {"by_reason", by_reason}}},
                         {"nodes", std::move(nodes)}};
  return doc.dump(2) + "\n";
}

}  // namespace loom
