// place_model(): from a loaded graph to the rule's problem (figures per node and processor) and
// back to a placement per node.
#include "placement/place_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/profile_dirs.hpp"
#include "graph/passes/passes.hpp"
#include "loom/error.hpp"
#include "placement/figures.hpp"
#include "placement/rule.hpp"

namespace loom::placement {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}

// Decisions a control-flow node hands the host: an If's condition, a Loop's trip count and
// condition (read once before it runs; see docs/placement.md for what is not counted).
double control_decisions(const Node& node) { return node.op_type == "If" || node.op_type == "Loop" ? 1 : 0; }

}  // namespace

ActiveLibrary resolve_function_library(const std::string& option, const std::string& device_name) {
  ActiveLibrary active;
  const auto path = core::resolve_file_option(option, "defaults", [&] { return find_function_library(device_name); });
  if (!path) return active;
  active.source = *path;
  active.library = read_function_library(active.source);
  return active;
}

std::vector<std::string> choose_processors(const PlacementOptions& options, const std::string& device,
                                           const FunctionLibrary& library, const std::vector<std::string>& available) {
  const auto is_available = [&](const std::string& name) {
    return std::find(available.begin(), available.end(), name) != available.end();
  };
  std::vector<std::string> chosen;
  if (!options.processors.empty()) {
    for (const auto& name : options.processors) {
      if (!is_available(name))
        throw Error(ErrorCode::invalid_argument,
                    "placement: processor '" + name +
                        "' is not one this build can open now (available: " + joined(available) + ")");
      if (std::find(chosen.begin(), chosen.end(), name) != chosen.end())
        throw Error(ErrorCode::invalid_argument, "placement: processor '" + name + "' is listed twice");
      chosen.push_back(name);
    }
    return chosen;
  }
  // A device neither the library nor the defaults know (a backend registered by a test) cannot
  // be evaluated: the others are placed between, the host CPU at least.
  if (has_figures(library, device)) chosen.push_back(device);
  for (const auto& p : library.processors)
    if (p.name != device && is_available(p.name)) chosen.push_back(p.name);
  if (chosen.empty()) chosen.push_back("cpu");
  return chosen;
}

ModelPlacement place_model(const Model& model, const OptimizeReport& report, const ActiveLibrary& active,
                           const std::vector<std::string>& processors, const PlacementOptions& options) {
  if (std::isnan(options.benefit_threshold_us) || std::isnan(options.cost_threshold_us))
    throw Error(ErrorCode::invalid_argument, "placement: the thresholds th1 and th2 must be numbers");
  const FunctionLibrary& library = active.library;
  RuleProblem problem;
  for (const auto& name : processors) problem.processors.push_back(processor_figures(library, name));
  problem.benefit_threshold_us = options.benefit_threshold_us;
  problem.cost_threshold_us = options.cost_threshold_us;

  const auto infos = infer_shapes(model);
  const auto work = graph::passes::classify_work(model);
  std::map<std::string, long> producer;
  for (std::size_t n = 0; n < model.nodes.size(); ++n)
    for (const auto& output : model.nodes[n].outputs)
      if (!output.empty()) producer[output] = static_cast<long>(n);
  const std::vector<std::string> graph_outputs = model.outputs;

  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& node = model.nodes[n];
    RuleNode rule_node;
    rule_node.name = node.name;
    const OpSize size = node_size(node, infos, work[n].work_class);
    for (const auto& name : node.inputs) {
      if (name.empty() || model.initializers.count(name))
        continue;  // a weight: uploaded once to wherever the node runs
      const auto from = producer.find(name);
      rule_node.inputs.push_back({from == producer.end() ? kFromHost : from->second, value_bytes(infos.at(name))});
    }
    for (const auto& name : node.outputs)
      if (!name.empty() && std::find(graph_outputs.begin(), graph_outputs.end(), name) != graph_outputs.end())
        rule_node.bytes_to_host += value_bytes(infos.at(name));
    rule_node.control_decisions = control_decisions(node);

    double slowest = 0;
    for (const LibraryProcessor& p : problem.processors) {
      const OpFigures figures = op_time(library, size, p);
      // A view launches nothing: it aliases its input.
      const double a = size.kind == "view" ? 0 : figures.time_us + p.launch_us;
      rule_node.accumulated_us.push_back(a);
      rule_node.complexity_us.push_back(
          figures.complexity_us.value_or(size.kind == "scalar" ? scalar_complexity_us(p, problem.processors) : 0.0));
      slowest = std::max(slowest, a);
    }
    for (const double a : rule_node.accumulated_us) rule_node.speed_us.push_back(slowest - a);
    problem.nodes.push_back(std::move(rule_node));
  }

  const std::vector<RuleDecision> decisions = decide_placement(problem);
  ModelPlacement placement;
  placement.enabled = true;
  placement.library = active.source;
  placement.processors = processors;
  placement.benefit_threshold_us = options.benefit_threshold_us;
  placement.cost_threshold_us = options.cost_threshold_us;
  placement.graph_nodes = model.nodes.size();
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    const RuleDecision& d = decisions[n];
    NodePlacement p;
    p.node = model.nodes[n].name;
    p.op = model.nodes[n].op_type;
    p.work_class = work[n].work_class;
    p.processor = processors[d.processor];
    p.terms = d.terms;
    p.cost_us = d.cost_us;
    p.benefit_us = d.benefit_us;
    p.fused_with_previous = d.fused_with_previous;
    p.reason = d.reason;
    p.evaluated = d.evaluated;
    p.scalar_arguments = work[n].scalar_arguments;
    placement.nodes.push_back(std::move(p));
  }
  // Folded nodes ran once on the CPU backend while loading (graph/passes/fold.cpp); their values
  // are initializers, which the kernels that read them take at creation: kernel arguments.
  // Removed nodes run nowhere.
  const auto add_load_time = [&](const std::vector<LoadTimeNode>& nodes, const char* processor,
                                 PlacementReason reason) {
    for (const LoadTimeNode& node : nodes) {
      NodePlacement p;
      p.node = node.name;
      p.op = node.op_type;
      p.work_class = node.work_class;
      p.processor = processor;
      p.reason = reason;
      placement.nodes.push_back(std::move(p));
    }
  };
  add_load_time(report.folded, "cpu", PlacementReason::folded_at_load);
  add_load_time(report.removed, "none", PlacementReason::removed_at_load);
  return placement;
}

}  // namespace loom::placement
