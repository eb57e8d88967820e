// Priorities and preemption in the simulator (docs/simulator.md, "Priorities and preemption"):
// hand-computed schedules where a long request pauses at its next cancellation point for an
// urgent one, dumps and restores its live bytes when device memory is short, and resumes in
// priority order.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"
#include "loom/sim.hpp"
#include "sim_test_support.hpp"

using namespace loom;
using namespace loom::sim;
using fixtures::expect_schedule;
using fixtures::Expected;

namespace {

// "long": six Steps, each memory 2 then compute 1 (memory-bound, so the memory resource paces
// it: Step k loads [2k, 2k+2] and computes [2k+2, 2k+3] when alone; nothing runs ahead).
// live_bytes_after 100, 300, 200, 400, 100, 50: its arena is 400 bytes. Every Step counts
// max(1, 2) = 2 us for the cancellation rule.
// "short": one Step, memory 1, compute 1, 500 live bytes after it (its arena).
Workload long_and_short(double short_arrival) {
  Workload w;
  SimModel long_model{"long", {}};
  const std::uint64_t live[] = {100, 300, 200, 400, 100, 50};
  for (int k = 0; k < 6; ++k) long_model.steps.push_back({"L" + std::to_string(k), 1, 2, 0, live[k]});
  w.models = {long_model, {"short", {{"S0", 1, 1, 0, 500}}}};
  w.requests = {{"long", 0, static_cast<int>(Priority::normal)},
                {"short", short_arrival, static_cast<int>(Priority::urgent)}};
  return w;
}

// Interval 5: points after Steps 1 and 3 (2+2 = 4 <= 5 after Step 0, 4+2 = 6 > 5 after Step 1;
// again after Step 3; Step 5's boundary is the end). Interval 0: after Steps 0 to 4.
SimOptions every_other_boundary() {
  SimOptions o;
  o.cancellation_interval_us = 5;
  return o;
}
SimOptions every_boundary() {
  SimOptions o;
  o.cancellation_interval_us = 0;
  return o;
}

// "long" (request 0) running Steps first..last back to back from `start`, nothing else in its way:
// Step k is decided and loads at t = start + 2 (k - first), loads [t, t+2], computes [t+2, t+3].
std::vector<Expected> long_steps(std::size_t first, std::size_t last, double start) {
  std::vector<Expected> rows;
  for (std::size_t k = first; k <= last; ++k) {
    const double t = start + 2.0 * static_cast<double>(k - first);
    rows.push_back({0, k, t, t, t + 2, t + 2, t + 3});
  }
  return rows;
}

// The parts one after another.
std::vector<Expected> joined(std::initializer_list<std::vector<Expected>> parts) {
  std::vector<Expected> rows;
  for (const std::vector<Expected>& part : parts) rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

}  // namespace

// Short (urgent) arrives at 1, in the middle of L0's load; the next point is after L1.
//   t=0  L0 memory [0,2] compute [2,3]; its boundary is no point
//   t=2  short is live, long is between points: long alone is a candidate. L1 [2,4] [4,5]
//   t=4  long is at a point: paused, at max(4, L1's compute end 5) = 5. S0 memory [4,5],
//        compute after L1: [5,6]
//   t=5  nothing higher is live: long resumes. L2 [5,7] [7,8], L3 [7,9] [9,10],
//        L4 [9,11] [11,12], L5 [11,13] [13,14]
TEST(SimPreempt, PauseLandsAtTheNextCancellationPointNotBefore) {
  FifoPolicy fifo;
  const SimResult r = simulate(long_and_short(1), fifo, every_other_boundary());
  expect_schedule(r, joined({long_steps(0, 1, 0), {{1, 0, 4, 4, 5, 5, 6}}, long_steps(2, 5, 5)}));
  ASSERT_EQ(r.preemptions.size(), 1u);
  const Preemption& p = r.preemptions[0];
  EXPECT_EQ(p.request, 0u);
  EXPECT_EQ(p.after_step, 1u);
  EXPECT_DOUBLE_EQ(p.paused_at_us, 5);
  EXPECT_DOUBLE_EQ(p.resumed_at_us, 5);
  EXPECT_EQ(p.bytes_dumped, 0u);  // device memory unlimited: nothing to dump
  EXPECT_EQ(p.bytes_restored, 0u);
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 5);  // 6 - 1
  EXPECT_DOUBLE_EQ(r.requests[0].finish_us, 14);
}

