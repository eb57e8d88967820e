// tile_step(): the planner's one tiling rule, which the simulator applies to every Step.
#include "plan/tiling.hpp"

#include <algorithm>

#include "loom/error.hpp"

namespace loom::plan {

std::vector<Tile> tile_step(double compute_us, double memory_us, std::uint64_t working_set_bytes,
                            const TilingOptions& options) {
  if (options.buffers == 0) throw Error(ErrorCode::invalid_argument, "tiling: buffers must be at least 1");
  const std::uint64_t capacity = options.onchip_capacity_bytes;
  if (capacity == 0 || working_set_bytes <= capacity) return {Tile{compute_us, memory_us, working_set_bytes}};
  const std::uint64_t budget = std::max<std::uint64_t>(capacity / options.buffers, 1);
  const std::uint64_t count = (working_set_bytes + budget - 1) / budget;
  std::vector<Tile> tiles(count);
  const double share = 1.0 / static_cast<double>(count);
  for (std::uint64_t k = 0; k < count; ++k) {
    tiles[k].compute_us = compute_us * share;
    tiles[k].memory_us = memory_us * share;
    tiles[k].onchip_bytes = working_set_bytes / count + (k < working_set_bytes % count ? 1 : 0);
  }
  return tiles;
}

}  // namespace loom::plan
