// loom-bench --live: the frame drawn from two stats snapshots against one worked out by hand (bars,
// timeline columns, queue depths, throughput, percentiles), the terminal redraw and the plain-text
// fallback, and the latencies the load generator hands each tick.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_live.hpp"
#include "bench_runner.hpp"
#include "loom/executor.hpp"
#include "loom/model.hpp"

namespace {

using loom::ExecutorStats;
using loom::StageKind;
using loom::StageStats;
using loom::bench::LiveView;
using loom::bench::LoadProgress;

// Two snapshots 0.1 s apart. Over the first second: pre-process busy 0.2 s on its one thread
// (0.2), stream:m 0.5 s (0.5), copy:h2d idle. Over the next 0.1 s: pre-process 0.05 s (0.5),
// stream:m 0.1 s (1.0), copy:h2d 3 ms (0.03).
ExecutorStats snapshot_a() {
  ExecutorStats s;
  s.uptime_us = 1'000'000;
  s.stages = {
      StageStats{
          .name = "pre-process", .kind = StageKind::host, .threads = 1, .busy_us = 200'000, .max_queue_depth = 1},
      StageStats{
          .name = "stream:m", .kind = StageKind::device, .busy_us = 500'000, .queue_depth = 1, .max_queue_depth = 3},
      StageStats{.name = "copy:h2d", .kind = StageKind::copy, .busy_us = 0}};
  return s;
}
ExecutorStats snapshot_b() {
  ExecutorStats s = snapshot_a();
  s.uptime_us = 1'100'000;
  s.stages[0].busy_us = 250'000;
  s.stages[0].max_queue_depth = 2;
  s.stages[1].busy_us = 600'000;
  s.stages[1].queue_depth = 2;
  s.stages[2].busy_us = 3'000;
  s.stages[2].max_queue_depth = 1;
  return s;
}

LoadProgress progress(double fraction, std::size_t completed, double measured_s, std::vector<double> latencies) {
  LoadProgress p;
  p.warming_up = false;
  p.fraction = fraction;
  p.completed = {completed};
  p.measured_s = measured_s;
  p.new_latencies_ms = {std::move(latencies)};
  return p;
}

// After 4 requests in the first 0.5 s and 6 more by 1.5 s; latencies 1..10 ms.
LoadProgress progress_a() { return progress(0.25, 4, 0.5, {3, 1, 2, 4}); }
LoadProgress progress_b() { return progress(0.5, 10, 1.5, {10, 5, 9, 6, 8, 7}); }

}  // namespace

TEST(BenchLive, ShadesAndBars) {
  using loom::bench::bar;
  using loom::bench::shade;
  EXPECT_EQ(shade(0), " ");
  EXPECT_EQ(shade(0.001), "\u2581");  // any busy time shows
  EXPECT_EQ(shade(0.25), "\u2582");
  EXPECT_EQ(shade(0.5), "\u2584");
  EXPECT_EQ(shade(0.75), "\u2586");
  EXPECT_EQ(shade(1), "\u2588");
  EXPECT_EQ(shade(3), "\u2588");
  EXPECT_EQ(bar(0.5, 10), "[#####.....]");
  EXPECT_EQ(bar(0.04, 10), "[..........]");
  EXPECT_EQ(bar(2, 4), "[####]");
}

TEST(BenchLive, StageUseIsBusyTimeOverTheIntervalPerThread) {
  ExecutorStats before = snapshot_a();
  ExecutorStats after = snapshot_b();
  after.stages[0].threads = 2;  // the same 0.05 s over 0.1 s on two threads: 0.25
  after.stages.push_back(
      StageStats{.name = "post-process", .kind = StageKind::host, .threads = 1, .busy_us = 30'000});  // new: from zero
  const auto uses = loom::bench::stage_use(before, after);
  ASSERT_EQ(uses.size(), 4u);
  EXPECT_DOUBLE_EQ(uses[0].utilization, 0.25);
  EXPECT_DOUBLE_EQ(uses[1].utilization, 1.0);
  EXPECT_DOUBLE_EQ(uses[2].utilization, 0.03);
  EXPECT_DOUBLE_EQ(uses[3].utilization, 0.3);
  EXPECT_EQ(uses[1].stage.queue_depth, 2u);
  EXPECT_EQ(uses[1].stage.max_queue_depth, 3u);
  // No time passed: nothing is busy.
  for (const auto& use : loom::bench::stage_use(after, after)) EXPECT_EQ(use.utilization, 0);
}

TEST(BenchLive, FrameFromTwoSnapshotsMatchesTheOneWorkedOutByHand) {
  LiveView view({"m"}, true);
  view.begin_run("fifo");
  view.update(snapshot_a(), progress_a());
  view.update(snapshot_b(), progress_b());
  // Timeline columns, oldest first: pre-process 0.2 then 0.5 (▂▄), stream:m 0.5 then 1.0 (▄█),
  // copy:h2d 0 then 0.03 (blank, ▁). Bars: the last interval. Throughput over the last second:
  // (10 - 4) / (1.5 - 0.5) = 6.0; overall 10 / 1.5 = 6.7. p50 = 5th of 10, p99 = 10th.
  const std::vector<std::string> expected = {
      "fifo  measuring 1.5 s  [##########..........]  50%  uptime 1.1 s",
      "stage          kind   busy (0.1 s)      last 1 s      queue    max threads",
      "pre-process    host   [#####.....]  50% |        \u2582\u2584|      0      2       1",
      "stream:m       device [##########] 100% |        \u2584\u2588|      2      3       -",
      "copy:h2d       copy   [..........]   3% |         \u2581|      0      1       -",
      "model              done  req/s 1 s  req/s all    p50 ms    p99 ms",
      "m                    10        6.0        6.7     5.000    10.000",
  };
  EXPECT_EQ(view.frame_lines(), expected);
}

TEST(BenchLive, TerminalFramesRedrawInPlace) {
  LiveView view({"m"}, true);
  view.begin_run("fifo");
  const std::string first = view.update(snapshot_a(), progress_a());
  EXPECT_EQ(first.find("\033[7A"), std::string::npos);  // nothing on screen to go back over
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n'), 7);
  const std::string second = view.update(snapshot_b(), progress_b());
  EXPECT_EQ(second.rfind("\r\033[7A", 0), 0u) << "up over the 7 lines drawn";
  std::string lines;
  for (const auto& line : view.frame_lines()) lines += line + "\033[K\n";
  EXPECT_EQ(second, "\r\033[7A" + lines + "\033[J");
}

TEST(BenchLive, WarmUpIsLabelledAndShowsNoFiguresYet) {
  LiveView view({"m"}, true);
  view.begin_run("fifo");
  LoadProgress warming;
  warming.warming_up = true;
  warming.fraction = 0.5;
  warming.completed = {0};
  view.update(snapshot_a(), warming);
  const auto lines = view.frame_lines();
  EXPECT_EQ(lines.front(), "fifo  warming up  [##########..........]  50%  uptime 1.0 s");
  EXPECT_EQ(lines.back(), "m                     -          -          -         -         -");
}

TEST(BenchLive, RatesWaitForOneRefreshOfMeasurement) {
  LiveView view({"m"}, true);
  view.begin_run("fifo");
  view.update(snapshot_a(), progress(0.01, 1, 0.004, {3}));  // one request 4 ms into measuring
  EXPECT_EQ(view.frame_lines().back(), "m                     1          -          -     3.000     3.000");
}

TEST(BenchLive, ANewMeasurementStartsItsFiguresAfresh) {
  LiveView view({"m"}, true);
  view.begin_run("fifo");
  view.update(snapshot_a(), progress_a());
  view.update(snapshot_b(), progress(0.1, 2, 0.2, {7, 9}));  // a sweep's next point, 0.2 s in
  EXPECT_EQ(view.frame_lines().back(), "m                     2       10.0       10.0     7.000     9.000");
}

TEST(BenchLive, PlainFallbackWritesOneLinePerSecondWithoutEscapes) {
  LiveView view({"m"}, false);
  view.begin_run("fifo");
  const std::string first = view.update(snapshot_a(), progress_a());
  EXPECT_EQ(view.update(snapshot_b(), progress_b()), "");  // 0.1 s after the last line
  ExecutorStats later = snapshot_b();
  later.uptime_us = 2'000'000;  // 1 s after the first line
  const std::string second = view.update(later, progress(0.75, 12, 2.4, {11, 12}));
  for (const std::string& line : {first, second}) {
    EXPECT_EQ(line.find('\033'), std::string::npos) << line;
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  }
  // Busy over the last second: the mean of the timeline's columns; pre-process: (0.2 + 0.5 + 0) / 3.
  EXPECT_NE(second.find("fifo measuring 2.4 s 75% | busy over the last second: pre-process 23%"), std::string::npos)
      << second;
  // Over the last second: from the newest sample at least 1 s old (0.5 s, 4 done) to 2.4 s, 12
  // done: 8 / 1.9 = 4.2 requests/s. p50 of 1..12 ms: the 6th; p99: the 12th.
  EXPECT_NE(second.find("m 12 done, 4.2 req/s, p50 6.000 ms, p99 12.000 ms"), std::string::npos) << second;
}

TEST(BenchLive, FinishUsesEveryMeasuredLatencyOfTheResult) {
  LiveView view({"m"}, false);
  view.begin_run("fifo");
  view.update(snapshot_a(), progress_a());
  loom::bench::LoadResult result;
  result.measured_s = 2;
  result.models.push_back({"m", 0, {}});
  for (int i = 0; i < 4; ++i) result.models[0].requests.push_back({static_cast<std::size_t>(i), 0, 20.0 + i});
  const std::string line = view.finish(result);
  // The stages as the last tick saw them: pre-process 0.2 busy over snapshot A's first second.
  EXPECT_NE(line.find("fifo done 2.0 s 100% | busy over the last second: pre-process 20%,"), std::string::npos) << line;
  EXPECT_NE(line.find("m 4 done"), std::string::npos) << line;
  EXPECT_NE(line.find("p50 21.000 ms, p99 23.000 ms"), std::string::npos) << line;
}

TEST(BenchLive, EachTickHandsOnlyNewMeasuredLatencies) {
  loom::ExecutorOptions options;
  options.device = "cpu";
  loom::Executor executor(options);
  loom::ModelBuilder mb("gemm");
  auto x = mb.input("x", loom::DType::f32, loom::Shape{2, 3});
  auto w = mb.constant("w", loom::Tensor::from<float>(loom::Shape{3, 2}, {1, 2, 3, 4, 5, 6}));
  mb.output(mb.op("Gemm", {x, w}));
  executor.load(mb.build(), "gemm");
  loom::bench::LoadConfig config;
  config.min_requests = 40;
  config.warmup_ms = 0;
  config.min_duration_s = 0.05;
  config.tick_interval_ms = 1;
  std::vector<double> ticked;
  double last_measured_s = 0;
  const auto result = loom::bench::run_load(
      executor, {{"gemm", {loom::Tensor::from<float>(loom::Shape{2, 3}, {1, 2, 3, 4, 5, 6})}, {}}}, config,
      [&](const LoadProgress& p) {
        ASSERT_EQ(p.new_latencies_ms.size(), 1u);
        ticked.insert(ticked.end(), p.new_latencies_ms[0].begin(), p.new_latencies_ms[0].end());
        EXPECT_GE(p.measured_s, last_measured_s);
        last_measured_s = p.measured_s;
        EXPECT_LE(ticked.size(), p.completed[0]);
      });
  // Every latency a tick handed on is one of the result's, none twice.
  std::vector<double> all;
  for (const auto& t : result.models[0].requests) all.push_back(t.latency_ms());
  std::sort(all.begin(), all.end());
  std::sort(ticked.begin(), ticked.end());
  EXPECT_TRUE(std::includes(all.begin(), all.end(), ticked.begin(), ticked.end()));
}
