// The load generator's stability windows on a real CPU Executor (the small built-in LSTM): the
// stop callback sees the windows in order, each snapshot only the requests that ended inside its
// windows and nothing the final result lacks, and the load stops at the window it says. No
// figure is asserted: how many requests fit a window depends on the machine.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "bench_sweep.hpp"
#include "loom/executor.hpp"
#include "loom/workloads.hpp"

namespace {

struct CpuLstm {
  CpuLstm() : executor(options()) {
    const loom::Model model = loom::workloads::default_model("lstm", 1, loom::workloads::Size::small);
    executor.load(model, "lstm");
    targets.push_back({"lstm", loom::random_inputs(model, 1), {}});
  }
  static loom::ExecutorOptions options() {
    loom::ExecutorOptions o;
    o.device = "cpu";
    o.profile = "none";
    return o;
  }
  loom::Executor executor;
  std::vector<loom::bench::LoadTarget> targets;
};

TEST(BenchWindows, TheStopCallbackSeesEachWindowOnceWithTheRequestsEndedInsideThem) {
  CpuLstm lstm;
  loom::bench::LoadConfig config;
  config.warmup_ms = 0;
  config.window_ms = 30;
  std::vector<loom::bench::LoadResult> seen;
  config.stop_after_window = [&](const loom::bench::LoadResult& so_far) {
    seen.push_back(so_far);
    return so_far.windows == 3;
  };
  const loom::bench::LoadResult result = loom::bench::run_load(lstm.executor, lstm.targets, config, {});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(result.windows, 3u);
  std::set<std::size_t> final_indices;
  for (const auto& request : result.models.at(0).requests) final_indices.insert(request.index);
  std::size_t previous = 0;
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].windows, k + 1);
    EXPECT_DOUBLE_EQ(seen[k].measured_s, 0.03 * static_cast<double>(k + 1));
    const auto& requests = seen[k].models.at(0).requests;
    EXPECT_GE(requests.size(), previous);  // windows only grow
    previous = requests.size();
    for (const auto& request : requests) {
      EXPECT_LT(request.end_ms, 30.0 * static_cast<double>(k + 1));
      EXPECT_EQ(final_indices.count(request.index), 1u) << "a snapshot holds request " << request.index;
    }
  }
  // The final result holds every request that ended inside the windows, and the windows cut from
  // it agree with the last snapshot.
  const auto windows = loom::bench::cut_windows(result, 30);
  std::size_t in_windows = 0;
  for (const auto& w : windows) in_windows += w.requests.at(0);
  EXPECT_EQ(in_windows, seen.back().models.at(0).requests.size());
}

TEST(BenchWindows, MeasureReportsTheLastThreeWindowsAndStopsByMaxTrials) {
  CpuLstm lstm;
  loom::bench::LoadConfig config;
  config.warmup_ms = 0;
  // With max_trials = 3 the run stops after the third window whether the windows agree or not, so
  // what follows holds on any machine.
  const loom::bench::StabilityOptions stability{25, 10, 3};
  const loom::bench::MeasuredRun run = loom::bench::measure(lstm.executor, lstm.targets, config, stability, {});
  EXPECT_TRUE(run.windowed);
  ASSERT_EQ(run.windows.size(), 3u);
  EXPECT_EQ(run.reported.windows, 3u);
  EXPECT_DOUBLE_EQ(run.reported.measured_s, 0.075);
  std::size_t in_windows = 0;
  for (const auto& w : run.windows) in_windows += w.requests.at(0);
  EXPECT_EQ(run.reported.models.at(0).requests.size(), in_windows);
  for (const auto& request : run.reported.models.at(0).requests) EXPECT_LT(request.end_ms, 75.0);
  EXPECT_EQ(run.stable, loom::bench::windows_agree(run.windows, 10));
  EXPECT_THROW(loom::bench::measure(lstm.executor, lstm.targets, config, {25, 10, 2}, {}), std::invalid_argument);
}

}  // namespace
