// LSTM (both layouts, peepholes, clip, input_forget, ONNX activations): per direction, one GEMM
// gives X·Wᵀ for every time step at once. Nodes the device loop covers (rnn_device_loop.hpp: no
// peepholes, clip or input_forget, default activations, layout 0) then run every step in one
// persistent launch; the others run h·Rᵀ on cuBLAS and the fused cell kernel per step, which also
// writes Y_h and Y_c at the last step. On both paths gate products and the cell state are f32
// whatever the model dtype, so f16 models only round h. Single-direction nodes on the device loop
// can pause inside (OpKernel::run_resumable, rnn_device_loop.hpp).
#include <optional>

#include "lstm_cell.cuh"

#include "backend/cuda/cublas_gemm.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/rnn_device_loop.hpp"
#include "backend/lstm_spec.hpp"

namespace loom::backend::cuda {
namespace {

enum LstmInput { kX, kW, kR, kB, kSequenceLens, kInitialH, kInitialC, kPeepholes };
enum LstmOutput { kY, kYH, kYC };

class LstmKernel final : public RnnLoopKernel {
 public:
  LstmKernel(const KernelSpec& spec, int device)
      : RnnLoopKernel(spec), dtype_(require_float_dtype(spec, {kW, kR, kB})), lstm_(parse_lstm_spec(spec)) {
    for (int i : {kInitialH, kInitialC, kPeepholes})
      if (has_input(spec, i) && spec.inputs[i].dtype != dtype_)
        throw_unsupported(spec, "initial states and P must have X's dtype");
    for (std::size_t o = 0; o < spec.outputs.size(); ++o)
      if (spec.outputs[o].present && spec.outputs[o].dtype != dtype_)
        throw_unsupported(spec, "outputs must have X's dtype");
    // The step kernel writes Y_h and Y_c at the last step, so there must be one.
    if (lstm_.steps == 0) throw_unsupported(spec, "an empty sequence (0 time steps)");

    // Workspace pieces, in order.
    x_gates_bytes_ =
        align_bytes(static_cast<std::size_t>(lstm_.steps * lstm_.batch * 4 * lstm_.hidden) * sizeof(float));
    h_gates_bytes_ = align_bytes(static_cast<std::size_t>(lstm_.batch * 4 * lstm_.hidden) * sizeof(float));
    h_bytes_ = align_bytes(static_cast<std::size_t>(lstm_.batch * lstm_.hidden) * dtype_size(dtype_));
    c_bytes_ = align_bytes(static_cast<std::size_t>(lstm_.batch * lstm_.hidden) * sizeof(float));

    device_loop_ = RnnDeviceLoop::plan(lstm_, false, false, dtype_, !lstm_.has_peepholes && !lstm_.input_forget, device,
                                       spec.persistent_grid_max_sms);
  }

