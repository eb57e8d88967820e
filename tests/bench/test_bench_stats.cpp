// loom-bench's statistics and arrival times, against figures worked out by hand: the makespan lower
// bound (the simulator's definition), the busy fraction of the streams, nearest-rank percentiles
// and the open loop's Poisson schedule.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "bench_runner.hpp"
#include "bench_stats.hpp"

namespace {

using loom::bench::makespan_lower_bound;
using loom::bench::RequestArrival;

// A model whose Steps have these roofline (memory_us, compute_us) costs.
loom::ModelInfo model_with_steps(const std::string& name, const std::vector<std::pair<double, double>>& costs) {
  loom::ModelInfo info;
  info.name = name;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    loom::StepInfo step;
    step.name = name + "/" + std::to_string(i);
    step.memory_us = costs[i].first;
    step.compute_us = costs[i].second;
    info.steps.push_back(step);
  }
  return info;
}

loom::TraceEvent event(const std::string& category, const std::string& track, double start_us, double duration_us) {
  loom::TraceEvent e;
  e.name = category + " on " + track;
  e.category = category;
  e.track = track;
  e.start_us = start_us;
  e.duration_us = duration_us;
  return e;
}

TEST(BenchLowerBound, ChainBoundIsTheModelAloneWithLoadsOverlappingComputeFromTheFirstArrival) {
  // Alone: load 0 [0,2], compute 0 [2,5], load 1 [2,6] (overlapping compute 0), compute 1 [6,7]:
  // 7 µs, less than the 10 µs of all phases in a row.
  const std::vector<loom::ModelInfo> models = {model_with_steps("a", {{2, 3}, {4, 1}})};
  const auto bound = makespan_lower_bound(models, {{0, 100}, {0, 110}});
  EXPECT_DOUBLE_EQ(bound.chain_us, 10 + 7);      // the second request: 10 µs after the first arrival
  EXPECT_DOUBLE_EQ(bound.resource_us, 2 * 6.0);  // memory 6 per request beats compute 4
  EXPECT_DOUBLE_EQ(bound.lower_us, 17);
}

TEST(BenchLowerBound, ResourceBoundSumsEveryRequestOfEveryModel) {
  const std::vector<loom::ModelInfo> models = {model_with_steps("mem", {{5, 1}}), model_with_steps("cpu", {{1, 9}})};
  // Two requests of each: compute 1 + 1 + 9 + 9 = 20, memory 5 + 5 + 1 + 1 = 12.
  const auto bound = makespan_lower_bound(models, {{0, 0}, {0, 0}, {1, 0}, {1, 0}});
  EXPECT_DOUBLE_EQ(bound.resource_us, 20);
  EXPECT_DOUBLE_EQ(bound.chain_us, 10);  // "cpu" alone: load 1, compute 9
  EXPECT_DOUBLE_EQ(bound.lower_us, 20);
}

TEST(BenchLowerBound, MeasuredTimeReplacesTheRooflineSplitInItsProportion) {
  loom::ModelInfo info = model_with_steps("m", {{3, 1}});
  info.steps[0].measured_us = 10;  // memory 7.5, compute 2.5, as loom::sim::sim_model() splits it
  const auto bound = makespan_lower_bound({info}, {{0, 0}});
  EXPECT_DOUBLE_EQ(bound.resource_us, 7.5);
  EXPECT_DOUBLE_EQ(bound.chain_us, 10);
  EXPECT_DOUBLE_EQ(bound.lower_us, 10);
}

TEST(BenchLowerBound, NoRequestsOrNoStepsBoundNothing) {
  const auto none = makespan_lower_bound({model_with_steps("a", {{1, 1}})}, {});
  EXPECT_EQ(none.lower_us, 0);
  // A model without Steps (the executor runs those) takes no device time.
  const auto empty = makespan_lower_bound({model_with_steps("copy-only", {})}, {{0, 5}, {0, 8}});
  EXPECT_EQ(empty.resource_us, 0);
  EXPECT_DOUBLE_EQ(empty.chain_us, 3);
}

