// The persistent recurrent loop's grid (see recurrent_loop_plan.hpp).
#include "backend/recurrent_loop_plan.hpp"

#include <algorithm>
#include <string>

#include "loom/error.hpp"

namespace loom::backend::recurrent_loop {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Off chip, the tile is chosen so that the staged rows leave room for more blocks per SM.
constexpr std::size_t kOffChipSoftLimit = 96 * 1024;

}  // namespace

void throw_hidden_too_large(int hidden) {
  throw Error(ErrorCode::unsupported, "recurrent loop: hidden size " + std::to_string(hidden) +
                                          " needs more shared memory per block than the device has");
}

PersistentPlan plan_persistent(const LoopShape& s, int max_batch, const PersistentLimits& limits,
                               const PersistentOccupancy& occupancy) {
  const int H = s.hidden;
  if (H < 1 || limits.sms < 1 || limits.max_sms < 0)
    throw Error(ErrorCode::invalid_argument, "recurrent loop plan: hidden size " + std::to_string(H) + ", " +
                                                 std::to_string(limits.sms) + " SMs, a cap of " +
                                                 std::to_string(limits.max_sms) + " SMs");
  const int one_per_sm = persistent_grid_limit(limits.sms, 1, limits.max_sms);  // blocks, one per SM
  const int widest_units = ceil_div(H, std::min(H, one_per_sm));
  const int max_tile = std::max(1, std::min(kMaxTileRows, max_batch));
  PersistentPlan plan;

  // On chip: one block per SM, each holding the weight rows of its units.
  {
    const int units = widest_units;
    const int blocks = ceil_div(H, units);
    const std::size_t weight_bytes = slice_elems(s, units) * static_cast<std::size_t>(s.element_bytes);
    for (int tile = max_tile; tile >= 1; --tile) {
      const SmemLayout lay = smem_layout(s, weight_bytes, units, tile, max_batch);
      if (lay.total > limits.max_dynamic_smem) continue;
      if (occupancy(true, lay.total) * limits.sms < blocks) break;
      plan.blocks = blocks;
      plan.units_per_block = units;
      plan.on_chip = true;
      plan.max_tile_rows = tile;
      plan.weight_smem = weight_bytes;
      plan.smem_bytes = lay.total;
      return plan;
    }
  }

  // Off chip: weights read through L2. The tile is sized for the widest slice a block may get.
  const std::size_t soft_limit = std::min(limits.max_dynamic_smem, kOffChipSoftLimit);
  int tile = max_tile;
  while (tile > 1 && smem_layout(s, 0, widest_units, tile, max_batch).total > soft_limit) --tile;
  const std::size_t smem = smem_layout(s, 0, widest_units, tile, max_batch).total;
  if (smem > limits.max_dynamic_smem) throw_hidden_too_large(H);
  const int per_sm = occupancy(false, smem);
  if (per_sm < 1) throw_hidden_too_large(H);
  const int units = ceil_div(H, std::min(H, persistent_grid_limit(limits.sms, per_sm, limits.max_sms)));
  plan.blocks = ceil_div(H, units);
  plan.units_per_block = units;
  plan.on_chip = false;
  plan.max_tile_rows = tile;
  plan.weight_smem = 0;
  plan.smem_bytes = smem_layout(s, 0, units, tile, max_batch).total;
  return plan;
}

}  // namespace loom::backend::recurrent_loop
