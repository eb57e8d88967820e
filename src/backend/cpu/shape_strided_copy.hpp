// The CPU's one copy loop for strided views (backend/shape_spec.hpp): Transpose, Slice, Expand
// and Tile all write a dense output read through per-dim source strides. Elements move as raw
// bytes, so every dtype works.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::backend::cpu {

class StridedCopy {
 public:
  // dims: the output walked row-major; src_strides: input elements per step along each dim (may
  // be 0 or negative). Size-1 dims are dropped and dims the source walks as one run are merged.
  StridedCopy(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& src_strides,
              std::size_t element_size);

  // Writes every output element to the dense `dst` from `src` (already offset to the first one),
  // large copies split over the kernel's threads.
  void run(const void* src, void* dst) const;
  // Output elements [begin, end) only.
  void run_range(const void* src, void* dst, std::int64_t begin, std::int64_t end) const;
  std::int64_t count() const noexcept { return count_; }

 private:
  std::vector<std::int64_t> dims_;
  std::vector<std::int64_t> strides_;
  std::int64_t count_ = 0;
  std::size_t element_size_ = 1;
};

}  // namespace loom::backend::cpu
