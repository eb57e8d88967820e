// GRU with gate order z, r, h. Per direction, the input projection of every time step is one big
// GEMM up front (with the biases that sit outside the reset gate folded in); each step then
// multiplies the state by R's z and r rows, and R's h rows by either r ⊙ H (linear_before_reset=0)
// or H itself (linear_before_reset=1).
#include "backend/cpu/gru.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/gru_spec.hpp"

namespace loom::backend::cpu {
namespace {

// Float counts rounded to 64 bytes, so each workspace part starts aligned.
std::size_t aligned_floats(std::int64_t count) { return static_cast<std::size_t>(round_up(count, 16)); }

float* output_ptr(std::span<void* const> outputs, std::size_t i) {
  return i < outputs.size() ? static_cast<float*>(outputs[i]) : nullptr;
}

class GruKernel final : public OpKernel {
 public:
  explicit GruKernel(const KernelSpec& spec) : OpKernel(spec), gru_(parse_gru_spec(spec)) {
    require_f32_except(spec, kGruSequenceLens);
  }

  std::size_t workspace_bytes() const override {
    const std::int64_t gates = 3 * gru_.hidden;
    const std::size_t floats = aligned_floats(2 * gru_.batch) + aligned_floats(gru_.steps * gru_.batch * gates) +
                               aligned_floats(gru_.batch * gates) + aligned_floats(gru_.batch * 2 * gru_.hidden) +
                               2 * aligned_floats(gru_.batch * gru_.hidden);
    const std::size_t gemm_bytes = std::max({gemm_workspace_bytes(gru_.steps * gru_.batch, gates, gru_.input_size),
                                             gemm_workspace_bytes(gru_.batch, 2 * gru_.hidden, gru_.hidden),
                                             gemm_workspace_bytes(gru_.batch, gru_.hidden, gru_.hidden)});
    return floats * sizeof(float) + gemm_bytes;
  }

  // Iteration d * steps + t is time step t of direction d. Pauses happen inside a direction only
  // (never after its last step, where Y_h is written), so a reverse or bidirectional node pauses
  // too. The state is h, [batch, H].
  bool resumable() const noexcept override { return gru_.steps > 1; }
  std::size_t resume_state_bytes() const override {
    return static_cast<std::size_t>(gru_.batch * gru_.hidden) * sizeof(float);
  }
  std::int32_t resume_iterations() const override { return static_cast<std::int32_t>(gru_.directions * gru_.steps); }

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
  bool run_direction(std::int64_t d, std::span<const void* const> inputs, std::span<void* const> outputs,
                     const std::int64_t* lengths, float* scratch, std::int64_t first_step,
                     const ResumeContext* resume) const;

