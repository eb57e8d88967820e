// MatMul, Gemm, Conv and LSTM on the CUDA backend against the CPU backend, in f32 and f16.
#include <gtest/gtest.h>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using Ints = std::vector<std::int64_t>;

using CudaLinearOps = CudaOpTest;

OpCase matmul(const Shape& a, const Shape& b, const Shape& y, std::uint32_t seed) {
  return {"MatMul", {}, {random_tensor(a, seed), random_tensor(b, seed + 1)}, {{DType::f32, y}}};
}

TEST_F(CudaLinearOps, MatMulPlainMatrices) {
  expect_agree(matmul({7, 9}, {9, 11}, {7, 11}, 1));
  expect_agree(matmul({1, 1}, {1, 1}, {1, 1}, 2));
  expect_agree(matmul({64, 128}, {128, 96}, {64, 96}, 3));
}

TEST_F(CudaLinearOps, MatMulBatchedAndBroadcast) {
  expect_agree(matmul({2, 3, 4, 5}, {5, 6}, {2, 3, 4, 6}, 10));        // B shared: folded into one GEMM
  expect_agree(matmul({3, 4, 5}, {3, 5, 6}, {3, 4, 6}, 11));           // strided batched
  expect_agree(matmul({4, 5}, {2, 5, 6}, {2, 4, 6}, 12));              // A shared across B's batch
  expect_agree(matmul({1, 4, 5}, {3, 5, 6}, {3, 4, 6}, 13));           // A's batch dim of 1 broadcast
  expect_agree(matmul({2, 1, 4, 5}, {1, 3, 5, 6}, {2, 3, 4, 6}, 14));  // both broadcast: per-entry GEMMs
  expect_agree(matmul({2, 1, 4, 5}, {3, 5, 6}, {2, 3, 4, 6}, 15));     // ranks 4 and 3
}

TEST_F(CudaLinearOps, MatMulVectors) {
  // numpy: 1-D A is [1, K], 1-D B is [K, 1]; the added dim is dropped.
  expect_agree(matmul({5}, {5, 7}, {7}, 16));
  expect_agree(matmul({6, 5}, {5}, {6}, 17));
  expect_agree(matmul({5}, {2, 3, 5, 4}, {2, 3, 4}, 18));
  expect_agree(matmul({3, 1, 6, 5}, {5}, {3, 1, 6}, 19));
  expect_agree(matmul({5}, {5}, {}, 20));
}

OpCase gemm(Attributes attrs, const Shape& a, const Shape& b, std::optional<Shape> c, const Shape& y,
            std::uint32_t seed) {
  OpCase op{"Gemm", std::move(attrs), {random_tensor(a, seed), random_tensor(b, seed + 1)}, {{DType::f32, y}}};
  if (c) op.inputs.push_back(random_tensor(*c, seed + 2));
  return op;
}

