// Range kernel: one thread per element.
#include "common.cuh"
#include "range.cuh"

namespace loom::kernels {
namespace {

// Rounded like the CPU backend (multiply, then add), not fused into one FMA.
template <class T>
__device__ __forceinline__ T range_at(T first, T step, std::int64_t i) {
  return static_cast<T>(first + static_cast<T>(i) * step);
}
template <>
__device__ __forceinline__ float range_at<float>(float first, float step, std::int64_t i) {
  return __fadd_rn(first, __fmul_rn(static_cast<float>(i), step));
}

template <class T>
__global__ void range_kernel(const T* start, const T* delta, T* y, std::int64_t n) {
  const T first = *start, step = *delta;
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) y[i] = range_at(first, step, i);
}

template <class T>
void launch_typed(const void* start, const void* delta, void* y, std::int64_t n, cudaStream_t stream) {
  range_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const T*>(start), static_cast<const T*>(delta),
                                                             static_cast<T*>(y), n);
}

}  // namespace

void launch_range(const void* start, const void* delta, DType dtype, void* y, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  switch (dtype) {
    case DType::f32:
      return launch_typed<float>(start, delta, y, count, stream);
    case DType::i64:
      return launch_typed<std::int64_t>(start, delta, y, count, stream);
    case DType::i32:
      return launch_typed<std::int32_t>(start, delta, y, count, stream);
    default:
      throw_unhandled_dtype("launch_range", dtype);
  }
}

}  // namespace loom::kernels
