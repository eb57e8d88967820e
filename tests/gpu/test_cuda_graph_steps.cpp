// Steps replayed as CUDA graphs: the built-in models give the same bytes with graphs on and off,
// a second request on the same arena replays, and the executor counts the replayed Steps.
// Skipped without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/executor.hpp"
#include "loom/workloads.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/memory_pool.hpp"

using namespace loom;
namespace be = loom::backend;

namespace {

std::vector<Tensor> run_request(runtime::LoadedModel& model, void* arena, const std::vector<Tensor>& inputs,
                                std::size_t* graph_steps) {
  const auto& plan = model.plan();
  std::vector<Tensor> staged;
  for (std::size_t i = 0; i < plan.input_ids.size(); ++i) {
    const auto& value = plan.values[static_cast<std::size_t>(plan.input_ids[i])];
    staged.push_back(inputs[i].dtype() == value.dtype ? inputs[i] : inputs[i].to(value.dtype));
    model.stream().copy_to_device(model.address(plan.input_ids[i], arena), staged.back().data(), staged.back().bytes());
  }
  *graph_steps = 0;
  for (std::size_t s = 0; s < plan.steps.size(); ++s) {
    model.run_step(s, arena);
    *graph_steps += model.last_step_was_graph();
  }
  std::vector<Tensor> outputs;
  for (int id : plan.output_ids) {
    const auto& value = plan.values[static_cast<std::size_t>(id)];
    outputs.emplace_back(value.dtype, value.shape);
    model.stream().copy_to_host(outputs.back().data(), model.address(id, arena), outputs.back().bytes());
  }
  model.stream().synchronize();
  return outputs;
}

void expect_identical(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].bytes(), want[i].bytes()) << what << " output " << i;
    EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), want[i].bytes()), 0) << what << " output " << i;
  }
}

class CudaGraphSteps : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: CUDA graphs are not exercised on this machine";
  }
};

}  // namespace

TEST_P(CudaGraphSteps, SameBytesWithGraphsAndReplayOnTheSameArena) {
  const std::string name = GetParam();
  const Model model = optimize(workloads::default_model(name, 2, workloads::Size::small));
  auto device = be::make_cuda_backend(0);
  ASSERT_TRUE(device->supports_graphs());
  runtime::MemoryPool pool(*device);
  runtime::LoadedModel loaded(model, name, 0, DType::f32, *device, pool, plan::DevicePeaks{});
  ASSERT_TRUE(loaded.graphs_enabled());
  std::size_t kernel_steps = 0;
  for (const auto& step : loaded.plan().steps)
    for (std::size_t n : step.nodes)
      if (!loaded.plan().nodes[n].is_alias) {
        ++kernel_steps;
        break;
      }
  auto arena_a = pool.acquire(loaded.plan().arena_bytes);
  auto arena_b = pool.acquire(loaded.plan().arena_bytes);
  const auto inputs = random_inputs(model, 11);

  std::size_t graphs = 0;
  const auto warm = run_request(loaded, arena_a.get(), inputs, &graphs);
  EXPECT_EQ(graphs, 0u) << "the first run of every Step is plain launches";
  const auto captured = run_request(loaded, arena_a.get(), inputs, &graphs);
  EXPECT_GT(graphs, 0u) << "no Step of " << name << " could be captured";
  const std::size_t captured_steps = graphs;
  EXPECT_LE(captured_steps, kernel_steps);
  const auto replayed = run_request(loaded, arena_a.get(), inputs, &graphs);
  EXPECT_EQ(graphs, captured_steps) << "every captured Step replays";
  expect_identical(captured, warm, name + " captured vs plain");
  expect_identical(replayed, warm, name + " replayed vs plain");

  // Other inputs through the replayed graphs of arena A against plain launches on arena B.
  const auto other = random_inputs(model, 12);
  const auto replay_other = run_request(loaded, arena_a.get(), other, &graphs);
  EXPECT_EQ(graphs, captured_steps);
  loaded.set_graphs_enabled(false);
  const auto plain_other = run_request(loaded, arena_b.get(), other, &graphs);
  EXPECT_EQ(graphs, 0u);
  expect_identical(replay_other, plain_other, name + " other inputs, replay vs plain");
}

INSTANTIATE_TEST_SUITE_P(BuiltInModels, CudaGraphSteps, ::testing::Values("resnet", "bert", "lstm"));

TEST(CudaGraphExecutor, OutputsEqualWithGraphsOnAndOffAndReplaysAreCounted) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto models = workloads::default_workload(2, workloads::Size::small);
  ExecutorOptions on_opts, off_opts;
  on_opts.device = off_opts.device = "cuda";
  on_opts.cuda_graphs = true;
  off_opts.cuda_graphs = false;
  Executor on(on_opts), off(off_opts);
  for (const auto& m : models) {
    on.load(m);
    off.load(m);
  }
  // One request at a time per executor: each request finds the arena the previous one freed.
  for (const auto& m : models)
    for (int r = 0; r < 3; ++r) {
      const auto inputs = random_inputs(m, 100 + r);
      const auto want = off.submit(m.name, inputs).get();
      const auto got = on.submit(m.name, inputs).get();
      expect_identical(got, want, m.name + " request " + std::to_string(r));
    }
  on.shutdown();
  off.shutdown();
  EXPECT_EQ(off.stats().cuda_graph_steps, 0u);
  EXPECT_GT(on.stats().cuda_graph_steps, 0u) << "the executor counts LoadedModel::last_step_was_graph()";
}
