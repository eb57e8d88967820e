// LSTM (gate order i, o, f, c) with ONNX's activations attribute, peepholes, clip, input_forget
// and both layouts. Per direction, the input projection of every time step is one big GEMM up front; each step then
// adds only the recurrent product H_{t-1} · R^T and applies the cell update.
#include "backend/cpu/lstm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/lstm_spec.hpp"

namespace loom::backend::cpu {
namespace {

enum Input : std::size_t { kX, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kPeepholes };
enum Output : std::size_t { kY, kYh, kYc };

float* output_ptr(std::span<void* const> outputs, std::size_t i) {
  return i < outputs.size() ? static_cast<float*>(outputs[i]) : nullptr;
}

// Float counts rounded to 64 bytes, so each workspace part starts aligned.
std::size_t aligned_floats(std::int64_t count) { return static_cast<std::size_t>(round_up(count, 16)); }

class LstmKernel final : public OpKernel {
 public:
  explicit LstmKernel(const KernelSpec& spec) : OpKernel(spec), lstm_(parse_lstm_spec(spec)) {
    require_f32_except(spec, kSequenceLens);
  }

  std::size_t workspace_bytes() const override {
    const std::int64_t gates = 4 * lstm_.hidden;
    const std::size_t floats = aligned_floats(2 * lstm_.batch) + aligned_floats(lstm_.steps * lstm_.batch * gates) +
                               aligned_floats(lstm_.batch * gates) + 2 * aligned_floats(lstm_.batch * lstm_.hidden);
    const std::size_t gemm_bytes = std::max(gemm_workspace_bytes(lstm_.steps * lstm_.batch, gates, lstm_.input_size),
                                            gemm_workspace_bytes(lstm_.batch, gates, lstm_.hidden));
    return floats * sizeof(float) + gemm_bytes;
  }

  // Iteration d * steps + t is time step t of direction d. Pauses happen inside a direction only
  // (never after its last step, where Y_h and Y_c are written), so a reverse or bidirectional
  // node pauses too. The state is h then c, [batch, H] each.
  bool resumable() const noexcept override { return lstm_.steps > 1; }
  std::size_t resume_state_bytes() const override {
    return 2 * static_cast<std::size_t>(lstm_.batch * lstm_.hidden) * sizeof(float);
  }
  std::int32_t resume_iterations() const override { return static_cast<std::int32_t>(lstm_.directions * lstm_.steps); }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    run_from(inputs, outputs, workspace, nullptr);
  }
  void run_resumable_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                          const ResumeContext& context, Stream&) override {
    run_from(inputs, outputs, workspace, &context);
  }

 private:
  void run_from(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                const ResumeContext* resume) const;
  // Runs direction d from time step `first_step` (its state then comes from resume->state).
  // Returns false when it paused (state saved, progress written).
  bool run_direction(std::int64_t d, bool reverse, std::span<const void* const> inputs, std::span<void* const> outputs,
                     const std::int64_t* lengths, float* scratch, std::int64_t first_step,
                     const ResumeContext* resume) const;

  LstmSpec lstm_;  // attributes and shapes, checked once
};

void LstmKernel::run_from(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                          const ResumeContext* resume) const {
  // Workspace: the rows' lengths first, then the per-direction buffers (see run_direction).
  auto* lengths = static_cast<std::int64_t*>(workspace);
  float* scratch = static_cast<float*>(workspace) + aligned_floats(2 * lstm_.batch);
  lstm_.read_lengths(lstm_.has_sequence_lens ? inputs[kSequenceLens] : nullptr, "LSTM", node_name(), lengths);
  const std::int64_t start = resume ? resume->start_iteration : 0;
  float* y = output_ptr(outputs, kY);
  // Steps past a row's length produce zeros in Y; valid steps overwrite their slots below. A
  // resumed run finds Y as the paused run left it.
  if (y && start == 0) std::fill(y, y + lstm_.steps * lstm_.directions * lstm_.batch * lstm_.hidden, 0.0f);
  const std::int64_t start_direction = lstm_.steps > 0 ? start / lstm_.steps : 0;
  for (std::int64_t d = start_direction; d < lstm_.directions; ++d) {
    const bool reverse = lstm_.reverse_only || d == 1;
    const std::int64_t first_step = d == start_direction ? start - d * lstm_.steps : 0;
    if (!run_direction(d, reverse, inputs, outputs, lengths, scratch, first_step, resume)) return;
  }
  if (resume) *resume->progress = {static_cast<std::int32_t>(lstm_.directions * lstm_.steps), 0};
}

