// Launcher for Pad (constant, reflect, edge) over up to 8 dims of any element size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace loom::kernels {

inline constexpr int kMaxPadRank = 8;

enum class PadKernelMode { constant, reflect, edge };

struct PadLayout {
  int rank = 0;
  PadKernelMode mode = PadKernelMode::constant;
  std::int64_t in[kMaxPadRank] = {}, out[kMaxPadRank] = {}, pad_begin[kMaxPadRank] = {};
  std::uint64_t value_bits = 0;  // the constant's bytes when `value` is null (attribute form or 0)
};

// y[o] = x[source(o)] per axis (reflect repeats, edge clamps), or the constant: *value (one
// element, device memory) when value is non-null, else layout.value_bits. element_bytes is 1, 2,
// 4 or 8.
void launch_pad(const void* x, const void* value, void* y, std::size_t element_bytes, const PadLayout& layout,
                cudaStream_t stream);

}  // namespace loom::kernels
