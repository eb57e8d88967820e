// Launcher for one LSTM time step's elementwise part: gates -> new cell and hidden state.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// Everything one step of one direction needs. The matrix products come in precomputed (f32);
// states and outputs use `dtype` (f32 or f16) except the cell state, kept in f32 across steps.
struct LstmStepParams {
  const float* x_gates = nullptr;        // [T, B, 4H]: X·Wᵀ for every time step, gate order i, o, f, c
  const float* h_gates = nullptr;        // [B, 4H]: h_prev·Rᵀ for this step
  const void* bias = nullptr;            // [8H] (Wb then Rb) of this direction, dtype; may be nullptr
  const void* seq_lens = nullptr;        // [B] i32 or i64; nullptr means every row has T steps
  bool seq_lens_i64 = false;
  void* h = nullptr;                     // [B, H] dtype, read and updated in place
  float* c = nullptr;                    // [B, H], read and updated in place
  void* y = nullptr;                     // [T, D, B, H] dtype; may be nullptr
  std::int64_t seq_len = 0, batch = 0, hidden = 0, directions = 1, direction = 0;
  std::int64_t step = 0;                 // 0-based position in this direction's processing order
  bool reverse = false;                  // walk each row from its last valid step back to 0
};

// For each row b and unit j: when `step` is within row b's length, computes the gates of time
// t = step (forward) or len_b - 1 - step (reverse), updates c and h, and writes y[t, direction, b].
// Rows past their length keep their state; their y entries are left alone (the caller zeroes y).
void launch_lstm_step(const LstmStepParams& params, DType dtype, cudaStream_t stream);

}  // namespace loom::kernels
