// Fill kernel: one thread per element, the value passed by value.
#include <string>

#include "common.cuh"
#include "fill.cuh"

namespace loom::kernels {
namespace {

template <class Bits>
__global__ void fill_kernel(Bits* y, Bits value, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) y[i] = value;
}

template <int Bytes>
void launch_bits(void* y, std::uint64_t bits, std::int64_t n, cudaStream_t stream) {
  using Bits = typename bits_of<Bytes>::type;
  fill_kernel<Bits><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<Bits*>(y), static_cast<Bits>(bits), n);
}

}  // namespace

void launch_fill(void* y, std::size_t element_bytes, std::uint64_t bits, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  switch (element_bytes) {
    case 1:
      return launch_bits<1>(y, bits, count, stream);
    case 2:
      return launch_bits<2>(y, bits, count, stream);
    case 4:
      return launch_bits<4>(y, bits, count, stream);
    case 8:
      return launch_bits<8>(y, bits, count, stream);
    default:
      throw Error(ErrorCode::internal, "launch_fill: element size " + std::to_string(element_bytes));
  }
}

}  // namespace loom::kernels
