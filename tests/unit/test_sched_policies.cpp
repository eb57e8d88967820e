// The built-in scheduling policies (round-robin, streams, idle-time) against schedules worked out
// by hand on the simulator (times in microseconds), and on the CPU-backend executor, where every
// policy must give the same bits as each request run alone. Each expected schedule is derived in
// the comment above it from the rules in sim.hpp and the estimate in docs/simulator.md.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "loom/error.hpp"
#include "loom/executor.hpp"
#include "loom/policy.hpp"
#include "loom/sim.hpp"
#include "loom/workloads.hpp"
#include "sched/device_shadow.hpp"
#include "sim_test_support.hpp"

using namespace loom;
using namespace loom::sim;
using loom::sim::fixtures::mission_example;
using loom::sim::fixtures::RecordingWrapper;

using loom::sim::fixtures::expect_schedule;
using loom::sim::fixtures::Expected;

namespace {

using Dispatch = std::pair<std::size_t, std::size_t>;  // (request, step)

std::vector<Dispatch> dispatch_order(const SimResult& result) {
  std::vector<Dispatch> order;
  for (const auto& s : result.schedule) order.emplace_back(s.request, s.step);
  return order;
}

IdleTimePolicy idle_time(std::size_t window, std::uint32_t starvation_limit = 8, double block_us = 0) {
  PolicyOptions o;
  o.window = window;
  o.starvation_limit = starvation_limit;
  o.block_us = block_us;
  return IdleTimePolicy(o);
}

// MISSION.md §1's schedules, from test_sim_schedule.cpp.
const std::vector<Expected> kInterleaved = {
    {0, 0, 0, 0, 2, 2, 6}, {1, 0, 2, 2, 6, 6, 8}, {0, 1, 6, 6, 8, 8, 12}, {1, 1, 8, 8, 12, 12, 14}};
const std::vector<Expected> kFifo = {
    {0, 0, 0, 0, 2, 2, 6}, {0, 1, 2, 2, 4, 6, 10}, {1, 0, 4, 6, 10, 10, 12}, {1, 1, 10, 10, 14, 14, 16}};

}  // namespace

// The estimate itself (docs/simulator.md): memory resource free at t1, compute free at t2.
//   compute idle = memory time − (t2 − t1) when positive; memory idle = wait for on-chip room,
//   bytes of unknown release held until the running layer's compute ends (t2).
// State: now 2, memory free 2, compute free 6, 100 of 200 bytes held.
//   Step m4 c2 100 B: fits; memory [2,6]; compute idle 4 − (6 − 2) = 0.
//   Step m6 c1 100 B: fits; memory [2,8]; compute idle 6 − 4 = 2.
//   Step m1 c1 150 B: 100 + 150 > 200: waits for 6 (memory idle 4); memory [6,7]: compute idle 1.
TEST(SchedPolicies, IdleEstimateFollowsMissionFormulas) {
  AcceleratorState state{2, 6, 2, 100, 200};
  const sched::DeviceShadow shadow(state);
  const auto a = shadow.estimate({2, 4, 100});
  EXPECT_DOUBLE_EQ(a.compute_us, 0);
  EXPECT_DOUBLE_EQ(a.memory_us, 0);
  const auto b = shadow.estimate({1, 6, 100});
  EXPECT_DOUBLE_EQ(b.compute_us, 2);
  EXPECT_DOUBLE_EQ(b.memory_us, 0);
  const auto c = shadow.estimate({1, 1, 150});
  EXPECT_DOUBLE_EQ(c.memory_us, 4);
  EXPECT_DOUBLE_EQ(c.compute_us, 1);
  // Placing a Step moves the shadow to its memory end and holds its bytes to its compute end.
  sched::DeviceShadow placed(state);
  placed.place({2, 4, 100});
  const AcceleratorState after = placed.state();
  EXPECT_DOUBLE_EQ(after.now_us, 6);
  EXPECT_DOUBLE_EQ(after.memory_free_at_us, 6);
  EXPECT_DOUBLE_EQ(after.compute_free_at_us, 8);
  EXPECT_EQ(after.onchip_used_bytes, 200u);
}

