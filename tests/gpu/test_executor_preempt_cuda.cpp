// Preemption on the CUDA backend (issue 7): a long request paused at each of its cancellation
// points for an urgent one, with and without its live buffers dumped to pinned host memory,
// gives the same bits as the same request run alone on the same executor (same kernels, same
// algorithms). Skips without a GPU.
#include <gtest/gtest.h>

#include "loom/executor.hpp"
#include "loom/workloads.hpp"
#include "unit/test_executor_preempt_support.hpp"

using namespace loom;
using namespace loom::test_support;

namespace {

ExecutorOptions cuda_options() {
  ExecutorOptions o;
  o.device = "cuda";
  o.profile = "none";
  o.cancellation_interval_us = 0;  // every boundary is a point
  return o;
}

class CudaExecutorPreempt : public ::testing::TestWithParam<bool> {  // the parameter: cuda_graphs
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: preemption on the GPU is not exercised here";
  }
};

// Every cancellation point of the long model; with `limited`, an arena limit that holds only one
// request, so each preemption also dumps and restores.
void preempt_everywhere(bool cuda_graphs, bool limited) {
  const Model lm = workloads::resnet_cnn(2, workloads::Size::small, 21);
  const Model um = workloads::lstm_seq(1, workloads::Size::small, 22);
  const auto long_in = random_inputs(lm, 1), urgent_in = random_inputs(um, 2);
  ExecutorOptions options = cuda_options();
  options.cuda_graphs = cuda_graphs;
  if (limited) {
    Executor probe(options);
    probe.load(lm, "long");
    probe.load(um, "urgent");
    options.arena_memory_limit_bytes =
        std::max(probe.model_info("long").activation_bytes, probe.model_info("urgent").activation_bytes);
  }
  PreemptionHarness harness(options, lm, um);
  // Alone, on this executor: first runs (and graph captures) out of the way, then the reference.
  for (int i = 0; i < 2; ++i) {
    harness.executor().submit("long", long_in).get();
    harness.executor().submit("urgent", urgent_in).get();
  }
  const Outputs long_alone = harness.executor().submit("long", long_in).get();
  const Outputs urgent_alone = harness.executor().submit("urgent", urgent_in).get();
  const ModelInfo info = harness.executor().model_info("long");
  const auto points = cancellation_points(info);
  ASSERT_EQ(points.size(), info.steps.size() - 1);
  for (std::size_t k : points) {
    SCOPED_TRACE("urgent request submitted after Step " + std::to_string(k));
    const PairRun run = harness.run(long_in, urgent_in, k + 1);
    expect_preempted_once(run, long_alone, urgent_alone, k, limited ? info.steps[k].live_bytes_after : 0);
  }
}

}  // namespace

TEST_P(CudaExecutorPreempt, PauseAtEveryCancellationPointIsBitIdentical) { preempt_everywhere(GetParam(), false); }

TEST_P(CudaExecutorPreempt, DumpAndRestoreAtEveryCancellationPointIsBitIdentical) {
  preempt_everywhere(GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Graphs, CudaExecutorPreempt, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "graphs" : "plain"; });
