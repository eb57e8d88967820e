// The simulator against schedules worked out by hand (times in microseconds). Each expected time
// comes from the rules in sim.hpp, derived in the comment above it, never from the simulator.
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "loom/error.hpp"
#include "loom/sim.hpp"
#include "sim_test_support.hpp"

using namespace loom;
using namespace loom::sim;
using loom::sim::fixtures::mission_example;
using loom::sim::fixtures::NewestFirstPolicy;
using loom::sim::fixtures::ScriptedPolicy;

using loom::sim::fixtures::expect_schedule;
using loom::sim::fixtures::Expected;

namespace {

std::vector<TraceEvent> on_track(const Timeline& timeline, const std::string& track) {
  std::vector<TraceEvent> events;
  for (auto& e : timeline.events())
    if (e.track == track) events.push_back(e);
  return events;
}

}  // namespace

// MISSION.md §1: "while L11 computes, L21 loads; then L12 loads while L21 computes".
// Order L11, L21, L12, L22 (requests 0, 1, 0, 1); capacity 200 = two Steps of 100 bytes.
//   t=0  L11: memory [0,2]; compute [2,6].                      holds 100 until 6
//   t=2  L21: 100 held + 100 fits: memory [2,6]; compute waits for L11 -> [6,8]
//   t=6  L11 released at 6: L12 memory [6,8]; compute max(8, compute free 8) -> [8,12]
//   t=8  L21 released at 8: L22 memory [8,12]; compute [12,14]
// Makespan 14. Compute busy 4+4+2+2 = 12, idle 2 (only [0,2], while L11 loads).
// Memory busy 2+4+2+4 = 12, idle 2 (only [12,14], while L22 computes).
TEST(SimSchedule, MissionExampleInterleavesComputeAndMemoryHeavyModels) {
  Workload w = mission_example();
  // Passed to the policy. Both in one class, so priority (test_sim_preempt.cpp) changes nothing.
  w.requests[0].priority = 3;
  w.requests[1].priority = 3;
  ScriptedPolicy policy({0, 1, 0, 1});
  const SimResult r = simulate(w, policy);
  expect_schedule(r, {{0, 0, 0, 0, 2, 2, 6}, {1, 0, 2, 2, 6, 6, 8}, {0, 1, 6, 6, 8, 8, 12}, {1, 1, 8, 8, 12, 12, 14}});
  EXPECT_DOUBLE_EQ(r.makespan_us, 14);
  EXPECT_DOUBLE_EQ(r.compute_busy_us, 12);
  EXPECT_DOUBLE_EQ(r.memory_busy_us, 12);
  EXPECT_DOUBLE_EQ(r.compute_idle_us, 2);
  EXPECT_DOUBLE_EQ(r.memory_idle_us, 2);
  ASSERT_EQ(r.requests.size(), 2u);
  EXPECT_EQ(r.requests[0].model, "cnn");
  EXPECT_DOUBLE_EQ(r.requests[0].start_us, 0);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_us, 12);
  EXPECT_DOUBLE_EQ(r.requests[0].latency_us, 12);
  EXPECT_EQ(r.requests[1].model, "lstm");
  EXPECT_DOUBLE_EQ(r.requests[1].start_us, 2);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_us, 14);
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 14);

  // What the policy saw: the state at each point (used = Steps whose compute has not ended).
  ASSERT_EQ(policy.decisions.size(), 4u);
  const double now[] = {0, 2, 6, 8}, compute_free[] = {0, 6, 8, 12}, memory_free[] = {0, 2, 6, 8};
  const std::uint64_t used[] = {0, 100, 100, 100};
  for (std::size_t d = 0; d < 4; ++d) {
    SCOPED_TRACE("decision " + std::to_string(d));
    const AcceleratorState& s = policy.decisions[d].state;
    EXPECT_DOUBLE_EQ(s.now_us, now[d]);
    EXPECT_DOUBLE_EQ(s.compute_free_at_us, compute_free[d]);
    EXPECT_DOUBLE_EQ(s.memory_free_at_us, memory_free[d]);
    EXPECT_EQ(s.onchip_used_bytes, used[d]);
    EXPECT_EQ(s.onchip_capacity_bytes, 200u);
  }
  // Every field of a candidate: decision 0 offers L11 and L21; decision 2 offers L12 and L22.
  const auto& first = policy.decisions[0].candidates;
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[1].request_id, 1u);
  EXPECT_EQ(first[1].model_index, 1u);
  EXPECT_EQ(first[1].step_index, 0u);
  EXPECT_EQ(first[1].step_count, 2u);
  EXPECT_DOUBLE_EQ(first[1].arrival_us, 0);
  EXPECT_DOUBLE_EQ(first[1].compute_us, 2);
  EXPECT_DOUBLE_EQ(first[1].memory_us, 4);
  EXPECT_EQ(first[1].bytes, 100u);
  EXPECT_EQ(first[1].working_set_bytes, 100u);
  EXPECT_EQ(first[1].passed_over, 0u);
  EXPECT_EQ(first[1].priority, 3);
  const auto& third = policy.decisions[2].candidates;
  ASSERT_EQ(third.size(), 2u);
  EXPECT_EQ(third[0].step_index, 1u);
  EXPECT_DOUBLE_EQ(third[0].compute_us, 4);
  EXPECT_EQ(third[1].step_index, 1u);
  EXPECT_EQ(third[1].passed_over, 0u);  // L22 is a new candidate: L21 was just dispatched
}

