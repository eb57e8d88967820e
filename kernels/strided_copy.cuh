// Launcher for the general N-d strided copy: Transpose (permuted source strides), broadcasting a
// tensor into a larger one (zero strides, Gemm's C), and writing into a slice of a larger tensor
// (Concat, Conv's explicit padding). Elements move as raw bytes, so any dtype works.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace loom::kernels {

inline constexpr int kMaxCopyRank = 8;

// Element strides of source and destination along each of `dims`. Host code coalesces it first.
struct StridedCopyLayout {
  int rank = 0;
  std::int64_t dims[kMaxCopyRank] = {};
  std::int64_t src_strides[kMaxCopyRank] = {};
  std::int64_t dst_strides[kMaxCopyRank] = {};
};

// dst[sum(i_d * dst_strides[d])] = src[sum(i_d * src_strides[d])] for every index i < dims.
// element_bytes is 1, 2, 4 or 8. Destination positions must not overlap.
void launch_strided_copy(const void* src, void* dst, std::size_t element_bytes, const StridedCopyLayout& layout,
                         cudaStream_t stream);

}  // namespace loom::kernels
