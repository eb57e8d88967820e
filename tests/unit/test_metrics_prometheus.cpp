// The Prometheus text the metrics endpoint serves: the exposition writer (escaping, number format,
// cumulative histograms) against hand-written text, and prometheus_text() on hand-built
// ExecutorStats against figures worked out by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "loom/error.hpp"
#include "metrics/exposition.hpp"
#include "metrics/prometheus_text.hpp"

using namespace loom;
using namespace loom::metrics;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines_of(text))
    if (l == line) return true;
  return false;
}

// Lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& l : lines_of(text))
    if (l.rfind(prefix, 0) == 0) found.push_back(l);
  return found;
}

}  // namespace

TEST(MetricsExposition, EscapesLabelValuesAndHelpText) {
  EXPECT_EQ(escape_label_value(R"(a"b\c)"
                               "\nd"),
            R"(a\"b\\c\nd)");
  // HELP text keeps double quotes as they are.
  EXPECT_EQ(escape_help("say \"hi\"\\\n"), "say \"hi\"\\\\\\n");
}

TEST(MetricsExposition, FormatsValuesShortestAndSpecials) {
  EXPECT_EQ(format_value(0.25), "0.25");
  EXPECT_EQ(format_value(1), "1");
  EXPECT_EQ(format_value(0.0001), "0.0001");
  EXPECT_EQ(format_value(2.5), "2.5");
  EXPECT_EQ(format_value(1500), "1500");
  EXPECT_EQ(format_value(0.0000123), "0.0000123");
  EXPECT_EQ(format_value(1e-7), "1e-07");  // very small and very large: exponent form
  EXPECT_EQ(format_value(2.5e20), "2.5e+20");
  EXPECT_EQ(format_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_value(0.0 / 0.0), "NaN");
}

TEST(MetricsExposition, WritesFamiliesSamplesAndCumulativeHistograms) {
  ExpositionWriter w;
  w.family("demo_total", MetricType::counter, "A counter.\nSecond line.");
  w.sample("demo_total", {}, std::uint64_t{7});
  w.sample("demo_total", {{"model", "a\"b"}, {"status", "ok"}}, 0.5);
  w.family("demo_seconds", MetricType::histogram, "A histogram.");
  const std::vector<double> bounds = {0.1, 1};
  const std::vector<std::uint64_t> counts = {2, 0, 3};  // 2 at most 0.1 s, none in (0.1, 1], 3 above
  w.histogram("demo_seconds", {{"model", "m"}}, bounds, counts, 12.5);
  EXPECT_EQ(w.text(),
            "# HELP demo_total A counter.\\nSecond line.\n"
            "# TYPE demo_total counter\n"
            "demo_total 7\n"
            "demo_total{model=\"a\\\"b\",status=\"ok\"} 0.5\n"
            "# HELP demo_seconds A histogram.\n"
            "# TYPE demo_seconds histogram\n"
            "demo_seconds_bucket{model=\"m\",le=\"0.1\"} 2\n"
            "demo_seconds_bucket{model=\"m\",le=\"1\"} 2\n"
            "demo_seconds_bucket{model=\"m\",le=\"+Inf\"} 5\n"
            "demo_seconds_sum{model=\"m\"} 12.5\n"
            "demo_seconds_count{model=\"m\"} 5\n");
}

TEST(MetricsExposition, HistogramRefusesCountsThatDoNotMatchTheBounds) {
  ExpositionWriter w;
  const std::vector<double> bounds = {1};
  const std::vector<std::uint64_t> counts = {1};
  EXPECT_THROW(w.histogram("h", {}, bounds, counts, 0), Error);
}