// FIFO on the same workload: each request to completion, cnn first (same arrival, file order).
//   t=0  L11: memory [0,2]; compute [2,6]                       holds 100 until 6
//   t=2  L12: 100 held + 100 fits: memory [2,4]; compute after L11 -> [6,10]
//   t=4  L21: 200 held (L11 until 6, L12 until 10): memory stalls until 6 -> [6,10];
//        compute after L12 -> [10,12]
//   t=10 L12 released at 10, L21 holds 100: L22 memory [10,14]; compute [14,16]
// Makespan 16. Compute idle 4 ([0,2], [12,14]); memory idle 4 ([4,6] stalled on capacity, [14,16]).
TEST(SimSchedule, FifoRunsEachRequestToCompletion) {
  FifoPolicy fifo;
  const SimResult r = simulate(mission_example(), fifo);
  expect_schedule(
      r, {{0, 0, 0, 0, 2, 2, 6}, {0, 1, 2, 2, 4, 6, 10}, {1, 0, 4, 6, 10, 10, 12}, {1, 1, 10, 10, 14, 14, 16}});
  EXPECT_DOUBLE_EQ(r.makespan_us, 16);
  EXPECT_DOUBLE_EQ(r.compute_idle_us, 4);
  EXPECT_DOUBLE_EQ(r.memory_idle_us, 4);
  EXPECT_DOUBLE_EQ(r.requests[0].latency_us, 10);
  EXPECT_DOUBLE_EQ(r.requests[1].start_us, 6);
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 16);
}

