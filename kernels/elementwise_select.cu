// Clip and Where kernels. Where only moves elements, so one kernel per element size serves every
// dtype.
#include "elementwise_select.cuh"

#include <limits>
#include <type_traits>

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class T, class C>
__global__ void clip_kernel(const T* x, const T* low, const T* high, T* y, std::int64_t n) {
  C lo, hi;
  if constexpr (std::is_floating_point_v<C>) {
    lo = low ? to_float(*low) : -INFINITY;
    hi = high ? to_float(*high) : INFINITY;
  } else {
    lo = low ? *low : std::numeric_limits<C>::lowest();
    hi = high ? *high : std::numeric_limits<C>::max();
  }
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    C v;
    if constexpr (std::is_floating_point_v<C>)
      v = to_float(x[i]);
    else
      v = x[i];
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    if constexpr (std::is_floating_point_v<C>)
      y[i] = from_float<T>(v);
    else
      y[i] = v;
  }
}

template <class T>
__global__ void where_kernel(const std::uint8_t* condition, const T* x, const T* y, T* out, WhereLayout layout,
                             std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    std::int64_t rest = i, offsets[3] = {0, 0, 0};
#pragma unroll
    for (int d = kMaxWhereRank - 1; d >= 0; --d) {
      if (d >= layout.rank) continue;
      const std::int64_t coord = rest % layout.dims[d];
      rest /= layout.dims[d];
#pragma unroll
      for (int k = 0; k < 3; ++k) offsets[k] += coord * layout.strides[k][d];
    }
    out[i] = condition[offsets[0]] ? x[offsets[1]] : y[offsets[2]];
  }
}

template <class T, class C>
void launch_clip_typed(const void* x, const void* low, const void* high, void* y, std::int64_t n, cudaStream_t stream) {
  clip_kernel<T, C><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(low),
                                                               static_cast<const T*>(high), static_cast<T*>(y), n);
}

template <class T>
void launch_where_sized(const void* condition, const void* x, const void* y, void* out, const WhereLayout& layout,
                        std::int64_t n, cudaStream_t stream) {
  where_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const std::uint8_t*>(condition),
                                                             static_cast<const T*>(x), static_cast<const T*>(y),
                                                             static_cast<T*>(out), layout, n);
}

}  // namespace

void launch_clip(const void* x, const void* low, const void* high, void* y, DType dtype, std::size_t n,
                 cudaStream_t stream) {
  if (n == 0) return;
  const auto count = static_cast<std::int64_t>(n);
  switch (dtype) {
    case DType::f32:
      return launch_clip_typed<float, float>(x, low, high, y, count, stream);
    case DType::f16:
      return launch_clip_typed<__half, float>(x, low, high, y, count, stream);
    case DType::i32:
      return launch_clip_typed<std::int32_t, std::int32_t>(x, low, high, y, count, stream);
    case DType::i64:
      return launch_clip_typed<std::int64_t, std::int64_t>(x, low, high, y, count, stream);
    default:
      throw_unhandled_dtype("launch_clip", dtype);
  }
}

void launch_where(const void* condition, const void* x, const void* y, void* out, std::size_t element_bytes,
                  const WhereLayout& layout, cudaStream_t stream) {
  std::int64_t n = 1;
  for (int d = 0; d < layout.rank; ++d) n *= layout.dims[d];
  if (n == 0) return;
  switch (element_bytes) {
    case 1:
      return launch_where_sized<bits_of<1>::type>(condition, x, y, out, layout, n, stream);
    case 2:
      return launch_where_sized<bits_of<2>::type>(condition, x, y, out, layout, n, stream);
    case 4:
      return launch_where_sized<bits_of<4>::type>(condition, x, y, out, layout, n, stream);
    case 8:
      return launch_where_sized<bits_of<8>::type>(condition, x, y, out, layout, n, stream);
    default:
      throw Error(ErrorCode::internal, "launch_where: element size " + std::to_string(element_bytes));
  }
}

}  // namespace loom::kernels
