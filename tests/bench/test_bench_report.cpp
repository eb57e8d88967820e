// loom-bench's per-model figures against hand-worked numbers: the latency breakdown per phase
// (means that add up to the executor's total), pooling, and the JSON latency objects.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_report.hpp"

namespace {

loom::bench::RequestTiming request(double latency_ms, double queue_us, double h2d_us, double compute_us, double d2h_us,
                                   double post_us) {
  loom::bench::RequestTiming t;
  t.start_ms = 10;
  t.end_ms = 10 + latency_ms;
  t.times = {queue_us, h2d_us, compute_us, d2h_us, post_us, queue_us + h2d_us + compute_us + d2h_us + post_us, 0, 0};
  return t;
}

const std::vector<loom::bench::RequestTiming> kRequests = {
    request(3.0, 500, 20, 2000, 10, 300),  // 2.83 ms in the executor
    request(1.0, 0, 20, 800, 10, 100),     // 0.93
    request(2.0, 200, 20, 1400, 10, 200),  // 1.83
};

TEST(BenchReport, EachPhaseSummarisedAndTheirMeansAddUpToTheExecutorsTotal) {
  const auto f = loom::bench::model_figures("m", kRequests, 0.5, {90});
  EXPECT_EQ(f.name, "m");
  EXPECT_EQ(f.requests, 3u);
  EXPECT_DOUBLE_EQ(f.qps, 6);
  EXPECT_DOUBLE_EQ(f.latency.mean, 2);
  EXPECT_EQ(f.sorted_ms, (std::vector<double>{1, 2, 3}));
  ASSERT_EQ(f.phases.size(), 5u);
  const std::vector<std::string> keys = {"queue", "h2d", "compute", "d2h", "post"};
  double sum = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(f.phases[i].key, keys[i]);
    sum += f.phases[i].summary.mean;
  }
  EXPECT_EQ(f.phases[0].label, "Queue wait");
  EXPECT_DOUBLE_EQ(f.phases[0].summary.mean, 0.7 / 3);
  EXPECT_DOUBLE_EQ(f.phases[0].summary.min, 0);
  EXPECT_DOUBLE_EQ(f.phases[0].summary.median, 0.2);
  EXPECT_DOUBLE_EQ(f.phases[2].summary.max, 2.0);
  ASSERT_EQ(f.phases[2].summary.percentiles.size(), 1u);
  EXPECT_DOUBLE_EQ(f.phases[2].summary.percentiles[0].second, 2.0);  // rank ceil(2.7) = 3
  EXPECT_EQ(f.phases[2].sorted_ms, (std::vector<double>{0.8, 1.4, 2.0}));
  EXPECT_NEAR(sum, (2.83 + 0.93 + 1.83) / 3, 1e-12);
  EXPECT_NEAR(f.executor_mean_ms, sum, 1e-12);
}

TEST(BenchReport, NoRequestsGiveZerosAndNoPhases) {
  const auto f = loom::bench::model_figures("idle", {}, 1, {99});
  EXPECT_EQ(f.requests, 0u);
  EXPECT_EQ(f.qps, 0);
  EXPECT_TRUE(f.phases.empty());
  EXPECT_TRUE(loom::bench::phase_lines(f, "  ").empty());
  EXPECT_TRUE(loom::bench::latency_json(f.sorted_ms, {99}).empty());
}

TEST(BenchReport, AllModelsPoolsTheirRequestsOverTheRunsTime) {
  loom::bench::LoadResult result;
  result.measured_s = 2;
  result.models.push_back({"a", 0, {kRequests[0], kRequests[1]}});
  result.models.push_back({"b", 0, {kRequests[2]}});
  const auto all = loom::bench::all_models_figures(result, {});
  EXPECT_EQ(all.name, "all");
  EXPECT_EQ(all.requests, 3u);
  EXPECT_DOUBLE_EQ(all.qps, 1.5);
  EXPECT_EQ(all.sorted_ms, (std::vector<double>{1, 2, 3}));
}

TEST(BenchReport, PhaseLinesReadLikeTrtexecAndShowTheSum) {
  const auto lines = loom::bench::phase_lines(loom::bench::model_figures("m", kRequests, 1, {99}), "  ");
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].rfind("  Queue wait:  min = 0.000 ms, max = 0.500 ms, mean = 0.233 ms, median = 0.200 ms, "
                           "percentile(99%) = 0.500 ms",
                           0),
            0u)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("  H2D Latency: min = 0.020 ms", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("  Compute:     min = 0.800 ms", 0), 0u) << lines[2];
  EXPECT_NE(lines[5].find("queue 0.233 + h2d 0.020 + compute 1.400 + d2h 0.010 + post 0.200 = 1.863 ms"),
            std::string::npos)
      << lines[5];
  EXPECT_NE(lines[5].find("latency mean 2.000 ms (0.137 ms outside the executor)"), std::string::npos) << lines[5];
}

TEST(BenchReport, LatencyJsonHasTheFixedKeysThenTheExtraPercentilesThenMax) {
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const auto json = loom::bench::latency_json(sorted, {99.9, 90, 75});
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"min", "mean", "p50", "p90", "p95", "p99", "p99.9", "p75", "max"}));
  EXPECT_EQ(json["p75"], 8);
  EXPECT_EQ(json["mean"], 5.5);
  const auto model = loom::bench::model_json(loom::bench::model_figures("m", kRequests, 1, {}), {});
  EXPECT_EQ(model["phases_ms"]["compute"]["p50"], 1.4);
  EXPECT_EQ(model["phases_ms"]["executor_total_mean"], 1.8633);
}

TEST(BenchReport, ArraysAreWrittenOneElementPerLine) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  array.push_back({{"count", 2}});
  array.push_back({{"name", "x"}, {"values", {1, 2}}});
  EXPECT_EQ(loom::bench::one_element_per_line(array), "[\n {\"count\":2},\n {\"name\":\"x\",\"values\":[1,2]}\n]\n");
  EXPECT_EQ(loom::bench::one_element_per_line(nlohmann::ordered_json::array()), "[\n]\n");
}

}  // namespace
