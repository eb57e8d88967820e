// GRU (both layouts, linear_before_reset 0 and 1, clip, ONNX activations): per direction, one GEMM
// gives X·Wᵀ for every time step at once. Nodes the device loop covers (rnn_device_loop.hpp: no
// clip, default activations, layout 0) then run every step in one persistent launch; the others
// run, per step, the recurrent products on cuBLAS and the fused cell kernels. With linear_before_reset = 0 the reset
// gate must be known before the candidate's product (r ⊙ h)·Rhᵀ, so a step is GEMM, reset kernel, GEMM, update kernel;
// with 1 it is one GEMM over all of R and the update kernel. Gate products are f32 whatever the model dtype.
// Single-direction nodes on the device loop can pause inside (OpKernel::run_resumable, rnn_device_loop.hpp).
#include <optional>

#include "gru_cell.cuh"

#include "backend/cuda/cublas_gemm.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/rnn_device_loop.hpp"
#include "backend/gru_spec.hpp"

namespace loom::backend::cuda {
namespace {

class GruKernel final : public RnnLoopKernel {
 public:
  GruKernel(const KernelSpec& spec, int device)
      : RnnLoopKernel(spec), dtype_(require_float_dtype(spec, {kGruW, kGruR, kGruB})), gru_(parse_gru_spec(spec)) {
    if (has_input(spec, kGruInitialH) && spec.inputs[kGruInitialH].dtype != dtype_)
      throw_unsupported(spec, "initial_h must have X's dtype");
    for (std::size_t o = 0; o < spec.outputs.size(); ++o)
      if (spec.outputs[o].present && spec.outputs[o].dtype != dtype_)
        throw_unsupported(spec, "outputs must have X's dtype");
    // The update kernel writes Y_h at the last step, so there must be one.
    if (gru_.steps == 0) throw_unsupported(spec, "an empty sequence (0 time steps)");

    const std::int64_t gates = 3 * gru_.hidden;
    x_gates_bytes_ = align_bytes(static_cast<std::size_t>(gru_.steps * gru_.batch * gates) * sizeof(float));
    h_gates_bytes_ = align_bytes(static_cast<std::size_t>(gru_.batch * gates) * sizeof(float));
    h_bytes_ = align_bytes(static_cast<std::size_t>(gru_.batch * gru_.hidden) * dtype_size(dtype_));

    device_loop_ =
        RnnDeviceLoop::plan(gru_, true, gru_.linear_before_reset, dtype_, true, device, spec.persistent_grid_max_sms);
  }

