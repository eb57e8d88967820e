// The CPU kernels' chunked loops over OpenMP (the one file compiled with it), the thread count of
// the calling thread, and per-thread scratch for split kernels.
#include "backend/cpu/parallel.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "loom/error.hpp"

#if defined(LOOM_HAVE_OPENMP)
#include <omp.h>
#endif

namespace loom::backend::cpu {
namespace {

// Set while this thread runs a chunk: a loop inside a chunk stays on its thread (no nested
// teams), and its kernel may use the thread's scratch, which the chunk may hold.
thread_local bool inside_chunk = false;

// LOOM_CPU_TEST_SPLIT, read once: 0 when unset or not a positive number.
int test_split() noexcept {
  static const int split = [] {
    const char* text = std::getenv("LOOM_CPU_TEST_SPLIT");
    if (!text) return 0;
    const int n = std::atoi(text);
    return n > 0 ? std::min(n, 64) : 0;
  }();
  return split;
}

}  // namespace

int cores_available() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool openmp_enabled() noexcept {
#if defined(LOOM_HAVE_OPENMP)
  return true;
#else
  return false;
#endif
}

int kernel_threads() noexcept {
  if (inside_chunk) return 1;
#if defined(LOOM_HAVE_OPENMP)
  return omp_in_parallel() ? 1 : std::max(1, omp_get_max_threads());
#else
  return 1;
#endif
}

KernelThreadsScope::KernelThreadsScope(int threads) noexcept {
#if defined(LOOM_HAVE_OPENMP)
  threads = std::max(threads, 1);
  const int current = omp_get_max_threads();
  if (current != threads) {
    previous_ = current;
    omp_set_num_threads(threads);
  }
#else
  (void)threads;
#endif
}

KernelThreadsScope::~KernelThreadsScope() {
#if defined(LOOM_HAVE_OPENMP)
  if (previous_ > 0) omp_set_num_threads(previous_);
#endif
}

int parallel_chunks(std::int64_t count, std::int64_t min_per_chunk) noexcept {
  if (count < 2) return 1;
  if (const int split = test_split(); split > 0)
    return inside_chunk ? 1 : static_cast<int>(std::min<std::int64_t>(split, count));
  const int threads = kernel_threads();
  if (threads <= 1) return 1;
  const std::int64_t by_size = count / std::max<std::int64_t>(min_per_chunk, 1);
  return static_cast<int>(std::clamp<std::int64_t>(by_size, 1, threads));
}

std::pair<std::int64_t, std::int64_t> chunk_range(std::int64_t count, int chunks, int chunk,
                                                  std::int64_t align) noexcept {
  align = std::max<std::int64_t>(align, 1);
  const std::int64_t units = (count + align - 1) / align;
  const auto boundary = [&](std::int64_t c) { return std::min(count, units * c / chunks * align); };
  return {boundary(chunk), chunk + 1 == chunks ? count : boundary(chunk + 1)};
}

void detail::run_chunks(int chunks, void (*body)(void* context, int chunk), void* context) {
  std::exception_ptr first;
  std::mutex first_mutex;
  const auto run_one = [&](int chunk) {
    const bool outer = inside_chunk;
    inside_chunk = true;
    try {
      body(context, chunk);
      inside_chunk = outer;
    } catch (...) {
      inside_chunk = outer;
      // An exception must not leave an OpenMP region: keep the first, rethrow it after the join.
      std::lock_guard lock(first_mutex);
      if (!first) first = std::current_exception();
    }
  };
#if defined(LOOM_HAVE_OPENMP)
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int chunk = 0; chunk < chunks; ++chunk) run_one(chunk);
#else
  for (int chunk = 0; chunk < chunks; ++chunk) run_one(chunk);
#endif
  if (first) std::rethrow_exception(first);
}

void* thread_scratch(std::size_t bytes) {
  struct Scratch {
    void* data = nullptr;
    std::size_t bytes = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch scratch;
  if (scratch.bytes < bytes) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* grown = std::aligned_alloc(64, rounded);
    if (!grown)
      throw Error(ErrorCode::out_of_memory,
                  "cpu backend: " + std::to_string(rounded) + " bytes of per-thread kernel scratch failed");
    std::free(scratch.data);
    scratch.data = grown;
    scratch.bytes = rounded;
  }
  return scratch.data;
}

}  // namespace loom::backend::cpu
