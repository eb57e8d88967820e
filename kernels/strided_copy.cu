// The N-d strided copy kernel: one thread per element, index decomposed over up to 8 dims.
#include "strided_copy.cuh"

#include <string>

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class Bits>
__global__ void strided_copy_kernel(const Bits* src, Bits* dst, StridedCopyLayout layout, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    std::int64_t rest = i, src_offset = 0, dst_offset = 0;
#pragma unroll
    for (int d = kMaxCopyRank - 1; d >= 0; --d) {
      if (d >= layout.rank) continue;
      const std::int64_t coord = rest % layout.dims[d];
      rest /= layout.dims[d];
      src_offset += coord * layout.src_strides[d];
      dst_offset += coord * layout.dst_strides[d];
    }
    dst[dst_offset] = src[src_offset];
  }
}

template <int Bytes>
void launch_bits(const void* src, void* dst, const StridedCopyLayout& layout, std::int64_t n, cudaStream_t stream) {
  using Bits = typename bits_of<Bytes>::type;
  strided_copy_kernel<Bits>
      <<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const Bits*>(src), static_cast<Bits*>(dst), layout, n);
}

}  // namespace

void launch_strided_copy(const void* src, void* dst, std::size_t element_bytes, const StridedCopyLayout& layout,
                         cudaStream_t stream) {
  std::int64_t n = 1;
  for (int d = 0; d < layout.rank; ++d) n *= layout.dims[d];
  if (n == 0) return;
  switch (element_bytes) {
    case 1:
      return launch_bits<1>(src, dst, layout, n, stream);
    case 2:
      return launch_bits<2>(src, dst, layout, n, stream);
    case 4:
      return launch_bits<4>(src, dst, layout, n, stream);
    case 8:
      return launch_bits<8>(src, dst, layout, n, stream);
    default:
      throw Error(ErrorCode::internal, "launch_strided_copy: element size " + std::to_string(element_bytes));
  }
}

}  // namespace loom::kernels
