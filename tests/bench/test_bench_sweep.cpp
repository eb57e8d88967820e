// loom-bench's perf_analyzer side against hand-made figures: sweep ranges, the stability criterion
// on hand-made windows, windows cut from request times, the CSV and the sweep table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_sweep.hpp"
#include "cli_support.hpp"

namespace {

using loom::bench::cut_windows;
using loom::bench::parse_sweep_range;
using loom::bench::WindowFigures;
using loom::bench::windows_agree;

// The UsageError message of parse_sweep_range(text); fails the test when it does not throw one.
std::string range_error(const std::string& text, bool integral) {
  try {
    parse_sweep_range(text, "--concurrency-range", integral);
  } catch (const loom::cli::UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' was accepted";
  return "";
}

// A request that ended at `end_ms` after `latency_ms`.
loom::bench::RequestTiming ended(std::size_t index, double end_ms, double latency_ms) {
  loom::bench::RequestTiming t;
  t.index = index;
  t.start_ms = end_ms - latency_ms;
  t.end_ms = end_ms;
  return t;
}

WindowFigures window(std::vector<double> qps, std::vector<double> p50) {
  WindowFigures w;
  w.qps = std::move(qps);
  w.p50_ms = std::move(p50);
  w.requests.assign(w.qps.size(), 10);
  return w;
}

TEST(BenchSweepRange, StartEndStepListTheIncludedPoints) {
  EXPECT_EQ(parse_sweep_range("1:4:1", "--concurrency-range", true), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(parse_sweep_range("1:4", "--concurrency-range", true), (std::vector<double>{1, 2, 3, 4}));  // step 1
  EXPECT_EQ(parse_sweep_range("3", "--concurrency-range", true), (std::vector<double>{3}));
  EXPECT_EQ(parse_sweep_range("2:7:2", "--concurrency-range", true), (std::vector<double>{2, 4, 6}));  // 8 > 7
  EXPECT_EQ(parse_sweep_range("100:400:150", "--request-rate-range", false), (std::vector<double>{100, 250, 400}));
  // 0.1 + 2 * 0.1 is 0.30000000000000004 > 0.3: the end is still reached.
  EXPECT_EQ(parse_sweep_range("0.1:0.3:0.1", "--request-rate-range", false).size(), 3u);
  EXPECT_EQ(parse_sweep_range("2.5:2.5", "--request-rate-range", false), (std::vector<double>{2.5}));
}

TEST(BenchSweepRange, MistakesAreUsageErrorsNamingTheFlagAndTheProblem) {
  EXPECT_NE(range_error("4:2", true).find("START 4 is above END 2"), std::string::npos);
  EXPECT_NE(range_error("1:4:0", true).find("STEP must be above 0"), std::string::npos);
  EXPECT_NE(range_error("0:2", true).find("START must be above 0"), std::string::npos);
  EXPECT_NE(range_error("1.5:3", true).find("whole numbers"), std::string::npos);  // a concurrency
  EXPECT_NE(range_error("-1:3", false).find("START must be above 0"), std::string::npos);
  EXPECT_NE(range_error("a:b", false).find("got 'a:b'"), std::string::npos);
  EXPECT_NE(range_error("1:2:3:4", true).find("START[:END[:STEP]]"), std::string::npos);
  EXPECT_NE(range_error("", true).find("--concurrency-range"), std::string::npos);
  EXPECT_NE(range_error("1:", true).find("START[:END[:STEP]]"), std::string::npos);
  EXPECT_NE(range_error("1:1000000", true).find("more than 1000 points"), std::string::npos);
}

TEST(BenchStability, WindowsAgreeWhenEveryFigureIsWithinThePercentageOfItsMean) {
  // Two models; throughput means 100 and 50, p50 means 10 and 20.
  const std::vector<WindowFigures> close = {window({95, 50}, {10, 19}), window({100, 48}, {10.5, 20}),
                                            window({105, 52}, {9.5, 21})};
  EXPECT_TRUE(windows_agree(close, 10));
  EXPECT_TRUE(windows_agree(close, 5));   // 105 is exactly 5% above 100
  EXPECT_FALSE(windows_agree(close, 4));  // ... and beyond 4%
}

TEST(BenchStability, OneModelOffOrAWindowWithoutRequestsKeepsThemApart) {
  // The second model's throughput: mean 60, 80 is 33% off.
  EXPECT_FALSE(
      windows_agree({window({100, 50}, {10, 20}), window({100, 50}, {10, 20}), window({100, 80}, {10, 20})}, 10));
  // Its p50 instead: mean 22, 26 is 18% off.
  EXPECT_FALSE(
      windows_agree({window({100, 50}, {10, 20}), window({100, 50}, {10, 20}), window({100, 50}, {10, 26})}, 10));
  // A window where a model completed nothing never agrees, even with identical zeros.
  WindowFigures empty = window({0, 50}, {0, 20});
  empty.requests[0] = 0;
  EXPECT_FALSE(windows_agree({empty, empty, empty}, 10));
  EXPECT_FALSE(windows_agree({}, 10));
}

TEST(BenchStability, WindowsHoldTheRequestsThatEndedInThem) {
  loom::bench::LoadResult result;
  result.windows = 3;  // of 100 ms
  // Ends 10, 60, 99.9 | 100, 150 | (none of model a); 250 | 300 is past the last window.
  result.models.push_back(
      {"a",
       0,
       {ended(0, 10, 4), ended(1, 60, 8), ended(2, 99.9, 6), ended(3, 100, 2), ended(4, 150, 10), ended(5, 300, 1)}});
  result.models.push_back({"b", 0, {ended(0, 250, 7)}});
  const auto windows = cut_windows(result, 100);
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_EQ(windows[0].requests, (std::vector<std::size_t>{3, 0}));
  EXPECT_EQ(windows[1].requests, (std::vector<std::size_t>{2, 0}));
  EXPECT_EQ(windows[2].requests, (std::vector<std::size_t>{0, 1}));
  EXPECT_DOUBLE_EQ(windows[0].qps[0], 30);    // 3 requests in 0.1 s
  EXPECT_DOUBLE_EQ(windows[0].p50_ms[0], 6);  // nearest-rank median of 4, 8, 6
  EXPECT_DOUBLE_EQ(windows[1].p50_ms[0], 2);  // of 2 and 10: rank 1
  EXPECT_DOUBLE_EQ(windows[2].qps[1], 10);
  EXPECT_DOUBLE_EQ(windows[2].p50_ms[1], 7);
  EXPECT_EQ(windows[2].p50_ms[0], 0);  // nothing ended: 0, and such a window never agrees
}

// A point of two models with the given requests (each with a phase split) over `seconds`.
loom::bench::SweepPoint point_of(double value, double seconds) {
  loom::bench::MeasuredRun run;
  run.reported.measured_s = seconds;
  auto timed = [](std::size_t index, double latency_ms, double queue_us, double compute_us) {
    loom::bench::RequestTiming t = ended(index, 100 + static_cast<double>(index), latency_ms);
    t.times.queue_us = queue_us;
    t.times.h2d_us = 10;
    t.times.compute_us = compute_us;
    t.times.d2h_us = 5;
    t.times.post_us = 25;
    t.times.total_us = queue_us + 10 + compute_us + 5 + 25;
    return t;
  };
  run.reported.models.push_back({"net", 0, {timed(0, 2, 100, 1800), timed(1, 4, 300, 3600)}});
  run.reported.models.push_back({"a,b", 0, {timed(0, 1, 0, 900)}});
  run.all = run.reported;
  return loom::bench::summarize_point(value, std::move(run), {99});
}

TEST(BenchSweepCsv, HeaderThenOneRowPerModelAndAnAllRowPerPointInMicroseconds) {
  const std::string csv =
      loom::bench::sweep_csv(loom::bench::SweepKind::concurrency, {point_of(1, 0.5), point_of(2, 1)});
  // net: queue mean 200, compute 2700, latency mean 3 ms against the phases' 2.94 ms: 60 us outside.
  // a,b (quoted: it holds a comma): 1 ms latency, phases 0.94 ms. all: 3 requests, means over them.
  const std::string expected =
      "Concurrency,Model,Inferences/Second,Requests,Queue,H2D,Compute,D2H,Post,Outside Executor,"
      "p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,Stable\n"
      "1,net,4.000,2,200.0,10.0,2700.0,5.0,25.0,60.0,2000.0,4000.0,4000.0,4000.0,3000.0,1\n"
      "1,\"a,b\",2.000,1,0.0,10.0,900.0,5.0,25.0,60.0,1000.0,1000.0,1000.0,1000.0,1000.0,1\n"
      "1,all,6.000,3,133.3,10.0,2100.0,5.0,25.0,60.0,2000.0,4000.0,4000.0,4000.0,2333.3,1\n"
      "2,net,2.000,2,200.0,10.0,2700.0,5.0,25.0,60.0,2000.0,4000.0,4000.0,4000.0,3000.0,1\n"
      "2,\"a,b\",1.000,1,0.0,10.0,900.0,5.0,25.0,60.0,1000.0,1000.0,1000.0,1000.0,1000.0,1\n"
      "2,all,3.000,3,133.3,10.0,2100.0,5.0,25.0,60.0,2000.0,4000.0,4000.0,4000.0,2333.3,1\n";
  EXPECT_EQ(csv, expected);
  const std::string rate = loom::bench::sweep_csv(loom::bench::SweepKind::request_rate, {point_of(150, 1)});
  EXPECT_EQ(rate.rfind("Request Rate,Model,", 0), 0u) << rate;
  EXPECT_NE(rate.find("\n150,net,"), std::string::npos) << rate;
}

TEST(BenchSweepCsv, AnUnstablePointSaysSoInItsRows) {
  loom::bench::SweepPoint point = point_of(1, 1);
  point.run.windowed = true;
  point.run.stable = false;
  const std::string csv = loom::bench::sweep_csv(loom::bench::SweepKind::concurrency, {point});
  EXPECT_NE(csv.find(",0\n1,\"a,b\""), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",1\n"), std::string::npos) << csv;
}

TEST(BenchSweepTable, OneLinePerModelAndPointAndAnAllLine) {
  const loom::bench::SweepTable table(loom::bench::SweepKind::concurrency, {"net", "a,b"}, false);
  const auto header = table.header();
  ASSERT_EQ(header.size(), 2u);
  EXPECT_EQ(header[0].rfind("concurrency", 0), 0u);
  const auto rows = table.rows(point_of(3, 1));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rfind("3            net", 0), 0u) << rows[0];
  EXPECT_NE(rows[2].find("all"), std::string::npos);
  // Columns line up with the header's.
  for (const auto& row : rows) EXPECT_EQ(row.size(), header[0].size()) << row;
}

TEST(BenchStability, AnUnstableRunSaysSoInTextAndJson) {
  loom::bench::MeasuredRun run;
  run.windowed = true;
  run.stable = false;
  run.all.models.push_back({"net", 0, {}});
  for (double qps : {100.0, 150.0, 90.0, 160.0}) {
    WindowFigures w = window({qps}, {qps / 10});
    run.windows.push_back(w);
  }
  run.reported.windows = 3;
  const loom::bench::StabilityOptions options{200, 10, 4};
  const auto lines = loom::bench::stability_lines(run, options);
  ASSERT_EQ(lines.size(), 1u + 4);
  EXPECT_EQ(lines[0].rfind("NOT STABLE after 4 window(s) of 200 ms (--max-trials=4)", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("the last 3 do not agree within 10%"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("over the last 3 windows anyway"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[4], "  window 4: net 160.00 qps p50 16.000 ms");
  const auto json = loom::bench::stability_json(run, options);
  EXPECT_EQ(json["stable"], false);
  EXPECT_EQ(json["windows_measured"], 4);
  EXPECT_EQ(json["reported_windows"], 3);
  EXPECT_EQ(json["windows"][1]["models"][0]["name"], "net");
  EXPECT_EQ(json["windows"][1]["models"][0]["qps"], 150.0);

  run.stable = true;
  EXPECT_EQ(
      loom::bench::stability_lines(run, options)[0].rfind("Stable after 4 window(s) of 200 ms: the last 3 agree", 0),
      0u);
  EXPECT_TRUE(loom::bench::stability_json(loom::bench::MeasuredRun{}, options).is_null());
  EXPECT_TRUE(loom::bench::stability_lines(loom::bench::MeasuredRun{}, options).empty());
}

}  // namespace
