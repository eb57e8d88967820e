// Device pieces shared by the decode-loop kernels (decode_*.cu): a grid barrier built from a
// counter in global memory (the persistent kernels' step boundary; not cooperative grid.sync, so
// the kernels also run inside graphs and on any launch), and the LSTM/GRU cell equations in f32.
// Included only by .cu files.
#pragma once

#include <cuda/atomic>

#include "common.cuh"

namespace loom::kernels::decode {

// Every block of the grid calls this with the same `arrived` (a per-block running total, starting
// at 0 and kept by the caller) and the same `counter` (zeroed before the launch). Returns when all
// gridDim.x blocks have arrived; writes made before it by any block are visible after it to every
// block. All blocks must be resident at once: launch at most the occupancy limit of blocks.
__device__ __forceinline__ void grid_barrier(unsigned int* counter, unsigned int& arrived) {
  __syncthreads();
  arrived += gridDim.x;
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned int, cuda::thread_scope_device> ref(*counter);
    ref.fetch_add(1u, cuda::memory_order_release);
    while (ref.load(cuda::memory_order_acquire) < arrived) __nanosleep(20);
  }
  __syncthreads();
}

// Reads a host flag (mapped pinned memory) that the host may change while the kernel runs.
__device__ __forceinline__ bool flag_set(const volatile std::int32_t* flag) { return flag && *flag != 0; }

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// ONNX LSTM with default activations, pre-activations in gate order i, o, f, c (W·x + R·h + Wb + Rb).
struct LstmState {
  float h, c;
};
__device__ __forceinline__ LstmState lstm_cell(float i, float o, float f, float g, float c_prev) {
  const float c = sigmoid(f) * c_prev + sigmoid(i) * tanhf(g);
  return {sigmoid(o) * tanhf(c), c};
}

// ONNX GRU with default activations. z_pre and r_pre are the full pre-activations. For the
// candidate: x_h = Wh·x + Wbh; with linear_before_reset, h_h = Rh·h + Rbh and the candidate is
// tanh(x_h + r * h_h); without it, h_h = Rh·(r ⊙ h) + Rbh (the caller computes r first) and the
// candidate is tanh(x_h + h_h).
__device__ __forceinline__ float gru_cell(float z_pre, float r_pre, float x_h, float h_h, float h_prev,
                                          bool linear_before_reset) {
  const float z = sigmoid(z_pre);
  const float candidate = linear_before_reset ? tanhf(x_h + sigmoid(r_pre) * h_h) : tanhf(x_h + h_h);
  return (1.0f - z) * candidate + z * h_prev;
}

}  // namespace loom::kernels::decode
