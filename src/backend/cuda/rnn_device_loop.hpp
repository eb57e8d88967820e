// The ONNX LSTM and GRU ops' fast path: when a node uses nothing the device loop lacks (ONNX's
// default activations, no clip, no peepholes, no input_forget, layout 0, f32 or f16), each
// direction's whole sequence runs in one launch of the recurrent decoder's persistent kernel
// (kernels/decode_recurrent.cuh) instead of a cuBLAS product and a cell kernel per time step.
#pragma once

#include <cstddef>
#include <optional>

#include "backend/cuda/cuda_backend.hpp"
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
  // The plan for `rnn` on `device`, or nullopt when the node needs the per-step path: an attribute
  // the loop does not implement (the caller has checked those specific to its op and passes
  // `op_specific_ok`), or a hidden size or batch the device cannot co-schedule
  // (plan_recurrent_persistent's Error(unsupported) is caught here; other errors propagate).
  // Call with the device current.
  static std::optional<RnnDeviceLoop> plan(const RnnSpec& rnn, bool gru, bool linear_before_reset, DType dtype,
                                           bool op_specific_ok, int device);

  // Workspace bytes for the loop: X·Wᵀ for every step (f32), the loop's scratch and, with two
  // directions, a [T, B, H] staging buffer for Y.
  std::size_t workspace_bytes() const noexcept { return x_proj_bytes_ + scratch_bytes_ + y_stage_bytes_; }

  // Enqueues, per direction: the X·Wᵀ GEMM, then one persistent launch for every step. Y rows
  // past their sequence length are zeros; Y_h / Y_c hold each row's last state.
  void launch(const RnnDeviceLoopArgs& args, void* workspace, CudaStream& stream) const;

 private:
  RnnDeviceLoop() = default;

  RnnSpec rnn_;
  kernels::decode::RecurrentModel model_;  // weight pointers filled per launch
  kernels::decode::PersistentPlan plan_;
  std::size_t x_proj_bytes_ = 0, scratch_bytes_ = 0, y_stage_bytes_ = 0;
};

}  // namespace loom::backend::cuda
