// The encoder stack's kernels. The three phases of a block (layernorm, W1, W2) are device functions
// over the whole grid's warps; the persistent kernel runs them all with grid barriers between, the
// step kernels one per launch (graph WHILE body, or the host loop).
#include "decode_encoder.cuh"

#include "decode_common.cuh"
#include "decode_rows.cuh"

namespace loom::kernels::decode {
namespace {

static_assert(kEncoderThreads == kLoopThreads, "the encoder kernels use the shared loop block size");

__device__ __forceinline__ EncoderRun run_of(const EncoderKernelArgs& a) {
  return a.run_on_device ? *a.run_on_device : a.run;
}

__device__ __forceinline__ int global_warp() { return static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32); }
__device__ __forceinline__ int grid_warps() { return static_cast<int>(gridDim.x * blockDim.x / 32); }

template <class T>
__device__ void copy_input(const EncoderRun& r, int width) {
  if (r.input == r.output) return;
  const std::int64_t n = static_cast<std::int64_t>(r.batch) * width;
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride())
    static_cast<T*>(r.output)[i] = static_cast<const T*>(r.input)[i];
}

// normalized[b] = layernorm(x[b]) · scale + bias, biased variance, one warp per row.
template <class T>
__device__ void norm_phase(const EncoderModel& m, const EncoderRun& r, const EncoderBlockWeights& w) {
  const int lane = threadIdx.x & 31, n = m.width;
  const T* scale = static_cast<const T*>(w.norm_scale);
  const T* shift = static_cast<const T*>(w.norm_bias);
  for (int b = global_warp(); b < r.batch; b += grid_warps()) {
    const T* x = static_cast<const T*>(r.output) + static_cast<std::int64_t>(b) * n;
    float sum = 0.0f;
    for (int i = lane; i < n; i += 32) sum += load_shared_value(x + i);
    const float mean = warp_sum(sum) / static_cast<float>(n);
    float squares = 0.0f;
    for (int i = lane; i < n; i += 32) {
      const float d = load_shared_value(x + i) - mean;
      squares += d * d;
    }
    const float inv_std = 1.0f / sqrtf(warp_sum(squares) / static_cast<float>(n) + m.epsilon);
    float* out = r.normalized + static_cast<std::int64_t>(b) * n;
    for (int i = lane; i < n; i += 32)
      out[i] = (load_shared_value(x + i) - mean) * inv_std * to_float(scale[i]) + to_float(shift[i]);
  }
}

// out[b][row] = finish(b, row, weights[row] · in[b]) for every row of a [rows, n] matrix, one warp
// per row, the batch in chunks so each weight row is read once.
template <class T, class Finish>
__device__ void rows_phase(const T* weights, int rows, int n, const float* in, int batch, Finish&& finish) {
  const int lane = threadIdx.x & 31;
  for (int row = global_warp(); row < rows; row += grid_warps()) {
    const T* w = weights + static_cast<std::int64_t>(row) * n;
    const auto chunk = [&]<int K>(int first) {
      RowSet<float, K> xs;
#pragma unroll
      for (int k = 0; k < K; ++k) xs.rows[k] = in + static_cast<std::int64_t>(first + k) * n;
      float acc[K];
#pragma unroll
      for (int k = 0; k < K; ++k) acc[k] = 0.0f;
      accumulate_row(w, xs, n, acc);
      warp_sum_all(acc);
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (lane == k) finish(first + k, row, acc[k]);
    };
    for_row_chunks(batch, chunk);
  }
}

template <class T>
__device__ void expand_phase(const EncoderModel& m, const EncoderRun& r, const EncoderBlockWeights& w) {
  const T* b1 = static_cast<const T*>(w.b1);
  float* hidden = r.hidden;
  const int ff = m.ff;
  rows_phase(static_cast<const T*>(w.w1), ff, m.width, r.normalized, r.batch, [&](int b, int row, float sum) {
    hidden[static_cast<std::int64_t>(b) * ff + row] = fmaxf(sum + to_float(b1[row]), 0.0f);
  });
}