bool LstmKernel::run_direction(std::int64_t d, bool reverse, std::span<const void* const> inputs,
                               std::span<void* const> outputs, const std::int64_t* lengths, float* scratch,
                               std::int64_t first_step, const ResumeContext* resume) const {
  const std::int64_t gates = 4 * lstm_.hidden;
  const float* x = static_cast<const float*>(inputs[kX]);
  const float* w = static_cast<const float*>(inputs[kW]) + d * gates * lstm_.input_size;
  const float* r = static_cast<const float*>(inputs[kR]) + d * gates * lstm_.hidden;
  const float* bias = lstm_.has_bias ? static_cast<const float*>(inputs[kB]) + d * 2 * gates : nullptr;
  const float* peepholes =
      lstm_.has_peepholes ? static_cast<const float*>(inputs[kPeepholes]) + d * 3 * lstm_.hidden : nullptr;
  const RnnDirectionActivations& act = lstm_.activations[static_cast<std::size_t>(d)];

  float* projected = scratch;  // [steps * batch, 4H]: X · W^T + Wb + Rb for every step
  float* step_gates = projected + aligned_floats(lstm_.steps * lstm_.batch * gates);  // [batch, 4H]
  float* h = step_gates + aligned_floats(lstm_.batch * gates);                        // [batch, H]
  float* c = h + aligned_floats(lstm_.batch * lstm_.hidden);                          // [batch, H]
  void* gemm_workspace = c + aligned_floats(lstm_.batch * lstm_.hidden);

  // A resumed run computes the whole projection again (the workspace is the model's, not the
  // request's): the same call on the same inputs, so the same bits.
  gemm(lstm_.steps * lstm_.batch, gates, lstm_.input_size, 1.0f, row_major(x, lstm_.input_size),
       transposed(w, lstm_.input_size), 0.0f, projected, gates, gemm_workspace);
  if (bias) {
    for (std::int64_t row = 0; row < lstm_.steps * lstm_.batch; ++row) {
      float* out = projected + row * gates;
      for (std::int64_t g = 0; g < gates; ++g) out[g] += bias[g] + bias[gates + g];
    }
  }

  const std::size_t row_bytes = static_cast<std::size_t>(lstm_.hidden) * sizeof(float);
  const auto* initial_h = static_cast<const float*>(lstm_.has_initial_h ? inputs[kInitialH] : nullptr);
  const auto* initial_c = static_cast<const float*>(lstm_.has_initial_c ? inputs[kInitialC] : nullptr);
  const std::size_t state_floats = static_cast<std::size_t>(lstm_.batch * lstm_.hidden);
  if (first_step > 0) {
    const float* saved = static_cast<const float*>(resume->state);
    std::memcpy(h, saved, state_floats * sizeof(float));
    std::memcpy(c, saved + state_floats, state_floats * sizeof(float));
  }
  for (std::int64_t b = 0; b < lstm_.batch && first_step == 0; ++b) {
    float* h_row = h + b * lstm_.hidden;
    float* c_row = c + b * lstm_.hidden;
    if (initial_h)
      std::memcpy(h_row, initial_h + lstm_.state_offset(d, b), row_bytes);
    else
      std::fill(h_row, h_row + lstm_.hidden, 0.0f);
    if (initial_c)
      std::memcpy(c_row, initial_c + lstm_.state_offset(d, b), row_bytes);
    else
      std::fill(c_row, c_row + lstm_.hidden, 0.0f);
  }

  const std::int64_t hidden = lstm_.hidden;
  const float clip = lstm_.clip;
  float* y = output_ptr(outputs, kY);
  for (std::int64_t step = first_step; step < lstm_.steps; ++step) {
    if (resume && step > first_step && pause_requested(resume->pause)) {
      float* saved = static_cast<float*>(resume->state);
      std::memcpy(saved, h, state_floats * sizeof(float));
      std::memcpy(saved + state_floats, c, state_floats * sizeof(float));
      *resume->progress = {static_cast<std::int32_t>(d * lstm_.steps + step), 1};
      return false;
    }
    // Each row runs its own valid prefix; a reverse row starts at its last valid time step.
    for (std::int64_t b = 0; b < lstm_.batch; ++b) {
      float* row = step_gates + b * gates;
      if (step >= lengths[b]) {
        std::fill(row, row + gates, 0.0f);
        continue;
      }
      const std::int64_t t = reverse ? lengths[b] - 1 - step : step;
      std::memcpy(row, projected + lstm_.x_row(t, b) * gates, static_cast<std::size_t>(gates) * sizeof(float));
    }
    gemm(lstm_.batch, gates, lstm_.hidden, 1.0f, row_major(h, lstm_.hidden), transposed(r, lstm_.hidden), 1.0f,
         step_gates, gates, gemm_workspace);
    for (std::int64_t b = 0; b < lstm_.batch; ++b) {
      if (step >= lengths[b]) continue;  // finished rows keep their last state
      const float* g = step_gates + b * gates;
      float* h_row = h + b * lstm_.hidden;
      float* c_row = c + b * lstm_.hidden;
      for (std::int64_t j = 0; j < hidden; ++j) {
        // ONNX order: peephole terms join the pre-activation, then clip, then the activation.
        const float c_prev = c_row[j];
        float zi = g[j], zf = g[2 * hidden + j];
        if (peepholes) {
          zi += peepholes[j] * c_prev;
          zf += peepholes[2 * hidden + j] * c_prev;
        }
        const float input_gate = apply_rnn_activation(act[0], clip_gate(zi, clip));
        const float forget_gate =
            lstm_.input_forget ? 1.0f - input_gate : apply_rnn_activation(act[0], clip_gate(zf, clip));
        const float candidate = apply_rnn_activation(act[1], clip_gate(g[3 * hidden + j], clip));
        const float c_new = forget_gate * c_prev + input_gate * candidate;
        float zo = g[hidden + j];
        if (peepholes) zo += peepholes[hidden + j] * c_new;
        const float output_gate = apply_rnn_activation(act[0], clip_gate(zo, clip));
        c_row[j] = c_new;
        h_row[j] = output_gate * apply_rnn_activation(act[2], c_new);
      }
      if (y) {
        const std::int64_t t = reverse ? lengths[b] - 1 - step : step;
        std::memcpy(y + lstm_.y_offset(t, d, b), h_row, row_bytes);
      }
    }
  }
  float* y_h = output_ptr(outputs, kYh);
  float* y_c = output_ptr(outputs, kYc);
  for (std::int64_t b = 0; b < lstm_.batch; ++b) {
    if (y_h) std::memcpy(y_h + lstm_.state_offset(d, b), h + b * hidden, row_bytes);
    if (y_c) std::memcpy(y_c + lstm_.state_offset(d, b), c + b * hidden, row_bytes);
  }
  return true;
}

}  // namespace

std::unique_ptr<OpKernel> make_lstm_kernel(const KernelSpec& spec) { return std::make_unique<LstmKernel>(spec); }

}  // namespace loom::backend::cpu
