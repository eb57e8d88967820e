// The placement rule (src/placement/rule.hpp) on hand-computed tables. Every expected figure is
// worked out in the comment above it from the rule's definitions, never from the code.
//
// Processors used throughout: "acc", off the host (a link of 1 µs latency and 100 bytes/µs, a
// scalar round trip of 10 µs), and "cpu", the host. A leg of B bytes to or from acc costs
// 1 + B / 100 µs; to the host nothing.
#include <gtest/gtest.h>

#include "placement/rule.hpp"
#include "test_support.hpp"

using namespace loom;
using namespace loom::placement;

namespace {

LibraryProcessor acc() {
  LibraryProcessor p;
  p.name = "acc";
  p.link_latency_us = 1;
  p.link_bytes_per_us = 100;
  p.round_trip_us = 10;
  return p;
}

LibraryProcessor second_acc() {
  LibraryProcessor p = acc();
  p.name = "acc2";
  p.link_latency_us = 2;
  p.link_bytes_per_us = 50;
  return p;
}

LibraryProcessor host_cpu() {
  LibraryProcessor p;
  p.name = "cpu";
  p.host = true;
  return p;
}

// a, s, o per processor, in the problem's order.
RuleNode node(std::string name, std::vector<double> a, std::vector<double> s, std::vector<double> o,
              std::vector<RuleInput> inputs) {
  RuleNode n;
  n.name = std::move(name);
  n.accumulated_us = std::move(a);
  n.speed_us = std::move(s);
  n.complexity_us = std::move(o);
  n.inputs = std::move(inputs);
  return n;
}

RuleProblem problem(double th1, double th2, std::vector<RuleNode> nodes) {
  RuleProblem p;
  p.processors = {acc(), host_cpu()};
  p.benefit_threshold_us = th1;
  p.cost_threshold_us = th2;
  p.nodes = std::move(nodes);
  return p;
}

}  // namespace

// One node reading 200 request bytes (from the host). th1 = 5, th2 = 50.
//   acc: t = 1 + 200/100 = 3, a = 10 -> c = 13 <= 50; p = s 20 + o 0 = 20 >= 5: passes.
//   cpu: t = 0, a = 30 -> c = 30; p = 0 < 5: fails.
// acc is first in preference order and passes: "passed".
TEST(PlacementRule, FirstProcessorPassingBothThresholds) {
  const auto decisions =
      decide_placement(problem(5, 50, {node("conv", {10, 30}, {20, 0}, {0, 0}, {{kFromHost, 200}})}));
  ASSERT_EQ(decisions.size(), 1u);
  const RuleDecision& d = decisions[0];
  EXPECT_EQ(d.processor, 0u);
  EXPECT_EQ(d.reason, PlacementReason::passed);
  EXPECT_FALSE(d.fused_with_previous);
  EXPECT_DOUBLE_EQ(d.terms.transfer_us, 3);
  EXPECT_DOUBLE_EQ(d.terms.accumulated_us, 10);
  EXPECT_DOUBLE_EQ(d.cost_us, 13);
  EXPECT_DOUBLE_EQ(d.benefit_us, 20);
  ASSERT_EQ(d.evaluated.size(), 2u);
  EXPECT_EQ(d.evaluated[0].processor, "acc");
  EXPECT_TRUE(d.evaluated[0].passed);
  EXPECT_EQ(d.evaluated[1].processor, "cpu");
  EXPECT_DOUBLE_EQ(d.evaluated[1].terms.transfer_us, 0);
  EXPECT_DOUBLE_EQ(d.evaluated[1].terms.cost(), 30);
  EXPECT_FALSE(d.evaluated[1].passed);
}

// A scalar node: th1 = 3, th2 = 20.
//   acc: t = 3, a = 10 -> c = 13; p = s 0 + o 0 = 0 < 3: fails th1.
//   cpu: t = 0, a = 8 -> c = 8 <= 20; p = s 2 + o 4 = 6 >= 3: passes.
// The next processor in order takes it: "next_processor".
TEST(PlacementRule, FallsBackToTheNextProcessor) {
  const auto decisions =
      decide_placement(problem(3, 20, {node("gather", {10, 8}, {0, 2}, {0, 4}, {{kFromHost, 200}})}));
  const RuleDecision& d = decisions.at(0);
  EXPECT_EQ(d.processor, 1u);
  EXPECT_EQ(d.reason, PlacementReason::next_processor);
  EXPECT_FALSE(d.evaluated[0].passed);
  EXPECT_TRUE(d.evaluated[1].passed);
  EXPECT_DOUBLE_EQ(d.cost_us, 8);
  EXPECT_DOUBLE_EQ(d.benefit_us, 6);
  EXPECT_DOUBLE_EQ(d.terms.complexity_us, 4);
}