// MISSION.md §1's two models (sim_test_support.hpp: cnn L11/L12 m2 c4, lstm L21/L22 m4 c2, 100 B
// each, chip 200 B). Idle-time with a window of 2. Each candidate's score = idle of its Step +
// idle of the best next Step (of any request's window) after it; (total, memory) idle.
//   t=0 (all free). L11: memory [0,2], compute idle 2; then L12 m[2,4] and L21 m[2,6] both idle
//                  nothing against compute free 6. Score (2,0). L21: compute idle 4 > 2. -> L11
//   t=2 (compute free 6, 100 B held until 6).
//        L12: m[2,4], idle 0; then L21: 200 B held, waits for 6 (memory idle 2), m[6,10] vs
//             compute free 10 -> (2,2).                                           Score (2,2)
//        L21: m[2,6], compute idle 6 − 6 = 0; then L12: 200 B held, L11's 100 freed at 6: m[6,8],
//             compute free 8 -> 0.                                                Score (0,0) -> L21
//   t=6 (compute free 8, L21 holds 100 until 8).
//        L12: m[6,8] idle 0; then L22 waits for 8 (no idle: memory free at 8), m[8,12] vs compute
//             free 12 -> 0.                                                       Score (0,0)
//        L22: m[6,10] vs compute free 8: compute idle 2: out.                     -> L12
//   t=8  L22 alone.
// The schedule of test_sim_schedule.cpp's interleaving: makespan 14. FIFO: 16.
TEST(SchedPolicies, IdleTimeInterleavesTheMissionExample) {
  IdleTimePolicy policy = idle_time(2);
  const SimResult r = simulate(mission_example(), policy);
  expect_schedule(r, kInterleaved);
  EXPECT_DOUBLE_EQ(r.makespan_us, 14);
  FifoPolicy fifo;
  const SimResult f = simulate(mission_example(), fifo);
  expect_schedule(f, kFifo);
  EXPECT_DOUBLE_EQ(f.makespan_us, 16);

  // The default window (4) looks further; its scores differ but its choices do not. In the
  // look-ahead, equal idle goes to the Step leaving compute free closest to memory free:
  //   t=0  L11 (2) -> L21 (0: compute free 8 − memory free 6 = 2, where L12 leaves 10 − 4)
  //        -> L12 (0) -> L22 (0): (2,0);  L21: 4 already.                            -> L11
  //   t=2  L12 -> L21 (2,2) -> L22 (2,0): (4,2);   L21 -> L12 (0) -> L22 (0): (0,0)  -> L21
  //   t=6  as above (no Steps beyond the candidates)                                 -> L12
  auto by_default = make_policy("idle-time");
  EXPECT_EQ(by_default->name(), "idle-time");
  expect_schedule(simulate(mission_example(), *by_default), kInterleaved);
}

// On a device that runs one Step at a time (the CPU backend) no order overlaps anything: the
// policy runs requests one after another, as FIFO does, rather than interleave for nothing. The
// same candidates on an overlapping device are interleaved (the test above): there, at t=2, L21
// goes before L12.
TEST(SchedPolicies, IdleTimeDoesNotInterleaveWhereStepsCannotOverlap) {
  // The mission example at t=2: L11 loaded [0,2] and computes [2,6], holding 100 of 200 bytes.
  IdleTimePolicy policy = idle_time(2);
  StepCandidate l12, l21;
  l12.request_id = 0;
  l12.step_index = 1;
  l12.step_count = 2;
  l12.compute_us = 4;
  l12.memory_us = 2;
  l12.bytes = l12.working_set_bytes = 100;
  l21.request_id = 1;
  l21.step_index = 0;
  l21.step_count = 2;
  l21.compute_us = 2;
  l21.memory_us = 4;
  l21.bytes = l21.working_set_bytes = 100;
  l21.lookahead_count = 1;
  l21.lookahead[0] = {2, 4, 100};  // L22
  AcceleratorState state;
  state.now_us = 2;
  state.memory_free_at_us = 2;
  state.compute_free_at_us = 6;
  state.onchip_used_bytes = 100;
  state.onchip_capacity_bytes = 200;
  const StepCandidate both[] = {l12, l21};
  EXPECT_EQ(policy.pick(both, state), 1u) << "where Steps overlap, L21 loads while L11 computes";
  state.steps_overlap = false;
  EXPECT_EQ(policy.pick(both, state), 0u) << "where they cannot, the earlier request runs on";
  const StepCandidate reversed[] = {l21, l12};
  EXPECT_EQ(policy.pick(reversed, state), 1u) << "the earlier request, wherever it is listed";
}