namespace {

// One model, one stage of each kind, figures chosen so every derived value is exact.
ExecutorStats hand_built_stats() {
  ExecutorStats s;
  s.uptime_us = 2'000'000;  // 2 s
  s.requests_submitted = 5;
  s.requests_expired = 1;
  s.pool_bytes_reserved = 1 << 20;
  s.pool_allocations = 9;
  s.pool_reuses = 6;
  s.steps_dispatched = 12;
  s.dispatch_host_us = 1500.0004;  // seconds are written to the nanosecond: 0.0015
  s.preemptions = 3;
  s.pauses_inside_steps = 2;
  s.bytes_dumped = 2048;
  s.cuda_graph_steps = 0;
  s.thread_moves = 2;

  s.stages = {
      // 1 s busy over 2 s on 2 threads: 0.25.
      {.name = "pre-process",
       .kind = StageKind::host,
       .threads = 2,
       .items = 4,
       .busy_us = 1'000'000,
       .queued = 4,
       .queue_wait_us = 500,
       .queue_depth = 1,
       .max_queue_depth = 3},
      // 0.75 of the uptime.
      {.name = "stream:m",
       .kind = StageKind::device,
       .items = 12,
       .busy_us = 1'500'000,
       .queue_depth = 2,
       .max_queue_depth = 4},
      // 0.1 of the uptime.
      {.name = "copy:h2d", .kind = StageKind::copy, .items = 4, .busy_us = 200'000, .bytes = 4096},
  };

  ModelStats m;
  m.name = "m";
  m.requests_completed = 3;
  m.requests_failed = 1;
  m.steps = 12;
  // One request in (0.00025, 0.0005], one in (0.0025, 0.005], one above 10 s.
  m.latency.counts[2] = 1;
  m.latency.counts[5] = 1;
  m.latency.counts[kLatencyBucketsSeconds.size()] = 1;
  m.latency.count = 3;
  m.latency.sum_seconds = 20.5;
  m.time_sums.queue_us = 250'000;
  m.time_sums.h2d_us = 125'000;
  m.time_sums.compute_us = 1'000'000;
  m.time_sums.d2h_us = 62'500;
  m.time_sums.post_us = 0;
  s.models = {m};
  return s;
}

const ExecutorIdentity kIdentity{"0.1.0", "Some \"CPU\"", "cpu", "fifo"};

}  // namespace

TEST(MetricsPrometheusText, ServesTheHandWorkedFigures) {
  const std::string text = prometheus_text(hand_built_stats(), kIdentity);
  const std::vector<std::string> expected = {
      R"(loom_info{version="0.1.0",device="Some \"CPU\"",backend="cpu",policy="fifo"} 1)",
      "loom_uptime_seconds 2",
      "loom_requests_submitted_total 5",
      R"(loom_requests_total{model="m",status="completed"} 3)",
      R"(loom_requests_total{model="m",status="failed"} 1)",
      "loom_requests_expired_total 1",
      R"(loom_request_phase_seconds_total{model="m",phase="queue"} 0.25)",
      R"(loom_request_phase_seconds_total{model="m",phase="h2d"} 0.125)",
      R"(loom_request_phase_seconds_total{model="m",phase="compute"} 1)",
      R"(loom_request_phase_seconds_total{model="m",phase="d2h"} 0.0625)",
      R"(loom_request_phase_seconds_total{model="m",phase="post"} 0)",
      R"(loom_steps_total{model="m"} 12)",
      "loom_cuda_graph_steps_total 0",
      "loom_dispatch_host_seconds_total 0.0015",
      R"(loom_stage_busy_seconds_total{stage="pre-process",kind="host"} 1)",
      R"(loom_stage_busy_seconds_total{stage="stream:m",kind="device"} 1.5)",
      R"(loom_stage_busy_seconds_total{stage="copy:h2d",kind="copy"} 0.2)",
      R"(loom_stage_items_total{stage="stream:m",kind="device"} 12)",
      R"(loom_stage_queued_total{stage="pre-process",kind="host"} 4)",
      R"(loom_stage_queue_wait_seconds_total{stage="pre-process",kind="host"} 0.0005)",
      R"(loom_stage_queue_depth{stage="stream:m",kind="device"} 2)",
      R"(loom_stage_max_queue_depth{stage="pre-process",kind="host"} 3)",
      R"(loom_stage_threads{stage="pre-process",kind="host"} 2)",
      R"(loom_stage_utilization_ratio{stage="pre-process",kind="host"} 0.25)",
      R"(loom_stage_utilization_ratio{stage="stream:m",kind="device"} 0.75)",
      R"(loom_stage_utilization_ratio{stage="copy:h2d",kind="copy"} 0.1)",
      R"(loom_copy_bytes_total{stage="copy:h2d"} 4096)",
      "loom_pool_reserved_bytes 1048576",
      "loom_pool_allocations_total 9",
      "loom_pool_reuses_total 6",
      "loom_preemptions_total 3",
      "loom_pauses_inside_steps_total 2",
      "loom_dumped_bytes_total 2048",
      "loom_rebalances_total 2",
  };
  for (const auto& line : expected) EXPECT_TRUE(has_line(text, line)) << "missing: " << line << "\nin:\n" << text;
  // Threads and the input queue are host-stage figures, bytes a copy-stage one.
  for (const char* family : {"loom_stage_threads{", "loom_stage_queued_total{", "loom_stage_queue_wait_seconds_total{"})
    EXPECT_EQ(lines_starting(text, family).size(), 1u) << family;
  EXPECT_EQ(lines_starting(text, "loom_copy_bytes_total{").size(), 1u);
}

