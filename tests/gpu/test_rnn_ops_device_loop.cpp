// ONNX LSTM and GRU nodes in the case the CUDA backend runs as one persistent device loop per
// direction (default activations, no clip, peepholes or input_forget, layout 0), against the CPU
// backend, in f32 and f16: forward and reverse, sequence lengths (i32 and i64, 0 and the full
// length among them), initial states given or not, hidden 128 and 1024, batch 1 and 16, and grids
// capped to a few SMs.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using RnnOpsDeviceLoop = CudaOpTest;

struct LoopCase {
  std::string direction = "forward";
  std::int64_t steps = 7, batch = 1, input = 48, hidden = 128;
  std::optional<Tensor> lengths;
  bool initial_states = true;
  bool bias = true;
  std::vector<bool> outputs = {true, true, true};  // Y, Y_h (, Y_c)
  std::int64_t linear_before_reset = 0;            // GRU
};

std::int64_t directions(const LoopCase& c) { return c.direction == "bidirectional" ? 2 : 1; }

// Weights scaled by 1/sqrt(fan-in) keep the pre-activations O(1) and the recurrence contracting,
// so f16 rounding does not grow over the steps and the f16 tolerance measures the kernel.
Tensor scaled_weights(const Shape& shape, std::int64_t fan_in, std::uint32_t seed) {
  const float a = 1.0f / std::sqrt(static_cast<float>(fan_in));
  return random_tensor(shape, seed, -a, a);
}

// Inputs: X, W, R, B, sequence_lens, initial_h (, initial_c, P for LSTM).
OpCase rnn_case(bool gru, const LoopCase& c, std::uint32_t seed) {
  const std::int64_t d = directions(c), g = gru ? 3 : 4, H = c.hidden;
  Attributes attrs{{"hidden_size", H}, {"direction", c.direction}};
  if (gru) attrs.set("linear_before_reset", c.linear_before_reset);
  OpCase op{gru ? "GRU" : "LSTM",
            attrs,
            {random_tensor({c.steps, c.batch, c.input}, seed), scaled_weights({d, g * H, c.input}, c.input, seed + 1),
             scaled_weights({d, g * H, H}, H, seed + 2)},
            {}};
  const Shape state{d, c.batch, H};
  op.inputs.push_back(c.bias ? OpInput(random_tensor({d, 2 * g * H}, seed + 3, -0.3f, 0.3f)) : OpInput::absent());
  op.inputs.push_back(c.lengths ? OpInput(*c.lengths) : OpInput::absent());
  op.inputs.push_back(c.initial_states ? OpInput(random_tensor(state, seed + 4)) : OpInput::absent());
  if (!gru) op.inputs.push_back(c.initial_states ? OpInput(random_tensor(state, seed + 5)) : OpInput::absent());
  const Shape shapes[] = {{c.steps, d, c.batch, H}, state, state};
  for (std::size_t i = 0; i < c.outputs.size() && i < (gru ? 2u : 3u); ++i)
    op.outputs.push_back(c.outputs[i] ? OpOutput{DType::f32, shapes[i]} : OpOutput::absent());
  return op;
}

// Lengths for 16 rows: empty, one step, the full sequence, and values in between.
Tensor mixed_lengths(std::int64_t steps, DType dtype) {
  std::vector<std::int64_t> v(16);
  for (std::size_t b = 0; b < v.size(); ++b) v[b] = static_cast<std::int64_t>(b * 5 % (steps + 1));
  v[0] = 0, v[1] = 1, v[2] = steps;
  return Tensor::from<std::int64_t>({16}, v).to(dtype);
}

TEST_F(RnnOpsDeviceLoop, LstmForwardAndReverseHidden128) {
  for (const std::string direction : {"forward", "reverse"}) {
    SCOPED_TRACE(direction);
    expect_agree(rnn_case(false, {.direction = direction, .batch = 1}, 100));
    expect_agree(rnn_case(false, {.direction = direction, .batch = 16, .initial_states = false}, 110));
    expect_agree(rnn_case(false, {.direction = direction, .batch = 16, .lengths = mixed_lengths(7, DType::i32)}, 120));
  }
}

TEST_F(RnnOpsDeviceLoop, LstmHidden1024) {
  expect_agree(rnn_case(false, {.steps = 5, .batch = 1, .hidden = 1024}, 200));
  expect_agree(rnn_case(false,
                        {.direction = "reverse",
                         .steps = 5,
                         .batch = 16,
                         .hidden = 1024,
                         .lengths = mixed_lengths(5, DType::i64),
                         .bias = false},
                        210));
}

TEST_F(RnnOpsDeviceLoop, LstmPartialOutputsAndBidirectional) {
  // Only Y_h and Y_c: the loop runs without an output sequence.
  expect_agree(
      rnn_case(false, {.batch = 16, .lengths = mixed_lengths(7, DType::i32), .outputs = {false, true, true}}, 300));
  // Only Y.
  expect_agree(rnn_case(false, {.direction = "reverse", .batch = 1, .outputs = {true}}, 310));
  // Two directions: Y is [T, 2, B, H], each direction placed from its own launch.
  expect_agree(
      rnn_case(false, {.direction = "bidirectional", .batch = 16, .lengths = mixed_lengths(7, DType::i32)}, 320));
}

TEST_F(RnnOpsDeviceLoop, GruForwardAndReverseHidden128) {
  for (const std::string direction : {"forward", "reverse"}) {
    for (const std::int64_t lbr : {0, 1}) {
      SCOPED_TRACE(direction + " linear_before_reset " + std::to_string(lbr));
      expect_agree(rnn_case(true, {.direction = direction, .batch = 1, .linear_before_reset = lbr}, 400));
      expect_agree(rnn_case(true,
                            {.direction = direction,
                             .batch = 16,
                             .lengths = mixed_lengths(7, DType::i64),
                             .initial_states = false,
                             .linear_before_reset = lbr},
                            410));
    }
  }
}

TEST_F(RnnOpsDeviceLoop, GruHidden1024) {
  expect_agree(rnn_case(true, {.direction = "reverse", .steps = 5, .batch = 1, .hidden = 1024}, 500));
  expect_agree(rnn_case(
      true,
      {.steps = 5, .batch = 16, .hidden = 1024, .lengths = mixed_lengths(5, DType::i32), .linear_before_reset = 1},
      510));
}

TEST_F(RnnOpsDeviceLoop, GruPartialOutputsAndBidirectional) {
  expect_agree(rnn_case(true, {.batch = 16, .lengths = mixed_lengths(7, DType::i32), .outputs = {false, true}}, 600));
  expect_agree(rnn_case(
      true,
      {.direction = "bidirectional", .batch = 16, .lengths = mixed_lengths(7, DType::i64), .initial_states = false},
      610));
}

// A grid capped at 1 SM (one block owns every unit) and at 8 (128 units each, the weights then off
// chip): the loop computes the same values, only with fewer blocks.
TEST_F(RnnOpsDeviceLoop, GridCappedToFewSms) {
  for (const int cap : {1, 8}) {
    SCOPED_TRACE("persistent_grid_max_sms " + std::to_string(cap));
    OpCase lstm =
        rnn_case(false, {.steps = 5, .batch = 16, .hidden = 1024, .lengths = mixed_lengths(5, DType::i32)}, 700);
    lstm.persistent_grid_max_sms = cap;
    expect_agree(lstm);
    OpCase gru = rnn_case(true, {.direction = "bidirectional", .batch = 16, .hidden = 256}, 710);
    gru.persistent_grid_max_sms = cap;
    expect_agree(gru);
  }
}

}  // namespace
}  // namespace loom::gpu_testing
