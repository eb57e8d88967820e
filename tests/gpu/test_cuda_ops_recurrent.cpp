// GRU, and the LSTM extras the ONNX conformance cases use (peepholes, layout=1, activations,
// clip, input_forget), on the CUDA backend against the CPU backend, in f32 and f16.
#include <gtest/gtest.h>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using CudaRecurrentOps = CudaOpTest;

struct RnnShape {
  std::int64_t steps = 5, batch = 3, input = 4, hidden = 6, directions = 1;
  bool batch_major = false;
};

// GRU inputs: X, W, R, B, sequence_lens, initial_h.
OpCase gru(const std::string& direction, const RnnShape& s, Attributes extra, bool bias, std::optional<Tensor> lengths,
           bool initial_h, std::vector<bool> outputs, std::uint32_t seed) {
  const std::int64_t d = s.directions;
  Attributes attrs{{"hidden_size", s.hidden}, {"direction", direction}, {"layout", std::int64_t{s.batch_major}}};
  for (const auto& [name, value] : extra.all()) attrs.set(name, value);
  OpCase op{"GRU",
            attrs,
            {random_tensor(s.batch_major ? Shape{s.batch, s.steps, s.input} : Shape{s.steps, s.batch, s.input}, seed),
             random_tensor({d, 3 * s.hidden, s.input}, seed + 1, -0.5f, 0.5f),
             random_tensor({d, 3 * s.hidden, s.hidden}, seed + 2, -0.5f, 0.5f)},
            {}};
  const Shape state = s.batch_major ? Shape{s.batch, d, s.hidden} : Shape{d, s.batch, s.hidden};
  op.inputs.push_back(bias ? OpInput(random_tensor({d, 6 * s.hidden}, seed + 3, -0.5f, 0.5f)) : OpInput::absent());
  op.inputs.push_back(lengths ? OpInput(*lengths) : OpInput::absent());
  op.inputs.push_back(initial_h ? OpInput(random_tensor(state, seed + 4)) : OpInput::absent());
  const Shape y = s.batch_major ? Shape{s.batch, s.steps, d, s.hidden} : Shape{s.steps, d, s.batch, s.hidden};
  const Shape shapes[] = {y, state};
  for (std::size_t i = 0; i < outputs.size(); ++i)
    op.outputs.push_back(outputs[i] ? OpOutput{DType::f32, shapes[i]} : OpOutput::absent());
  return op;
}

TEST_F(CudaRecurrentOps, GruDirectionsAndLinearBeforeReset) {
  std::uint32_t seed = 10;
  for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
    const RnnShape s{.directions = direction == "bidirectional" ? 2 : 1};
    for (const std::int64_t lbr : {0, 1}) {
      expect_agree(gru(direction, s, {{"linear_before_reset", lbr}}, true, std::nullopt, true, {true, true}, seed++));
      expect_agree(gru(direction, s, {{"linear_before_reset", lbr}}, false, std::nullopt, false, {true, true}, seed++));
    }
  }
}

TEST_F(CudaRecurrentOps, GruLayoutLengthsAndOutputs) {
  const Tensor lengths = Tensor::from<std::int32_t>({3}, {5, 2, 0});
  const RnnShape bm{.directions = 2, .batch_major = true};
  expect_agree(gru("bidirectional", bm, {}, true, std::nullopt, true, {true, true}, 40));
  expect_agree(
      gru("bidirectional", bm, {{"linear_before_reset", std::int64_t{1}}}, true, lengths, true, {true, true}, 41));
  expect_agree(gru("reverse", {.batch_major = true}, {}, true, lengths.to(DType::i64), false, {false, true}, 42));
  expect_agree(gru("forward", {}, {}, true, lengths, true, {true}, 43));
  expect_agree(gru("forward", {.steps = 4, .batch = 2, .input = 32, .hidden = 48}, {}, true, std::nullopt, false,
                   {false, true}, 44));
}

TEST_F(CudaRecurrentOps, GruActivationsAndClip) {
  expect_agree(gru("forward", {}, {{"activations", std::vector<std::string>{"Relu", "Tanh"}}}, true, std::nullopt, true,
                   {true, true}, 50));
  expect_agree(gru("bidirectional", {.directions = 2},
                   {{"activations", std::vector<std::string>{"Sigmoid", "Relu", "HardSigmoid", "Tanh"}},
                    {"activation_alpha", std::vector<float>{0.3f}},
                    {"activation_beta", std::vector<float>{0.4f}}},
                   true, std::nullopt, true, {true, true}, 51));
  expect_agree(gru("forward", {}, {{"clip", 0.5f}, {"linear_before_reset", std::int64_t{1}}}, true, std::nullopt, true,
                   {true, true}, 52));
}

// LSTM inputs: X, W, R, B, sequence_lens, initial_h, initial_c, P.
OpCase lstm(const std::string& direction, const RnnShape& s, Attributes extra, bool peepholes,
            std::optional<Tensor> lengths, std::uint32_t seed) {
  const std::int64_t d = s.directions;
  Attributes attrs{{"hidden_size", s.hidden}, {"direction", direction}, {"layout", std::int64_t{s.batch_major}}};
  for (const auto& [name, value] : extra.all()) attrs.set(name, value);
  const Shape state = s.batch_major ? Shape{s.batch, d, s.hidden} : Shape{d, s.batch, s.hidden};
  OpCase op{"LSTM",
            attrs,
            {random_tensor(s.batch_major ? Shape{s.batch, s.steps, s.input} : Shape{s.steps, s.batch, s.input}, seed),
             random_tensor({d, 4 * s.hidden, s.input}, seed + 1, -0.5f, 0.5f),
             random_tensor({d, 4 * s.hidden, s.hidden}, seed + 2, -0.5f, 0.5f),
             random_tensor({d, 8 * s.hidden}, seed + 3, -0.5f, 0.5f)},
            {}};
  op.inputs.push_back(lengths ? OpInput(*lengths) : OpInput::absent());
  op.inputs.push_back(random_tensor(state, seed + 4));
  op.inputs.push_back(random_tensor(state, seed + 5));
  op.inputs.push_back(peepholes ? OpInput(random_tensor({d, 3 * s.hidden}, seed + 6)) : OpInput::absent());
  const Shape y = s.batch_major ? Shape{s.batch, s.steps, d, s.hidden} : Shape{s.steps, d, s.batch, s.hidden};
  op.outputs = {{DType::f32, y}, {DType::f32, state}, {DType::f32, state}};
  return op;
}

TEST_F(CudaRecurrentOps, LstmPeepholesAndLayout) {
  const Tensor lengths = Tensor::from<std::int32_t>({3}, {5, 1, 0});
  expect_agree(lstm("forward", {}, {}, true, std::nullopt, 60));
  expect_agree(lstm("bidirectional", {.directions = 2}, {}, true, lengths, 61));
  expect_agree(lstm("forward", {.batch_major = true}, {}, false, std::nullopt, 62));
  expect_agree(lstm("bidirectional", {.directions = 2, .batch_major = true}, {}, true, lengths, 63));
}

TEST_F(CudaRecurrentOps, LstmActivationsClipAndInputForget) {
  expect_agree(lstm("forward", {}, {{"activations", std::vector<std::string>{"Sigmoid", "Relu", "Tanh"}}}, false,
                    std::nullopt, 70));
  expect_agree(lstm("reverse", {}, {{"clip", 0.4f}}, true, std::nullopt, 71));
  expect_agree(lstm("bidirectional", {.directions = 2}, {{"input_forget", std::int64_t{1}}}, false, std::nullopt, 72));
}

}  // namespace
}  // namespace loom::gpu_testing