TEST_F(CudaLinearOps, GemmTransposesAndScales) {
  expect_agree(gemm({}, {5, 7}, {7, 3}, Shape{3}, {5, 3}, 20));
  expect_agree(gemm({{"transA", std::int64_t{1}}}, {7, 5}, {7, 3}, Shape{5, 3}, {5, 3}, 21));
  expect_agree(
      gemm({{"transB", std::int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}, {5, 7}, {3, 7}, Shape{5, 3}, {5, 3}, 22));
  expect_agree(gemm({{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}, {"alpha", -1.5f}}, {7, 5}, {3, 7},
                    Shape{5, 1}, {5, 3}, 23));
  expect_agree(gemm({}, {33, 64}, {64, 48}, std::nullopt, {33, 48}, 24));
}

TEST_F(CudaLinearOps, GemmBroadcastsC) {
  expect_agree(gemm({}, {4, 6}, {6, 5}, Shape{}, {4, 5}, 30));  // scalar C
  expect_agree(gemm({}, {4, 6}, {6, 5}, Shape{1}, {4, 5}, 31));
  expect_agree(gemm({}, {4, 6}, {6, 5}, Shape{1, 5}, {4, 5}, 32));
  expect_agree(gemm({}, {4, 6}, {6, 5}, Shape{4, 1}, {4, 5}, 33));
  expect_agree(gemm({{"beta", 0.0f}}, {4, 6}, {6, 5}, Shape{4, 5}, {4, 5}, 34));  // C ignored
}

OpCase conv(Attributes attrs, const Shape& x, const Shape& w, bool bias, const Shape& y, std::uint32_t seed) {
  OpCase op{
      "Conv", std::move(attrs), {random_tensor(x, seed), random_tensor(w, seed + 1, -0.5f, 0.5f)}, {{DType::f32, y}}};
  if (bias) op.inputs.push_back(random_tensor({w[0]}, seed + 2));
  return op;
}

TEST_F(CudaLinearOps, ConvPadsAndStrides) {
  expect_agree(conv({{"pads", Ints{1, 1, 1, 1}}}, {2, 3, 8, 8}, {4, 3, 3, 3}, true, {2, 4, 8, 8}, 40));
  expect_agree(conv({{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}, {"kernel_shape", Ints{3, 3}}}, {1, 3, 9, 9},
                    {5, 3, 3, 3}, false, {1, 5, 5, 5}, 41));
  expect_agree(conv({{"strides", Ints{1, 2}}}, {1, 2, 7, 9}, {3, 2, 2, 3}, true, {1, 3, 6, 4}, 42));
  expect_agree(conv({}, {1, 16, 5, 5}, {8, 16, 1, 1}, true, {1, 8, 5, 5}, 43));  // 1x1
}

TEST_F(CudaLinearOps, ConvAsymmetricPads) {
  // top 0, left 1, bottom 2, right 1: cuDNN pads symmetrically, so the kernel pads X itself.
  expect_agree(conv({{"pads", Ints{0, 1, 2, 1}}}, {1, 3, 6, 6}, {2, 3, 3, 3}, true, {1, 2, 6, 6}, 50));
  expect_agree(
      conv({{"pads", Ints{2, 0, 1, 1}}, {"strides", Ints{2, 2}}}, {2, 3, 7, 6}, {4, 3, 3, 3}, false, {2, 4, 4, 3}, 51));
}

TEST_F(CudaLinearOps, ConvGroupsAndDilations) {
  expect_agree(conv({{"group", std::int64_t{2}}}, {1, 4, 6, 6}, {6, 2, 3, 3}, true, {1, 6, 4, 4}, 60));
  expect_agree(conv({{"group", std::int64_t{8}}, {"pads", Ints{1, 1, 1, 1}}}, {2, 8, 7, 7}, {8, 1, 3, 3}, true,
                    {2, 8, 7, 7}, 61));  // depthwise
  expect_agree(conv({{"dilations", Ints{2, 2}}}, {1, 2, 9, 9}, {3, 2, 3, 3}, true, {1, 3, 5, 5}, 62));
  expect_agree(conv({{"dilations", Ints{2, 1}}, {"pads", Ints{2, 1, 2, 1}}, {"strides", Ints{2, 1}}}, {1, 4, 10, 8},
                    {4, 4, 3, 3}, true, {1, 4, 5, 8}, 63));
}

// LSTM inputs: X, W, R, B, sequence_lens, initial_h, initial_c.
struct LstmShape {
  std::int64_t steps = 6, batch = 3, input = 5, hidden = 4, directions = 1;
};

OpCase lstm(const std::string& direction, const LstmShape& s, bool bias, std::optional<Tensor> lengths,
            bool initial_state, std::vector<bool> outputs, std::uint32_t seed) {
  const std::int64_t d = s.directions;
  OpCase op{"LSTM",
            {{"hidden_size", s.hidden}, {"direction", direction}},
            {random_tensor({s.steps, s.batch, s.input}, seed),
             random_tensor({d, 4 * s.hidden, s.input}, seed + 1, -0.5f, 0.5f),
             random_tensor({d, 4 * s.hidden, s.hidden}, seed + 2, -0.5f, 0.5f)},
            {}};
  op.inputs.push_back(bias ? OpInput(random_tensor({d, 8 * s.hidden}, seed + 3, -0.5f, 0.5f)) : OpInput::absent());
  op.inputs.push_back(lengths ? OpInput(*lengths) : OpInput::absent());
  op.inputs.push_back(initial_state ? OpInput(random_tensor({d, s.batch, s.hidden}, seed + 4)) : OpInput::absent());
  op.inputs.push_back(initial_state ? OpInput(random_tensor({d, s.batch, s.hidden}, seed + 5)) : OpInput::absent());
  const Shape y{s.steps, d, s.batch, s.hidden}, state{d, s.batch, s.hidden};
  const Shape shapes[] = {y, state, state};
  for (std::size_t i = 0; i < outputs.size(); ++i)
    op.outputs.push_back(outputs[i] ? OpOutput{DType::f32, shapes[i]} : OpOutput::absent());
  return op;
}

TEST_F(CudaLinearOps, LstmDirections) {
  expect_agree(lstm("forward", {}, true, std::nullopt, false, {true, true, true}, 70));
  expect_agree(lstm("reverse", {}, true, std::nullopt, true, {true, true, true}, 71));
  expect_agree(lstm("bidirectional", {.directions = 2}, true, std::nullopt, true, {true, true, true}, 72));
  expect_agree(lstm("forward", {.steps = 3, .batch = 2, .input = 32, .hidden = 48}, false, std::nullopt, false, {true},
                    73));  // Y only, no bias
}

TEST_F(CudaLinearOps, LstmSequenceLengthsAndOmittedOutputs) {
  const Tensor lengths = Tensor::from<std::int32_t>({3}, {6, 3, 1});
  expect_agree(lstm("forward", {}, true, lengths, true, {true, true, true}, 80));
  expect_agree(lstm("reverse", {}, true, lengths, false, {true, true, true}, 81));
  expect_agree(lstm("bidirectional", {.directions = 2}, true, lengths, true, {true, true, true}, 82));
  expect_agree(lstm("bidirectional", {.directions = 2}, false, lengths, false, {false, true, false}, 83));
  expect_agree(lstm("forward", {}, true, lengths.to(DType::i64), false, {false, false, true}, 84));
}

}  // namespace
}  // namespace loom::gpu_testing
