// The CPU kernels' threads (issue 18 item 2): the chunked loop itself, and every kernel that
// splits its work giving the bits of its one-thread run at 2, 3, 4 and 7 threads, on shapes
// large enough to split. (All CPU op tests also run with every loop split: the ctest entry
// cpu_ops_split_loops, LOOM_CPU_TEST_SPLIT=3.)
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/parallel.hpp"
#include "loom/error.hpp"
#include "test_support.hpp"
#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

TEST(CpuThreads, ChunksCoverTheRangeInOrderOnAlignedBoundaries) {
  for (const std::int64_t count : {1, 7, 16, 100, 1000, 1023}) {
    for (const int chunks : {1, 2, 3, 7}) {
      for (const std::int64_t align : {1, 4, 16}) {
        std::int64_t next = 0;
        for (int c = 0; c < chunks; ++c) {
          const auto [begin, end] = backend::cpu::chunk_range(count, chunks, c, align);
          EXPECT_EQ(begin, next) << count << " " << chunks << " " << align;
          EXPECT_LE(begin, end);
          if (c + 1 < chunks) EXPECT_EQ(end % align == 0 || end == count, true);
          next = end;
        }
        EXPECT_EQ(next, count);
      }
    }
  }
}

TEST(CpuThreads, ParallelForVisitsEveryItemOnceAndRethrowsAChunksError) {
  std::vector<std::atomic<int>> seen(10000);
  backend::cpu::run_chunks(4, [&](int chunk) {
    const auto [begin, end] = backend::cpu::chunk_range(10000, 4, chunk);
    for (std::int64_t i = begin; i < end; ++i) ++seen[static_cast<std::size_t>(i)];
  });
  for (const auto& s : seen) ASSERT_EQ(s.load(), 1);
  test_support::expect_error(
      [] {
        backend::cpu::run_chunks(3, [](int chunk) {
          if (chunk == 2) throw Error(ErrorCode::invalid_argument, "chunk 2 found a bad index");
        });
      },
      ErrorCode::invalid_argument, {"chunk 2 found a bad index"});
}

bool same_bits(const OpResult& a, const OpResult& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0) return false;
  return true;
}

// Runs the op at one thread and at several, and expects the same bits from every run.
void expect_thread_independent(const std::string& op_type, const Attributes& attrs, const std::vector<OpInput>& inputs,
                               const std::vector<OpOutput>& outputs) {
  const OpResult one = run_cpu_op(op_type, attrs, inputs, outputs, 1);
  for (const std::size_t threads : {2, 3, 4, 7})
    EXPECT_TRUE(same_bits(run_cpu_op(op_type, attrs, inputs, outputs, threads), one))
        << op_type << " at " << threads << " threads differs from one thread";
}

Tensor ints(const Shape& shape, std::int64_t modulo, std::int64_t offset = 0) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<std::int64_t>((i * 7919) % static_cast<std::size_t>(modulo)) + offset;
  return Tensor::from<std::int64_t>(shape, values);
}

TEST(CpuThreads, ConvolutionsGiveTheirOneThreadBits) {
  // 3x3 padded (im2col split by channels, the GEMM by columns), stride 2 (YOLO's first layer),
  // 1x1 (no unroll), grouped.
  Attributes padded{{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}};
  expect_thread_independent(
      "Conv", padded,
      {random_tensor(Shape{1, 16, 64, 64}, 1), random_tensor(Shape{32, 16, 3, 3}, 2), random_tensor(Shape{32}, 3)},
      {{DType::f32, Shape{1, 32, 64, 64}}});
  Attributes strided{{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}, {"strides", std::vector<std::int64_t>{2, 2}}};
  expect_thread_independent("Conv", strided,
                            {random_tensor(Shape{1, 3, 128, 128}, 4), random_tensor(Shape{16, 3, 3, 3}, 5)},
                            {{DType::f32, Shape{1, 16, 64, 64}}});
  expect_thread_independent("Conv", {}, {random_tensor(Shape{1, 64, 40, 40}, 6), random_tensor(Shape{32, 64, 1, 1}, 7)},
                            {{DType::f32, Shape{1, 32, 40, 40}}});
  Attributes grouped{{"group", std::int64_t{4}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}};
  expect_thread_independent("Conv", grouped,
                            {random_tensor(Shape{2, 32, 48, 48}, 8), random_tensor(Shape{64, 8, 3, 3}, 9)},
                            {{DType::f32, Shape{2, 64, 48, 48}}});
}

