// The ONNX LSTM and GRU ops' fast path: when a node uses nothing the device loop lacks (ONNX's
// default activations, no clip, no peepholes, no input_forget, layout 0, f32 or f16), each
// direction's whole sequence runs in one launch of the recurrent decoder's persistent kernel
// (kernels/decode_recurrent.cuh) instead of a cuBLAS product and a cell kernel per time step.
// With one direction the loop can also pause at a step and resume from it (run_resumable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/rnn_spec.hpp"
#include "decode_recurrent.cuh"
#include "loom/tensor.hpp"

namespace loom::backend::cuda {

// Where the op's inputs and outputs are, in ONNX's input order for the cell (absent ones null).
struct RnnDeviceLoopArgs {
  const void* x = nullptr;
  const void* w = nullptr;
  const void* r = nullptr;
  const void* bias = nullptr;
  const void* sequence_lens = nullptr;
  const void* initial_h = nullptr;
  const void* initial_c = nullptr;  // LSTM
  void* y = nullptr;
  void* y_h = nullptr;
  void* y_c = nullptr;  // LSTM
};

class RnnDeviceLoop {
 public:
  // The plan for `rnn` on `device`, its grid holding at most `max_sms` SMs (KernelSpec::
  // persistent_grid_max_sms; 0 = no cap), or nullopt when the node needs the per-step path: an
  // attribute the loop does not implement (the caller has checked those specific to its op and
  // passes `op_specific_ok`), or a hidden size or batch the device cannot co-schedule under the cap
  // (plan_recurrent_persistent's Error(unsupported) is caught here; other errors propagate).
  // Call with the device current.
  static std::optional<RnnDeviceLoop> plan(const RnnSpec& rnn, bool gru, bool linear_before_reset, DType dtype,
                                           bool op_specific_ok, int device, int max_sms);

  // Workspace bytes for the loop: X·Wᵀ for every step (f32), the loop's scratch, with two
  // directions a [T, B, H] staging buffer for Y, and the loop's status word (resumable runs).
  std::size_t workspace_bytes() const noexcept {
    return x_proj_bytes_ + scratch_bytes_ + y_stage_bytes_ + status_bytes_;
  }

  // Enqueues, per direction: the X·Wᵀ GEMM, then one persistent launch for every step. Y rows
  // past their sequence length are zeros; Y_h / Y_c hold each row's last state.
  void launch(const RnnDeviceLoopArgs& args, void* workspace, CudaStream& stream) const;

  // Pausing inside the loop (OpKernel::run_resumable): one direction only, iteration = loop
  // position (time step, or time len-1-p of a reverse row). Two directions would need a pause
  // point between the launches and a staged Y that survives it; they run whole instead.
  bool resumable() const noexcept { return rnn_.directions == 1 && rnn_.steps > 1; }
  std::int32_t iterations() const noexcept { return static_cast<std::int32_t>(rnn_.steps); }
  // ResumeContext::state: h [B, H] in the dtype, then (LSTM) c [B, H] in f32 — the loop keeps c in
  // f32, and rounding it at a pause would change the resumed steps. X·Wᵀ is recomputed on resume.
  std::size_t resume_state_bytes() const noexcept;
  // As launch() for the single direction, from loop position context.start_iteration (state from
  // context.state when above 0, else the op's initial states), pausing where the kernel sees
  // context.pause set; the final state goes to context.state, then a small kernel writes
  // *context.progress and, only when the run finished, Y_h / Y_c. Y is not cleared on resume: the
  // earlier runs wrote its first positions. Device current, launch error checked and reported as
  // `kernel`'s (as CudaOpKernel does for run()).
  void run_resumable(const OpKernel& kernel, const RnnDeviceLoopArgs& args, void* workspace,
                     const ResumeContext& context, Stream& stream) const;

 private:
  RnnDeviceLoop() = default;

  // Direction d's X·W_dᵀ into the workspace's x_proj, and the model and run for its launch as
  // launch() makes them (output, initial and final states at the op's tensors; no pause).
  void prepare_direction(const RnnDeviceLoopArgs& args, std::int64_t d, void* workspace, CudaStream& stream,
                         kernels::decode::RecurrentModel& model, kernels::decode::RecurrentRun& run) const;

  RnnSpec rnn_;
  kernels::decode::RecurrentModel model_;  // weight pointers filled per launch
  kernels::decode::PersistentPlan plan_;
  std::size_t x_proj_bytes_ = 0, scratch_bytes_ = 0, y_stage_bytes_ = 0, status_bytes_ = 0;
};

// The op's pointers in ONNX's positions, which LSTM and GRU share: inputs X, W, R, B,
// sequence_lens, initial_h, initial_c (LSTM) and outputs Y, Y_h, Y_c (LSTM); absent ones null.
RnnDeviceLoopArgs rnn_loop_args(std::span<const void* const> inputs, std::span<void* const> outputs);

// What the CUDA LSTM and GRU kernels share: the device loop when the node runs on it (set by the
// derived constructor), pausing inside it (one direction only; iteration t is loop position t),
// and its launch. Nodes on the per-step path are not resumable.
class RnnLoopKernel : public CudaOpKernel {
 public:
  using CudaOpKernel::CudaOpKernel;
  bool resumable() const noexcept override { return device_loop_ && device_loop_->resumable(); }
  std::size_t resume_state_bytes() const override { return resumable() ? device_loop_->resume_state_bytes() : 0; }
  std::int32_t resume_iterations() const override { return resumable() ? device_loop_->iterations() : 0; }

 protected:
  void run_resumable_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                          const ResumeContext& context, Stream& stream) override {
    device_loop_->run_resumable(*this, rnn_loop_args(inputs, outputs), workspace, context, stream);
  }
  // Launches the whole sequence on the device loop; false (nothing done) when the node runs the
  // per-step path.
  bool launch_device_loop(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                          CudaStream& stream) const {
    if (!device_loop_) return false;
    device_loop_->launch(rnn_loop_args(inputs, outputs), workspace, stream);
    return true;
  }

  std::optional<RnnDeviceLoop> device_loop_;  // set when the node runs the device loop
};

}  // namespace loom::backend::cuda
