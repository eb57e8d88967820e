// Kernels of the greedy autoregressive decoder (backend/cuda/decode/cuda_greedy.cpp): token → embedding →
// stacked LSTM/GRU cells → output projection → argmax → next token, each batch row stopping on the
// end token or the maximum length. Plain C++ view for the host: parameter structs and the kernel
// functions, which the host launches with cudaLaunchKernel or puts into graph nodes. Every kernel
// takes one GreedyKernelArgs by value.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels::decode {

// One cell layer on the device, in the decoder's dtype (ONNX layout, gates i,o,f,c or z,r,h).
struct GreedyLayer {
  const void* w = nullptr;     // [gates * hidden, input]
  const void* r = nullptr;     // [gates * hidden, hidden]
  const void* bias = nullptr;  // [2 * gates * hidden]: Wb then Rb
  int input = 0;
  // Persistent kernel: a block keeps the rows of its first `*_units_cached` hidden units (all
  // gates, unit-major: [unit][gate][row]) at byte `*_offset` of its dynamic shared memory.
  int w_units_cached = 0, r_units_cached = 0;
  int w_offset = 0, r_offset = 0;
};

// The decoder, fixed at registration. Pointers are device memory in the decoder's dtype.
struct GreedyModel {
  bool gru = false;
  bool linear_before_reset = false;
  int layers = 0, hidden = 0, input = 0, vocab = 0;
  int end_token = -1;
  const GreedyLayer* layer = nullptr;     // device array [layers]
  const void* embedding = nullptr;        // [vocab, input]
  const void* projection = nullptr;       // [vocab, hidden]
  const void* projection_bias = nullptr;  // [vocab]
  // How the kernel splits the work: hidden units per block in the cell phases, vocabulary rows per
  // block in the projection, and the blocks that write argmax partials (the projection's grid).
  int units_per_block = 1;
  int vocab_per_block = 1;
  int partial_blocks = 1;
};

// One sample: the caller's buffers and the run's scratch (device memory).
struct GreedyRun {
  int batch = 0, steps = 0;
  const std::int32_t* first_tokens = nullptr;  // [batch]
  std::int32_t* tokens = nullptr;              // [steps, batch] output
  std::int32_t* out_lengths = nullptr;         // [batch] or null
  const void* initial_h = nullptr;             // [layers, batch, hidden] or null (zeros)
  const void* initial_c = nullptr;
  void* final_h = nullptr;  // or null
  void* final_c = nullptr;
  std::int32_t* status = nullptr;  // RunStatus: steps_run, paused
  // scratch
  void* h = nullptr;                   // [2, layers, batch, hidden]: step t reads half t % 2, writes the other
  void* c = nullptr;                   // [layers, batch, hidden] (LSTM)
  float* reset_h = nullptr;            // [batch, hidden] (GRU without linear_before_reset): r ⊙ h
  float* kept_gates = nullptr;         // [batch, 2, hidden] (same): z and W_h·x + Wb_h across the reset
  std::int32_t* next_token = nullptr;  // [batch]
  std::int32_t* alive = nullptr;       // [batch] 1 while the row runs
  float* partial_logit = nullptr;      // [partial_blocks, batch]
  std::int32_t* partial_token = nullptr;
  std::int32_t* loop = nullptr;  // [0] the step about to run, [1] 1 while the loop goes on
  unsigned* barrier = nullptr;   // persistent: the grid barrier's counter, zero before the launch
};

struct GreedyKernelArgs {
  GreedyModel model;
  GreedyRun run;                             // the sample, unless run_on_device is set
  const GreedyRun* run_on_device = nullptr;  // graph: the sample, copied in before each launch
  int layer = 0;                             // cell kernel: which layer
  int part = 0;  // cell kernel, GRU without linear_before_reset: 0 gates and r ⊙ h, 1 the rest
  cudaGraphConditionalHandle condition = 0;  // graph: the WHILE node's handle
  bool set_condition = false;
};

enum class GreedyKernel {
  persistent,  // the whole loop in one launch; grid ≤ the co-resident limit, barrier counter zeroed
  init,        // outputs to -1, state from initial_h/c, first tokens; any grid
  cell,        // one layer (or one part of a GRU layer) for one step; grid ceil(hidden / units_per_block)
  projection,  // logits and per-block argmax partials; grid partial_blocks
  advance,     // one block: picks the tokens, counts the step, decides whether the loop goes on
  finish,      // final_h / final_c; any grid
};

constexpr int kGreedyThreads = 256;  // threads per block of every greedy kernel

// The kernel function for `dtype` (f32 or f16), for cudaLaunchKernel and graph kernel nodes.
// Throws Error(internal) for another dtype.
const void* greedy_kernel(GreedyKernel which, DType dtype);

}  // namespace loom::kernels::decode
