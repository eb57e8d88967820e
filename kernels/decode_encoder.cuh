// Kernels of the encoder-stack decoder (backend/cuda/decode/cuda_encoder.cpp): pre-norm residual
// feed-forward blocks looped over the stack, x ← x + W2 · relu(W1 · layernorm(x) + b1) + b2, with a
// pause check after each block. Plain C++ view for the host; every kernel takes one
// EncoderKernelArgs by value.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels::decode {

// One block's weights on the device, in the decoder's dtype.
struct EncoderBlockWeights {
  const void* norm_scale = nullptr;  // [width]
  const void* norm_bias = nullptr;   // [width]
  const void* w1 = nullptr;          // [ff, width]
  const void* b1 = nullptr;          // [ff]
  const void* w2 = nullptr;          // [width, ff]
  const void* b2 = nullptr;          // [width]
};

struct EncoderModel {
  int width = 0, ff = 0, blocks = 0;
  float epsilon = 1e-5f;
  const EncoderBlockWeights* block = nullptr;  // device array [blocks]
};

// One sample: the caller's buffers and the run's scratch (device memory).
struct EncoderRun {
  int batch = 0;
  int start = 0, count = 0;                      // run blocks [start, count)
  const void* input = nullptr;                   // [batch, width]; copied to output first unless equal
  void* output = nullptr;                        // [batch, width]: x, updated in place block by block
  const volatile std::int32_t* pause = nullptr;  // host flag (mapped), or null
  std::int32_t* status = nullptr;                // RunStatus: steps_run, paused
  // scratch
  float* normalized = nullptr;   // [batch, width]
  float* hidden = nullptr;       // [batch, ff]
  std::int32_t* loop = nullptr;  // [0] the block about to run, [1] 1 while the loop goes on, [2] pause decision
  unsigned* barrier = nullptr;   // persistent: the grid barrier's counter, zero before the launch
};

struct EncoderKernelArgs {
  EncoderModel model;
  EncoderRun run;                             // the sample, unless run_on_device is set
  const EncoderRun* run_on_device = nullptr;  // graph: the sample, copied in before each launch
  cudaGraphConditionalHandle condition = 0;   // graph: the WHILE node's handle
  bool set_condition = false;
};

enum class EncoderKernel {
  persistent,  // the whole loop; grid ≤ the co-resident limit, barrier counter zeroed
  init,        // input → output, status, loop state; any grid
  norm,        // layernorm of every row; any grid (one warp per row)
  expand,      // relu(W1 · normalized + b1); any grid (one warp per W1 row)
  contract,    // x += W2 · hidden + b2; any grid (one warp per W2 row)
  advance,     // one thread: counts the block, checks the pause flag, decides whether to go on
};

constexpr int kEncoderThreads = 256;  // threads per block of every encoder kernel

// The kernel function for `dtype` (f32 or f16). Throws Error(internal) for another dtype.
const void* encoder_kernel(EncoderKernel which, DType dtype);

}  // namespace loom::kernels::decode