  std::size_t workspace_bytes() const override {
    if (device_loop_) return device_loop_->workspace_bytes();
    return x_gates_bytes_ + h_gates_bytes_ + h_bytes_ + c_bytes_;
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
              CudaStream& stream) override {
    if (launch_device_loop(inputs, outputs, workspace, stream)) return;
    auto* scratch = static_cast<std::byte*>(workspace);
    auto* x_gates = reinterpret_cast<float*>(scratch);
    auto* h_gates = reinterpret_cast<float*>(scratch + x_gates_bytes_);
    void* h = scratch + x_gates_bytes_ + h_gates_bytes_;
    auto* c = reinterpret_cast<float*>(scratch + x_gates_bytes_ + h_gates_bytes_ + h_bytes_);
    auto output = [&](int index) { return index < static_cast<int>(outputs.size()) ? outputs[index] : nullptr; };
    void* y = output(kY);
    void* y_h = output(kYH);
    void* y_c = output(kYC);

    const std::size_t element = dtype_size(dtype_);
    const std::size_t state_elements = static_cast<std::size_t>(lstm_.batch * lstm_.hidden);
    // Rows shorter than the sequence never write their tail steps; ONNX wants zeros there.
    if (y && lstm_.has_sequence_lens)
      LOOM_CUDA_CHECK(cudaMemsetAsync(
          y, 0, static_cast<std::size_t>(lstm_.steps * lstm_.directions) * state_elements * element, stream.get()));

    const auto* w = static_cast<const std::byte*>(inputs[kW]);
    const auto* r = static_cast<const std::byte*>(inputs[kR]);
    const auto input = [&](int index) {
      return static_cast<const std::byte*>(index < static_cast<int>(inputs.size()) ? inputs[index] : nullptr);
    };
    const auto* b = input(kB);
    const void* seq_lens = input(kSequenceLens);
    const auto* initial_h = input(kInitialH);
    const auto* initial_c = input(kInitialC);
    const auto* peepholes = input(kPeepholes);
    const auto e = static_cast<std::int64_t>(element);

    for (std::int64_t d = 0; d < lstm_.directions; ++d) {
      // X·W_dᵀ for all steps: [T*B, I] x [4H, I]ᵀ -> [T*B, 4H] in f32, rows in X's layout.
      const GemmOperand x_op{inputs[kX], false, lstm_.input_size, 0};
      const GemmOperand w_op{w + d * 4 * lstm_.hidden * lstm_.input_size * e, true, lstm_.input_size, 0};
      gemm_row_major(stream, lstm_.steps * lstm_.batch, 4 * lstm_.hidden, lstm_.input_size, 1.0f, x_op, w_op, 0.0f,
                     {x_gates, 4 * lstm_.hidden, 0}, 1, dtype_, DType::f32);

      // initial_h rows of this direction are H apart (layout 0) or D*H apart (layout 1).
      if (initial_h) {
        const std::size_t row_bytes = static_cast<std::size_t>(lstm_.hidden) * element;
        const std::size_t pitch =
            static_cast<std::size_t>(lstm_.batch_major ? lstm_.directions * lstm_.hidden : lstm_.hidden) * element;
        LOOM_CUDA_CHECK(cudaMemcpy2DAsync(h, row_bytes, initial_h + lstm_.state_offset(d, 0) * e, pitch, row_bytes,
                                          static_cast<std::size_t>(lstm_.batch), cudaMemcpyDeviceToDevice,
                                          stream.get()));
      } else {
        LOOM_CUDA_CHECK(cudaMemsetAsync(h, 0, state_elements * element, stream.get()));
      }

      const RnnDirectionActivations& act = lstm_.activations[static_cast<std::size_t>(d)];
      kernels::LstmStepParams step;
      step.x_gates = x_gates;
      step.h_gates = h_gates;
      step.bias = b ? b + d * 8 * lstm_.hidden * e : nullptr;
      step.peepholes = peepholes ? peepholes + d * 3 * lstm_.hidden * e : nullptr;
      step.seq_lens = seq_lens;
      step.seq_lens_i64 = (lstm_.sequence_lens_dtype == DType::i64);
      step.initial_c = initial_c;
      step.h = h;
      step.c = c;
      step.y = y;
      step.y_h = y_h;
      step.y_c = y_c;
      step.seq_len = lstm_.steps;
      step.batch = lstm_.batch;
      step.hidden = lstm_.hidden;
      step.directions = lstm_.directions;
      step.direction = d;
      step.reverse = lstm_.reverse_only || d == 1;
      step.batch_major = lstm_.batch_major;
      step.input_forget = lstm_.input_forget;
      step.clip = lstm_.clip;
      step.f = act[0];
      step.g = act[1];
      step.h_act = act[2];
      const GemmOperand h_op{h, false, lstm_.hidden, 0};
      const GemmOperand r_op{r + d * 4 * lstm_.hidden * lstm_.hidden * e, true, lstm_.hidden, 0};
      for (std::int64_t t = 0; t < lstm_.steps; ++t) {
        // h·R_dᵀ: [B, H] x [4H, H]ᵀ -> [B, 4H] in f32.
        gemm_row_major(stream, lstm_.batch, 4 * lstm_.hidden, lstm_.hidden, 1.0f, h_op, r_op, 0.0f,
                       {h_gates, 4 * lstm_.hidden, 0}, 1, dtype_, DType::f32);
        step.step = t;
        kernels::launch_lstm_step(step, dtype_, stream.get());
      }
    }
  }

 private:
  DType dtype_;
  LstmSpec lstm_;  // attributes and shapes, checked once
  std::size_t x_gates_bytes_ = 0, h_gates_bytes_ = 0, h_bytes_ = 0, c_bytes_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_lstm_kernel(const KernelSpec& spec, CudaBackend& backend) {
  require_arity(spec, 3, 8, 0, 3);
  return std::make_unique<LstmKernel>(spec, backend.device());
}

}  // namespace loom::backend::cuda
