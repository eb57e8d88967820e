// The executor on the CPU backend with kernel threads and stream shares (issue 18 item 2): any
// thread count, with or without each model's stream on a worker of its own, gives the reference
// bits; the policies see Steps overlap only with shares; a kernel failing on a stream's worker
// fails only its request, with its message, and the model serves on; control flow runs inline on
// the worker; preemption (pauses, dumps, restores) keeps its bits; shutdown finishes everything.
// Every wait is bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/random.hpp"
#include "loom/executor.hpp"
#include "loom/workloads.hpp"
#include "test_support.hpp"
#include "unit/control_flow_models.hpp"
#include "unit/test_executor_preempt_support.hpp"

using namespace loom;
using loom::test_support::same_bits;

namespace {

constexpr auto kPatience = std::chrono::minutes(2);  // a request not done by then is lost

ExecutorOptions cpu_options(std::size_t threads, bool shares) {
  ExecutorOptions o;
  o.device = "cpu";
  o.profile = "none";
  o.cpu_threads = threads;
  o.cpu_stream_shares = shares;
  return o;
}

Outputs await(std::future<Outputs>& future) {
  if (future.wait_for(kPatience) != std::future_status::ready) {
    ADD_FAILURE() << "a request did not complete";
    return {};
  }
  return future.get();
}

TEST(ExecutorCpuShares, EveryThreadCountAndModeGivesTheReferenceBits) {
  // The default workload's three models, each request alone on one synchronous thread, against
  // the same requests interleaved from three clients under every mode.
  const auto models = workloads::default_workload(1, workloads::Size::small);
  std::vector<std::vector<Tensor>> inputs;
  std::vector<Outputs> reference;
  {
    Executor ex(cpu_options(1, false));
    for (const auto& m : models) ex.load(m);
    for (std::size_t i = 0; i < models.size(); ++i) {
      inputs.push_back(random_inputs(models[i], 100 + i));
      auto future = ex.submit(models[i].name, inputs[i]);
      reference.push_back(await(future));
    }
  }
  struct Mode {
    std::size_t threads;
    bool shares;
  };
  for (const Mode mode : {Mode{3, false}, Mode{1, true}, Mode{3, true}, Mode{5, true}}) {
    SCOPED_TRACE(std::to_string(mode.threads) + " threads" + (mode.shares ? ", stream shares" : ""));
    Executor ex(cpu_options(mode.threads, mode.shares));
    for (const auto& m : models) ex.load(m);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < models.size(); ++i)
      clients.emplace_back([&, i] {
        std::vector<std::future<Outputs>> futures;
        for (int r = 0; r < 4; ++r) futures.push_back(ex.submit(models[i].name, inputs[i]));
        for (auto& f : futures)
          if (!same_bits(await(f), reference[i])) ++mismatches;
      });
    for (auto& c : clients) c.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_EQ(ex.stats().requests_completed, 12u);
  }
}

// Records what the dispatcher tells policies about the device.
class OverlapWatcher final : public SchedulingPolicy {
 public:
  std::string_view name() const noexcept override { return "overlap-watcher"; }
  std::size_t pick(std::span<const StepCandidate>, const AcceleratorState& state) override {
    (state.steps_overlap ? overlapping : serial)++;
    return 0;
  }
  std::atomic<int> overlapping{0}, serial{0};
};

TEST(ExecutorCpuShares, PoliciesSeeStepsOverlapOnlyWithShares) {
  const Model m = workloads::resnet_cnn(1, workloads::Size::small, 3);
  for (const bool shares : {false, true}) {
    auto policy = std::make_shared<OverlapWatcher>();
    ExecutorOptions options = cpu_options(2, shares);
    options.custom_policy = policy;
    Executor ex(options);
    ex.load(m, "cnn");
    auto future = ex.submit("cnn", random_inputs(m, 1));
    EXPECT_FALSE(await(future).empty());
    EXPECT_GT(shares ? policy->overlapping.load() : policy->serial.load(), 0);
    EXPECT_EQ(shares ? policy->serial.load() : policy->overlapping.load(), 0);
  }
}

