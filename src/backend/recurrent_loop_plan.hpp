// The arithmetic of the stacked LSTM/GRU device loop (kernels/decode_recurrent.cu): a block's
// shared-memory layout and the persistent kernel's grid. Plain code for host C++ and CUDA device
// code alike, so that the CPU unit tests check the very plan the kernels run with.
#pragma once

#include <cstddef>
#include <functional>

#if defined(__CUDACC__)
#define LOOM_LOOP_HOST_DEVICE __host__ __device__
#else
#define LOOM_LOOP_HOST_DEVICE
#endif

namespace loom::backend::recurrent_loop {

inline constexpr int kMaxTileRows = 8;  // batch rows a block stages at once, at most

// What the layout depends on: the cell, the stack and the storage dtype.
struct LoopShape {
  int gates = 4;  // LSTM 4, GRU 3
  int layers = 1;
  int hidden = 0;
  int element_bytes = 4;  // weights and states: 4 (f32) or 2 (f16)
};

LOOM_LOOP_HOST_DEVICE constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// A layer's weight row as held on chip: W's row (layers > 0) followed by R's row.
LOOM_LOOP_HOST_DEVICE inline int row_elems(const LoopShape& s, int layer) {
  return (layer > 0 ? s.hidden : 0) + s.hidden;
}

// Weight elements of `units` hidden units (every gate of each) over all layers.
LOOM_LOOP_HOST_DEVICE inline std::size_t slice_elems(const LoopShape& s, int units) {
  std::size_t n = 0;
  for (int l = 0; l < s.layers; ++l) n += static_cast<std::size_t>(s.gates) * units * row_elems(s, l);
  return n;
}

// Dynamic shared memory of a block, as byte offsets: [weight slices] [staged rows] [gate sums from
// x] [gate sums from h] [row lengths] [count].
struct SmemLayout {
  std::size_t stage = 0, gates_x = 0, gates_h = 0, lens = 0, misc = 0, total = 0;
};
LOOM_LOOP_HOST_DEVICE inline SmemLayout smem_layout(const LoopShape& s, std::size_t weight_bytes, int units,
                                                    int tile_rows, int lens_count) {
  SmemLayout lay;
  const std::size_t gate_bytes = static_cast<std::size_t>(tile_rows) * s.gates * units * sizeof(float);
  const int max_row_elems = (s.layers > 1 ? 2 : 1) * s.hidden;
  lay.stage = align_up(weight_bytes, 16);
  lay.gates_x = lay.stage + align_up(static_cast<std::size_t>(tile_rows) * max_row_elems * s.element_bytes, 16);
  lay.gates_h = lay.gates_x + align_up(gate_bytes, 16);
  lay.lens = lay.gates_h + align_up(gate_bytes, 16);
  lay.misc = lay.lens + align_up(static_cast<std::size_t>(lens_count) * sizeof(int), 16);
  lay.total = lay.misc + 16;
  return lay;
}

// The most blocks a persistent grid may have: `per_sm` co-resident blocks on each of `sms` SMs or,
// under a cap of `max_sms` below `sms`, max_sms blocks, which the block scheduler spreads one per
// SM so that the grid holds that many SMs (0 = no cap). Every persistent kernel's plan obeys it:
// this loop's, and the greedy and encoder decoders'.
constexpr int persistent_grid_limit(int sms, int per_sm, int max_sms) {
  return max_sms > 0 && max_sms < sms ? max_sms : per_sm * sms;
}

// The persistent kernel's launch shape.
struct PersistentPlan {
  int blocks = 0;
  int threads = 0;  // the kernel's block size (set by kernels::decode::plan_recurrent_persistent)
  int units_per_block = 0;
  int vec = 1;                  // elements per vector load, 16 bytes when H allows (set likewise)
  bool on_chip = false;         // every block holds its slice of R (and W of layers > 0) in shared memory
  int max_tile_rows = 1;        // batch rows staged at once (fixed by the shared memory left)
  std::size_t weight_smem = 0;  // bytes of weight rows per block (on chip)
  std::size_t smem_bytes = 0;   // dynamic shared memory at max_tile_rows and the planned batch
};

// What the persistent plan needs to know of the device and the caller.
struct PersistentLimits {
  int sms = 0;                       // multiprocessors
  std::size_t max_dynamic_smem = 0;  // per block: the least limit of the persistent kernel's variants
  // The most SMs the grid may hold: blocks <= max_sms, which the block scheduler spreads one per SM.
  // 0, or at least `sms`, means no cap (such a grid spans every SM anyway).
  int max_sms = 0;
};

// Co-resident blocks per SM of the persistent kernel (weights on chip or not) with `smem` bytes of
// dynamic shared memory, the least over the variants a launch may pick.
using PersistentOccupancy = std::function<int(bool on_chip, std::size_t smem)>;

// Sizes the grid so that all blocks are co-resident (the grid barrier needs it). On chip when the
// weights fit: one block per SM (at most max_sms), each holding the weight rows of its units. Else
// off chip, weights read through L2: as many blocks as are co-resident, or at most max_sms. A cap
// gives each block more units, so the weights may then no longer fit on chip. Runs launched with
// the plan may have at most `max_batch` rows. Fills every field but threads and vec. Throws
// Error(invalid_argument) for a hidden size or SM count below 1 or a negative cap, and
// Error(unsupported) when the hidden size needs more shared memory than max_dynamic_smem for even
// one staged row.
PersistentPlan plan_persistent(const LoopShape& shape, int max_batch, const PersistentLimits& limits,
                               const PersistentOccupancy& occupancy);

// Error(unsupported): the loop's hidden size needs more shared memory per block than the device has.
[[noreturn]] void throw_hidden_too_large(int hidden);

}  // namespace loom::backend::recurrent_loop