// A window of 1 judges each candidate by its own Step; a wider window sees the stall a greedy
// choice causes later. Model a: (m4 c2), (m4 c2) at 0; model b: (m3 c3), (m2 c1) at 1; every Step
// 100 B on a 200 B chip.
//   t=0  only a0: m[0,4] c[4,6].
//   t=4  a1 m[4,8] idles compute 8 - 6 = 2; b0 m[4,7] idles 1 -> b0: c[7,10] (either window).
//   t=7  window 1: b1 m[7,9] c[10,11] idles nothing, a1 m[7,11] idles 1 -> b1. At t=9 a1 finds
//        the chip full (b0 until 10, b1 until 11): m[10,14] c[14,16]. Makespan 16.
//        window 2: a1 then b1 idles 1 (b1 m[11,13] c[13,14]); b1 then a1 idles 1 + 3 (a1 waits
//        for room until 10, computes at 14 after compute freed at 11) -> a1. Makespan 14.
// On MISSION.md's example every window, the greedy one included, interleaves (14): at t=2 L12
// and L21 both idle nothing, and L21 leaves the resources closer (compute free 8 vs memory 6,
// against 10 vs 4), the tie rule of the policy.
TEST(SchedPolicies, WindowSeesTheStallAGreedyChoiceCauses) {
  Workload w;
  w.onchip_capacity_bytes = 200;
  w.models = {{"a", {{"a0", 2, 4, 100}, {"a1", 2, 4, 100}}}, {"b", {{"b0", 3, 3, 100}, {"b1", 1, 2, 100}}}};
  w.requests = {{"a", 0}, {"b", 1}};
  IdleTimePolicy greedy = idle_time(1);
  expect_schedule(simulate(w, greedy),
                  {{0, 0, 0, 0, 4, 4, 6}, {1, 0, 4, 4, 7, 7, 10}, {1, 1, 7, 7, 9, 10, 11}, {0, 1, 9, 10, 14, 14, 16}});
  for (std::size_t window = 2; window <= kMaxLookahead + 1; ++window) {
    IdleTimePolicy policy = idle_time(window);
    const SimResult r = simulate(w, policy);
    expect_schedule(
        r, {{0, 0, 0, 0, 4, 4, 6}, {1, 0, 4, 4, 7, 7, 10}, {0, 1, 7, 7, 11, 11, 13}, {1, 1, 11, 11, 13, 13, 14}});
    EXPECT_DOUBLE_EQ(r.makespan_us, 14) << "window " << window;
  }
  for (std::size_t window = 1; window <= kMaxLookahead + 1; ++window) {
    IdleTimePolicy policy = idle_time(window);
    expect_schedule(simulate(mission_example(), policy), kInterleaved);
  }
}

// The simulator shows each candidate's next Steps (up to kMaxLookahead) in model order.
TEST(SchedPolicies, SimulatorFillsTheLookahead) {
  Workload w;
  w.models.push_back({"long", {}});
  for (int s = 0; s < 10; ++s)
    w.models[0].steps.push_back({"s" + std::to_string(s), 1.0 + s, 2.0 * s, std::uint64_t(10 * s)});
  w.requests = {{"long", 0, 0}};
  FifoPolicy fifo;
  RecordingWrapper recorder(fifo);
  simulate(w, recorder);
  ASSERT_EQ(recorder.decisions.size(), 10u);
  const StepCandidate& first = recorder.decisions[0].candidates[0];
  ASSERT_EQ(first.lookahead_count, kMaxLookahead);
  for (std::size_t k = 0; k < kMaxLookahead; ++k) {
    EXPECT_DOUBLE_EQ(first.lookahead[k].compute_us, 2.0 + k);
    EXPECT_DOUBLE_EQ(first.lookahead[k].memory_us, 2.0 * (k + 1));
    EXPECT_EQ(first.lookahead[k].working_set_bytes, 10 * (k + 1));
  }
  EXPECT_EQ(recorder.decisions[5].candidates[0].lookahead_count, 4u);
  EXPECT_DOUBLE_EQ(recorder.decisions[5].candidates[0].lookahead[0].compute_us, 7);
  EXPECT_EQ(recorder.decisions[9].candidates[0].lookahead_count, 0u);
}