// ids -> Gather from a table -> MatMul -> Relu: several Steps after the one that can fail.
Model embedding_model() {
  ModelBuilder b("embed", 5);
  auto ids = b.input("ids", DType::i64, Shape{6});
  auto table = b.random_weight("table", Shape{8, 16}, 1.0f);
  b.output(b.relu(b.linear(b.relu(b.linear(b.op("Gather", {table, ids}), 16, 32)), 32, 4)));
  return b.build();
}

Tensor ids(std::vector<std::int64_t> values) { return Tensor::from<std::int64_t>(Shape{6}, values); }

TEST(ExecutorCpuShares, AKernelFailingOnAStreamWorkerFailsOnlyItsRequest) {
  // The Gather of a request with an id past the table throws on the model's stream worker, after
  // the dispatcher's launch returned: that request fails with the kernel's message; the requests
  // around it on the same stream, and the other model's, get their reference bits.
  const Model embed = embedding_model();
  const Model cnn = workloads::resnet_cnn(1, workloads::Size::small, 3);
  const std::vector<Tensor> cnn_in = random_inputs(cnn, 7);
  std::vector<std::vector<Tensor>> good;
  for (int i = 0; i < 4; ++i) good.push_back({ids({i, 7 - i, 0, 1, -1, 3})});
  const std::vector<Tensor> bad = {ids({0, 1, 2, 99, 3, 4})};
  std::vector<Outputs> reference;
  Outputs cnn_reference;
  {
    Executor ex(cpu_options(1, false));
    ex.load(embed, "embed");
    ex.load(cnn, "cnn");
    for (const auto& in : good) {
      auto future = ex.submit("embed", in);
      reference.push_back(await(future));
    }
    auto future = ex.submit("cnn", cnn_in);
    cnn_reference = await(future);
  }
  for (const char* policy : {"fifo", "round-robin", "idle-time"}) {
    SCOPED_TRACE(policy);
    ExecutorOptions options = cpu_options(2, true);
    options.policy = policy;
    Executor ex(options);
    ex.load(embed, "embed");
    ex.load(cnn, "cnn");
    // Good and bad requests interleaved on one stream, another model beside them.
    std::vector<std::future<Outputs>> goods, bads, cnns;
    for (int round = 0; round < 3; ++round) {
      for (std::size_t i = 0; i < good.size(); ++i) {
        goods.push_back(ex.submit("embed", good[i]));
        if (i == 1) bads.push_back(ex.submit("embed", bad));
      }
      cnns.push_back(ex.submit("cnn", cnn_in));
    }
    for (std::size_t k = 0; k < goods.size(); ++k) EXPECT_TRUE(same_bits(await(goods[k]), reference[k % good.size()]));
    for (auto& f : cnns) EXPECT_TRUE(same_bits(await(f), cnn_reference));
    for (auto& f : bads) {
      ASSERT_EQ(f.wait_for(kPatience), std::future_status::ready);
      test_support::expect_error([&] { f.get(); }, ErrorCode::invalid_argument,
                                 {"Gather node", "index 99", "out of range"});
    }
    // The model serves on.
    auto after = ex.submit("embed", good[0]);
    EXPECT_TRUE(same_bits(await(after), reference[0]));
    const ExecutorStats stats = ex.stats();
    EXPECT_EQ(stats.requests_failed, bads.size());
    EXPECT_EQ(stats.requests_completed, goods.size() + cnns.size() + 1);
  }
}

