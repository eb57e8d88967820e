// Probe kernels: short, fixed amounts of FP32 or memory work per block. Blocks end within tens of
// microseconds, so a Step's kernel that needs a whole SM (a warp-specialised GEMM takes the full
// register file) gets one as soon as a probe block retires; persistent probe blocks would starve it.
#include "probe.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

constexpr int kChains = 8;
constexpr int kCopyUnroll = 4;

// a = a * m + c converges to c / (1 - m) = 1: no overflow, no denormals.
__global__ void compute_probe_kernel(float* sink, int iterations) {
  constexpr float m = 0.999f, c = 0.001f;
  float a[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) a[k] = 0.001f * static_cast<float>(threadIdx.x + k);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int k = 0; k < kChains; ++k) a[k] = fmaf(a[k], m, c);
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) sum += a[k];
  if (sum == -1.0f) sink[blockIdx.x] = sum;  // never true; keeps the loop
}

// Grid-stride copy, kCopyUnroll 16-byte loads in flight per thread; indices wrap at `half`
// (kCopyUnroll * stride < half, so one subtraction wraps: no 64-bit modulo in the loop).
__global__ void memory_probe_kernel(const float4* __restrict__ source, float4* __restrict__ target, std::size_t half,
                                    std::size_t start, int iterations) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t index = (start + static_cast<std::size_t>(global_thread_index())) % half;
  for (int i = 0; i < iterations; ++i) {
    std::size_t at[kCopyUnroll];
    float4 values[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) {
      at[u] = index + u * stride;
      if (at[u] >= half) at[u] -= half;
      values[u] = source[at[u]];
    }
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) target[at[u]] = values[u];
    index += kCopyUnroll * stride;
    if (index >= half) index -= half;
  }
}

}  // namespace

void launch_compute_probe(float* sink, int blocks, int threads, int iterations, cudaStream_t stream) {
  compute_probe_kernel<<<blocks, threads, 0, stream>>>(sink, iterations);
}

std::size_t memory_probe_elements(int blocks, int threads, int iterations) {
  return static_cast<std::size_t>(blocks) * static_cast<std::size_t>(threads) * kCopyUnroll *
         static_cast<std::size_t>(iterations);
}

void launch_memory_probe(void* buffer, std::size_t bytes, std::size_t start, int blocks, int threads, int iterations,
                         cudaStream_t stream) {
  const std::size_t half = bytes / (2 * sizeof(float4));
  const std::size_t stride = static_cast<std::size_t>(blocks) * static_cast<std::size_t>(threads);
  if (half <= kCopyUnroll * stride)
    throw Error(ErrorCode::internal, "launch_memory_probe: a buffer of " + std::to_string(bytes) +
                                         " bytes is too small for " + std::to_string(stride) + " threads");
  auto* source = static_cast<float4*>(buffer);
  memory_probe_kernel<<<blocks, threads, 0, stream>>>(source, source + half, half, start % half, iterations);
}

}  // namespace loom::kernels
