// Float conversion kernels: every pair of f32, f16 and bf16, going through f32.
#include "convert.cuh"

#include <cuda_bf16.h>

#include "common.cuh"

namespace loom::kernels {
namespace {

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T narrow(float v);
template <>
__device__ __forceinline__ float narrow<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class Src, class Dst>
__global__ void convert_kernel(const Src* __restrict__ src, Dst* __restrict__ dst, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) dst[i] = narrow<Dst>(widen(src[i]));
}

template <class Src, class Dst>
void launch_typed(const void* src, void* dst, std::int64_t n, cudaStream_t stream) {
  convert_kernel<Src, Dst>
      <<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const Src*>(src), static_cast<Dst*>(dst), n);
}

template <class Src>
void launch_from(const void* src, void* dst, DType dst_dtype, std::int64_t n, cudaStream_t stream) {
  switch (dst_dtype) {
    case DType::f32:
      return launch_typed<Src, float>(src, dst, n, stream);
    case DType::f16:
      return launch_typed<Src, __half>(src, dst, n, stream);
    case DType::bf16:
      return launch_typed<Src, __nv_bfloat16>(src, dst, n, stream);
    default:
      throw_unhandled_dtype("launch_convert", dst_dtype);
  }
}

}  // namespace

void launch_convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t count,
                    cudaStream_t stream) {
  if (count == 0) return;
  const auto n = static_cast<std::int64_t>(count);
  switch (src_dtype) {
    case DType::f32:
      return launch_from<float>(src, dst, dst_dtype, n, stream);
    case DType::f16:
      return launch_from<__half>(src, dst, dst_dtype, n, stream);
    case DType::bf16:
      return launch_from<__nv_bfloat16>(src, dst, dst_dtype, n, stream);
    default:
      throw_unhandled_dtype("launch_convert", src_dtype);
  }
}

}  // namespace loom::kernels
