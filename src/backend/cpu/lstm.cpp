// LSTM with the default activations (sigmoid, tanh, tanh) and gate order i, o, f, c. Per
// direction, the input projection of every time step is one big GEMM up front; each step then
// adds only the recurrent product H_{t-1} · R^T and applies the cell update.
#include "backend/cpu/lstm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "backend/cpu/activation_math.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/lstm_spec.hpp"

namespace loom::backend::cpu {
namespace {

enum Input : std::size_t { kX, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kPeepholes };
enum Output : std::size_t { kY, kYh, kYc };

// Float counts rounded to 64 bytes, so each workspace part starts aligned.
std::size_t aligned_floats(std::int64_t count) { return static_cast<std::size_t>(round_up(count, 16)); }

class LstmKernel final : public OpKernel {
 public:
  explicit LstmKernel(const KernelSpec& spec) : OpKernel(spec) {
    const LstmSpec lstm = parse_lstm_spec(spec);
    for (std::size_t i = 0; i < spec.inputs.size(); ++i)
      if (i != kSequenceLens && spec.inputs[i].present)
        require_dtype(spec, spec.inputs[i], DType::f32, ("input " + std::to_string(i)).c_str());
    for (std::size_t i = 0; i < spec.outputs.size(); ++i)
      if (spec.outputs[i].present) require_dtype(spec, spec.outputs[i], DType::f32, ("output " + std::to_string(i)).c_str());
    directions_ = lstm.directions;
    reverse_only_ = lstm.reverse_only;
    steps_ = lstm.steps;
    batch_ = lstm.batch;
    input_size_ = lstm.input_size;
    hidden_ = lstm.hidden;
    has_bias_ = lstm.has_bias;
    has_lengths_ = lstm.has_sequence_lens;
    has_initial_h_ = lstm.has_initial_h;
    has_initial_c_ = lstm.has_initial_c;
    lengths_dtype_ = lstm.sequence_lens_dtype;
  }