  // Per-step path: x_gates, h_gates, h, then r ⊙ h (same size as h).
  std::size_t workspace_bytes() const override {
    if (device_loop_) return device_loop_->workspace_bytes();
    return x_gates_bytes_ + h_gates_bytes_ + 2 * h_bytes_;
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
              CudaStream& stream) override {
    if (launch_device_loop(inputs, outputs, workspace, stream)) return;
    auto* scratch = static_cast<std::byte*>(workspace);
    auto* x_gates = reinterpret_cast<float*>(scratch);
    auto* h_gates = reinterpret_cast<float*>(scratch + x_gates_bytes_);
    void* h = scratch + x_gates_bytes_ + h_gates_bytes_;
    void* reset_h = scratch + x_gates_bytes_ + h_gates_bytes_ + h_bytes_;
    const auto input = [&](std::size_t i) {
      return static_cast<const std::byte*>(i < inputs.size() ? inputs[i] : nullptr);
    };
    const auto output = [&](std::size_t i) { return i < outputs.size() ? outputs[i] : nullptr; };
    void* y = output(kGruY);
    void* y_h = output(kGruYh);

    const std::size_t element = dtype_size(dtype_);
    const auto e = static_cast<std::int64_t>(element);
    const std::int64_t hidden = gru_.hidden, gates = 3 * hidden;
    const std::size_t state_elements = static_cast<std::size_t>(gru_.batch * hidden);
    // Rows shorter than the sequence never write their tail steps; ONNX wants zeros there.
    if (y && gru_.has_sequence_lens)
      LOOM_CUDA_CHECK(cudaMemsetAsync(
          y, 0, static_cast<std::size_t>(gru_.steps * gru_.directions) * state_elements * element, stream.get()));

    const auto* w = input(kGruW);
    const auto* r = input(kGruR);
    const auto* b = input(kGruB);
    const auto* initial_h = input(kGruInitialH);

    for (std::int64_t d = 0; d < gru_.directions; ++d) {
      // X·W_dᵀ for all steps: [T*B, I] x [3H, I]ᵀ -> [T*B, 3H] in f32, rows in X's layout.
      gemm_row_major(stream, gru_.steps * gru_.batch, gates, gru_.input_size, 1.0f,
                     {inputs[kGruX], false, gru_.input_size, 0},
                     {w + d * gates * gru_.input_size * e, true, gru_.input_size, 0}, 0.0f, {x_gates, gates, 0}, 1,
                     dtype_, DType::f32);

      // initial_h rows of this direction are H apart (layout 0) or D*H apart (layout 1).
      if (initial_h) {
        const std::size_t row_bytes = static_cast<std::size_t>(hidden) * element;
        const std::size_t pitch =
            static_cast<std::size_t>(gru_.batch_major ? gru_.directions * hidden : hidden) * element;
        LOOM_CUDA_CHECK(cudaMemcpy2DAsync(h, row_bytes, initial_h + gru_.state_offset(d, 0) * e, pitch, row_bytes,
                                          static_cast<std::size_t>(gru_.batch), cudaMemcpyDeviceToDevice,
                                          stream.get()));
      } else {
        LOOM_CUDA_CHECK(cudaMemsetAsync(h, 0, state_elements * element, stream.get()));
      }

      const RnnDirectionActivations& act = gru_.activations[static_cast<std::size_t>(d)];
      kernels::GruStepParams step;
      step.x_gates = x_gates;
      step.h_gates = h_gates;
      step.bias = b ? b + d * 2 * gates * e : nullptr;
      step.seq_lens = input(kGruSequenceLens);
      step.seq_lens_i64 = gru_.sequence_lens_dtype == DType::i64;
      step.h = h;
      step.reset_h = reset_h;
      step.y = y;
      step.y_h = y_h;
      step.seq_len = gru_.steps;
      step.batch = gru_.batch;
      step.hidden = hidden;
      step.directions = gru_.directions;
      step.direction = d;
      step.reverse = gru_.reverse_only || d == 1;
      step.batch_major = gru_.batch_major;
      step.linear_before_reset = gru_.linear_before_reset;
      step.clip = gru_.clip;
      step.f = act[0];
      step.g = act[1];

      const std::byte* r_d = r + d * gates * hidden * e;
      const GemmOperand h_op{h, false, hidden, 0};
      const GemmOutput h_gates_out{h_gates, gates, 0};
      const GemmOutput candidate_out{h_gates + 2 * hidden, gates, 0};
      for (std::int64_t t = 0; t < gru_.steps; ++t) {
        step.step = t;
        if (gru_.linear_before_reset) {
          // h·R_dᵀ over all three gates: [B, H] x [3H, H]ᵀ -> [B, 3H].
          gemm_row_major(stream, gru_.batch, gates, hidden, 1.0f, h_op, {r_d, true, hidden, 0}, 0.0f, h_gates_out, 1,
                         dtype_, DType::f32);
        } else {
          // h·[Rz; Rr]ᵀ -> [B, 2H], then r ⊙ h, then (r ⊙ h)·Rhᵀ -> [B, H] in the third gate's columns.
          gemm_row_major(stream, gru_.batch, 2 * hidden, hidden, 1.0f, h_op, {r_d, true, hidden, 0}, 0.0f, h_gates_out,
                         1, dtype_, DType::f32);
          kernels::launch_gru_reset(step, dtype_, stream.get());
          gemm_row_major(stream, gru_.batch, hidden, hidden, 1.0f, {reset_h, false, hidden, 0},
                         {r_d + 2 * hidden * hidden * e, true, hidden, 0}, 0.0f, candidate_out, 1, dtype_, DType::f32);
        }
        kernels::launch_gru_update(step, dtype_, stream.get());
      }
    }
  }

 private:
  DType dtype_;
  GruSpec gru_;  // attributes and shapes, checked once
  std::size_t x_gates_bytes_ = 0, h_gates_bytes_ = 0, h_bytes_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_gru_kernel(const KernelSpec& spec, CudaBackend& backend) {
  require_arity(spec, 3, 6, 0, 2);
  return std::make_unique<GruKernel>(spec, backend.device());
}

}  // namespace loom::backend::cuda