// One model, capacity 100 bytes: S0 (memory 1, compute 4, 60 B), S1 (1, 4, 60 B), S2 (1, 1, 30 B).
//   t=0  S0: memory [0,1]; compute [1,5]                         holds 60 until 5
//   t=1  S1: 60 + 60 > 100: the memory resource waits for S0's release at 5 -> memory [5,6];
//        compute [6,10]                                          holds 60 until 10
//   t=6  S2: 60 + 30 fits: memory [6,7]; compute after S1 -> [10,11]
// Makespan 11; memory busy 3, idle 8 (of which [1,5] is the capacity stall); compute busy 9, idle 2.
// Unlimited, S1 would load at [1,2] and the request would end at 10.
TEST(SimSchedule, OnChipCapacityStallsTheMemoryResource) {
  Workload w;
  w.models = {{"big", {{"S0", 4, 1, 60}, {"S1", 4, 1, 60}, {"S2", 1, 1, 30}}}};
  w.requests = {{"big", 0, 0}};
  w.onchip_capacity_bytes = 100;
  ScriptedPolicy policy({0, 0, 0});
  const SimResult r = simulate(w, policy);
  expect_schedule(r, {{0, 0, 0, 0, 1, 1, 5}, {0, 1, 1, 5, 6, 6, 10}, {0, 2, 6, 6, 7, 10, 11}});
  EXPECT_DOUBLE_EQ(r.makespan_us, 11);
  EXPECT_DOUBLE_EQ(r.memory_busy_us, 3);
  EXPECT_DOUBLE_EQ(r.memory_idle_us, 8);
  EXPECT_DOUBLE_EQ(r.compute_busy_us, 9);
  EXPECT_DOUBLE_EQ(r.compute_idle_us, 2);
  ASSERT_EQ(policy.decisions.size(), 3u);
  EXPECT_EQ(policy.decisions[1].state.onchip_used_bytes, 60u);
  EXPECT_EQ(policy.decisions[2].state.onchip_used_bytes, 60u);  // S0 released at 5, S1 holds 60
  // The stall is visible on the memory track.
  const auto memory = on_track(r.timeline, "sim:memory");
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_EQ(memory[1].args.at("capacity_wait_us"), "4");

  w.onchip_capacity_bytes = 0;  // unlimited
  FifoPolicy fifo;
  const SimResult unlimited = simulate(w, fifo);
  expect_schedule(unlimited, {{0, 0, 0, 0, 1, 1, 5}, {0, 1, 1, 1, 2, 5, 9}, {0, 2, 2, 2, 3, 9, 10}});
}

// Two models: A (memory 3 compute 1, then memory 1 compute 3), B (memory 2 compute 2); requests
// A, B, B at 0.
//   resource bound: compute 1+3 + 2+2 = 8, memory 3+1 + 2+2 = 8 -> 8
//   chain bound: A alone: S0 memory [0,3] compute [3,4]; S1 memory [3,4] compute [4,7] -> 7
//                (its own loads overlap its compute, so less than the 8 of its phases in a row);
//                B alone: memory [0,2] compute [2,4] -> 4.  max -> 7
//   lower bound: max(8, 7) = 8
// FIFO: A0 m[0,3] c[3,4]; A1 m[3,4] c[4,7]; B m[4,6] c[7,9]; B m[6,8] c[9,11] -> makespan 11.
TEST(SimSchedule, ResourceChainAndLowerBounds) {
  Workload w;
  w.models = {{"A", {{"a0", 1, 3, 0}, {"a1", 3, 1, 0}}}, {"B", {{"b0", 2, 2, 0}}}};
  w.requests = {{"A", 0, 0}, {"B", 0, 0}, {"B", 0, 0}};
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo);
  EXPECT_DOUBLE_EQ(r.resource_bound_us, 8);
  EXPECT_DOUBLE_EQ(r.chain_bound_us, 7);
  EXPECT_DOUBLE_EQ(r.lower_bound_us, 8);
  EXPECT_DOUBLE_EQ(r.makespan_us, 11);

  // The chain dominates with one long request; capacity counts in the chain (see the test above:
  // alone under capacity 100 the chain is 11, its phases need only 9 of compute).
  Workload chain;
  chain.models = {{"big", {{"S0", 4, 1, 60}, {"S1", 4, 1, 60}, {"S2", 1, 1, 30}}}};
  chain.requests = {{"big", 0, 0}};
  chain.onchip_capacity_bytes = 100;
  const SimResult c = simulate(chain, fifo);
  EXPECT_DOUBLE_EQ(c.resource_bound_us, 9);
  EXPECT_DOUBLE_EQ(c.chain_bound_us, 11);
  EXPECT_DOUBLE_EQ(c.lower_bound_us, 11);

  // MISSION example: resource 12 (both resources), chain 10 (each model alone:
  // cnn m[0,2] c[2,6], m[2,4] c[6,10]; lstm m[0,4] c[4,6], m[4,8] c[8,10]).
  const SimResult m = simulate(mission_example(), fifo);
  EXPECT_DOUBLE_EQ(m.resource_bound_us, 12);
  EXPECT_DOUBLE_EQ(m.chain_bound_us, 10);
  EXPECT_DOUBLE_EQ(m.lower_bound_us, 12);
}