// Scheduling depends on costs, not on the order requests are listed in: the MISSION example with
// lstm listed (and so arriving) first, window 2.
//   t=0  L21 (now request 0): compute idle 4; L11: 2, then L21 m[2,6] idles nothing: (2,0) -> L11
//   t=2  L21: 0, then L12 (0) beats L22 (m[6,10] vs compute free 8: 2): (0,0)
//        L12: 0, then L21 waits for 6: (2,2)                                        -> L21
//   t=6  L22: m[6,10] vs compute free 8: 2;  L12: 0, then L22 0: (0,0)               -> L12
// Same Steps in the same order as when cnn is listed first.
TEST(SchedPolicies, IdleTimeDoesNotFollowListOrder) {
  Workload w = mission_example();
  std::swap(w.requests[0], w.requests[1]);
  IdleTimePolicy policy = idle_time(2);
  const SimResult r = simulate(w, policy);
  expect_schedule(r, {{1, 0, 0, 0, 2, 2, 6}, {0, 0, 2, 2, 6, 6, 8}, {1, 1, 6, 6, 8, 8, 12}, {0, 1, 8, 8, 12, 12, 14}});
}

// Equal total idle goes to the smaller memory idle, even against arrival order. Window 1.
// P (p0: m1 c9, 100 B) at 0; A (a0: m2 c1, 100 B) and B (b0: m20 c1, 0 B) at 1; chip 150 B.
//   t=0  p0 alone: m[0,1] c[1,10], holds 100 until 10.
//   t=1  A: 100 + 100 > 150: waits for 10 (memory idle 9); m[10,12] vs compute free 10:
//           compute idle 2; total 11, memory 9.
//        B: needs no room: m[1,21]; compute idle 21 − 10 = 11; total 11, memory 0.  -> B
//        B: m[1,21] c[21,22]
//   t=21 A: p0's bytes are free: m[21,23] c[23,24]. Makespan 24.
TEST(SchedPolicies, IdleTimeTieGoesToSmallestMemoryIdle) {
  Workload w;
  w.models = {{"P", {{"p0", 9, 1, 100}}}, {"A", {{"a0", 1, 2, 100}}}, {"B", {{"b0", 1, 20, 0}}}};
  w.requests = {{"P", 0, 0}, {"A", 1, 0}, {"B", 1, 0}};
  w.onchip_capacity_bytes = 150;
  IdleTimePolicy policy = idle_time(1);
  const SimResult r = simulate(w, policy);
  expect_schedule(r, {{0, 0, 0, 0, 1, 1, 10}, {2, 0, 1, 1, 21, 21, 22}, {1, 0, 21, 21, 23, 23, 24}});
  EXPECT_DOUBLE_EQ(r.makespan_us, 24);
}

