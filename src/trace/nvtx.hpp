// NVTX ranges for Nsight: a scoped range on the calling thread, and start/end ranges that may
// open on one thread and close on another (a request's life). No-ops without the CUDA build.
#pragma once

#include <cstdint>
#include <string>

namespace loom::trace {

class ScopedRange {
 public:
  explicit ScopedRange(const std::string& name) noexcept;
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};

std::uint64_t start_range(const std::string& name) noexcept;
void end_range(std::uint64_t id) noexcept;

}  // namespace loom::trace
