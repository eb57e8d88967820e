// Pad: one output element per thread, the source index worked out per axis.
#include "pad.cuh"

#include <string>

#include "common.cuh"

namespace loom::kernels {
namespace {

// Input index of output index `o` along one axis, or -1 for the constant (as pad_source_index on
// the host).
__device__ __forceinline__ std::int64_t source_index(std::int64_t o, std::int64_t pad_begin, std::int64_t in,
                                                     PadKernelMode mode) {
  std::int64_t i = o - pad_begin;
  if (i >= 0 && i < in) return i;
  if (mode == PadKernelMode::constant) return -1;
  if (mode == PadKernelMode::edge) return i < 0 ? 0 : in - 1;
  if (in == 1) return 0;
  const std::int64_t period = 2 * (in - 1);
  i %= period;
  if (i < 0) i += period;
  return i < in ? i : period - i;
}

template <class T>
__global__ void pad_kernel(const T* x, const T* value, T* y, PadLayout layout, std::int64_t n) {
  T constant;
  if (value) {
    constant = *value;
  } else {
    static_assert(sizeof(T) <= sizeof(std::uint64_t));
    memcpy(&constant, &layout.value_bits, sizeof(T));
  }
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    std::int64_t rest = i, source = 0, in_stride = 1;
    bool inside = true;
    for (int a = layout.rank - 1; a >= 0; --a) {
      const std::int64_t o = rest % layout.out[a];
      rest /= layout.out[a];
      const std::int64_t s = source_index(o, layout.pad_begin[a], layout.in[a], layout.mode);
      if (s < 0) {
        inside = false;
        break;
      }
      source += s * in_stride;
      in_stride *= layout.in[a];
    }
    y[i] = inside ? x[source] : constant;
  }
}

template <class T>
void launch_typed(const void* x, const void* value, void* y, const PadLayout& layout, std::int64_t n,
                  cudaStream_t stream) {
  pad_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(value),
                                                           static_cast<T*>(y), layout, n);
}

}  // namespace

void launch_pad(const void* x, const void* value, void* y, std::size_t element_bytes, const PadLayout& layout,
                cudaStream_t stream) {
  std::int64_t n = 1;
  for (int a = 0; a < layout.rank; ++a) n *= layout.out[a];
  if (n == 0) return;
  switch (element_bytes) {
    case 1:
      launch_typed<bits_of<1>::type>(x, value, y, layout, n, stream);
      break;
    case 2:
      launch_typed<bits_of<2>::type>(x, value, y, layout, n, stream);
      break;
    case 4:
      launch_typed<bits_of<4>::type>(x, value, y, layout, n, stream);
      break;
    case 8:
      launch_typed<bits_of<8>::type>(x, value, y, layout, n, stream);
      break;
    default:
      throw Error(ErrorCode::internal, "launch_pad: element size " + std::to_string(element_bytes) + " bytes");
  }
}

}  // namespace loom::kernels