TEST(CpuThreads, MatrixProductsGiveTheirOneThreadBits) {
  // A linear layer over [batch, seq, features] (one tall GEMM, split by columns), batched
  // attention products (split by batch entry), few rows (its own paths), a tall thin product
  // (split by rows), Gemm with a transposed B and a bias.
  expect_thread_independent("MatMul", {}, {random_tensor(Shape{2, 64, 384}, 11), random_tensor(Shape{384, 384}, 12)},
                            {{DType::f32, Shape{2, 64, 384}}});
  expect_thread_independent("MatMul", {},
                            {random_tensor(Shape{2, 12, 32, 64}, 13), random_tensor(Shape{2, 12, 64, 32}, 14)},
                            {{DType::f32, Shape{2, 12, 32, 32}}});
  expect_thread_independent("MatMul", {}, {random_tensor(Shape{2, 512}, 15), random_tensor(Shape{512, 1024}, 16)},
                            {{DType::f32, Shape{2, 1024}}});
  expect_thread_independent("MatMul", {}, {random_tensor(Shape{4000, 64}, 17), random_tensor(Shape{64, 8}, 18)},
                            {{DType::f32, Shape{4000, 8}}});
  expect_thread_independent(
      "Gemm", {{"transB", std::int64_t{1}}},
      {random_tensor(Shape{64, 256}, 19), random_tensor(Shape{512, 256}, 20), random_tensor(Shape{512}, 21)},
      {{DType::f32, Shape{64, 512}}});
  expect_thread_independent("Gemm", {{"transB", std::int64_t{1}}},
                            {random_tensor(Shape{3, 256}, 22), random_tensor(Shape{2048, 256}, 23)},
                            {{DType::f32, Shape{3, 2048}}});
}

TEST(CpuThreads, ElementwiseOpsGiveTheirOneThreadBits) {
  const Shape map{1, 64, 80, 80};
  for (const char* op : {"Sigmoid", "Relu", "Erf", "Tanh", "Exp"})
    expect_thread_independent(op, {}, {random_tensor(map, 31)}, {{DType::f32, map}});
  expect_thread_independent("Mul", {}, {random_tensor(map, 32), random_tensor(map, 33)}, {{DType::f32, map}});
  // A bias add, and a broadcast along middle axes (runs cut across chunk boundaries).
  expect_thread_independent("Add", {}, {random_tensor(Shape{256, 384}, 34), random_tensor(Shape{384}, 35)},
                            {{DType::f32, Shape{256, 384}}});
  expect_thread_independent("Sub", {},
                            {random_tensor(Shape{4, 1, 64, 127}, 36), random_tensor(Shape{1, 33, 1, 127}, 37)},
                            {{DType::f32, Shape{4, 33, 64, 127}}});
  expect_thread_independent("Add", {}, {ints(Shape{300, 301}, 1000), ints(Shape{301}, 50)},
                            {{DType::i64, Shape{300, 301}}});
}

TEST(CpuThreads, PoolingResizeAndNormalisationGiveTheirOneThreadBits) {
  Attributes sppf{{"kernel_shape", std::vector<std::int64_t>{5, 5}}, {"pads", std::vector<std::int64_t>{2, 2, 2, 2}}};
  expect_thread_independent("MaxPool", sppf, {random_tensor(Shape{1, 128, 20, 20}, 41)},
                            {{DType::f32, Shape{1, 128, 20, 20}}});
  Attributes halve{{"kernel_shape", std::vector<std::int64_t>{2, 2}}, {"strides", std::vector<std::int64_t>{2, 2}}};
  expect_thread_independent("AveragePool", halve, {random_tensor(Shape{1, 32, 128, 128}, 42)},
                            {{DType::f32, Shape{1, 32, 64, 64}}});
  const Tensor scales = Tensor::from<float>(Shape{4}, {1, 1, 2, 2});
  for (const char* mode : {"nearest", "linear"})
    expect_thread_independent(
        "Resize", {{"mode", std::string(mode)}},
        {random_tensor(Shape{1, 64, 40, 40}, 43), OpInput::absent(), OpInput::initializer(scales)},
        {{DType::f32, Shape{1, 64, 80, 80}}});
  expect_thread_independent(
      "LayerNormalization", {{"axis", std::int64_t{-1}}},
      {random_tensor(Shape{256, 384}, 44), random_tensor(Shape{384}, 45), random_tensor(Shape{384}, 46)},
      {{DType::f32, Shape{256, 384}}});
  expect_thread_independent("Softmax", {{"axis", std::int64_t{-1}}}, {random_tensor(Shape{2, 12, 64, 64}, 47, -4, 4)},
                            {{DType::f32, Shape{2, 12, 64, 64}}});
  expect_thread_independent("Softmax", {{"axis", std::int64_t{1}}}, {random_tensor(Shape{8, 100, 200}, 48, -4, 4)},
                            {{DType::f32, Shape{8, 100, 200}}});
}

