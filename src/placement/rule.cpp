// decide_placement(): the rule of rule.hpp, node by node.
#include "placement/rule.hpp"

#include "loom/error.hpp"
#include "placement/figures.hpp"

namespace loom::placement {
namespace {

void check(const RuleProblem& problem) {
  if (problem.processors.empty()) throw Error(ErrorCode::invalid_argument, "placement rule: no processors to place on");
  const std::size_t count = problem.processors.size();
  for (std::size_t i = 0; i < problem.nodes.size(); ++i) {
    const RuleNode& node = problem.nodes[i];
    const std::string where = "placement rule: node " + std::to_string(i) + " ('" + node.name + "')";
    if (node.accumulated_us.size() != count || node.speed_us.size() != count || node.complexity_us.size() != count)
      throw Error(ErrorCode::invalid_argument,
                  where + ": a, s and o must have one figure per processor (" + std::to_string(count) + ")");
    for (const RuleInput& input : node.inputs)
      if (input.producer != kFromHost && (input.producer < 0 || static_cast<std::size_t>(input.producer) >= i))
        throw Error(ErrorCode::invalid_argument,
                    where + ": input from node " + std::to_string(input.producer) + ", which is not an earlier node");
  }
}

bool passes(const RuleProblem& problem, double cost, double benefit) {
  return benefit >= problem.benefit_threshold_us && cost <= problem.cost_threshold_us;
}

}  // namespace

double transfer_us(const RuleProblem& problem, std::size_t index, std::size_t j,
                   const std::vector<RuleDecision>& decided) {
  const RuleNode& node = problem.nodes[index];
  const LibraryProcessor& here = problem.processors[j];
  double t = 0;
  for (const RuleInput& input : node.inputs) {
    if (input.producer == kFromHost) {
      t += link_leg_us(here, input.bytes);
      continue;
    }
    const std::size_t from = decided[static_cast<std::size_t>(input.producer)].processor;
    if (from != j) t += link_leg_us(problem.processors[from], input.bytes) + link_leg_us(here, input.bytes);
  }
  if (!here.host && node.bytes_to_host > 0) t += link_leg_us(here, node.bytes_to_host);
  if (!here.host) t += node.control_decisions * here.round_trip_us;
  return t;
}

std::vector<RuleDecision> decide_placement(const RuleProblem& problem) {
  check(problem);
  std::vector<RuleDecision> decided;
  decided.reserve(problem.nodes.size());
  for (std::size_t i = 0; i < problem.nodes.size(); ++i) {
    const RuleNode& node = problem.nodes[i];
    RuleDecision decision;
    for (std::size_t j = 0; j < problem.processors.size(); ++j) {
      ProcessorEvaluation e;
      e.processor = problem.processors[j].name;
      e.terms = {transfer_us(problem, i, j, decided), node.accumulated_us[j], node.speed_us[j], node.complexity_us[j]};
      e.passed = passes(problem, e.terms.cost(), e.terms.benefit());
      decision.evaluated.push_back(std::move(e));
    }
    const auto take = [&](std::size_t j, PlacementReason reason, double cost, double benefit) {
      decision.processor = j;
      decision.terms = decision.evaluated[j].terms;
      decision.reason = reason;
      decision.cost_us = cost;
      decision.benefit_us = benefit;
    };

    // Fused with the previous node on its processor: the pair's cost and benefit are the sums of
    // both alone there (the edge between them crosses nothing, which this node's t already shows).
    bool placed = false;
    if (i > 0) {
      const RuleDecision& previous = decided.back();
      const PlacementTerms& mine = decision.evaluated[previous.processor].terms;
      const double cost = previous.terms.cost() + mine.cost();
      const double benefit = previous.terms.benefit() + mine.benefit();
      if (passes(problem, cost, benefit)) {
        take(previous.processor, PlacementReason::fused_with_previous, cost, benefit);
        decision.fused_with_previous = true;
        placed = true;
      }
    }
    for (std::size_t j = 0; !placed && j < problem.processors.size(); ++j)
      if (decision.evaluated[j].passed) {
        const PlacementTerms& t = decision.evaluated[j].terms;
        take(j, j == 0 ? PlacementReason::passed : PlacementReason::next_processor, t.cost(), t.benefit());
        placed = true;
      }
    if (!placed) {
      std::size_t best = 0;
      for (std::size_t j = 1; j < problem.processors.size(); ++j) {
        const PlacementTerms& t = decision.evaluated[j].terms;
        const PlacementTerms& b = decision.evaluated[best].terms;
        if (t.cost() < b.cost() || (t.cost() == b.cost() && t.benefit() > b.benefit())) best = j;
      }
      const PlacementTerms& t = decision.evaluated[best].terms;
      take(best, PlacementReason::min_cost_fallback, t.cost(), t.benefit());
    }
    decided.push_back(std::move(decision));
  }
  return decided;
}

}  // namespace loom::placement