// th1 = 100: no processor passes, so the smallest cost wins.
//   acc: t = 3, a = 9 -> c = 12, p = 0.   cpu: t = 0, a = 12 -> c = 12, p = 3.
// Equal cost: the larger benefit (cpu, although later in order).
// Second node (its input from the first, now on cpu, 100 bytes):
//   acc: t = 1 + 100/100 = 2, a = 5 -> c = 7, p = 9.   cpu: t = 0, a = 8 -> c = 8, p = 20.
// Its fused figures on cpu (c = 12 + 8 = 20, p = 3 + 20 = 23) fail th1 = 100 too; the smallest
// cost is acc's 7, whatever cpu's larger benefit.
TEST(PlacementRule, MinimumCostFallbackTiesGoToTheLargerBenefit) {
  const auto decisions = decide_placement(problem(
      100, 1000,
      {node("a", {9, 12}, {0, 3}, {0, 0}, {{kFromHost, 200}}), node("b", {5, 8}, {9, 20}, {0, 0}, {{0, 100}})}));
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0].processor, 1u);
  EXPECT_EQ(decisions[0].reason, PlacementReason::min_cost_fallback);
  EXPECT_DOUBLE_EQ(decisions[0].cost_us, 12);
  EXPECT_DOUBLE_EQ(decisions[0].benefit_us, 3);
  EXPECT_EQ(decisions[1].processor, 0u);
  EXPECT_EQ(decisions[1].reason, PlacementReason::min_cost_fallback);
  EXPECT_FALSE(decisions[1].fused_with_previous);
  EXPECT_DOUBLE_EQ(decisions[1].terms.transfer_us, 2);
  EXPECT_DOUBLE_EQ(decisions[1].cost_us, 7);
}

// Equal cost and equal benefit: the earlier processor in preference order.
//   acc: t = 3, a = 7 -> c = 10, p = 1.   cpu: t = 0, a = 10 -> c = 10, p = 1.
TEST(PlacementRule, MinimumCostFallbackFullTieKeepsPreferenceOrder) {
  const auto decisions = decide_placement(problem(100, 1000, {node("a", {7, 10}, {1, 1}, {0, 0}, {{kFromHost, 200}})}));
  EXPECT_EQ(decisions.at(0).processor, 0u);
  EXPECT_EQ(decisions.at(0).reason, PlacementReason::min_cost_fallback);
}

// Two nodes, the second reading the first's 200-byte output. th1 = 5, th2 = 40.
//   node 0 alone: acc t = 3, a = 10 -> c = 13, p = 20: passes on acc.
//   node 1 alone: acc t = 0 (its producer is there), a = 20 -> c = 20, p = 0: fails th1;
//                 cpu t = 1 + 200/100 = 3 (the leg off acc), a = 5 -> c = 8, p = 15: passes.
//   fused with node 0 on acc: c = 13 + 20 = 33 <= 40, p = 20 + 0 = 20 >= 5: passes, so node 1
//   stays on acc although alone it would go to the cpu.
TEST(PlacementRule, FusedFiguresKeepTheNextNodeWithThePrevious) {
  const auto decisions = decide_placement(problem(5, 40,
                                                  {node("conv", {10, 30}, {20, 0}, {0, 0}, {{kFromHost, 200}}),
                                                   node("relu", {20, 5}, {0, 15}, {0, 0}, {{0, 200}})}));
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0].processor, 0u);
  EXPECT_EQ(decisions[1].processor, 0u);
  EXPECT_TRUE(decisions[1].fused_with_previous);
  EXPECT_EQ(decisions[1].reason, PlacementReason::fused_with_previous);
  EXPECT_DOUBLE_EQ(decisions[1].cost_us, 33);
  EXPECT_DOUBLE_EQ(decisions[1].benefit_us, 20);
  // Its own terms on acc, alone: t = 0, a = 20.
  EXPECT_DOUBLE_EQ(decisions[1].terms.transfer_us, 0);
  EXPECT_DOUBLE_EQ(decisions[1].terms.accumulated_us, 20);
  EXPECT_FALSE(decisions[1].evaluated[0].passed);
  EXPECT_TRUE(decisions[1].evaluated[1].passed);
  EXPECT_DOUBLE_EQ(decisions[1].evaluated[1].terms.transfer_us, 3);
}