TEST(CpuThreads, CopiesGiveTheirOneThreadBits) {
  expect_thread_independent("Transpose", {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}},
                            {random_tensor(Shape{2, 64, 40, 40}, 51)}, {{DType::f32, Shape{2, 40, 40, 64}}});
  // One outer index (a channel concat at batch 1: split copies) and several.
  expect_thread_independent("Concat", {{"axis", std::int64_t{1}}},
                            {random_tensor(Shape{1, 64, 40, 40}, 52), random_tensor(Shape{1, 32, 40, 40}, 53)},
                            {{DType::f32, Shape{1, 96, 40, 40}}});
  expect_thread_independent("Concat", {{"axis", std::int64_t{2}}},
                            {random_tensor(Shape{64, 8, 100, 16}, 54), random_tensor(Shape{64, 8, 28, 16}, 55)},
                            {{DType::f32, Shape{64, 8, 128, 16}}});
  const Tensor sizes = Tensor::from<std::int64_t>(Shape{2}, {64, 32});
  expect_thread_independent("Split", {{"axis", std::int64_t{1}}},
                            {random_tensor(Shape{1, 96, 40, 40}, 56), OpInput::initializer(sizes)},
                            {{DType::f32, Shape{1, 64, 40, 40}}, {DType::f32, Shape{1, 32, 40, 40}}});
  expect_thread_independent("Split", {{"axis", std::int64_t{2}}},
                            {random_tensor(Shape{64, 8, 96, 16}, 57), OpInput::initializer(sizes)},
                            {{DType::f32, Shape{64, 8, 64, 16}}, {DType::f32, Shape{64, 8, 32, 16}}});
  // Embedding rows (negative ids too) and a gather along an inner axis.
  expect_thread_independent("Gather", {}, {random_tensor(Shape{1000, 384}, 58), ints(Shape{512}, 2000, -1000)},
                            {{DType::f32, Shape{512, 384}}});
  expect_thread_independent("Gather", {{"axis", std::int64_t{1}}},
                            {random_tensor(Shape{64, 100, 64}, 59), ints(Shape{50}, 100)},
                            {{DType::f32, Shape{64, 50, 64}}});
}

// Threads of this process (/proc/self/task).
std::size_t process_threads() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

TEST(CpuThreads, CreatingKernelsOpensNoThreadTeamOnTheLoadingThread) {
  // Weights re-laid at creation (oneDNN's convolution and matmul, when built in) must be re-laid
  // by the loading thread alone: an OpenMP team it opened would keep its threads for the loading
  // thread's life, and with the streams' teams outnumber the cores (docs/cpu-threads.md). A fresh
  // thread has no team yet; creating the kernels must not give it one.
  std::size_t before = 0, after = 0;
  std::thread loader([&] {
    auto backend = backend::make_cpu_backend();
    backend->set_host_threading({4, false});
    const std::vector<OpInput> conv_inputs{random_tensor(Shape{1, 256, 20, 20}, 1),
                                           OpInput::initializer(random_tensor(Shape{256, 256, 3, 3}, 2)),
                                           OpInput::initializer(random_tensor(Shape{256}, 3))};
    const std::vector<OpOutput> conv_outputs{{DType::f32, Shape{1, 256, 20, 20}}};
    const Node conv = make_node("Conv", {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}, 3, conv_outputs);
    const std::vector<OpInput> matmul_inputs{random_tensor(Shape{64, 768}, 4),
                                             OpInput::initializer(random_tensor(Shape{768, 768}, 5))};
    const std::vector<OpOutput> matmul_outputs{{DType::f32, Shape{64, 768}}};
    const Node matmul = make_node("MatMul", {}, 2, matmul_outputs);
    before = process_threads();
    auto conv_kernel = backend->create_kernel(make_spec(conv, conv_inputs, conv_outputs));
    auto matmul_kernel = backend->create_kernel(make_spec(matmul, matmul_inputs, matmul_outputs));
    after = process_threads();
  });
  loader.join();
  EXPECT_LE(after, before) << "kernel creation left " << (after - before) << " more threads";
}

}  // namespace
