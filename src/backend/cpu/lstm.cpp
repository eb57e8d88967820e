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

namespace loom::backend::cpu {
namespace {

enum Input : std::size_t { kX, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kPeepholes };
enum Output : std::size_t { kY, kYh, kYc };

// Float counts rounded to 64 bytes, so each workspace part starts aligned.
std::size_t aligned_floats(std::int64_t count) { return static_cast<std::size_t>(round_up(count, 16)); }

class LstmKernel final : public OpKernel {
 public:
  explicit LstmKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 3, 8);
    require_output_count(spec, 0, 3);
    require_present(spec, kX, "X");
    require_present(spec, kW, "W");
    require_present(spec, kR, "R");
    const auto present = [&](std::size_t i) { return i < spec.inputs.size() && spec.inputs[i].present; };
    if (present(kPeepholes)) throw_unsupported(spec, "peephole weights (input P)");
    for (std::size_t i = 0; i < spec.inputs.size(); ++i)
      if (i != kSequenceLens) require_dtype(spec, spec.inputs[i], DType::f32, ("input " + std::to_string(i)).c_str());
    for (std::size_t i = 0; i < spec.outputs.size(); ++i)
      require_dtype(spec, spec.outputs[i], DType::f32, ("output " + std::to_string(i)).c_str());

    const Attributes& attrs = spec.node->attrs;
    if (attrs.get_int("layout", 0) != 0) throw_unsupported(spec, "layout=1 (only layout 0: [seq, batch, ...])");
    if (attrs.has("clip")) throw_unsupported(spec, "clip");
    if (attrs.get_int("input_forget", 0) != 0) throw_unsupported(spec, "input_forget=1");
    // The cell hard-codes ONNX's default activations (the IR has no list-of-strings attribute to
    // name others with anyway).
    if (attrs.has("activations") || attrs.has("activation_alpha") || attrs.has("activation_beta"))
      throw_unsupported(spec, "custom activations (only the default sigmoid, tanh, tanh)");
    const std::string direction = attrs.get_string("direction", "forward");
    if (direction == "forward") {
      directions_ = 1;
    } else if (direction == "reverse") {
      directions_ = 1;
      reverse_only_ = true;
    } else if (direction == "bidirectional") {
      directions_ = 2;
    } else {
      throw_unsupported(spec, "direction='" + direction + "'");
    }

    const Shape& x = spec.inputs[kX].shape;
    const Shape& w = spec.inputs[kW].shape;
    const Shape& r = spec.inputs[kR].shape;
    if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3)
      throw_bad_shape(spec, "X, W and R must have rank 3, got " + x.to_string() + ", " + w.to_string() + ", " +
                                r.to_string());
    steps_ = x[0];
    batch_ = x[1];
    input_size_ = x[2];
    hidden_ = r[2];
    if (attrs.has("hidden_size") && attrs.get_int("hidden_size", 0) != hidden_)
      throw_bad_shape(spec, "hidden_size " + std::to_string(attrs.get_int("hidden_size", 0)) +
                                " does not match R " + r.to_string());
    require_shape(spec, w, Shape{directions_, 4 * hidden_, input_size_}, "W");
    require_shape(spec, r, Shape{directions_, 4 * hidden_, hidden_}, "R");
    has_bias_ = present(kB);
    if (has_bias_) require_shape(spec, spec.inputs[kB].shape, Shape{directions_, 8 * hidden_}, "B");
    has_lengths_ = present(kSequenceLens);
    if (has_lengths_) {
      lengths_dtype_ = spec.inputs[kSequenceLens].dtype;
      if (lengths_dtype_ != DType::i32 && lengths_dtype_ != DType::i64)
        throw_unsupported(spec, "sequence_lens dtype " + std::string(dtype_name(lengths_dtype_)) +
                                    " (expects i32 or i64)");
      require_shape(spec, spec.inputs[kSequenceLens].shape, Shape{batch_}, "sequence_lens");
    }
    const Shape state{directions_, batch_, hidden_};
    has_initial_h_ = present(kInitialH);
    has_initial_c_ = present(kInitialC);
    if (has_initial_h_) require_shape(spec, spec.inputs[kInitialH].shape, state, "initial_h");
    if (has_initial_c_) require_shape(spec, spec.inputs[kInitialC].shape, state, "initial_c");
    const auto output_present = [&](std::size_t i) { return i < spec.outputs.size() && spec.outputs[i].present; };
    if (output_present(kY)) require_shape(spec, spec.outputs[kY].shape, Shape{steps_, directions_, batch_, hidden_}, "Y");
    if (output_present(kYh)) require_shape(spec, spec.outputs[kYh].shape, state, "Y_h");
    if (output_present(kYc)) require_shape(spec, spec.outputs[kYc].shape, state, "Y_c");
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
