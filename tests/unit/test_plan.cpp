// The planner: Step partition, per-Step work and the static memory plan, against hand counts.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "loom/workloads.hpp"
#include "plan/compiled_model.hpp"
#include "runtime/memory_pool.hpp"

using namespace loom;

namespace {
Model two_layer_mlp() {
  ModelBuilder b("mlp");
  auto x = b.input("x", DType::f32, Shape{1, 4});
  auto w1 = b.random_weight("w1", Shape{4, 8}, 1.0f);
  auto b1 = b.random_weight("b1", Shape{8}, 1.0f);
  auto w2 = b.random_weight("w2", Shape{8, 2}, 1.0f);
  auto h = b.relu(b.add(b.op("MatMul", {x, w1}), b1));
  b.output(b.op("MatMul", {h, w2}));
  return b.build();
}

// Every two arena values whose Step lifetimes overlap occupy disjoint bytes.
void expect_no_overlap(const plan::CompiledModel& cm) {
  for (std::size_t i = 0; i < cm.values.size(); ++i) {
    const auto& a = cm.values[i];
    if (a.alias_of >= 0 || a.storage != plan::Storage::arena) continue;
    EXPECT_LE(a.offset + a.bytes, cm.arena_bytes) << a.name;
    for (std::size_t j = i + 1; j < cm.values.size(); ++j) {
      const auto& b = cm.values[j];
      if (b.alias_of >= 0 || b.storage != plan::Storage::arena) continue;
      const bool live_together = a.def_step <= b.last_step && b.def_step <= a.last_step;
      const bool share_bytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && share_bytes) << a.name << " and " << b.name << " overlap";
    }
  }
}
}  // namespace

TEST(Plan, StepsWorkAndLiveBytesByHand) {
  const auto cm = plan::compile(two_layer_mlp(), DType::f32, plan::DevicePeaks{1e9, 1e9});
  ASSERT_EQ(cm.steps.size(), 2u);  // [MatMul, Add, Relu], [MatMul]
  const auto& s0 = cm.steps[0].info;
  const auto& s1 = cm.steps[1].info;
  EXPECT_EQ(s0.ops, (std::vector<std::string>{"MatMul", "Add", "Relu"}));
  EXPECT_DOUBLE_EQ(s0.flops, 2 * 8 * 4 + 8 + 8);
  EXPECT_DOUBLE_EQ(s1.flops, 2 * 2 * 8);
  EXPECT_EQ(s0.weight_bytes, (4 * 8 + 8) * 4u);
  EXPECT_EQ(s1.weight_bytes, 8 * 2 * 4u);
  EXPECT_EQ(s0.activation_bytes_read, (4 + 8 + 8) * 4u);  // x, matmul out, add out
  EXPECT_EQ(s0.bytes_written, 3 * 8 * 4u);
  EXPECT_EQ(s0.live_bytes_after, 8 * 4u);  // only the Relu output crosses the boundary
  EXPECT_EQ(s1.live_bytes_after, 2 * 4u);  // the model output
  EXPECT_EQ(s0.working_set_bytes, 160u + (4 + 8 + 8 + 8) * 4u);
  // Roofline at 1 GFLOP/s and 1 GB/s.
  EXPECT_DOUBLE_EQ(s0.compute_us, 80 / 1e9 * 1e6);
  EXPECT_DOUBLE_EQ(s0.memory_us, (160.0 + 80 + 96) / 1e9 * 1e6);
  // x, matmul, add and relu are live together in Step 0 (four 256-byte slots); the output can
  // reuse a slot freed after Step 0.
  EXPECT_EQ(cm.arena_bytes, 4 * plan::kAlignment);
  expect_no_overlap(cm);
}

TEST(Plan, ViewsAliasTheirInput) {
  ModelBuilder b("views");
  auto x = b.input("x", DType::f32, Shape{2, 6});
  auto r = b.relu(x);
  auto v = b.reshape(r, {3, 4});
  b.output(b.op("Softmax", {v}));
  const auto cm = plan::compile(b.build(), DType::f32, plan::DevicePeaks{});
  const int rid = cm.value_ids.at(r), vid = cm.value_ids.at(v);
  EXPECT_EQ(cm.values[vid].alias_of, rid);
  EXPECT_EQ(cm.values[vid].offset, cm.values[rid].offset);
  // The Relu output must stay live through the Softmax Step that reads its view.
  EXPECT_EQ(cm.values[rid].last_step, 1);
  expect_no_overlap(cm);
}

TEST(Plan, DefaultModelsHaveConsistentPlans) {
  for (const auto& model : workloads::default_workload(2, workloads::Size::small)) {
    for (DType dtype : {DType::f32, DType::f16}) {
      const auto cm = plan::compile(model, dtype, plan::DevicePeaks{});
      EXPECT_GT(cm.steps.size(), 3u) << model.name;
      expect_no_overlap(cm);
      std::uint64_t weights = 0;
      for (const auto& [name, t] : model.initializers)
        weights += plan::align_up(t.numel() * dtype_size(is_floating(t.dtype()) ? dtype : t.dtype()));
      EXPECT_EQ(cm.weight_bytes, weights) << model.name;
      double flops = 0;
      for (const auto& s : cm.steps) flops += s.info.flops;
      EXPECT_GT(flops, 0) << model.name;
    }
  }
}

TEST(Plan, ResnetFlopsMatchTheArchitecture) {
  // ResNet-18 at 224x224 is 1.82 GMAC per image: 3.6 GFLOP counting multiply and add.
  const auto cm = plan::compile(workloads::resnet_cnn(1, workloads::Size::large), DType::f32, plan::DevicePeaks{});
  double conv_flops = 0;
  for (const auto& pn : cm.nodes) {
    const auto& op = cm.model.nodes[pn.node_index].op_type;
    if (op == "Conv" || op == "Gemm") conv_flops += pn.flops;
  }
  EXPECT_NEAR(conv_flops / 2, 1.82e9, 0.03e9);
}

TEST(MemoryPool, ReusesFreeBlocksFirst) {
  auto cpu = backend::make_cpu_backend();
  runtime::MemoryPool pool(*cpu);
  void* first = nullptr;
  {
    auto a = pool.acquire(1000);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 256, 0u);
  }
  auto stats = pool.stats();
  EXPECT_EQ(stats.free_blocks, 1u);
  EXPECT_EQ(stats.used_blocks, 0u);
  auto b = pool.acquire(900);  // fits the freed 1024-byte block
  EXPECT_EQ(b.get(), first);
  auto c = pool.acquire(900);  // free set is empty: a new block
  EXPECT_NE(c.get(), first);
  stats = pool.stats();
  EXPECT_EQ(stats.allocations, 3u);
  EXPECT_EQ(stats.reuses, 1u);
  EXPECT_EQ(stats.used_blocks, 2u);
  b.reset();
  auto d = pool.acquire(100);  // the free 1024-byte block is over twice the need: not taken
  EXPECT_NE(d.get(), first);
  EXPECT_EQ(pool.stats().reuses, 1u);
  pool.trim();
  EXPECT_EQ(pool.stats().free_blocks, 0u);
}