// Model X (3 Steps, memory 2 compute 2) at 0; model Y (1 Step, memory 1 compute 1) at 3, under
// newest-first. Y arrives while X1 loads ([2,4]) and joins at the next scheduling point, 4.
//   t=0  X0 m[0,2] c[2,4]
//   t=2  only X1 (Y not yet arrived): m[2,4] c[4,6]
//   t=4  X2 and Y0 offered; Y0 (newest): m[4,5] c[6,7]
//   t=5  X2 (passed over once): m[5,7] c[7,9]
// Makespan 9; Y: arrival 3, start 4, finish 7, latency 4; X latency 9.
TEST(SimSchedule, RequestArrivingMidRunJoinsAtTheNextSchedulingPoint) {
  Workload w;
  w.models = {{"X", {{"x0", 2, 2, 0}, {"x1", 2, 2, 0}, {"x2", 2, 2, 0}}}, {"Y", {{"y0", 1, 1, 0}}}};
  w.requests = {{"X", 0, 0}, {"Y", 3, 0}};
  NewestFirstPolicy policy;
  const SimResult r = simulate(w, policy);
  expect_schedule(r, {{0, 0, 0, 0, 2, 2, 4}, {0, 1, 2, 2, 4, 4, 6}, {1, 0, 4, 4, 5, 6, 7}, {0, 2, 5, 5, 7, 7, 9}});
  ASSERT_EQ(policy.decisions.size(), 4u);
  EXPECT_EQ(policy.decisions[1].candidates.size(), 1u);
  ASSERT_EQ(policy.decisions[2].candidates.size(), 2u);
  EXPECT_DOUBLE_EQ(policy.decisions[2].candidates[1].arrival_us, 3);
  EXPECT_EQ(policy.decisions[3].candidates[0].passed_over, 1u);
  EXPECT_DOUBLE_EQ(r.makespan_us, 9);
  EXPECT_DOUBLE_EQ(r.requests[1].start_us, 4);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_us, 7);
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 4);
  EXPECT_DOUBLE_EQ(r.requests[0].latency_us, 9);
}

// A at 5 and B at 20 (memory 1 compute 1 each). Nothing is live at 0: time jumps to 5; after A's
// Step is dispatched nothing is live at 6: time jumps to 20.
//   t=5  A m[5,6] c[6,7];  t=20  B m[20,21] c[21,22]
// Makespan from the first arrival: 22 - 5 = 17; each resource busy 2, idle 15. Chain bound: B
// arrives 15 after A and takes 2 alone, so 17: here the schedule meets its lower bound.
TEST(SimSchedule, TimeJumpsOverIdleGapsToTheNextArrival) {
  Workload w;
  w.models = {{"m", {{"s", 1, 1, 0}}}};
  w.requests = {{"m", 5, 0}, {"m", 20, 0}};
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo);
  expect_schedule(r, {{0, 0, 5, 5, 6, 6, 7}, {1, 0, 20, 20, 21, 21, 22}});
  EXPECT_DOUBLE_EQ(r.makespan_us, 17);
  EXPECT_DOUBLE_EQ(r.compute_idle_us, 15);
  EXPECT_DOUBLE_EQ(r.memory_idle_us, 15);
  EXPECT_DOUBLE_EQ(r.resource_bound_us, 2);
  EXPECT_DOUBLE_EQ(r.chain_bound_us, 17);
  EXPECT_DOUBLE_EQ(r.lower_bound_us, 17);
  const auto decisions = on_track(r.timeline, "host:scheduler");
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_DOUBLE_EQ(decisions[0].start_us, 5);
  EXPECT_DOUBLE_EQ(decisions[1].start_us, 20);
}

