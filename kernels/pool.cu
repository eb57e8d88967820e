// Pooling kernels. The window rules follow ONNX (and ONNX Runtime): a window is clipped to the
// input; with count_include_pad the divisor also counts the padding inside [−pad, in + pad_end),
// but never the extra positions that ceil_mode adds past the end padding.
#include "pool.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class T>
__global__ void pool2d_kernel(const T* x, T* y, Pool2dParams p, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t ow = i % p.out_w;
    const std::int64_t oh = (i / p.out_w) % p.out_h;
    const std::int64_t plane = i / (p.out_w * p.out_h);  // n * C + c
    const T* in = x + plane * p.in_h * p.in_w;

    const std::int64_t h0 = oh * p.stride_h - p.pad_top, w0 = ow * p.stride_w - p.pad_left;
    const std::int64_t h_end_padded = min(h0 + p.kernel_h, p.in_h + p.pad_bottom);
    const std::int64_t w_end_padded = min(w0 + p.kernel_w, p.in_w + p.pad_right);
    const std::int64_t hs = max(h0, std::int64_t{0}), ws = max(w0, std::int64_t{0});
    const std::int64_t he = min(h0 + p.kernel_h, p.in_h), we = min(w0 + p.kernel_w, p.in_w);

    float result;
    if (p.kind == PoolKind::max) {
      result = -INFINITY;  // a window wholly inside the padding has no elements: -inf
      for (std::int64_t h = hs; h < he; ++h)
        for (std::int64_t w = ws; w < we; ++w) result = fmaxf(result, to_float(in[h * p.in_w + w]));
    } else {
      float sum = 0.0f;
      for (std::int64_t h = hs; h < he; ++h)
        for (std::int64_t w = ws; w < we; ++w) sum += to_float(in[h * p.in_w + w]);
      const std::int64_t count = p.count_include_pad ? (h_end_padded - h0) * (w_end_padded - w0)
                                                     : max(he - hs, std::int64_t{0}) * max(we - ws, std::int64_t{0});
      result = count > 0 ? sum / static_cast<float>(count) : 0.0f;
    }
    y[i] = from_float<T>(result);
  }
}

template <class T>
__global__ void global_average_pool_kernel(const T* x, T* y, std::int64_t rows, std::int64_t cols) {
  __shared__ float scratch[32];
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * cols;
    float local = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) local += to_float(in[j]);
    const float total = block_sum(local, scratch);
    if (threadIdx.x == 0) y[row] = from_float<T>(total * inv_cols);
  }
}

}  // namespace

void launch_pool2d(const void* x, void* y, DType dtype, const Pool2dParams& params, cudaStream_t stream) {
  const std::int64_t n = params.batch * params.channels * params.out_h * params.out_w;
  if (n == 0) return;
  if (dtype == DType::f32)
    pool2d_kernel<float><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const float*>(x),
                                                                   static_cast<float*>(y), params, n);
  else if (dtype == DType::f16)
    pool2d_kernel<__half><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const __half*>(x),
                                                                    static_cast<__half*>(y), params, n);
  else
    throw_unhandled_dtype("launch_pool2d", dtype);
}

void launch_global_average_pool(const void* x, void* y, DType dtype, std::int64_t rows, std::int64_t cols,
                                cudaStream_t stream) {
  if (rows == 0) return;
  const int threads = cols <= 256 ? 64 : kBlockThreads;
  if (dtype == DType::f32)
    global_average_pool_kernel<float><<<row_grid(rows), threads, 0, stream>>>(static_cast<const float*>(x),
                                                                             static_cast<float*>(y), rows, cols);
  else if (dtype == DType::f16)
    global_average_pool_kernel<__half><<<row_grid(rows), threads, 0, stream>>>(static_cast<const __half*>(x),
                                                                              static_cast<__half*>(y), rows, cols);
  else
    throw_unhandled_dtype("launch_global_average_pool", dtype);
}

}  // namespace loom::kernels
