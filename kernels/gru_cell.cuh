// Launchers for one GRU time step's elementwise parts (gate order z, r, h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/rnn_activation.hpp"
#include "loom/tensor.hpp"

namespace loom::kernels {

// Everything one step of one direction needs. Matrix products come in precomputed (f32); the
// state, Y and Y_h use `dtype` (f32 or f16).
struct GruStepParams {
  const float* x_gates = nullptr;  // [T*B, 3H]: X·Wᵀ for every X row (in X's layout), no bias
  const float* h_gates = nullptr;  // [B, 3H]: h_prev·[Rz; Rr]ᵀ, then the candidate's product (see below)
  const void* bias = nullptr;      // [6H] (Wb then Rb) of this direction, dtype; may be nullptr
  const void* seq_lens = nullptr;  // [B] i32 or i64; nullptr means every row has T steps
  bool seq_lens_i64 = false;
  void* h = nullptr;        // [B, H] dtype, read and updated in place (holds initial_h before step 0)
  void* reset_h = nullptr;  // [B, H] dtype: r ⊙ h_prev, written by launch_gru_reset
  void* y = nullptr;        // the op's Y, dtype; may be nullptr
  void* y_h = nullptr;      // the op's Y_h, dtype, written at the last step; may be nullptr
  std::int64_t seq_len = 0, batch = 0, hidden = 0, directions = 1, direction = 0;
  std::int64_t step = 0;     // 0-based position in this direction's processing order
  bool reverse = false;      // walk each row from its last valid step back to 0
  bool batch_major = false;  // layout=1: X/Y rows are [B, T, ...], states [B, D, H]
  bool linear_before_reset = false;
  float clip = 0.0f;            // > 0: gate pre-activations clamped to [-clip, clip]
  backend::RnnActivation f, g;  // ONNX's f (z and r), g (candidate)
};

// linear_before_reset = 0 only, between h·[Rz; Rr]ᵀ and the candidate GEMM: reset_h = r ⊙ h for
// rows within their length (0 elsewhere).
void launch_gru_reset(const GruStepParams& params, DType dtype, cudaStream_t stream);

// The rest of the step. h_gates[:, 2H:3H] holds (r ⊙ h)·Rhᵀ (linear_before_reset = 0) or h·Rhᵀ
// (= 1). Updates h for rows within their length, writes Y at t and, at the last step, Y_h for
// every row.
void launch_gru_update(const GruStepParams& params, DType dtype, cudaStream_t stream);

}  // namespace loom::kernels