// As above with th2 = 30: the fused cost 33 > 30 fails, so node 1 is evaluated alone and moves to
// the cpu (acc fails th1 alone; cpu: c = 8, p = 15 passes): "next_processor".
TEST(PlacementRule, FusedFiguresThatFailLetTheNodeMove) {
  const auto decisions = decide_placement(problem(5, 30,
                                                  {node("conv", {10, 30}, {20, 0}, {0, 0}, {{kFromHost, 200}}),
                                                   node("relu", {20, 5}, {0, 15}, {0, 0}, {{0, 200}})}));
  EXPECT_EQ(decisions.at(0).processor, 0u);
  EXPECT_EQ(decisions.at(1).processor, 1u);
  EXPECT_FALSE(decisions.at(1).fused_with_previous);
  EXPECT_EQ(decisions.at(1).reason, PlacementReason::next_processor);
  EXPECT_DOUBLE_EQ(decisions.at(1).cost_us, 8);
  EXPECT_DOUBLE_EQ(decisions.at(1).benefit_us, 15);
}

// t off the host: 200 request bytes in (1 + 2 = 3), 100 bytes of graph output back (1 + 1 = 2)
// and one control decision (a round trip, 10): 15 on acc, nothing on the host.
TEST(PlacementRule, TransferCountsInputsOutputsAndControlRoundTrips) {
  RuleNode n = node("if", {1, 1}, {0, 0}, {0, 0}, {{kFromHost, 200}});
  n.bytes_to_host = 100;
  n.control_decisions = 1;
  const auto decisions = decide_placement(problem(0, 1000, {n}));
  EXPECT_DOUBLE_EQ(decisions.at(0).evaluated[0].terms.transfer_us, 15);
  EXPECT_DOUBLE_EQ(decisions.at(0).evaluated[1].terms.transfer_us, 0);
}

// Between two processors off the host data goes through the host: a leg off each end. Node 0 on
// acc (the only one passing: acc2 has p = 0 < 1); node 1's 100-byte input, on acc2:
// (1 + 100/100) + (2 + 100/50) = 2 + 4 = 6.
TEST(PlacementRule, DataBetweenTwoAcceleratorsCrossesTheHost) {
  RuleProblem p;
  p.processors = {acc(), second_acc()};
  p.benefit_threshold_us = 1;
  p.cost_threshold_us = 1000;
  p.nodes = {node("a", {1, 1}, {5, 0}, {0, 0}, {}), node("b", {1, 1}, {0, 0}, {0, 0}, {{0, 100}})};
  const auto decisions = decide_placement(p);
  EXPECT_EQ(decisions.at(0).processor, 0u);
  EXPECT_DOUBLE_EQ(decisions.at(1).evaluated[1].terms.transfer_us, 6);
  EXPECT_DOUBLE_EQ(transfer_us(p, 1, 1, decisions), 6);
}

TEST(PlacementRule, MalformedProblemsAreRefused) {
  using loom::test_support::expect_error;
  RuleProblem empty;
  expect_error([&] { decide_placement(empty); }, ErrorCode::invalid_argument, {"no processors"});
  expect_error(
      [] {
        decide_placement(problem(0, 1, {node("short", {1}, {0, 0}, {0, 0}, {})}));
      },
      ErrorCode::invalid_argument, {"node 0 ('short')", "one figure per processor"});
  expect_error(
      [] {
        decide_placement(problem(0, 1, {node("ahead", {1, 1}, {0, 0}, {0, 0}, {{0, 8}})}));
      },
      ErrorCode::invalid_argument, {"node 0 ('ahead')", "not an earlier node"});
}