TEST(ExecutorCpuShares, ControlFlowRunsItsBodiesInlineOnTheWorker) {
  // If reads its condition back on the host and runs a branch, Loop runs its body and copies on
  // the same stream: on a stream worker all of it runs in place, inside the kernel's turn.
  namespace cf = control_flow_models;
  Executor ex(cpu_options(2, true));
  ex.load(cf::if_model(), "if");
  ex.load(cf::loop_model(), "loop");
  const std::vector<float> x = {1, -2, 3, -4};
  for (const bool cond : {true, false}) {
    auto future = ex.submit("if", {cf::bool_scalar(cond), cf::f32(Shape{4}, x)});
    const Outputs out = await(future);
    ASSERT_EQ(out.size(), 2u);
    const auto y = out[0].values<float>();
    EXPECT_EQ(std::vector<float>(y.begin(), y.end()), cf::if_reference(cond, x));
  }
  Executor reference(cpu_options(1, false));
  reference.load(cf::loop_model(), "loop");
  const std::vector<Tensor> loop_in = {cf::f32(Shape{2}, {0.5f, 1.0f}), cf::f32(Shape{2}, {2.0f, -1.0f})};
  auto want = reference.submit("loop", loop_in);
  auto got = ex.submit("loop", loop_in);
  EXPECT_TRUE(same_bits(await(got), await(want)));
}

TEST(ExecutorCpuShares, PausesDumpsAndRestoresKeepTheirBits) {
  // A long request paused at a cancellation point for an urgent one, its live buffers dumped and
  // restored under an arena limit, while both models' Steps run on their streams' workers.
  ExecutorOptions options = cpu_options(2, true);
  options.cancellation_interval_us = 0;
  const Model lm = workloads::resnet_cnn(1, workloads::Size::small, 11);
  const Model um = workloads::lstm_seq(1, workloads::Size::small, 12);
  const auto long_in = random_inputs(lm, 301), urgent_in = random_inputs(um, 302);
  const Outputs long_alone = test_support::run_alone(cpu_options(1, false), lm, "long", long_in);
  const Outputs urgent_alone = test_support::run_alone(cpu_options(1, false), um, "urgent", urgent_in);
  const auto [long_arena, urgent_arena] = test_support::arena_bytes(options, lm, um);
  options.arena_memory_limit_bytes = std::max(long_arena, urgent_arena);  // either, never both
  test_support::PreemptionHarness harness(options, lm, um);
  const ModelInfo info = harness.executor().model_info("long");
  const auto points = test_support::cancellation_points(info);
  ASSERT_GE(points.size(), 3u);
  for (const std::size_t k : {points.front(), points[points.size() / 2], points.back()}) {
    SCOPED_TRACE("after Step " + std::to_string(k));
    const test_support::PairRun run = harness.run(long_in, urgent_in, k + 1);
    test_support::expect_preempted_once(run, long_alone, urgent_alone, k, info.steps[k].live_bytes_after);
  }
}

TEST(ExecutorCpuShares, StageTimingTimesTheStepsWhereTheWorkersRunThem) {
  // The timed events around each Step are reached by the stream's worker: every Step is timed,
  // and a model's stream is busy for a positive time.
  const Model m = workloads::resnet_cnn(1, workloads::Size::small, 3);
  Executor ex(cpu_options(2, true));
  ex.load(m, "cnn");
  std::vector<std::future<Outputs>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(ex.submit("cnn", random_inputs(m, 20 + i)));
  for (auto& f : futures) EXPECT_FALSE(await(f).empty());
  const ExecutorStats stats = ex.stats();
  bool found = false;
  for (const auto& stage : stats.stages) {
    if (stage.name != "stream:cnn") continue;
    found = true;
    EXPECT_GT(stage.busy_us, 0.0);
  }
  EXPECT_TRUE(found);
  ASSERT_EQ(stats.models.size(), 1u);
  EXPECT_EQ(stats.models[0].requests_completed, 3u);
}

TEST(ExecutorCpuShares, ShutdownWithStepsInFlightFinishesEveryRequest) {
  const auto models = workloads::default_workload(1, workloads::Size::small);
  std::vector<std::future<Outputs>> futures;
  {
    Executor ex(cpu_options(2, true));
    for (const auto& m : models) ex.load(m);
    for (int r = 0; r < 6; ++r)
      for (const auto& m : models) futures.push_back(ex.submit(m.name, random_inputs(m, 40 + r)));
  }  // the destructor finishes every accepted request, then stops the stages and the workers
  for (auto& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_FALSE(f.get().empty());
  }
}

}  // namespace