  GruSpec gru_;  // attributes and shapes, checked once
};

void GruKernel::run_from(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                         const ResumeContext* resume) const {
  // Workspace: the rows' lengths first, then the per-direction buffers (see run_direction).
  auto* lengths = static_cast<std::int64_t*>(workspace);
  float* scratch = static_cast<float*>(workspace) + aligned_floats(2 * gru_.batch);
  gru_.read_lengths(gru_.has_sequence_lens ? inputs[kGruSequenceLens] : nullptr, "GRU", node_name(), lengths);
  const std::int64_t start = resume ? resume->start_iteration : 0;
  // Steps past a row's length produce zeros in Y; valid steps overwrite their slots below. A
  // resumed run finds Y as the paused run left it.
  if (float* y = output_ptr(outputs, kGruY); y && start == 0) std::fill(y, y + gru_.y_shape().numel(), 0.0f);
  const std::int64_t start_direction = gru_.steps > 0 ? start / gru_.steps : 0;
  for (std::int64_t d = start_direction; d < gru_.directions; ++d) {
    const std::int64_t first_step = d == start_direction ? start - d * gru_.steps : 0;
    if (!run_direction(d, inputs, outputs, lengths, scratch, first_step, resume)) return;
  }
  if (resume) *resume->progress = {static_cast<std::int32_t>(gru_.directions * gru_.steps), 0};
}

bool GruKernel::run_direction(std::int64_t d, std::span<const void* const> inputs, std::span<void* const> outputs,
                              const std::int64_t* lengths, float* scratch, std::int64_t first_step,
                              const ResumeContext* resume) const {
  const std::int64_t hidden = gru_.hidden, batch = gru_.batch, gates = 3 * hidden;
  const bool reverse = gru_.reverse_only || d == 1;
  const float* x = static_cast<const float*>(inputs[kGruX]);
  const float* w = static_cast<const float*>(inputs[kGruW]) + d * gates * gru_.input_size;
  const float* r = static_cast<const float*>(inputs[kGruR]) + d * gates * hidden;
  const float* r_candidate = r + 2 * hidden * hidden;  // R's h rows
  const float* bias = gru_.has_bias ? static_cast<const float*>(inputs[kGruB]) + d * 2 * gates : nullptr;
  const float* candidate_rbias = bias ? bias + gates + 2 * hidden : nullptr;  // Rbh
  const RnnDirectionActivations& act = gru_.activations[static_cast<std::size_t>(d)];
  const float clip = gru_.clip;

  float* projected = scratch;  // [steps * batch, 3H]: X · W^T plus the biases outside the reset gate
  float* step_gates = projected + aligned_floats(gru_.steps * batch * gates);  // [batch, 3H]
  float* update_reset = step_gates + aligned_floats(batch * gates);            // [batch, 2H]: z, r after f
  float* h = update_reset + aligned_floats(batch * 2 * hidden);                // [batch, H]
  float* candidate_in = h + aligned_floats(batch * hidden);  // [batch, H]: r ⊙ H, or H·Rhᵀ when linear before reset
  void* gemm_workspace = candidate_in + aligned_floats(batch * hidden);

  // A resumed run computes the whole projection again (the workspace is the model's, not the
  // request's): the same call on the same inputs, so the same bits.
  gemm(gru_.steps * batch, gates, gru_.input_size, 1.0f, row_major(x, gru_.input_size), transposed(w, gru_.input_size),
       0.0f, projected, gates, gemm_workspace);
  if (bias) {
    // Wb for every gate; Rb for z and r, and for h too unless it belongs inside r ⊙ (...).
    const std::int64_t rbias_count = gru_.linear_before_reset ? 2 * hidden : gates;
    for (std::int64_t row = 0; row < gru_.steps * batch; ++row) {
      float* out = projected + row * gates;
      for (std::int64_t g = 0; g < gates; ++g) out[g] += bias[g];
      for (std::int64_t g = 0; g < rbias_count; ++g) out[g] += bias[gates + g];
    }
  }

  const std::size_t row_bytes = static_cast<std::size_t>(hidden) * sizeof(float);
  const auto* initial_h = static_cast<const float*>(gru_.has_initial_h ? inputs[kGruInitialH] : nullptr);
  const std::size_t state_bytes = static_cast<std::size_t>(batch * hidden) * sizeof(float);
  if (first_step > 0) std::memcpy(h, resume->state, state_bytes);
  for (std::int64_t b = 0; b < batch && first_step == 0; ++b) {
    if (initial_h)
      std::memcpy(h + b * hidden, initial_h + gru_.state_offset(d, b), row_bytes);
    else
      std::fill(h + b * hidden, h + (b + 1) * hidden, 0.0f);
  }

  float* y = output_ptr(outputs, kGruY);
  for (std::int64_t step = first_step; step < gru_.steps; ++step) {
    if (resume && step > first_step && pause_requested(resume->pause)) {
      std::memcpy(resume->state, h, state_bytes);
      *resume->progress = {static_cast<std::int32_t>(d * gru_.steps + step), 1};
      return false;
    }
    // Each row runs its own valid prefix; a reverse row starts at its last valid time step.
    for (std::int64_t b = 0; b < batch; ++b) {
      float* row = step_gates + b * gates;
      if (step >= lengths[b]) {
        std::fill(row, row + gates, 0.0f);
        continue;
      }
      const std::int64_t t = reverse ? lengths[b] - 1 - step : step;
      std::memcpy(row, projected + gru_.x_row(t, b) * gates, static_cast<std::size_t>(gates) * sizeof(float));
    }
    // z and r: += H · [Rz; Rr]ᵀ.
    gemm(batch, 2 * hidden, hidden, 1.0f, row_major(h, hidden), transposed(r, hidden), 1.0f, step_gates, gates,
         gemm_workspace);
    for (std::int64_t b = 0; b < batch; ++b) {
      const float* g = step_gates + b * gates;
      float* zr = update_reset + b * 2 * hidden;
      float* in = candidate_in + b * hidden;
      const float* h_row = h + b * hidden;
      for (std::int64_t j = 0; j < 2 * hidden; ++j) zr[j] = apply_rnn_activation(act[0], clip_gate(g[j], clip));
      if (!gru_.linear_before_reset)
        for (std::int64_t j = 0; j < hidden; ++j) in[j] = step < lengths[b] ? zr[hidden + j] * h_row[j] : 0.0f;
    }
    if (gru_.linear_before_reset) {
      gemm(batch, hidden, hidden, 1.0f, row_major(h, hidden), transposed(r_candidate, hidden), 0.0f, candidate_in,
           hidden, gemm_workspace);
    } else {
      gemm(batch, hidden, hidden, 1.0f, row_major(candidate_in, hidden), transposed(r_candidate, hidden), 1.0f,
           step_gates + 2 * hidden, gates, gemm_workspace);
    }
    for (std::int64_t b = 0; b < batch; ++b) {
      if (step >= lengths[b]) continue;  // finished rows keep their last state
      const float* g = step_gates + b * gates + 2 * hidden;
      const float* zr = update_reset + b * 2 * hidden;
      const float* in = candidate_in + b * hidden;
      float* h_row = h + b * hidden;
      for (std::int64_t j = 0; j < hidden; ++j) {
        float pre = g[j];
        if (gru_.linear_before_reset) pre += zr[hidden + j] * (in[j] + (candidate_rbias ? candidate_rbias[j] : 0.0f));
        const float candidate = apply_rnn_activation(act[1], clip_gate(pre, clip));
        const float z = zr[j];
        h_row[j] = (1.0f - z) * candidate + z * h_row[j];
      }
      if (y) {
        const std::int64_t t = reverse ? lengths[b] - 1 - step : step;
        std::memcpy(y + gru_.y_offset(t, d, b), h_row, row_bytes);
      }
    }
  }
  if (float* y_h = output_ptr(outputs, kGruYh))
    for (std::int64_t b = 0; b < batch; ++b) std::memcpy(y_h + gru_.state_offset(d, b), h + b * hidden, row_bytes);
  return true;
}

}  // namespace

std::unique_ptr<OpKernel> make_gru_kernel(const KernelSpec& spec) { return std::make_unique<GruKernel>(spec); }

}  // namespace loom::backend::cpu
