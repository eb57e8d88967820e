// loom-gpu-calibrate's kernels (calibrate_kernels.cu) seen from host code: an FMA chain whose FLOPs
// are counted exactly, a streaming copy whose DRAM bytes are, an empty kernel for launch overhead
// and a gate that holds streams until the host lets them go. Plain C++: g++ includes this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace loom::calibrate {

// Block sizes, fixed at compile time: each kernel's __launch_bounds__ asks for 2048 threads per SM,
// which caps it at 32 registers per thread, so on compute capability 8.0-9.0 (65536 registers and
// 2048 threads per SM) registers never limit occupancy and the nominal launch configuration
// (--simulate-only, no CUDA call) can state them without asking the device.
inline constexpr int kComputeThreads = 256;
inline constexpr int kCopyThreads = 256;
// One large block per SM for the narrow-bandwidth case: enough loads in flight for one block to
// draw what one SM can, as the model assumes a block may.
inline constexpr int kWideCopyThreads = 1024;
inline constexpr int kRegisterCap = 32;
// Independent FMA chains per thread: enough instruction-level parallelism for one block of 256
// threads to keep an SM's FP32 pipes busy.
inline constexpr int kFmaChains = 8;
// A thread's FLOPs per iteration of the FMA chain kernel: kFmaChains FMAs of 2 FLOPs each.
inline constexpr double kFlopsPerThreadIteration = 2.0 * kFmaChains;
// Bytes one element of the copy kernel moves per pass: a 16-byte read and a 16-byte write.
inline constexpr std::size_t kCopyBytesPerElement = 32;

enum class KernelKind {
  compute,    // fma_chain_kernel, kComputeThreads
  copy,       // copy_kernel, kCopyThreads
  wide_copy,  // copy_kernel, kWideCopyThreads
};
int threads_per_block(KernelKind kind) noexcept;
const char* kernel_kind_name(KernelKind kind) noexcept;

// What cudaFuncGetAttributes and the occupancy calculator say of a kernel on the current device.
// Throws Error(backend).
struct KernelAttributes {
  int registers_per_thread = 0;
  std::size_t static_shared_bytes = 0;
  int resident_blocks_per_sm = 0;  // cudaOccupancyMaxActiveBlocksPerMultiprocessor at its block size
};
KernelAttributes kernel_attributes(KernelKind kind);

// Every launcher below but launch_empty checks the launch (Error(backend) on failure). `stamps`
// points to two device words of the launch: [0] is lowered to the %globaltimer (ns) at which the
// first block started, [1] raised to the time the last block ended; reset them to {UINT64_MAX, 0}.

// `blocks` blocks of kComputeThreads threads; each thread runs `iterations` rounds of kFmaChains
// independent FMAs (flops = blocks x kComputeThreads x iterations x kFlopsPerThreadIteration). With
// `cooperative`, launched by cudaLaunchCooperativeKernel (all blocks resident at once, or it fails).
// `sink`: one device float, never written in practice (it keeps the chains from being optimised out).
void launch_compute(int blocks, int iterations, bool cooperative, float* sink, unsigned long long* stamps,
                    cudaStream_t stream);

// `blocks` blocks of threads_per_block(kind) threads copy `elements` 16-byte elements `passes`
// times: even passes from `a` to `b`, odd ones back, so no pass repeats the one before it. DRAM bytes =
// passes x elements x kCopyBytesPerElement. `elements` must be a multiple of the grid's thread count
// (every thread moves the same number); `a` and `b` hold at least `elements` float4s each.
void launch_copy(KernelKind kind, int blocks, void* a, void* b, std::size_t elements, int passes,
                 unsigned long long* stamps, cudaStream_t stream);

// One block of 32 threads that does nothing. Not checked here: the caller times launches back to
// back and checks cudaGetLastError once after the batch.
void launch_empty(cudaStream_t stream);

// One thread that spins until the host sets *flag (mapped pinned memory) to non-zero, at most
// `limit_ns` of %globaltimer or a fixed number of polls, whichever comes first; on giving up it sets
// *timed_out. Work queued behind it (or behind an event recorded after it) starts together.
void launch_gate(const volatile unsigned* flag, unsigned* timed_out, unsigned long long limit_ns, cudaStream_t stream);

}  // namespace loom::calibrate