TEST(MetricsPrometheusText, LatencyHistogramIsCumulativeOverTheLibraryBuckets) {
  const std::string text = prometheus_text(hand_built_stats(), kIdentity);
  const auto buckets = lines_starting(text, "loom_request_duration_seconds_bucket{");
  ASSERT_EQ(buckets.size(), kLatencyBucketsSeconds.size() + 1);
  // le: 0.0001 0.00025 | 0.0005 0.001 0.0025 | 0.005 ... 10 | +Inf
  const std::vector<std::string> expected = {
      R"(loom_request_duration_seconds_bucket{model="m",le="0.0001"} 0)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.00025"} 0)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.0005"} 1)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.001"} 1)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.0025"} 1)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.005"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.01"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.025"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.05"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.1"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.25"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="0.5"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="1"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="2.5"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="5"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="10"} 2)",
      R"(loom_request_duration_seconds_bucket{model="m",le="+Inf"} 3)",
  };
  EXPECT_EQ(buckets, expected);
  EXPECT_TRUE(has_line(text, R"(loom_request_duration_seconds_sum{model="m"} 20.5)"));
  EXPECT_TRUE(has_line(text, R"(loom_request_duration_seconds_count{model="m"} 3)"));
}

TEST(MetricsPrometheusText, EveryFamilyDeclaredOnceAndEverySampleBelongsToOne) {
  for (const ExecutorStats& stats : {hand_built_stats(), ExecutorStats{}}) {
    const std::string text = prometheus_text(stats, kIdentity);
    std::map<std::string, std::string> types;  // family -> type
    std::set<std::string> helped;
    for (const auto& line : lines_of(text)) {
      ASSERT_FALSE(line.empty());
      if (line.rfind("# HELP ", 0) == 0) {
        const std::string name = line.substr(7, line.find(' ', 7) - 7);
        EXPECT_TRUE(helped.insert(name).second) << "HELP twice: " << name;
        continue;
      }
      if (line.rfind("# TYPE ", 0) == 0) {
        std::istringstream in(line.substr(7));
        std::string name, type;
        in >> name >> type;
        EXPECT_TRUE(helped.count(name)) << "TYPE before HELP: " << name;
        EXPECT_TRUE(types.emplace(name, type).second) << "TYPE twice: " << name;
        EXPECT_EQ(name.rfind("loom_", 0), 0u) << name;
        // Prometheus conventions: counters end in _total, nothing else does.
        EXPECT_EQ(type == "counter", name.size() > 6 && name.ends_with("_total")) << name << " " << type;
        continue;
      }
      const std::string name = line.substr(0, line.find_first_of("{ "));
      std::string family = name;
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        if (!types.count(family) && name.ends_with(suffix)) family = name.substr(0, name.size() - std::strlen(suffix));
      ASSERT_TRUE(types.count(family)) << "sample of an undeclared family: " << line;
      if (family != name) EXPECT_EQ(types[family], "histogram") << line;
    }
    EXPECT_TRUE(types.count("loom_requests_total"));  // declared even with no model loaded
  }
}
