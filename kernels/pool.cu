// Pooling kernels. The window rules follow ONNX (and ONNX Runtime): a window is clipped to the
// input; with count_include_pad the divisor also counts the padding inside [-pad_begin, in +
// pad_end), but never the extra positions that ceil_mode adds past the end padding.
#include "pool.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

// Along one axis: the taps inside the input [first, last) and those inside the padded input.
struct AxisWindow {
  std::int64_t start, first, last, padded;
};

__device__ __forceinline__ AxisWindow axis_window(const PoolParams& p, int a, std::int64_t o) {
  AxisWindow w;
  w.start = o * p.stride[a] - p.pad_begin[a];
  w.first = p.kernel[a];
  w.last = 0;
  w.padded = 0;
  for (std::int64_t t = 0; t < p.kernel[a]; ++t) {
    const std::int64_t pos = w.start + t * p.dilation[a];
    if (pos >= 0 && pos < p.in[a]) {
      w.first = min(w.first, t);
      w.last = t + 1;
    }
    if (pos >= -p.pad_begin[a] && pos < p.in[a] + p.pad_end[a]) ++w.padded;
  }
  if (w.last == 0) w.first = 0;
  return w;
}

template <class T>
__global__ void pool_kernel(const T* x, T* y, PoolParams p, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t ow = i % p.out[2];
    const std::int64_t oh = (i / p.out[2]) % p.out[1];
    const std::int64_t od = (i / (p.out[2] * p.out[1])) % p.out[0];
    const std::int64_t plane = i / (p.out[2] * p.out[1] * p.out[0]);
    const T* in = x + plane * p.in[0] * p.in[1] * p.in[2];
    const AxisWindow wd = axis_window(p, 0, od), wh = axis_window(p, 1, oh), ww = axis_window(p, 2, ow);
    float max_value = -INFINITY;  // a window wholly inside the padding has no elements: -inf
    float sum = 0.0f;
    for (std::int64_t td = wd.first; td < wd.last; ++td)
      for (std::int64_t th = wh.first; th < wh.last; ++th) {
        const std::int64_t row = ((wd.start + td * p.dilation[0]) * p.in[1] + wh.start + th * p.dilation[1]) * p.in[2];
        for (std::int64_t tw = ww.first; tw < ww.last; ++tw) {
          const float v = to_float(in[row + ww.start + tw * p.dilation[2]]);
          max_value = fmaxf(max_value, v);
          sum += v;
        }
      }
    float result = max_value;
    if (p.kind == PoolKind::average) {
      const std::int64_t count = p.count_include_pad
                                     ? wd.padded * wh.padded * ww.padded
                                     : (wd.last - wd.first) * (wh.last - wh.first) * (ww.last - ww.first);
      result = count > 0 ? sum / static_cast<float>(count) : 0.0f;
    }
    y[i] = from_float<T>(result);
  }
}

template <class T>
__global__ void global_pool_kernel(const T* x, T* y, PoolKind kind, std::int64_t rows, std::int64_t cols) {
  __shared__ float scratch[32];
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * cols;
    if (kind == PoolKind::max) {
      float local = -INFINITY;
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) local = fmaxf(local, to_float(in[j]));
      const float total = block_max(local, scratch);
      if (threadIdx.x == 0) y[row] = from_float<T>(total);
    } else {
      float local = 0.0f;
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) local += to_float(in[j]);
      const float total = block_sum(local, scratch);
      if (threadIdx.x == 0) y[row] = from_float<T>(total * inv_cols);
    }
  }
}

}  // namespace

void launch_pool(const void* x, void* y, DType dtype, const PoolParams& params, cudaStream_t stream) {
  const std::int64_t n = params.planes * params.out[0] * params.out[1] * params.out[2];
  if (n == 0) return;
  if (dtype == DType::f32)
    pool_kernel<float>
        <<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), params, n);
  else if (dtype == DType::f16)
    pool_kernel<__half>
        <<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), params, n);
  else
    throw_unhandled_dtype("launch_pool", dtype);
}

void launch_global_pool(const void* x, void* y, DType dtype, PoolKind kind, std::int64_t rows, std::int64_t cols,
                        cudaStream_t stream) {
  if (rows == 0) return;
  const int threads = cols <= 256 ? 64 : kBlockThreads;
  if (dtype == DType::f32)
    global_pool_kernel<float><<<row_grid(rows), threads, 0, stream>>>(static_cast<const float*>(x),
                                                                      static_cast<float*>(y), kind, rows, cols);
  else if (dtype == DType::f16)
    global_pool_kernel<__half><<<row_grid(rows), threads, 0, stream>>>(static_cast<const __half*>(x),
                                                                       static_cast<__half*>(y), kind, rows, cols);
  else
    throw_unhandled_dtype("launch_global_pool", dtype);
}

}  // namespace loom::kernels