// The same arrival with every boundary a point: the pause lands right after L0.
//   t=0  L0 [0,2] [2,3], at a point
//   t=2  long paused at max(2, 3) = 3. S0 memory [2,3], compute [3,4]
//   t=3  long resumes: L1 [3,5] [5,6], L2 [5,7] [7,8], ..., L5 [11,13] [13,14]
TEST(SimPreempt, EveryBoundaryAPointPausesAfterTheCurrentStep) {
  FifoPolicy fifo;
  const SimResult r = simulate(long_and_short(1), fifo, every_boundary());
  expect_schedule(r, joined({long_steps(0, 0, 0), {{1, 0, 2, 2, 3, 3, 4}}, long_steps(1, 5, 3)}));
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].after_step, 0u);
  EXPECT_DOUBLE_EQ(r.preemptions[0].paused_at_us, 3);
  EXPECT_DOUBLE_EQ(r.preemptions[0].resumed_at_us, 3);
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 3);  // 4 - 1
}

// Short arrives at 3, while L1 (whose boundary is a point) loads: the pause is after L1, not
// later. Same schedule as the first test from t=4 on; latency 6 - 3 = 3.
TEST(SimPreempt, ArrivalDuringTheStepBeforeAPointPausesThere) {
  FifoPolicy fifo;
  const SimResult r = simulate(long_and_short(3), fifo, every_other_boundary());
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].after_step, 1u);
  EXPECT_DOUBLE_EQ(r.preemptions[0].paused_at_us, 5);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_us, 6);
}

// Preemption off: the started long request runs to its end; short waits.
//   L0..L5 at 0, 2, ..., 10: L5 memory [10,12] compute [12,13]; S0 memory [12,13] compute [13,14].
TEST(SimPreempt, PreemptionOffNeverPauses) {
  FifoPolicy fifo;
  SimOptions off = every_boundary();
  off.preemption = false;
  const SimResult r = simulate(long_and_short(1), fifo, off);
  EXPECT_TRUE(r.preemptions.empty());
  ASSERT_EQ(r.schedule.size(), 7u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(r.schedule[i].request, 0u) << i;
  expect_schedule(r, joined({long_steps(0, 5, 0), {{1, 0, 12, 12, 13, 13, 14}}}));
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 13);
}

// Preemption off, priority still orders the requests that have not started: a normal "long"
// request arriving at 1 and an urgent "short" arriving at 2 both wait for the first long; the
// urgent one goes first although it arrived later (FIFO alone would take the second long).
TEST(SimPreempt, PreemptionOffPriorityOrdersWaitingRequests) {
  Workload w = long_and_short(2);
  w.requests.insert(w.requests.begin() + 1, SimRequest{"long", 1, 0});
  FifoPolicy fifo;
  SimOptions off;
  off.preemption = false;
  const SimResult r = simulate(w, fifo, off);
  ASSERT_EQ(r.schedule.size(), 13u);
  EXPECT_EQ(r.schedule[6].request, 2u);  // short, at t=12
  EXPECT_DOUBLE_EQ(r.schedule[6].decided_us, 12);
  EXPECT_EQ(r.schedule[7].request, 1u);  // then the second long
  EXPECT_TRUE(r.preemptions.empty());
}

// Device memory 800: long holds its 400-byte arena; short needs 500, and 400 are free, so the
// paused long request's live bytes are dumped first. Host link 100 bytes/us. Short arrives at 3.
//   t=0  L0 [0,2] [2,3];  t=2  L1 [2,4] [4,5] (a point; 300 bytes live after it)
//   t=4  long paused at 5. Dump 300 bytes: [max(4, L1 compute end 5), 5 + 3] = [5,8]; short's
//        arena is free when the dump ends: S0 memory [8,9], compute [9,10]
//   t=9  long's 400 bytes do not fit beside short's 500 until short ends at 10: time moves to 10.
//        Restore 300 bytes [10,13]; L2 decided at 10, memory [13,15], compute [15,16]
//   then L3 [15,17] [17,18], L4 [17,19] [19,20], L5 [19,21] [21,22]
TEST(SimPreempt, ShortMemoryDumpsAndRestoresTheLiveBytesAtThePoint) {
  FifoPolicy fifo;
  SimOptions o = every_other_boundary();
  o.device_memory_bytes = 800;
  o.host_link_bytes_per_us = 100;
  const SimResult r = simulate(long_and_short(3), fifo, o);
  expect_schedule(
      r, joined({long_steps(0, 1, 0), {{1, 0, 4, 8, 9, 9, 10}, {0, 2, 10, 13, 15, 15, 16}}, long_steps(3, 5, 15)}));
  ASSERT_EQ(r.preemptions.size(), 1u);
  const Preemption& p = r.preemptions[0];
  EXPECT_EQ(p.after_step, 1u);
  EXPECT_EQ(p.bytes_dumped, 300u);  // live bytes after L1
  EXPECT_EQ(p.bytes_restored, 300u);
  EXPECT_DOUBLE_EQ(p.paused_at_us, 5);
  EXPECT_DOUBLE_EQ(p.dump_start_us, 5);
  EXPECT_DOUBLE_EQ(p.dump_end_us, 8);
  EXPECT_DOUBLE_EQ(p.restore_start_us, 10);
  EXPECT_DOUBLE_EQ(p.restore_end_us, 13);
  EXPECT_DOUBLE_EQ(p.resumed_at_us, 13);
  EXPECT_DOUBLE_EQ(r.host_link_busy_us, 6);
  EXPECT_DOUBLE_EQ(r.requests[1].latency_us, 7);  // 10 - 3

  // With room for both arenas (900 bytes) nothing is dumped: the first test's schedule.
  o.device_memory_bytes = 900;
  const SimResult roomy = simulate(long_and_short(3), fifo, o);
  ASSERT_EQ(roomy.preemptions.size(), 1u);
  EXPECT_EQ(roomy.preemptions[0].bytes_dumped, 0u);
  EXPECT_DOUBLE_EQ(roomy.requests[1].finish_us, 6);
}