template <class T>
__device__ void contract_phase(const EncoderModel& m, const EncoderRun& r, const EncoderBlockWeights& w) {
  const T* b2 = static_cast<const T*>(w.b2);
  T* x = static_cast<T*>(r.output);
  const int width = m.width;
  rows_phase(static_cast<const T*>(w.w2), width, m.ff, r.hidden, r.batch, [&](int b, int row, float sum) {
    const std::int64_t at = static_cast<std::int64_t>(b) * width + row;
    x[at] = from_float<T>(load_shared_value(x + at) + (sum + to_float(b2[row])));
  });
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) encoder_persistent_kernel(EncoderKernelArgs a) {
  const EncoderModel& m = a.model;
  const EncoderRun r = a.run;
  unsigned arrived = 0;
  copy_input<T>(r, m.width);
  grid_barrier(r.barrier, arrived);
  int k = r.start;
  bool paused = false;
  while (k < r.count) {
    const EncoderBlockWeights w = m.block[k];
    norm_phase<T>(m, r, w);
    grid_barrier(r.barrier, arrived);
    expand_phase<T>(m, r, w);
    grid_barrier(r.barrier, arrived);
    contract_phase<T>(m, r, w);
    ++k;
    // One thread reads the host flag and publishes its decision before the barrier, so every block
    // leaves (or goes on) together. The slot is rewritten only after two more barriers.
    if (blockIdx.x == 0 && threadIdx.x == 0)
      *reinterpret_cast<volatile std::int32_t*>(r.loop + 2) = k < r.count && flag_set(r.pause) ? 1 : 0;
    grid_barrier(r.barrier, arrived);
    if (__ldcg(r.loop + 2) != 0) {
      paused = true;
      break;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    r.status[0] = k - r.start > 0 ? k - r.start : 0;
    r.status[1] = paused ? 1 : 0;
  }
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) encoder_init_kernel(EncoderKernelArgs a) {
  const EncoderRun r = run_of(a);
  copy_input<T>(r, a.model.width);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const bool go_on = r.start < r.count;
    r.loop[0] = r.start;
    r.loop[1] = go_on ? 1 : 0;
    r.status[0] = 0;
    r.status[1] = 0;
    if (a.set_condition) cudaGraphSetConditional(a.condition, go_on ? 1u : 0u);
  }
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) encoder_norm_kernel(EncoderKernelArgs a) {
  const EncoderRun r = run_of(a);
  norm_phase<T>(a.model, r, a.model.block[r.loop[0]]);
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) encoder_expand_kernel(EncoderKernelArgs a) {
  const EncoderRun r = run_of(a);
  expand_phase<T>(a.model, r, a.model.block[r.loop[0]]);
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) encoder_contract_kernel(EncoderKernelArgs a) {
  const EncoderRun r = run_of(a);
  contract_phase<T>(a.model, r, a.model.block[r.loop[0]]);
}

__global__ void encoder_advance_kernel(EncoderKernelArgs a) {
  const EncoderRun r = run_of(a);
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const int k = r.loop[0] + 1;
  const bool paused = k < r.count && flag_set(r.pause);
  const bool go_on = k < r.count && !paused;
  r.loop[0] = k;
  r.loop[1] = go_on ? 1 : 0;
  r.status[0] = k - r.start;
  r.status[1] = paused ? 1 : 0;
  if (a.set_condition) cudaGraphSetConditional(a.condition, go_on ? 1u : 0u);
}

template <class T>
const void* kernel_of(EncoderKernel which) {
  switch (which) {
    case EncoderKernel::persistent:
      return reinterpret_cast<const void*>(&encoder_persistent_kernel<T>);
    case EncoderKernel::init:
      return reinterpret_cast<const void*>(&encoder_init_kernel<T>);
    case EncoderKernel::norm:
      return reinterpret_cast<const void*>(&encoder_norm_kernel<T>);
    case EncoderKernel::expand:
      return reinterpret_cast<const void*>(&encoder_expand_kernel<T>);
    case EncoderKernel::contract:
      return reinterpret_cast<const void*>(&encoder_contract_kernel<T>);
    case EncoderKernel::advance:
      return reinterpret_cast<const void*>(&encoder_advance_kernel);
  }
  return nullptr;
}

}  // namespace

const void* encoder_kernel(EncoderKernel which, DType dtype) {
  if (dtype == DType::f32) return kernel_of<float>(which);
  if (dtype == DType::f16) return kernel_of<__half>(which);
  throw_unhandled_dtype("encoder_kernel", dtype);
}

}  // namespace loom::kernels::decode
