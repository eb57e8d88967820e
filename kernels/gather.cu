// Gather kernel: one thread per output element, index read and clamped per element.
#include "gather.cuh"

#include <string>

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class Bits, class Index>
__global__ void gather_kernel(const Bits* data, const Index* indices, Bits* y, std::int64_t axis, std::int64_t inner,
                              std::int64_t index_count, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t in = i % inner;
    const std::int64_t k = (i / inner) % index_count;
    const std::int64_t o = i / (inner * index_count);
    std::int64_t index = static_cast<std::int64_t>(indices[k]);
    if (index < 0) index += axis;
    index = index < 0 ? 0 : (index >= axis ? axis - 1 : index);
    y[i] = data[(o * axis + index) * inner + in];
  }
}

template <int Bytes, class Index>
void launch_typed(const void* data, const void* indices, void* y, std::int64_t axis, std::int64_t inner,
                  std::int64_t index_count, std::int64_t n, cudaStream_t stream) {
  using Bits = typename bits_of<Bytes>::type;
  gather_kernel<Bits, Index>
      <<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const Bits*>(data), static_cast<const Index*>(indices),
                                                  static_cast<Bits*>(y), axis, inner, index_count, n);
}

template <class Index>
void launch_indexed(const void* data, const void* indices, void* y, std::size_t element_bytes, std::int64_t axis,
                    std::int64_t inner, std::int64_t index_count, std::int64_t n, cudaStream_t stream) {
  switch (element_bytes) {
    case 1:
      return launch_typed<1, Index>(data, indices, y, axis, inner, index_count, n, stream);
    case 2:
      return launch_typed<2, Index>(data, indices, y, axis, inner, index_count, n, stream);
    case 4:
      return launch_typed<4, Index>(data, indices, y, axis, inner, index_count, n, stream);
    case 8:
      return launch_typed<8, Index>(data, indices, y, axis, inner, index_count, n, stream);
    default:
      throw Error(ErrorCode::internal, "launch_gather: element size " + std::to_string(element_bytes));
  }
}

}  // namespace

void launch_gather(const void* data, const void* indices, DType index_dtype, void* y, std::size_t element_bytes,
                   std::int64_t outer, std::int64_t axis, std::int64_t inner, std::int64_t index_count,
                   cudaStream_t stream) {
  const std::int64_t n = outer * index_count * inner;
  if (n == 0 || axis == 0) return;  // an empty axis leaves nothing to gather (the shape check rejects it)
  if (index_dtype == DType::i64)
    launch_indexed<std::int64_t>(data, indices, y, element_bytes, axis, inner, index_count, n, stream);
  else if (index_dtype == DType::i32)
    launch_indexed<std::int32_t>(data, indices, y, element_bytes, axis, inner, index_count, n, stream);
  else
    throw_unhandled_dtype("launch_gather", index_dtype);
}

}  // namespace loom::kernels
