// The CPU's copy loops for views and pieces: the strided copy (backend/shape_spec.hpp) that
// Transpose, Slice, Expand and Tile use, writing a dense output read through per-dim source
// strides, and the piece copies of Concat and Split. Elements move as raw bytes, so every dtype
// works; large copies split over the kernel's threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/parallel.hpp"

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

// Concat and Split: a packed buffer of `outer` rows, each holding the pieces side by side
// (piece i takes piece_bytes[i] of each row), and each piece's rows dense in a buffer of its own.
// Calls move(i, piece_offset, packed_offset, bytes) for runs of bytes that cover the packed buffer
// once: `bytes` of piece i at `piece_offset` in its buffer are at `packed_offset` in the packed one.
// The packed bytes are split over the kernel's threads, so a batch-1 concat of a few large pieces
// splits as well as one of many small rows.
template <class Move>
void for_each_piece_run(std::int64_t outer, std::span<const std::size_t> piece_bytes, Move&& move) {
  std::size_t row_bytes = 0;
  for (const std::size_t bytes : piece_bytes) row_bytes += bytes;
  if (row_bytes == 0 || outer <= 0) return;
  const auto total = static_cast<std::int64_t>(row_bytes) * outer;
  parallel_for(
      total, kCopyChunkBytes,
      [&](std::int64_t begin, std::int64_t end) {
        for (auto at = static_cast<std::size_t>(begin); at < static_cast<std::size_t>(end);) {
          const std::size_t row = at / row_bytes;
          std::size_t within = at % row_bytes, piece = 0;
          while (within >= piece_bytes[piece]) within -= piece_bytes[piece++];
          const std::size_t bytes = std::min(piece_bytes[piece] - within, static_cast<std::size_t>(end) - at);
          move(piece, row * piece_bytes[piece] + within, at, bytes);
          at += bytes;
        }
      },
      64);
}

}  // namespace loom::backend::cpu