// Three requests of a 2-Step model at 0 under newest-first. (request, step, passed_over) offered:
//   d0: (0,0,0) (1,0,0) (2,0,0) -> r2      d1: (0,0,1) (1,0,1) (2,1,0) -> r2
//   d2: (0,0,2) (1,0,2)         -> r1      d3: (0,0,3) (1,1,0)         -> r1
//   d4: (0,0,4)                 -> r0      d5: (0,1,0)                 -> r0
TEST(SimSchedule, PassedOverCountsOffersNotChosenAndResetsForTheNextStep) {
  Workload w;
  w.models = {{"p", {{"s0", 1, 1, 0}, {"s1", 1, 1, 0}}}};
  w.requests = {{"p", 0, 0}, {"p", 0, 0}, {"p", 0, 0}};
  NewestFirstPolicy policy;
  simulate(w, policy);
  using Offer = std::tuple<std::uint64_t, std::size_t, std::uint32_t>;
  const std::vector<std::vector<Offer>> expected = {{{0, 0, 0}, {1, 0, 0}, {2, 0, 0}},
                                                    {{0, 0, 1}, {1, 0, 1}, {2, 1, 0}},
                                                    {{0, 0, 2}, {1, 0, 2}},
                                                    {{0, 0, 3}, {1, 1, 0}},
                                                    {{0, 0, 4}},
                                                    {{0, 1, 0}}};
  ASSERT_EQ(policy.decisions.size(), expected.size());
  for (std::size_t d = 0; d < expected.size(); ++d) {
    std::vector<Offer> got;
    for (const auto& c : policy.decisions[d].candidates) got.emplace_back(c.request_id, c.step_index, c.passed_over);
    EXPECT_EQ(got, expected[d]) << "decision " << d;
  }
}

// request_id is the position in arrival order (ties in list order); ScheduledStep::request and
// RequestResult stay in list order. Listed: B at 5, A at 0, C at 0 -> ids A=0, C=1, B=2.
// FIFO: A m[0,1] c[1,2]; C m[1,2] c[2,3]; B (arrives 5) m[5,6] c[6,7].
TEST(SimSchedule, RequestIdsFollowArrivalOrder) {
  Workload w;
  w.models = {{"A", {{"s", 1, 1, 0}}}, {"B", {{"s", 1, 1, 0}}}, {"C", {{"s", 1, 1, 0}}}};
  w.requests = {{"B", 5, 0}, {"A", 0, 0}, {"C", 0, 0}};
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo);
  expect_schedule(r, {{1, 0, 0, 0, 1, 1, 2}, {2, 0, 1, 1, 2, 2, 3}, {0, 0, 5, 5, 6, 6, 7}});
  EXPECT_EQ(r.requests[0].model, "B");
  EXPECT_DOUBLE_EQ(r.requests[0].latency_us, 2);
}

TEST(SimSchedule, SameInputSameScheduleAndTimeline) {
  Workload w;
  w.models = {{"a", {{"a0", 3, 1, 40}, {"a1", 2, 2, 70}, {"a2", 1, 3, 20}}},
              {"b", {{"b0", 1, 4, 90}, {"b1", 5, 1, 10}}},
              {"c", {{"c0", 2, 2, 50}}}};
  for (int i = 0; i < 12; ++i) w.requests.push_back({std::string(1, "abc"[i % 3]), 1.5 * (i / 2), i % 4});
  w.onchip_capacity_bytes = 160;
  const auto expect_same = [&](SchedulingPolicy& first, SchedulingPolicy& second) {
    const SimResult x = simulate(w, first);
    const SimResult y = simulate(w, second);
    EXPECT_EQ(result_json(x, w, "p"), result_json(y, w, "p"));
    const auto ex = x.timeline.events(), ey = y.timeline.events();
    ASSERT_EQ(ex.size(), ey.size());
    for (std::size_t i = 0; i < ex.size(); ++i) {
      EXPECT_EQ(ex[i].name, ey[i].name);
      EXPECT_EQ(ex[i].track, ey[i].track);
      EXPECT_EQ(ex[i].start_us, ey[i].start_us);
      EXPECT_EQ(ex[i].duration_us, ey[i].duration_us);
      EXPECT_EQ(ex[i].args, ey[i].args);
    }
  };
  FifoPolicy fifo_a, fifo_b;
  expect_same(fifo_a, fifo_b);
  NewestFirstPolicy newest_a, newest_b;
  expect_same(newest_a, newest_b);
}

