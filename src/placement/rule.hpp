// The placement rule of the source text (MISSION.md §2; docs/placement.md, "The rule"), in one
// place: for node i and processor j, cost c = t + a and benefit p = s + o; node i goes to the
// first processor (in preference order) where p >= th1 and c <= th2; if none passes, to the
// smallest cost (ties: the largest benefit, then the earlier processor). Each decision is kept,
// and node i is first evaluated fused with node i - 1: when the pair's figures pass on node
// i - 1's processor, node i stays there. Pure: the caller gives a, s and o per processor; t
// follows from where each input's producer went.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "loom/placement.hpp"

namespace loom::placement {

// An input of a node: the node that produces it, or kFromHost for a request input (in the host's
// memory). Weights are not inputs here: they are uploaded once to wherever their node runs.
inline constexpr long kFromHost = -1;
struct RuleInput {
  long producer = kFromHost;  // index of an earlier node, or kFromHost
  double bytes = 0;
};

struct RuleNode {
  std::string name;
  // Per processor, in RuleProblem::processors order.
  std::vector<double> accumulated_us;  // a
  std::vector<double> speed_us;        // s
  std::vector<double> complexity_us;   // o
  std::vector<RuleInput> inputs;
  double bytes_to_host = 0;      // graph outputs it writes: the application reads them on the host
  double control_decisions = 0;  // host-visible decisions (an If's condition): a round trip each off the host
};

struct RuleProblem {
  // Preference order; at least one. The rule reads each one's name, host, link and round trip.
  std::vector<LibraryProcessor> processors;
  std::vector<RuleNode> nodes;      // in execution order; inputs name earlier nodes only
  double benefit_threshold_us = 0;  // th1
  double cost_threshold_us = 0;     // th2
};

struct RuleDecision {
  std::size_t processor = 0;  // index into RuleProblem::processors
  PlacementTerms terms;       // the node alone on that processor
  double cost_us = 0;         // what was compared with th2: the pair's when fused
  double benefit_us = 0;      // ... with th1
  bool fused_with_previous = false;
  PlacementReason reason = PlacementReason::passed;
  std::vector<ProcessorEvaluation> evaluated;  // every processor, the node alone, in preference order
};

// t of node `index` on processor `j` with the earlier nodes where `decided` put them: every input
// whose producer is elsewhere crosses (through the host: a link_leg_us() off each end that is not
// the host), graph outputs go to the host, and
// each control decision costs a round trip off the host.
double transfer_us(const RuleProblem& problem, std::size_t index, std::size_t j,
                   const std::vector<RuleDecision>& decided);

// The decisions, one per node. Throws Error(invalid_argument) for a problem without processors,
// a node whose figures do not cover every processor, or an input naming a later node.
std::vector<RuleDecision> decide_placement(const RuleProblem& problem);

}  // namespace loom::placement
