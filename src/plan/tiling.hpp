// Tiling to fit on-chip memory (MISSION.md §2, the source text's 分块单元): a Step whose working
// set exceeds the device's on-chip capacity is split into tiles that fit, each with its share of
// the Step's compute and memory time and of its working set. The tile count and sizes are scalar
// work the planner does on the host; the simulator's accelerator runs the tiles in order.
#pragma once

#include <cstdint>
#include <vector>

namespace loom::plan {

struct Tile {
  double compute_us = 0;
  double memory_us = 0;
  std::uint64_t onchip_bytes = 0;  // held from the tile's memory start to its compute end
};

struct TilingOptions {
  std::uint64_t onchip_capacity_bytes = 0;  // 0 = unlimited: nothing is tiled
  // Tiles of one Step on chip at once: 2 keeps each tile within half the capacity, so the next
  // tile's load overlaps this tile's compute (double buffering); 1 fills the whole capacity.
  std::uint64_t buffers = 2;
};

// The tiles of a Step with these figures. A Step that fits (working set <= capacity, or no
// capacity) is one tile: itself. Otherwise n = ceil(working_set / budget) tiles with budget =
// capacity / buffers (at least 1 byte): tile k holds floor(working_set / n) bytes, plus one for the
// first working_set mod n tiles, and compute_us / n and memory_us / n. Their sums are the Step's
// figures. Throws Error(invalid_argument) for buffers = 0.
std::vector<Tile> tile_step(double compute_us, double memory_us, std::uint64_t working_set_bytes,
                            const TilingOptions& options);

}  // namespace loom::plan