// big (one Step m10 c10, request 0) and small (six Steps m1 c1, request 1) at 0. Window 1.
//   t=0  big: compute idle 10; s0: 1                     -> s0 m[0,1] c[1,2]   (big passed 1)
//   t=1  big: m[1,11] vs compute free 2: 9; s1: 0        -> s1 m[1,2] c[2,3]   (passed 2)
//   t=2  big: 9; s2: 0                                   -> s2 m[2,3] c[3,4]   (passed 3)
// Limit 3: at t=3 big has been passed over 3 times and goes: m[3,13] c[13,23]; then s3 m[13,14]
// c[23,24], s4 m[14,15] c[24,25], s5 m[15,16] c[25,26].
// Limit 4: s3 (big: 9, s3: 0) m[3,4] c[4,5] at t=3; big at t=4: m[4,14] c[14,24].
// Limit 100: never fires; big goes when small is done, at t=6.
TEST(SchedPolicies, StarvationGuardFiresAfterExactlyNPasses) {
  Workload w;
  w.models = {{"big", {{"b", 10, 10, 0}}}, {"small", {}}};
  for (int s = 0; s < 6; ++s) w.models[1].steps.push_back({"s" + std::to_string(s), 1, 1, 0});
  w.requests = {{"big", 0, 0}, {"small", 0, 0}};

  IdleTimePolicy limit3 = idle_time(1, 3);
  RecordingWrapper recorder(limit3);
  const SimResult r = simulate(w, recorder);
  expect_schedule(r, {{1, 0, 0, 0, 1, 1, 2},
                      {1, 1, 1, 1, 2, 2, 3},
                      {1, 2, 2, 2, 3, 3, 4},
                      {0, 0, 3, 3, 13, 13, 23},
                      {1, 3, 13, 13, 14, 23, 24},
                      {1, 4, 14, 14, 15, 24, 25},
                      {1, 5, 15, 15, 16, 25, 26}});
  ASSERT_GE(recorder.decisions.size(), 4u);
  EXPECT_EQ(recorder.decisions[2].candidates[0].passed_over, 2u);
  EXPECT_EQ(recorder.decisions[3].candidates[0].passed_over, 3u);

  IdleTimePolicy limit4 = idle_time(1, 4);
  EXPECT_EQ(dispatch_order(simulate(w, limit4)),
            (std::vector<Dispatch>{{1, 0}, {1, 1}, {1, 2}, {1, 3}, {0, 0}, {1, 4}, {1, 5}}));
  IdleTimePolicy never = idle_time(1, 100);
  EXPECT_EQ(dispatch_order(simulate(w, never)),
            (std::vector<Dispatch>{{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {0, 0}}));
}

// Where each model has one stream (AcceleratorState::one_stream_per_model), a younger request of
// a model is never chosen while an older one of it is a candidate, however well its Step would
// fit: its Steps would queue behind the older one's. Requests 0 and 1 of model 0 (m1 c9 and a
// Step that balances the device: m9 c1), request 2 of model 1 (m1 c9); compute busy until 10.
TEST(SchedPolicies, IdleTimeOffersOneRequestPerModelStream) {
  StepCandidate older, younger, other;
  older.request_id = 0;
  younger.request_id = 1;
  other.request_id = 2;
  other.model_index = 1;
  for (StepCandidate* c : {&older, &younger, &other}) {
    c->step_count = 1;
    c->memory_us = 1;
    c->compute_us = 9;
  }
  younger.memory_us = 9;
  younger.compute_us = 1;
  AcceleratorState state;
  state.compute_free_at_us = 10;
  for (std::size_t window : {std::size_t{1}, std::size_t{4}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    IdleTimePolicy policy = idle_time(window);
    const StepCandidate all[] = {older, younger, other};
    // Without streams the memory-heavy Step balances the compute backlog best.
    EXPECT_EQ(policy.pick(all, state), 1u);
    state.one_stream_per_model = true;
    EXPECT_NE(policy.pick(all, state), 1u) << "request 1 waits for request 0 of its model";
    const StepCandidate alone[] = {younger, older};
    EXPECT_EQ(policy.pick(alone, state), 1u) << "one model: its oldest request, wherever listed";
    state.one_stream_per_model = false;
  }
}

// Equal scores go to the candidate whose own Step scores better, then to the one waiting longest
// (passed over most), then to the earlier arrival: the guard's order. Two candidates of one Step
// each on an idle device.
//   a, b both m1 c1: each idles 1 (compute waits for its load) and leaves compute free 1 after
//   memory; with window 4 each is followed by the other, m[1,2] vs compute free 2: 0, again 1
//   apart. Equal in every part: the longer waiting, else the earlier.
//   b m2 c1: window 1: a idles 1, b 2 -> a, however long b waited. Window 4: a (1) then b
//   (m[1,3] vs compute free 2: 1) = 2; b (2) then a (m[2,3] vs 3: 0) = 2; both 1 + 1 apart:
//   equal, and a's own Step idles less -> a.
TEST(SchedPolicies, IdleTimeTieGoesToTheLongestWaiting) {
  StepCandidate a, b;
  a.request_id = 0;
  b.request_id = 1;
  for (StepCandidate* c : {&a, &b}) {
    c->step_count = 1;
    c->compute_us = 1;
    c->memory_us = 1;
  }
  const AcceleratorState idle_device;
  for (std::size_t window : {std::size_t{1}, std::size_t{4}}) {
    SCOPED_TRACE("window " + std::to_string(window));
    IdleTimePolicy policy = idle_time(window);
    a.passed_over = b.passed_over = 2;
    b.memory_us = 1;
    EXPECT_EQ(policy.pick(std::array{a, b}, idle_device), 0u) << "equal waiting: the earlier arrival";
    b.passed_over = 3;
    EXPECT_EQ(policy.pick(std::array{a, b}, idle_device), 1u) << "b has waited longer";
    EXPECT_EQ(policy.pick(std::array{b, a}, idle_device), 0u) << "wherever it is listed";
    b.memory_us = 2;
    EXPECT_EQ(policy.pick(std::array{a, b}, idle_device), 0u) << "a's own Step idles less";
  }
}

// A, B, C at 0, two Steps each (m1 c1, 0 B); window 1. Every Step idles nothing once the first
// computes, so every decision after the first is a tie and the requests take turns:
//   t=0  all idle 1 (m[0,1] vs compute free 0), none has waited  -> A0 m[0,1] c[1,2]
//   t=1  A1 (passed 0), B0 (1), C0 (1): all m[1,2] vs 2: 0       -> B0 m[1,2] c[2,3]
//   t=2  A1 (1), B1 (0), C0 (2)                                 -> C0 m[2,3] c[3,4]
//   t=3  A1 (2), B1 (1), C1 (0)                                 -> A1 m[3,4] c[4,5]
//   t=4  B1 (2), C1 (1) -> B1 m[4,5] c[5,6];  t=5  C1 m[5,6] c[6,7].
// (Ties to the earliest arrival alone would run A, B, C one after another.)
TEST(SchedPolicies, IdleTimeEqualCandidatesTakeTurns) {
  Workload w;
  const SimStep s{"s", 1, 1, 0};
  w.models = {{"A", {s, s}}, {"B", {s, s}}, {"C", {s, s}}};
  w.requests = {{"A", 0, 0}, {"B", 0, 0}, {"C", 0, 0}};
  IdleTimePolicy policy = idle_time(1);
  expect_schedule(simulate(w, policy), {{0, 0, 0, 0, 1, 1, 2},
                                        {1, 0, 1, 1, 2, 2, 3},
                                        {2, 0, 2, 2, 3, 3, 4},
                                        {0, 1, 3, 3, 4, 4, 5},
                                        {1, 1, 4, 4, 5, 5, 6},
                                        {2, 1, 5, 5, 6, 6, 7}});
}

// The guard's limit is at least one full turn of the others (n - 1 for n candidates): served in
// turn, each of n candidates is passed over n - 1 times, so a lower limit cannot be kept by any
// order. big (one Step m10 c10, request 0), S1 and S2 (three Steps m1 c1 each) at 0, 0 B;
// window 1, starvation_limit 1, so with three candidates the guard fires at 2 passes:
//   t=0  big: compute idle 10; S1_0, S2_0: 1 each, tie to the earlier     -> S1_0 m[0,1] c[1,2]
//   t=1  big (passed 1 < 2): m[1,11] vs compute free 2: 9; S1_1 (0), S2_0 (1): 0 -> S2_0 m[1,2] c[2,3]
//   t=2  big passed over 2 times: the guard                              -> big m[2,12] c[12,22]
//   t=12 two candidates, limit max(1, 1) = 1: S1_1 (passed 2)            -> S1_1 m[12,13] c[22,23]
//   t=13 S2_1 (passed 2) -> m[13,14] c[23,24];  t=14 S1_2 (passed 1) -> m[14,15] c[24,25];
//   t=15 S2_2 alone -> m[15,16] c[25,26].
TEST(SchedPolicies, StarvationGuardCountsAFullTurn) {
  Workload w;
  const SimStep s{"s", 1, 1, 0};
  w.models = {{"big", {{"b", 10, 10, 0}}}, {"S1", {s, s, s}}, {"S2", {s, s, s}}};
  w.requests = {{"big", 0, 0}, {"S1", 0, 0}, {"S2", 0, 0}};
  IdleTimePolicy limit1 = idle_time(1, 1);
  RecordingWrapper recorder(limit1);
  expect_schedule(simulate(w, recorder), {{1, 0, 0, 0, 1, 1, 2},
                                          {2, 0, 1, 1, 2, 2, 3},
                                          {0, 0, 2, 2, 12, 12, 22},
                                          {1, 1, 12, 12, 13, 22, 23},
                                          {2, 1, 13, 13, 14, 23, 24},
                                          {1, 2, 14, 14, 15, 24, 25},
                                          {2, 2, 15, 15, 16, 25, 26}});
  ASSERT_GE(recorder.decisions.size(), 3u);
  EXPECT_EQ(recorder.decisions[1].candidates[0].passed_over, 1u) << "big passed over once, not yet forced";
  EXPECT_EQ(recorder.decisions[2].candidates[0].passed_over, 2u);
}

// X (three Steps m4 c1) at 0, Y (one Step m1 c3) at 5; default idle-time (window 4).
//   t=0, t=4: only X: x0 m[0,4] c[4,5]; x1 m[4,8] c[8,9] (Y arrives at 5, while x1 loads).
//   t=8  Y joins. x2: m[8,12] vs compute free 9: 3, then y0 m[12,13] vs 13: 0 -> (3,0)
//        y0: m[8,9] vs 9: 0, then x2 m[9,13] vs compute free 12: 1          -> (1,0) -> y0
//        y0 m[8,9] c[9,12]; t=9 x2 m[9,13] c[13,14]. Makespan 14 (FIFO: x2 then y0, 16).
TEST(SchedPolicies, IdleTimeTakesAModelJoiningMidRun) {
  Workload w;
  w.models = {{"X", {{"x0", 1, 4, 0}, {"x1", 1, 4, 0}, {"x2", 1, 4, 0}}}, {"Y", {{"y0", 3, 1, 0}}}};
  w.requests = {{"X", 0, 0}, {"Y", 5, 0}};
  auto policy = make_policy("idle-time");
  const SimResult r = simulate(w, *policy);
  expect_schedule(r, {{0, 0, 0, 0, 4, 4, 5}, {0, 1, 4, 4, 8, 8, 9}, {1, 0, 8, 8, 9, 9, 12}, {0, 2, 9, 9, 13, 13, 14}});
  EXPECT_DOUBLE_EQ(r.makespan_us, 14);
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 7);
  FifoPolicy fifo;
  EXPECT_DOUBLE_EQ(simulate(w, fifo).makespan_us, 16);
}

// T (three Steps m1 c2, 100 B) and U (one Step m2 c1, 0 B) at 0; chip 150 B. Window 1.
// No blocks:
//   t=0  T0: compute idle 1; U0: 2                          -> T0 m[0,1] c[1,3], 100 B until 3
//   t=1  T1: waits for 3 (memory 2), m[3,4] vs 3: 1 -> 3; U0: m[1,3] vs 3: 0 -> U0 m[1,3] c[3,4]
//   t=3  T1 m[3,4] c[4,6];  t=4  T2 waits for T1's bytes: m[6,7] c[7,9]
// block_us 7: T0 (3 us) starts a unit; T1 (3 + 3 = 6 < 7) joins it without scoring: m[3,4]
// c[4,6]; T2 (9 >= 7) does not: at t=4 T2 waits for 6 (3) and U0 idles nothing: U0 m[4,6]
// c[6,7]; t=6 T2 m[6,7] c[7,9].
// block_us 5: T1 (6 >= 5) does not join: the order without blocks.
TEST(SchedPolicies, BlocksKeepSmallStepsOfOneRequestTogether) {
  Workload w;
  w.models = {{"T", {{"t0", 2, 1, 100}, {"t1", 2, 1, 100}, {"t2", 2, 1, 100}}}, {"U", {{"u0", 1, 2, 0}}}};
  w.requests = {{"T", 0, 0}, {"U", 0, 0}};
  w.onchip_capacity_bytes = 150;
  const std::vector<Expected> unblocked = {
      {0, 0, 0, 0, 1, 1, 3}, {1, 0, 1, 1, 3, 3, 4}, {0, 1, 3, 3, 4, 4, 6}, {0, 2, 4, 6, 7, 7, 9}};
  IdleTimePolicy none = idle_time(1);
  expect_schedule(simulate(w, none), unblocked);
  IdleTimePolicy block7 = idle_time(1, 8, 7);
  expect_schedule(simulate(w, block7),
                  {{0, 0, 0, 0, 1, 1, 3}, {0, 1, 1, 3, 4, 4, 6}, {1, 0, 4, 4, 6, 6, 7}, {0, 2, 6, 6, 7, 7, 9}});
  IdleTimePolicy block5 = idle_time(1, 8, 5);
  expect_schedule(simulate(w, block5), unblocked);
}

// A, B, C at 0 (3, 1 and 2 Steps), D (2 Steps) at 2.5; every Step m1 c1, so a scheduling point
// every microsecond. One Step per live request in turn, by request id:
//   t0 A0, t1 B0, t2 C0 (B done), t3 D joins after C: D0, t4 wrap to A1, t5 C1, t6 D1, t7 A2.
TEST(SchedPolicies, RoundRobinAndStreamsTakeOneStepPerRequestInTurn) {
  Workload w;
  const SimStep s{"s", 1, 1, 0};
  w.models = {{"A", {s, s, s}}, {"B", {s}}, {"C", {s, s}}, {"D", {s, s}}};
  w.requests = {{"A", 0, 0}, {"B", 0, 0}, {"C", 0, 0}, {"D", 2.5, 0}};
  const std::vector<Dispatch> turn = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {0, 1}, {2, 1}, {3, 1}, {0, 2}};
  for (const char* name : {"round-robin", "streams"}) {
    SCOPED_TRACE(name);
    auto policy = make_policy(name);
    EXPECT_EQ(policy->name(), name);
    const SimResult r = simulate(w, *policy);
    EXPECT_EQ(dispatch_order(r), turn);
    for (std::size_t i = 0; i < r.schedule.size(); ++i) EXPECT_DOUBLE_EQ(r.schedule[i].decided_us, double(i));
    EXPECT_EQ(dispatch_order(simulate(w, *policy)), turn);  // reused: simulate() resets the turn
  }
  EXPECT_FALSE(make_policy("streams")->bounded());
  EXPECT_TRUE(make_policy("round-robin")->bounded());
  EXPECT_TRUE(make_policy("idle-time")->bounded());
  EXPECT_TRUE(make_policy("fifo")->bounded());
}

