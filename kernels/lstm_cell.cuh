// Launcher for one LSTM time step's elementwise part: gates -> new cell and hidden state.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/rnn_activation.hpp"
#include "loom/tensor.hpp"

namespace loom::kernels {

// Everything one step of one direction needs. The matrix products come in precomputed (f32);
// states and outputs use `dtype` (f32 or f16) except the cell state, kept in f32 across steps.
struct LstmStepParams {
  const float* x_gates = nullptr;   // [T*B, 4H]: X·Wᵀ for every X row (in X's layout), gate order i, o, f, c
  const float* h_gates = nullptr;   // [B, 4H]: h_prev·Rᵀ for this step
  const void* bias = nullptr;       // [8H] (Wb then Rb) of this direction, dtype; may be nullptr
  const void* peepholes = nullptr;  // [3H] (i, o, f) of this direction, dtype; may be nullptr
  const void* seq_lens = nullptr;   // [B] i32 or i64; nullptr means every row has T steps
  bool seq_lens_i64 = false;
  const void* initial_c = nullptr;  // the op's initial_c input, dtype, read at step 0; nullptr means zeros
  void* h = nullptr;                // [B, H] dtype, read and updated in place (holds initial_h before step 0)
  float* c = nullptr;               // [B, H], read and updated in place (step 0 reads initial_c instead)
  void* y = nullptr;                // the op's Y, dtype; may be nullptr
  void* y_h = nullptr;              // the op's Y_h, dtype, written at the last step; may be nullptr
  void* y_c = nullptr;              // the op's Y_c, likewise
  std::int64_t seq_len = 0, batch = 0, hidden = 0, directions = 1, direction = 0;
  std::int64_t step = 0;               // 0-based position in this direction's processing order
  bool reverse = false;                // walk each row from its last valid step back to 0
  bool batch_major = false;            // layout=1: X/Y rows are [B, T, ...], states [B, D, H]
  bool input_forget = false;           // forget gate = 1 - input gate
  float clip = 0.0f;                   // > 0: gate pre-activations clamped to [-clip, clip]
  backend::RnnActivation f, g, h_act;  // ONNX's f (gates), g (candidate), h (output)
};

// For each row b and unit j: when `step` is within row b's length, computes the gates of time
// t = step (forward) or len_b - 1 - step (reverse), updates c and h, and writes Y at t. Rows past
// their length keep their state; their Y entries are left alone (the caller zeroes Y). At the last
// step every row writes its final state to Y_h and Y_c.
void launch_lstm_step(const LstmStepParams& params, DType dtype, cudaStream_t stream);

}  // namespace loom::kernels
