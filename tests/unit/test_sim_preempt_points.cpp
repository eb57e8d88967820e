// Choosing cancellation points (sched::choose_cancellation_points, the rule the planner and the
// simulator share) and the simulator's use of it, against hand-walked expectations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "loom/error.hpp"
#include "loom/sim.hpp"
#include "sched/cancellation.hpp"

using namespace loom;

namespace {

std::vector<bool> points(const std::vector<double>& step_us, const std::vector<std::uint64_t>& live, double interval,
                         std::uint64_t max_live = 0) {
  return sched::choose_cancellation_points(step_us, live, {interval, max_live});
}

}  // namespace

// Five Steps of 1 us, interval 2.5 us. Walking the boundaries with the time since the last point:
//   after 0: 1, and the next Step would make 2 <= 2.5: not yet
//   after 1: 2, next would make 3 > 2.5: point (reset)
//   after 2: 1 -> 2: not yet;  after 3: 2 -> 3 > 2.5: point;  after 4: the end, never a point.
TEST(SimPreemptPoints, OnePointBeforeEachIntervalRunsOut) {
  EXPECT_EQ(points({1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}, 2.5), (std::vector<bool>{false, true, false, true, false}));
}

TEST(SimPreemptPoints, IntervalZeroMakesEveryQualifyingBoundaryAPoint) {
  EXPECT_EQ(points({1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}, 0), (std::vector<bool>{true, true, true, true, false}));
  // With a bound: only the boundaries whose live bytes are at most 20.
  EXPECT_EQ(points({1, 1, 1, 1, 1}, {10, 50, 10, 50, 0}, 0, 20), (std::vector<bool>{true, false, true, false, false}));
}

// Live bytes {10, 50, 10, 50, 0}, bound 20, interval 2.5: boundary 1 would be the point but holds
// 50 bytes; the first qualifying boundary after it (2, 3 us since the start) is taken instead;
// boundary 3 is over the bound too, and the last is never a point.
TEST(SimPreemptPoints, LiveBytesBoundMovesThePointToTheNextQualifyingBoundary) {
  EXPECT_EQ(points({1, 1, 1, 1, 1}, {10, 50, 10, 50, 0}, 2.5, 20),
            (std::vector<bool>{false, false, true, false, false}));
  // Nothing qualifies: no points at all.
  EXPECT_EQ(points({1, 1, 1}, {30, 30, 30}, 0, 20), (std::vector<bool>{false, false, false}));
}

// A long first Step overruns the interval by itself: its boundary is a point; after it 0.5 +
// 0.5 = 1 does not exceed 1, so no second point.
TEST(SimPreemptPoints, LongStepGetsAPointRightAfterIt) {
  EXPECT_EQ(points({5, 0.5, 0.5}, {0, 0, 0}, 1), (std::vector<bool>{true, false, false}));
  // A single Step: its end is the request's end, never a point.
  EXPECT_EQ(points({5}, {0}, 0), (std::vector<bool>{false}));
  EXPECT_TRUE(points({}, {}, 1).empty());
}

TEST(SimPreemptPoints, BadInputsAreErrors) {
  EXPECT_THROW(points({1, 1}, {0}, 1), Error);
  EXPECT_THROW(points({1}, {0}, -1), Error);
  EXPECT_THROW(points({1}, {0}, std::nan("")), Error);
  EXPECT_THROW(points({-1, 1}, {0, 0}, 1), Error);
  EXPECT_THROW(points({std::nan(""), 1}, {0, 0}, 1), Error);
}

// The simulator counts a Step as max(compute_us, memory_us): durations 3, 3, 2, 1 with interval 4
//   after 0: 3 -> 6 > 4: point;  after 1: 3 -> 5 > 4: point;  after 2: 2 -> 3: not yet.
// (Counting compute + memory, 4, 4, 4, 2, would also put a point after Step 2.)
TEST(SimPreemptPoints, SimulatorCountsTheLargerPhaseOfEachStep) {
  sim::SimModel model{"m", {{"a", 3, 1, 0}, {"b", 1, 3, 0}, {"c", 2, 2, 0}, {"d", 1, 1, 0}}};
  sim::SimOptions options;
  options.cancellation_interval_us = 4;
  EXPECT_EQ(sim::cancellation_points(model, options), (std::vector<bool>{true, true, false, false}));
  // The bound applies to live_bytes_after.
  model.steps[0].live_bytes_after = 1000;
  options.cancellation_max_live_bytes = 999;
  EXPECT_EQ(sim::cancellation_points(model, options), (std::vector<bool>{false, true, false, false}));
}

// Points given on the Steps replace the rule; unset counts as false; the last boundary is never one.
TEST(SimPreemptPoints, GivenPointsReplaceTheRule) {
  sim::SimModel model{"m", {{"a", 1, 1, 0}, {"b", 1, 1, 0}, {"c", 1, 1, 0}, {"d", 1, 1, 0}}};
  model.steps[1].cancellation_point = true;
  model.steps[2].cancellation_point = false;
  model.steps[3].cancellation_point = true;
  sim::SimOptions options;
  options.cancellation_interval_us = 0;  // the rule would make 0, 1 and 2 points
  EXPECT_EQ(sim::cancellation_points(model, options), (std::vector<bool>{false, true, false, false}));
}

TEST(SimPreemptPoints, ArenaIsTheLargestLiveBytes) {
  sim::SimModel model{"m", {{"a", 1, 1, 0, 300}, {"b", 1, 1, 0, 700}, {"c", 1, 1, 0, 20}}};
  EXPECT_EQ(sim::arena_bytes(model), 700u);
}