TEST(SchedPolicies, RegistryNamesAndOptions) {
  EXPECT_EQ(policy_names(), (std::vector<std::string>{"fifo", "round-robin", "streams", "idle-time"}));
  for (const auto& name : policy_names()) EXPECT_EQ(make_policy(name)->name(), name);
  PolicyOptions o;
  o.window = 2;
  o.starvation_limit = 5;
  o.block_us = 3;
  auto policy = make_policy("idle-time", o);
  const auto& set = dynamic_cast<IdleTimePolicy&>(*policy).options();
  EXPECT_EQ(set.window, 2u);
  EXPECT_EQ(set.starvation_limit, 5u);
  EXPECT_DOUBLE_EQ(set.block_us, 3);
  const auto rejects = [](PolicyOptions bad, const std::string& text) {
    try {
      make_policy("idle-time", bad);
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  rejects({0, 4, 0}, "starvation_limit");
  rejects({8, 0, 0}, "window");
  rejects({8, kMaxLookahead + 2, 0}, "window");
  rejects({8, 4, -1}, "block_us");
  try {
    make_policy("lottery");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("idle-time"), std::string::npos) << e.what();
  }
}

// Every policy on the CPU backend: the three default models, four requests each from three
// threads, interleaved however the policy likes, give the same bits as each request run alone.
TEST(SchedPolicies, EveryPolicyOnTheExecutorMatchesIsolatedRuns) {
  auto models = workloads::default_workload(1, workloads::Size::small);
  std::vector<std::vector<Tensor>> inputs;
  std::vector<Outputs> alone;
  ExecutorOptions base;
  base.device = "cpu";
  base.profile = "none";
  base.queue_capacity = 4;
  {
    Executor ex(base);
    for (const auto& m : models) ex.load(m);
    for (std::size_t i = 0; i < models.size(); ++i) {
      inputs.push_back(random_inputs(models[i], 300 + i));
      alone.push_back(ex.submit(models[i].name, inputs[i]).get());
    }
  }
  struct Config {
    std::string policy;
    PolicyOptions options;
  };
  std::vector<Config> configs;
  for (const auto& name : policy_names()) configs.push_back({name, {}});
  configs.push_back({"idle-time", {1, 2, 1e9}});  // guard after a full turn; every Step in a block
  for (const auto& config : configs) {
    SCOPED_TRACE(config.policy + " block_us " + std::to_string(config.options.block_us));
    ExecutorOptions options = base;
    options.policy = config.policy;
    options.policy_options = config.options;
    Executor ex(options);
    EXPECT_EQ(ex.policy_name(), config.policy);
    for (const auto& m : models) ex.load(m);
    std::vector<std::thread> clients;
    std::atomic<int> mismatches{0}, checked{0};
    for (std::size_t i = 0; i < models.size(); ++i)
      clients.emplace_back([&, i] {
        std::vector<std::future<Outputs>> futures;
        for (int r = 0; r < 4; ++r) futures.push_back(ex.submit(models[i].name, inputs[i]));
        for (auto& f : futures) {
          Outputs out = f.get();
          for (std::size_t k = 0; k < out.size(); ++k) {
            ++checked;
            if (out[k].bytes() != alone[i][k].bytes() ||
                std::memcmp(out[k].data(), alone[i][k].data(), out[k].bytes()) != 0)
              ++mismatches;
          }
        }
      });
    for (auto& c : clients) c.join();
    EXPECT_EQ(mismatches.load(), 0);
    std::size_t outputs = 0;
    for (const auto& out : alone) outputs += out.size();
    EXPECT_EQ(checked.load(), 4 * static_cast<int>(outputs));
  }
}