TEST(BenchLowerBound, RequestOfAnUnknownModelThrows) {
  EXPECT_THROW(makespan_lower_bound({model_with_steps("a", {{1, 1}})}, {{1, 0}}), std::invalid_argument);
}

TEST(BenchBusyFraction, UnionOfStepsOnStreamsOnlyClippedToTheWindow) {
  loom::Timeline timeline;
  timeline.add(event("step", "stream:a", 0, 10));
  timeline.add(event("step", "stream:b", 5, 10));       // overlaps a: [0, 15] busy in all
  timeline.add(event("copy", "stream:upload", 15, 5));  // copies do not count
  timeline.add(event("request", "request:a", 0, 30));   // nor request lives
  timeline.add(event("decision", "host:dispatcher", 16, 0));
  EXPECT_DOUBLE_EQ(loom::bench::step_busy_fraction(timeline, 0, 20), 15.0 / 20);
  EXPECT_DOUBLE_EQ(loom::bench::step_busy_fraction(timeline, 10, 20), 5.0 / 10);
  EXPECT_DOUBLE_EQ(loom::bench::step_busy_fraction(timeline, 2, 8), 1.0);
  EXPECT_EQ(loom::bench::step_busy_fraction(timeline, 15, 30), 0);
  EXPECT_EQ(loom::bench::step_busy_fraction(timeline, 5, 5), 0);  // empty window
  EXPECT_EQ(loom::bench::step_busy_fraction(loom::Timeline{}, 0, 10), 0);
}

TEST(BenchPercentiles, NearestRankIsAlwaysAMeasuredValue) {
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(loom::bench::nearest_rank(sorted, 50), 5);
  EXPECT_EQ(loom::bench::nearest_rank(sorted, 95), 10);  // rank ceil(9.5) = 10
  EXPECT_EQ(loom::bench::nearest_rank(sorted, 90), 9);   // exactly rank 9, not rounded up
  EXPECT_EQ(loom::bench::nearest_rank({7.5}, 99), 7.5);
  EXPECT_THROW(loom::bench::nearest_rank({}, 50), std::invalid_argument);
}

TEST(BenchArrivals, PoissonScheduleIsSeededIncreasingAndCoversCountAndDuration) {
  const auto a = loom::bench::poisson_arrivals_ms(100, 5, 0, 7);
  EXPECT_EQ(a, loom::bench::poisson_arrivals_ms(100, 5, 0, 7));  // same seed, same times
  EXPECT_NE(a, loom::bench::poisson_arrivals_ms(100, 5, 0, 8));
  ASSERT_EQ(a.size(), 5u);  // nothing beyond the count when no duration is asked for
  EXPECT_GT(a.front(), 0);
  for (std::size_t i = 1; i < a.size(); ++i) EXPECT_GT(a[i], a[i - 1]);

  const auto long_run = loom::bench::poisson_arrivals_ms(100, 1, 2.0, 7);
  ASSERT_GE(long_run.size(), 2u);
  EXPECT_GE(long_run.back(), 2000.0);
  EXPECT_LT(long_run[long_run.size() - 2], 2000.0);  // stops at the first arrival past the duration

  EXPECT_THROW(loom::bench::poisson_arrivals_ms(0, 5, 0, 1), std::invalid_argument);
  EXPECT_THROW(loom::bench::poisson_arrivals_ms(-1, 5, 0, 1), std::invalid_argument);
}

TEST(BenchArrivals, PoissonGapsAverageOneOverTheRate) {
  // 20000 gaps of mean 10 ms: the sample mean is within 3% (about 4 standard errors); the seed
  // fixes the sample, so this is exact arithmetic, not a chance.
  const auto a = loom::bench::poisson_arrivals_ms(100, 20000, 0, 1);
  EXPECT_NEAR(a.back() / static_cast<double>(a.size()), 10.0, 0.3);
}

}  // namespace
