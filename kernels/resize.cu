// Resize: one output element per thread, summing its neighbours over every axis's taps.
#include "resize.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class T>
__global__ void resize_kernel(const T* x, T* y, ResizeLayout l, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    std::int64_t o[kMaxResizeRank];
    std::int64_t rest = i;
    for (int a = l.rank - 1; a >= 0; --a) {
      o[a] = rest % l.out[a];
      rest /= l.out[a];
    }
    int tap[kMaxResizeRank] = {};
    float sum = 0.0f;
    for (;;) {
      std::int64_t offset = 0;
      float weight = 1.0f;
      for (int a = 0; a < l.rank; ++a) {
        const std::int64_t k = l.offset[a] + o[a] * l.taps[a] + tap[a];
        offset += l.index[k] * l.in_stride[a];
        weight *= l.weight[k];
      }
      sum += weight * to_float(x[offset]);
      int a = l.rank;
      while (a > 0 && ++tap[a - 1] == l.taps[a - 1]) tap[--a] = 0;
      if (a == 0) break;
    }
    y[i] = from_float<T>(sum);
  }
}

}  // namespace

void launch_resize(const void* x, void* y, DType dtype, const ResizeLayout& layout, cudaStream_t stream) {
  std::int64_t n = 1;
  for (int a = 0; a < layout.rank; ++a) n *= layout.out[a];
  if (n == 0) return;
  if (dtype == DType::f32)
    resize_kernel<float>
        <<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), layout, n);
  else if (dtype == DType::f16)
    resize_kernel<__half>
        <<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), layout, n);
  else
    throw_unhandled_dtype("launch_resize", dtype);
}

}  // namespace loom::kernels
