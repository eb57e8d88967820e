// The persistent recurrent loop's grid plan (backend/recurrent_loop_plan.hpp), on a modelled
// H100-like device: every plan is co-resident and covers the hidden size; a cap on the SMs it holds
// bounds the blocks, grows each block's slice and, when the slice no longer fits on chip, falls
// back to off-chip weights; a cap of 0 or of at least the SM count changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>

#include "backend/recurrent_loop_plan.hpp"
#include "loom/error.hpp"

namespace loom {
namespace {

namespace rl = backend::recurrent_loop;

constexpr int kSms = 132;
constexpr std::size_t kSmemPerBlock = 227 * 1024;  // opt-in dynamic shared memory per block

// An SM with 228 KiB of shared memory (1 KiB reserved per block) and room for 8 blocks of 256
// threads, whatever the variant.
int modelled_occupancy(bool, std::size_t smem) {
  return std::min<int>(8, static_cast<int>(228 * 1024 / (smem + 1024)));
}

rl::LoopShape lstm(int hidden, int layers, int element_bytes) { return {4, layers, hidden, element_bytes}; }
rl::LoopShape gru(int hidden, int layers, int element_bytes) { return {3, layers, hidden, element_bytes}; }

rl::PersistentPlan plan(const rl::LoopShape& shape, int max_batch, int max_sms) {
  return rl::plan_persistent(shape, max_batch, {kSms, kSmemPerBlock, max_sms}, modelled_occupancy);
}

// What every plan must satisfy for the kernel to run it.
void expect_runnable(const rl::LoopShape& shape, int max_batch, const rl::PersistentPlan& p) {
  EXPECT_GE(p.blocks, 1);
  EXPECT_GE(static_cast<long long>(p.units_per_block) * p.blocks, shape.hidden) << "every unit has a block";
  EXPECT_LT(static_cast<long long>(p.units_per_block) * (p.blocks - 1), shape.hidden) << "no block is empty";
  EXPECT_GE(p.max_tile_rows, 1);
  EXPECT_LE(p.max_tile_rows, std::min(rl::kMaxTileRows, std::max(1, max_batch)));
  EXPECT_LE(p.smem_bytes, kSmemPerBlock);
  EXPECT_EQ(p.smem_bytes, rl::smem_layout(shape, p.weight_smem, p.units_per_block, p.max_tile_rows, max_batch).total);
  if (p.on_chip)
    EXPECT_EQ(p.weight_smem, rl::slice_elems(shape, p.units_per_block) * shape.element_bytes);
  else
    EXPECT_EQ(p.weight_smem, 0u);
  EXPECT_LE(p.blocks, modelled_occupancy(p.on_chip, p.smem_bytes) * kSms) << "all blocks co-resident";
}

void expect_same(const rl::PersistentPlan& a, const rl::PersistentPlan& b) {
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.units_per_block, b.units_per_block);
  EXPECT_EQ(a.on_chip, b.on_chip);
  EXPECT_EQ(a.max_tile_rows, b.max_tile_rows);
  EXPECT_EQ(a.weight_smem, b.weight_smem);
  EXPECT_EQ(a.smem_bytes, b.smem_bytes);
}

struct PlanCase {
  rl::LoopShape shape;
  int max_batch;
};

const PlanCase kCases[] = {
    {lstm(1024, 1, 2), 16},  // on chip uncapped
    {lstm(256, 1, 4), 1},    // on chip, still on chip at 8 SMs
    {lstm(4096, 2, 4), 8},   // off chip, several blocks per SM uncapped
    {gru(100, 1, 4), 4},     // fewer units than SMs
    {gru(2048, 3, 2), 64},
};

TEST(RecurrentLoopPlan, UncappedPlansAreRunnable) {
  for (const PlanCase& c : kCases) {
    SCOPED_TRACE("hidden " + std::to_string(c.shape.hidden));
    expect_runnable(c.shape, c.max_batch, plan(c.shape, c.max_batch, 0));
  }
}

TEST(RecurrentLoopPlan, UncappedOnChipTakesOneBlockPerSm) {
  const rl::PersistentPlan p = plan(lstm(1024, 1, 2), 16, 0);
  EXPECT_TRUE(p.on_chip);
  EXPECT_EQ(p.units_per_block, 8);  // ceil(1024 / 132)
  EXPECT_EQ(p.blocks, 128);
}

TEST(RecurrentLoopPlan, CapAtOrAboveTheSmCountIsNoCap) {
  for (const PlanCase& c : kCases) {
    SCOPED_TRACE("hidden " + std::to_string(c.shape.hidden));
    const rl::PersistentPlan uncapped = plan(c.shape, c.max_batch, 0);
    for (int cap : {kSms, kSms + 1, 1000}) {
      SCOPED_TRACE("cap " + std::to_string(cap));
      expect_same(plan(c.shape, c.max_batch, cap), uncapped);
    }
  }
  // Off chip with several blocks per SM, too: the grid spans every SM either way.
  const rl::PersistentPlan off_chip = plan(lstm(4096, 2, 4), 8, 0);
  EXPECT_FALSE(off_chip.on_chip);
  EXPECT_GT(off_chip.blocks, kSms);
}

TEST(RecurrentLoopPlan, CapBoundsTheBlocksAndCoversTheHiddenSize) {
  for (const PlanCase& c : kCases) {
    for (int cap : {1, 2, 8, kSms - 1}) {
      SCOPED_TRACE("hidden " + std::to_string(c.shape.hidden) + " cap " + std::to_string(cap));
      const rl::PersistentPlan p = plan(c.shape, c.max_batch, cap);
      EXPECT_LE(p.blocks, cap);
      expect_runnable(c.shape, c.max_batch, p);
    }
  }
  const rl::PersistentPlan p = plan(lstm(1024, 1, 2), 16, 8);
  EXPECT_EQ(p.blocks, 8);
  EXPECT_EQ(p.units_per_block, 128);
}

TEST(RecurrentLoopPlan, CappedSliceStaysOnChipWhileItFits) {
  // 32 units of an f32 LSTM with H = 256: 128 KiB of weights per block, within 227 KiB.
  const rl::PersistentPlan p = plan(lstm(256, 1, 4), 1, 8);
  EXPECT_TRUE(p.on_chip);
  EXPECT_EQ(p.blocks, 8);
  EXPECT_EQ(p.units_per_block, 32);
  EXPECT_EQ(p.weight_smem, 32u * 4 * 256 * 4);
}

TEST(RecurrentLoopPlan, CappedSliceFallsBackOffChipWhenItNoLongerFits) {
  // Uncapped on chip (8 units, 64 KiB of f16 weights per block); at 8 SMs a block's 128 units
  // would need 1 MiB, so the weights are read through L2.
  ASSERT_TRUE(plan(lstm(1024, 1, 2), 16, 0).on_chip);
  const rl::PersistentPlan capped = plan(lstm(1024, 1, 2), 16, 8);
  EXPECT_FALSE(capped.on_chip);
  EXPECT_EQ(capped.weight_smem, 0u);
  // Likewise at 2 SMs for the f32 LSTM that stays on chip at 8.
  const rl::PersistentPlan two = plan(lstm(256, 1, 4), 1, 2);
  EXPECT_FALSE(two.on_chip);
  EXPECT_EQ(two.blocks, 2);
}

TEST(RecurrentLoopPlan, GridLimit) {
  EXPECT_EQ(rl::persistent_grid_limit(kSms, 1, 0), kSms);
  EXPECT_EQ(rl::persistent_grid_limit(kSms, 3, 0), 3 * kSms);
  EXPECT_EQ(rl::persistent_grid_limit(kSms, 3, 8), 8);
  EXPECT_EQ(rl::persistent_grid_limit(kSms, 3, kSms), 3 * kSms);
  EXPECT_EQ(rl::persistent_grid_limit(kSms, 1, 1000), kSms);
}

TEST(RecurrentLoopPlan, Errors) {
  try {
    plan(lstm(1024, 1, 2), 16, -1);
    ADD_FAILURE() << "a negative cap was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
  // Not even one staged row fits in 1 KiB.
  try {
    rl::plan_persistent(lstm(4096, 1, 4), 8, {kSms, 1024, 0}, modelled_occupancy);
    ADD_FAILURE() << "a plan beyond the shared memory was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
}

}  // namespace
}  // namespace loom