// Background B (long, at 0), normal N (long, at 1), urgent U (short, at 5); every boundary a point.
//   t=0  B0 [0,2] [2,3]
//   t=2  N is live and higher: B paused at 3 (after B0). N0 [2,4] [4,5]
//   t=4  N1 [4,6] [6,7]
//   t=6  U is live: N paused at 7 (after N1). U0 [6,7] [7,8]
//   t=7  normal is the highest class left: N resumes, N2 [7,9] [9,10], ..., N5 [13,15] [15,16]
//   t=15 only background is left: B resumes, B1 [15,17] [17,18], ..., B5 [23,25] [25,26]
TEST(SimPreempt, PausedRequestsResumeInPriorityOrder) {
  Workload w = long_and_short(5);
  w.requests = {{"long", 0, static_cast<int>(Priority::background)},
                {"long", 1, static_cast<int>(Priority::normal)},
                {"short", 5, static_cast<int>(Priority::urgent)}};
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo, every_boundary());
  const std::vector<std::size_t> order = {0, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0};
  ASSERT_EQ(r.schedule.size(), order.size());
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(r.schedule[i].request, order[i]) << i;
  ASSERT_EQ(r.preemptions.size(), 2u);
  EXPECT_EQ(r.preemptions[0].request, 0u);
  EXPECT_EQ(r.preemptions[0].after_step, 0u);
  EXPECT_DOUBLE_EQ(r.preemptions[0].paused_at_us, 3);
  EXPECT_DOUBLE_EQ(r.preemptions[0].resumed_at_us, 15);
  EXPECT_EQ(r.preemptions[1].request, 1u);
  EXPECT_EQ(r.preemptions[1].after_step, 1u);
  EXPECT_DOUBLE_EQ(r.preemptions[1].paused_at_us, 7);
  EXPECT_DOUBLE_EQ(r.preemptions[1].resumed_at_us, 7);
  EXPECT_DOUBLE_EQ(r.requests[2].finish_us, 8);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_us, 16);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_us, 26);
}

// Two paused normal requests: within a class the policy decides who resumes first. FIFO takes
// the earlier arrival; a newest-first policy the later one.
//   A (long, 0), B (long, 0), U (short, 3), every boundary a point, FIFO:
//   t=0 A0 [0,2] [2,3]; t=2 A1 [2,4] [4,5] (FIFO keeps to A, B waits, unstarted)
//   t=4 U live: A paused at 5. U0 [4,5] [5,6]; t=5 A resumes (A2) while B has not started.
TEST(SimPreempt, PolicyOrdersRequestsWithinAClass) {
  Workload w = long_and_short(3);
  w.requests = {{"long", 0, 0}, {"long", 0, 0}, {"short", 3, 1}};
  fixtures::NewestFirstPolicy newest;
  const SimResult r = simulate(w, newest, every_boundary());
  // Newest first: B (id 1) runs B0 [0,2] [2,3], B1 [2,4] [4,5]; at 4, U (arrived 3) is live and
  // the only urgent request; B is paused after B1 at 5 (A never started: no pause for it).
  ASSERT_GE(r.schedule.size(), 4u);
  EXPECT_EQ(r.schedule[0].request, 1u);
  EXPECT_EQ(r.schedule[1].request, 1u);
  EXPECT_EQ(r.schedule[2].request, 2u);
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].request, 1u);
  EXPECT_EQ(r.preemptions[0].after_step, 1u);
  // The urgent request is offered alone: priority decides who may run.
  for (const auto& d : newest.decisions)
    if (d.candidates.size() > 1)
      for (const auto& c : d.candidates) EXPECT_NE(c.priority, 1);
  // After U, the policy sees both normal requests again and takes the newest: B resumes.
  EXPECT_EQ(r.schedule[3].request, 1u);
  EXPECT_EQ(newest.decisions[3].candidates.size(), 2u);
}

