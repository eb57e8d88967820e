// Intra-op parallelism of the CPU kernels: a loop split into contiguous chunks run on the calling
// thread's OpenMP team, whose size the CPU stream running the kernel sets (KernelThreadsScope), so
// Loom's loops and oneDNN's (Debian builds it on OpenMP) share one pool of threads per stream.
// Small loops stay on one thread. Without OpenMP (LOOM_OPENMP=OFF) every loop runs on the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace loom::backend::cpu {

// The cores this process may run on (sched_getaffinity), at least 1: the default thread count.
int cores_available() noexcept;

// Whether this build runs kernels' loops on OpenMP threads (LOOM_OPENMP); without it every
// loop runs on its caller and kernel_threads() is 1.
bool openmp_enabled() noexcept;

// Threads a kernel running on this thread may use: its OpenMP thread count (omp_get_max_threads),
// 1 inside a parallel region (nested loops stay serial) or without OpenMP.
int kernel_threads() noexcept;

// Sets the calling thread's OpenMP thread count (what kernel_threads() and oneDNN read) for the
// scope, and puts the previous one back at its end: a CPU stream wraps each kernel in one, so a
// caller's own OpenMP setting survives a synchronous launch. `threads` < 1 counts as 1.
class KernelThreadsScope {
 public:
  explicit KernelThreadsScope(int threads) noexcept;
  ~KernelThreadsScope();
  KernelThreadsScope(const KernelThreadsScope&) = delete;
  KernelThreadsScope& operator=(const KernelThreadsScope&) = delete;

 private:
  int previous_ = 0;  // 0: unchanged
};

// How many chunks a loop of `count` items is split into: at most kernel_threads(), and few
// enough that each chunk has at least `min_per_chunk` items (so splitting pays for the fork);
// 1 for a small loop. The environment variable LOOM_CPU_TEST_SPLIT=N (tests only) overrides it:
// every loop of 2 items or more splits into min(N, count) chunks whatever its size and the thread
// count, so the op tests run every kernel's split paths on small shapes.
int parallel_chunks(std::int64_t count, std::int64_t min_per_chunk) noexcept;

// Chunk `chunk` of `chunks` over [0, count): contiguous, in order, sizes differing by at most
// `align`; every boundary but the end is a multiple of `align` (>= 1).
std::pair<std::int64_t, std::int64_t> chunk_range(std::int64_t count, int chunks, int chunk,
                                                  std::int64_t align = 1) noexcept;

namespace detail {
// Runs body(context, c) for c in [0, chunks), each on a thread of the calling thread's team
// (sequentially without OpenMP); rethrows the first exception after all have ended.
void run_chunks(int chunks, void (*body)(void* context, int chunk), void* context);
}  // namespace detail

// Calls body(c) for every chunk c in [0, chunks), in parallel; body must write disjoint data.
// The first exception thrown by a chunk is rethrown here once every chunk has ended.
template <class Body>
void run_chunks(int chunks, Body&& body) {
  if (chunks <= 1) {
    body(0);
    return;
  }
  using B = std::remove_reference_t<Body>;
  detail::run_chunks(
      chunks, [](void* context, int chunk) { (*static_cast<B*>(context))(chunk); }, &body);
}

// Calls body(begin, end) over contiguous chunks covering [0, count) once (parallel_chunks(count,
// min_per_chunk) of them, boundaries multiples of `align`). Each output element must be computed
// by one chunk with the same arithmetic as in a single-threaded run, so results are bit-identical
// for any thread count.
template <class Body>
void parallel_for(std::int64_t count, std::int64_t min_per_chunk, Body&& body, std::int64_t align = 1) {
  if (count <= 0) return;
  const int chunks = parallel_chunks((count + align - 1) / align, (min_per_chunk + align - 1) / align);
  if (chunks <= 1) {
    body(std::int64_t{0}, count);
    return;
  }
  run_chunks(chunks, [&](int chunk) {
    const auto [begin, end] = chunk_range(count, chunks, chunk, align);
    if (begin < end) body(begin, end);
  });
}

// Bytes of a copy worth a thread of their own (copies are bound by memory bandwidth, which one
// core does not saturate).
constexpr std::int64_t kCopyChunkBytes = std::int64_t{1} << 17;

// Scratch memory of the calling thread, at least `bytes`, 64-byte aligned, kept for the thread's
// life and reused: a chunk of a split kernel packs into it instead of the kernel's one workspace
// (sized for one thread). Throws Error(out_of_memory).
void* thread_scratch(std::size_t bytes);

}  // namespace loom::backend::cpu