// The MISSION example's timeline (schedule in MissionExampleInterleaves... above).
TEST(SimSchedule, TimelineHasOneEventPerPhaseDecisionAndRequest) {
  ScriptedPolicy policy({0, 1, 0, 1});
  const SimResult r = simulate(mission_example(), policy);
  EXPECT_EQ(r.timeline.tracks(),
            (std::vector<std::string>{"host:scheduler", "request:cnn", "request:lstm", "sim:compute", "sim:memory"}));
  struct Span {
    std::string name;
    double start, duration;
  };
  const auto expect_track = [&](const std::string& track, const std::vector<Span>& want) {
    const auto got = on_track(r.timeline, track);
    ASSERT_EQ(got.size(), want.size()) << track;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].name, want[i].name) << track << " " << i;
      EXPECT_DOUBLE_EQ(got[i].start_us, want[i].start) << track << " " << i;
      EXPECT_DOUBLE_EQ(got[i].duration_us, want[i].duration) << track << " " << i;
    }
  };
  expect_track("sim:memory", {{"cnn#0/0", 0, 2}, {"lstm#1/0", 2, 4}, {"cnn#0/1", 6, 2}, {"lstm#1/1", 8, 4}});
  expect_track("sim:compute", {{"cnn#0/0", 2, 4}, {"lstm#1/0", 6, 2}, {"cnn#0/1", 8, 4}, {"lstm#1/1", 12, 2}});
  expect_track("host:scheduler",
               {{"pick cnn#0/0", 0, 0}, {"pick lstm#1/0", 2, 0}, {"pick cnn#0/1", 6, 0}, {"pick lstm#1/1", 8, 0}});
  expect_track("request:cnn", {{"cnn#0", 0, 12}});
  expect_track("request:lstm", {{"lstm#1", 0, 14}});
  const auto memory = on_track(r.timeline, "sim:memory");
  EXPECT_EQ(memory[1].args.at("step_name"), "L21");
  EXPECT_EQ(memory[1].args.at("phase"), "memory");
  EXPECT_EQ(memory[1].category, "step");
}

TEST(SimSchedule, BadWorkloadsAndPoliciesAreErrors) {
  FifoPolicy fifo;
  const auto expect_error = [&](const Workload& w, const std::string& text) {
    try {
      simulate(w, fifo);
      ADD_FAILURE() << "no error, expected one mentioning " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  Workload w = mission_example();
  w.requests[1].model = "gru";
  expect_error(w, "requests[1].model: unknown model 'gru'");
  w = mission_example();
  w.requests[0].arrival_us = -1;
  expect_error(w, "requests[0].arrival_us: negative time");
  w = mission_example();
  w.models[1].steps[0].memory_us = -2;
  expect_error(w, "models[1].steps[0].memory_us");
  // A Step larger than the on-chip capacity is not among them: it runs as tiles (test_sim_tiling.cpp).

  // A policy answering out of range is Loom's bug, not the user's.
  struct Broken final : SchedulingPolicy {
    std::string_view name() const noexcept override { return "broken"; }
    std::size_t pick(std::span<const StepCandidate> c, const AcceleratorState&) override { return c.size(); }
  } broken;
  try {
    simulate(mission_example(), broken);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
  }
}

// What loom-sim --exportTrace writes reads back with the same tracks and events.
TEST(SimSchedule, TimelineRoundTripsThroughChromeTrace) {
  FifoPolicy fifo;
  const SimResult r = simulate(mission_example(), fifo);
  std::stringstream trace;
  r.timeline.write_chrome_trace(trace);
  const Timeline back = read_chrome_trace(trace);
  EXPECT_EQ(back.tracks(), r.timeline.tracks());
  const auto want = r.timeline.events(), got = back.events();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].track, want[i].track);
    EXPECT_DOUBLE_EQ(got[i].start_us, want[i].start_us);
    EXPECT_DOUBLE_EQ(got[i].duration_us, want[i].duration_us);
  }
}