// The timeline shows the pause, dump, restore and resume on the request's track, the dump and
// restore on the host link; the JSON has the preemption record and per-class latencies.
TEST(SimPreempt, TimelineAndJsonShowPreemptions) {
  FifoPolicy fifo;
  SimOptions o = every_other_boundary();
  o.device_memory_bytes = 800;
  o.host_link_bytes_per_us = 100;
  const Workload w = long_and_short(3);
  const SimResult r = simulate(w, fifo, o);
  std::vector<std::string> on_request, on_link;
  for (const TraceEvent& e : r.timeline.events()) {
    if (e.category != "preempt") continue;
    if (e.track == "request:long") on_request.push_back(e.name + "@" + std::to_string(static_cast<int>(e.start_us)));
    if (e.track == "sim:host-link") on_link.push_back(e.name + "@" + std::to_string(static_cast<int>(e.start_us)));
  }
  EXPECT_EQ(on_request,
            (std::vector<std::string>{"pause long#0@5", "dump long#0@5", "restore long#0@10", "resume long#0@13"}));
  EXPECT_EQ(on_link, (std::vector<std::string>{"dump long#0@5", "restore long#0@10"}));

  const auto doc = nlohmann::json::parse(result_json(r, w, "fifo"));
  ASSERT_EQ(doc.at("preemptions").size(), 1u);
  const auto& p = doc.at("preemptions")[0];
  EXPECT_EQ(p.at("request"), 0);
  EXPECT_EQ(p.at("model"), "long");
  EXPECT_EQ(p.at("after_step"), 1);
  EXPECT_EQ(p.at("bytes_dumped"), 300);
  EXPECT_EQ(p.at("bytes_restored"), 300);
  EXPECT_DOUBLE_EQ(p.at("paused_at_us").get<double>(), 5);
  EXPECT_DOUBLE_EQ(p.at("resumed_at_us").get<double>(), 13);
  EXPECT_EQ(doc.at("options").at("device_memory_bytes"), 800);
  const auto& classes = doc.at("latency_by_priority");
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].at("name"), "urgent");  // highest first
  EXPECT_DOUBLE_EQ(classes[0].at("p99_us").get<double>(), 7);
  EXPECT_EQ(classes[1].at("name"), "normal");
  EXPECT_DOUBLE_EQ(classes[1].at("p50_us").get<double>(), 22);
  const auto& models = doc.at("latency_by_model");
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[1].at("model"), "short");
  EXPECT_DOUBLE_EQ(models[1].at("alone_us").get<double>(), 2);   // memory [0,1], compute [1,2]
  EXPECT_DOUBLE_EQ(models[0].at("alone_us").get<double>(), 13);  // L5 computes [12,13]
}

// Closed loop: each request follows the previous one's end by 0.5 us.
//   r0 arrives 0: memory [0,1] compute [1,2]; r1 arrives 2.5: [2.5,3.5] [3.5,4.5]; r2 arrives 5.
TEST(SimPreempt, FollowingRequestsArriveAfterTheirPredecessorEnds) {
  Workload w;
  w.models = {{"m", {{"s", 1, 1, 0}}}};
  w.requests = {{"m", 0, 0}, {"m", 0.5, 0, 0}, {"m", 0.5, 0, 1}};
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo);
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_DOUBLE_EQ(r.requests[1].arrival_us, 2.5);
  EXPECT_DOUBLE_EQ(r.requests[2].arrival_us, 5);
  EXPECT_DOUBLE_EQ(r.requests[2].finish_us, 7);
  EXPECT_DOUBLE_EQ(r.makespan_us, 7);

  w.requests[1].follows = 1;  // itself: not an earlier request
  EXPECT_THROW(simulate(w, fifo), Error);
}

TEST(SimPreempt, BadOptionsAreErrors) {
  FifoPolicy fifo;
  SimOptions o;
  o.host_link_bytes_per_us = 0;
  EXPECT_THROW(simulate(long_and_short(1), fifo, o), Error);
  o = SimOptions{};
  o.device_memory_bytes = 450;  // short's arena is 500
  try {
    simulate(long_and_short(1), fifo, o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("requests[1].model"), std::string::npos) << e.what();
  }
  o = SimOptions{};
  o.cancellation_interval_us = -1;
  EXPECT_THROW(simulate(long_and_short(1), fifo, o), Error);
}

// Equal priorities and the default options: the schedule is what it was without priorities.
TEST(SimPreempt, EqualPrioritiesChangeNothing) {
  Workload w = long_and_short(1);
  w.requests[1].priority = 0;
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo);
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(r.schedule.back().request, 1u);  // FIFO: long to completion first
  EXPECT_DOUBLE_EQ(r.requests[1].finish_us, 14);
}