  std::size_t workspace_bytes() const override {
    const std::int64_t gates = 4 * hidden_;
    const std::size_t floats = aligned_floats(2 * batch_) + aligned_floats(steps_ * batch_ * gates) +
                               aligned_floats(batch_ * gates) + 2 * aligned_floats(batch_ * hidden_);
    const std::size_t gemm_bytes = std::max(gemm_workspace_bytes(steps_ * batch_, gates, input_size_),
                                            gemm_workspace_bytes(batch_, gates, hidden_));
    return floats * sizeof(float) + gemm_bytes;
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override;

 private:
  void run_direction(std::int64_t d, bool reverse, std::span<const void* const> inputs,
                     std::span<void* const> outputs, const std::int64_t* lengths, float* scratch) const;

  std::int64_t directions_ = 1;
  bool reverse_only_ = false;
  std::int64_t steps_ = 0, batch_ = 0, input_size_ = 0, hidden_ = 0;
  bool has_bias_ = false, has_lengths_ = false, has_initial_h_ = false, has_initial_c_ = false;
  DType lengths_dtype_ = DType::i32;
};

void LstmKernel::run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                          Stream&) {
  // Workspace: the rows' lengths first, then the per-direction buffers (see run_direction).
  auto* lengths = static_cast<std::int64_t*>(workspace);
  float* scratch = static_cast<float*>(workspace) + aligned_floats(2 * batch_);
  std::fill(lengths, lengths + batch_, steps_);
  if (has_lengths_) {
    for (std::int64_t b = 0; b < batch_; ++b) {
      const std::int64_t length = lengths_dtype_ == DType::i32
                                      ? static_cast<const std::int32_t*>(inputs[kSequenceLens])[b]
                                      : static_cast<const std::int64_t*>(inputs[kSequenceLens])[b];
      if (length < 0 || length > steps_)
        throw Error(ErrorCode::invalid_argument, "LSTM node '" + node_name() + "': sequence_lens[" +
                                                     std::to_string(b) + "] = " + std::to_string(length) +
                                                     " is outside [0, " + std::to_string(steps_) + "]");
      lengths[b] = length;
    }
  }
  float* y = outputs.size() > kY ? static_cast<float*>(outputs[kY]) : nullptr;
  // Steps past a row's length produce zeros in Y; valid steps overwrite their slots below.
  if (y) std::fill(y, y + steps_ * directions_ * batch_ * hidden_, 0.0f);
  for (std::int64_t d = 0; d < directions_; ++d) {
    const bool reverse = reverse_only_ || d == 1;
    run_direction(d, reverse, inputs, outputs, lengths, scratch);
  }
}

void LstmKernel::run_direction(std::int64_t d, bool reverse, std::span<const void* const> inputs,
                               std::span<void* const> outputs, const std::int64_t* lengths, float* scratch) const {
  const std::int64_t gates = 4 * hidden_;
  const float* x = static_cast<const float*>(inputs[kX]);
  const float* w = static_cast<const float*>(inputs[kW]) + d * gates * input_size_;
  const float* r = static_cast<const float*>(inputs[kR]) + d * gates * hidden_;
  const float* bias = has_bias_ ? static_cast<const float*>(inputs[kB]) + d * 2 * gates : nullptr;

  float* projected = scratch;  // [steps * batch, 4H]: X · W^T + Wb + Rb for every step
  float* step_gates = projected + aligned_floats(steps_ * batch_ * gates);  // [batch, 4H]
  float* h = step_gates + aligned_floats(batch_ * gates);                   // [batch, H]
  float* c = h + aligned_floats(batch_ * hidden_);                          // [batch, H]
  void* gemm_workspace = c + aligned_floats(batch_ * hidden_);

  gemm(steps_ * batch_, gates, input_size_, 1.0f, row_major(x, input_size_), transposed(w, input_size_), 0.0f,
       projected, gates, gemm_workspace);
  if (bias) {
    for (std::int64_t row = 0; row < steps_ * batch_; ++row) {
      float* out = projected + row * gates;
      for (std::int64_t g = 0; g < gates; ++g) out[g] += bias[g] + bias[gates + g];
    }
  }

  const std::size_t state_bytes = static_cast<std::size_t>(batch_ * hidden_) * sizeof(float);
  if (has_initial_h_)
    std::memcpy(h, static_cast<const float*>(inputs[kInitialH]) + d * batch_ * hidden_, state_bytes);
  else
    std::fill(h, h + batch_ * hidden_, 0.0f);
  if (has_initial_c_)
    std::memcpy(c, static_cast<const float*>(inputs[kInitialC]) + d * batch_ * hidden_, state_bytes);
  else
    std::fill(c, c + batch_ * hidden_, 0.0f);

  float* y = outputs.size() > kY ? static_cast<float*>(outputs[kY]) : nullptr;
  for (std::int64_t step = 0; step < steps_; ++step) {
    // Each row runs its own valid prefix; a reverse row starts at its last valid time step.
    for (std::int64_t b = 0; b < batch_; ++b) {
      float* row = step_gates + b * gates;
      if (step >= lengths[b]) {
        std::fill(row, row + gates, 0.0f);
        continue;
      }
      const std::int64_t t = reverse ? lengths[b] - 1 - step : step;
      std::memcpy(row, projected + (t * batch_ + b) * gates, static_cast<std::size_t>(gates) * sizeof(float));
    }
    gemm(batch_, gates, hidden_, 1.0f, row_major(h, hidden_), transposed(r, hidden_), 1.0f, step_gates, gates,
         gemm_workspace);
    for (std::int64_t b = 0; b < batch_; ++b) {
      if (step >= lengths[b]) continue;  // finished rows keep their last state
      const float* g = step_gates + b * gates;
      float* h_row = h + b * hidden_;
      float* c_row = c + b * hidden_;
      for (std::int64_t j = 0; j < hidden_; ++j) {
        const float input_gate = sigmoid(g[j]);
        const float output_gate = sigmoid(g[hidden_ + j]);
        const float forget_gate = sigmoid(g[2 * hidden_ + j]);
        const float candidate = std::tanh(g[3 * hidden_ + j]);
        c_row[j] = forget_gate * c_row[j] + input_gate * candidate;
        h_row[j] = output_gate * std::tanh(c_row[j]);
      }
      if (y) {
        const std::int64_t t = reverse ? lengths[b] - 1 - step : step;
        std::memcpy(y + ((t * directions_ + d) * batch_ + b) * hidden_, h_row,
                    static_cast<std::size_t>(hidden_) * sizeof(float));
      }
    }
  }
  if (outputs.size() > kYh && outputs[kYh])
    std::memcpy(static_cast<float*>(outputs[kYh]) + d * batch_ * hidden_, h, state_bytes);
  if (outputs.size() > kYc && outputs[kYc])
    std::memcpy(static_cast<float*>(outputs[kYc]) + d * batch_ * hidden_, c, state_bytes);
}

}  // namespace

std::unique_ptr<OpKernel> make_lstm_kernel(const KernelSpec& spec) { return std::make_unique<LstmKernel>(spec); }

}  // namespace loom::backend::cpu
