// The GPU device model's qualitative laws (issue 14; docs/simulator.md, "The GPU model"), each
// against times worked out by hand on a round-numbered GPU, and the scheduler driving it.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/error.hpp"
#include "loom/policy.hpp"
#include "loom/sim.hpp"

namespace loom::sim {
namespace {

// 100 SMs; one SM computes 1e6 FLOP per us (1e14 FLOP/s in all); DRAM moves 1e6 bytes per us
// (1e12 B/s), one SM at most 2e4 bytes per us (share 2). Per SM: 2048 threads, 32 blocks,
// 65536 registers, 100 KiB shared memory. No launch latency unless a test sets it.
GpuDevice round_gpu() {
  GpuDevice d;
  d.name = "round";
  d.source = "test";
  d.sm_count = 100;
  d.peak_flops_f32 = 1e14;
  d.peak_flops_f16 = 4e14;
  d.dram_bytes_per_s = 1e12;
  d.sm_bandwidth_share = 2.0;
  d.shared_bytes_per_sm = 100 * 1024;
  d.shared_bytes_per_block_max = 99 * 1024;
  d.launch_us = 2;
  d.graph_launch_us = 3;
  d.launch_latency_us = 0;
  return d;
}

// A kernel of `blocks` blocks of 256 threads and 32 registers (8 fit on an SM): `flops` and
// `bytes` for the whole grid.
KernelSpec kernel(const char* name, std::uint32_t blocks, double flops, std::uint64_t bytes = 0) {
  KernelSpec k;
  k.name = name;
  k.blocks = blocks;
  k.flops = flops;
  k.bytes = bytes;
  return k;
}

constexpr double kTol = 1e-6;

TEST(GpuModelLaws, KernelAloneRunsAtItsRoofline) {
  const GpuDevice gpu = round_gpu();
  // One block per SM: 100 SMs x 1e6 FLOP/us = 1e8 FLOP/us, 1e9 FLOP -> 10 us.
  EXPECT_NEAR(kernel_alone_us(gpu, kernel("compute", 100, 1e9)), 10.0, kTol);
  // 1e7 bytes at 1e6 B/us -> 10 us (100 SMs could draw 2e6 B/us: DRAM is the limit).
  EXPECT_NEAR(kernel_alone_us(gpu, kernel("memory", 100, 0, 10'000'000)), 10.0, kTol);
  // Both: the larger of the two, max(4, 10) = 10 us.
  EXPECT_NEAR(kernel_alone_us(gpu, kernel("both", 100, 4e8, 10'000'000)), 10.0, kTol);
  // 25 blocks on 25 SMs: 25 x 2e4 = 5e5 B/us of DRAM at most -> 1e7 bytes in 20 us.
  EXPECT_NEAR(kernel_alone_us(gpu, kernel("narrow", 25, 0, 10'000'000)), 20.0, kTol);
  // f16 on tensor cores: 4e14 FLOP/s -> 4e8 FLOP/us, 4e9 FLOP -> 10 us.
  KernelSpec half = kernel("f16", 100, 4e9);
  half.f16 = true;
  EXPECT_NEAR(kernel_alone_us(gpu, half), 10.0, kTol);
}

TEST(GpuModelLaws, TwoKernelsUnderHalfTheSmsFinishTogetherInTheLongersTime) {
  const GpuDevice gpu = round_gpu();
  // 40 blocks each, one per SM: a alone 40 SMs x 10 us of work = 10 us, b 20 us. Together they
  // use 80 of the 100 SMs and neither slows the other.
  const KernelSpec a = kernel("a", 40, 40 * 10 * 1e6);
  const KernelSpec b = kernel("b", 40, 40 * 20 * 1e6);
  const auto runs = simulate_kernels(gpu, {{a, 0, 0, 0}, {b, 1, 0, 0}});
  EXPECT_NEAR(runs[0].start_us, 0, kTol);
  EXPECT_NEAR(runs[1].start_us, 0, kTol);
  EXPECT_NEAR(runs[0].end_us, 10, kTol);
  EXPECT_NEAR(runs[1].end_us, 20, kTol);  // the longer one alone
}

TEST(GpuModelLaws, TwoGridsThatEachFillTheGpuSerialise) {
  const GpuDevice gpu = round_gpu();
  // 800 blocks of 256 threads: 8 per SM x 100 SMs, the whole GPU. 1e9 FLOP -> 10 us alone.
  const KernelSpec a = kernel("a", 800, 1e9);
  const KernelSpec b = kernel("b", 800, 1e9);
  const auto runs = simulate_kernels(gpu, {{a, 0, 0, 0}, {b, 1, 0, 0}});
  EXPECT_NEAR(runs[0].end_us, 10, kTol);
  EXPECT_NEAR(runs[1].start_us, 10, kTol);  // no room until a's blocks leave
  EXPECT_NEAR(runs[1].end_us, 20, kTol);
  // On one stream too: stream order alone serialises them.
  const auto same = simulate_kernels(gpu, {{kernel("small", 10, 1e7), 0, 0, 0}, {kernel("small2", 10, 1e7), 0, 0, 0}});
  EXPECT_NEAR(same[0].end_us, 1, kTol);
  EXPECT_NEAR(same[1].start_us, 1, kTol);
  EXPECT_NEAR(same[1].end_us, 2, kTol);
}

TEST(GpuModelLaws, MemoryAndComputeBoundKernelsCoRunFasterThanInSequenceNotPastTheRoofline) {
  const GpuDevice gpu = round_gpu();
  // c: 1e9 FLOP (10 us of the GPU's compute) and 1e6 bytes (1 us of DRAM); m: 1e8 FLOP (1 us),
  // 1e7 bytes (10 us). Alone 10 us each, 20 us in sequence. Together, per unit of progress each
  // has a dominant share of 0.1 of a resource per us: equal rates x, with compute 100 x (10 + 1)
  // SM-us/us <= 100 and DRAM 100 x (1e4 + 1e5) B/us <= 1e6: x = 1/11, both end at 11 us, the
  // roofline bound max(11 us of compute, 11 us of DRAM).
  const KernelSpec c = kernel("c", 100, 1e9, 1'000'000);
  const KernelSpec m = kernel("m", 100, 1e8, 10'000'000);
  const double sequence = kernel_alone_us(gpu, c) + kernel_alone_us(gpu, m);
  EXPECT_NEAR(sequence, 20, kTol);
  const auto runs = simulate_kernels(gpu, {{c, 0, 0, 0}, {m, 1, 0, 0}});
  const double together = std::max(runs[0].end_us, runs[1].end_us);
  EXPECT_LT(together, sequence);
  EXPECT_GE(together, 11 - kTol);  // never past the roofline bound
  EXPECT_NEAR(together, 11, kTol);
  // Two memory-bound kernels gain nothing: DRAM is the one bottleneck, 20 us either way.
  const auto both_memory = simulate_kernels(gpu, {{m, 0, 0, 0}, {m, 1, 0, 0}});
  EXPECT_NEAR(std::max(both_memory[0].end_us, both_memory[1].end_us), 20, kTol);
}

TEST(GpuModelLaws, AHigherPriorityStreamsKernelOvertakesQueuedBlocks) {
  const GpuDevice gpu = round_gpu();
  // low: 1600 blocks (two full waves of 800, 5 us each: 5e8 FLOP per wave). queued: another
  // full-GPU kernel launched at 0 on a second stream. urgent: 100 blocks of 1e6 FLOP each
  // (1 us alone), launched at 1 us. When the first wave of `low` leaves at 5 us, urgent's blocks
  // go first, ahead of low's second wave and of `queued` (launched earlier); low's remaining 800
  // blocks then find room for 700.
  const KernelSpec low = kernel("low", 1600, 1e9);
  const KernelSpec queued = kernel("queued", 800, 5e8);
  const KernelSpec urgent = kernel("urgent", 100, 1e8);
  const auto with = simulate_kernels(gpu, {{low, 0, 0, 0}, {queued, 1, 0, 0}, {urgent, 2, 1, 1}});
  EXPECT_NEAR(with[2].start_us, 5, kTol);
  EXPECT_LT(with[2].start_us, with[1].start_us);
  // Sharing the SMs with 700 blocks of low (g = 0.625 SM-us each; urgent's g = 1): equal
  // dominant shares give urgent x = 800 lambda, low x = 1280 lambda with 100 x 800 lambda x 1 +
  // 700 x 1280 lambda x 0.625 = 100 SM-us/us: x = 1/8 per us, urgent ends at 5 + 8 = 13.
  EXPECT_NEAR(with[2].end_us, 13, kTol);
  // At equal priority it waits until both earlier grids have placed all their blocks: low's
  // second wave runs 5..10, queued fills the GPU 10..15, urgent runs alone 15..16.
  const auto without = simulate_kernels(gpu, {{low, 0, 0, 0}, {queued, 1, 0, 0}, {urgent, 2, 0, 1}});
  EXPECT_NEAR(without[1].start_us, 10, kTol);
  EXPECT_NEAR(without[2].start_us, 15, kTol);
  EXPECT_NEAR(without[2].end_us, 16, kTol);
}

TEST(GpuModelLaws, ACooperativeKernelWaitsForRoomForAllItsBlocksAndHoldsItsSms) {
  const GpuDevice gpu = round_gpu();
  // filler: 400 blocks (half of every SM), 10 us. loop: cooperative, 800 blocks: needs the whole
  // GPU, so it starts only when filler is gone; then `after` (10 blocks) waits behind it.
  const KernelSpec filler = kernel("filler", 400, 1e9);
  KernelSpec loop = kernel("loop", 800, 1e9);
  loop.cooperative = true;
  const KernelSpec after = kernel("after", 10, 1e6);
  const auto runs = simulate_kernels(gpu, {{filler, 0, 0, 0}, {loop, 1, 0, 0}, {after, 2, 0, 0}});
  EXPECT_NEAR(runs[0].end_us, 10, kTol);
  EXPECT_NEAR(runs[1].start_us, 10, kTol);
  EXPECT_NEAR(runs[1].end_us, 20, kTol);
  EXPECT_GE(runs[2].start_us, 20 - kTol);
  // A cooperative grid larger than the GPU holds is refused.
  KernelSpec too_big = kernel("too_big", 801, 1e9);
  too_big.cooperative = true;
  EXPECT_THROW(kernel_alone_us(gpu, too_big), Error);
}

TEST(GpuModelLaws, LaunchLatencyAndStreamOrder) {
  GpuDevice gpu = round_gpu();
  gpu.launch_latency_us = 1;
  // Launched at 2 us: its blocks start at 3 us, 10 us of work; the next on its stream, launched
  // at 4, starts when the first ends (13) and the one on another stream at 5 + 1 = 6.
  const auto runs = simulate_kernels(
      gpu, {{kernel("a", 40, 4e8), 0, 0, 2}, {kernel("b", 40, 4e8), 0, 0, 4}, {kernel("c", 40, 4e8), 1, 0, 5}});
  EXPECT_NEAR(runs[0].start_us, 3, kTol);
  EXPECT_NEAR(runs[0].end_us, 13, kTol);
  EXPECT_NEAR(runs[1].start_us, 13, kTol);
  EXPECT_NEAR(runs[2].start_us, 6, kTol);
  EXPECT_NEAR(runs[2].end_us, 16, kTol);
}

TEST(GpuModelLaws, BlocksThatCannotRunAreRefused) {
  const GpuDevice gpu = round_gpu();
  KernelSpec k = kernel("huge_shared", 10, 1e6);
  k.shared_bytes_per_block = 200 * 1024;
  EXPECT_THROW(kernel_alone_us(gpu, k), Error);
  EXPECT_THROW(kernel_alone_us(gpu, kernel("empty", 0, 1e6)), Error);
}

// --- The scheduler on the GPU model ---

Workload two_step_model() {
  Workload w;
  w.models = {{"net", {{"s0", 10, 2}, {"s1", 10, 2}}}};
  w.requests = {{"net", 0}};
  return w;
}

TEST(GpuModelSimulator, StepsAreLaunchedByTheDispatcherAndRunInStreamOrder) {
  SimOptions options;
  options.gpu = round_gpu();
  options.gpu->launch_latency_us = 1;
  FifoPolicy fifo;
  const SimResult r = simulate(two_step_model(), fifo, options);
  // Step 0: decided at 0, its graph launched by 3 (graph_launch_us), first block at 4; default
  // kernel: 100 blocks, 10 us of compute, 2 us of DRAM -> ends at 14. Step 1: decided at 3
  // (the dispatcher is free), launched by 6, starts when step 0 ends: 14 -> 24.
  ASSERT_EQ(r.schedule.size(), 2u);
  EXPECT_NEAR(r.schedule[0].decided_us, 0, kTol);
  EXPECT_NEAR(r.schedule[0].compute_start_us, 4, kTol);
  EXPECT_NEAR(r.schedule[0].compute_end_us, 14, kTol);
  EXPECT_NEAR(r.schedule[1].decided_us, 3, kTol);
  EXPECT_NEAR(r.schedule[1].compute_start_us, 14, kTol);
  EXPECT_NEAR(r.schedule[1].compute_end_us, 24, kTol);
  EXPECT_NEAR(r.makespan_us, 24, kTol);
  EXPECT_NEAR(r.compute_busy_us, 20, kTol);
  EXPECT_NEAR(r.memory_busy_us, 4, kTol);

  // Kernel by kernel (no graphs): launch_us = 2 per kernel; step 0 starts at 3, ends 13; step 1
  // launched by 4, ends 23.
  options.cuda_graphs = false;
  const SimResult plain = simulate(two_step_model(), fifo, options);
  EXPECT_NEAR(plain.schedule[0].compute_end_us, 13, kTol);
  EXPECT_NEAR(plain.makespan_us, 23, kTol);
}

TEST(GpuModelSimulator, TheInflightBoundHoldsTheDispatcherUntilTheOldestStepEnds) {
  SimOptions options;
  options.gpu = round_gpu();
  options.max_inflight_steps = 1;
  Workload w;
  w.models = {{"net", {{"s0", 10, 0}, {"s1", 10, 0}, {"s2", 10, 0}}}};
  w.requests = {{"net", 0}};
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo, options);
  // s0 launched 0..3, runs 3..13. s1 is launched 3..6; two Steps would then be in flight, so
  // the dispatcher waits for s0: the next decision is at 13. s1 runs 13..23 (after s0 on its
  // stream), s2 is launched 13..16 and runs 23..33.
  ASSERT_EQ(r.schedule.size(), 3u);
  EXPECT_NEAR(r.schedule[1].decided_us, 3, kTol);
  EXPECT_NEAR(r.schedule[2].decided_us, 13, kTol);
  EXPECT_NEAR(r.schedule[2].compute_start_us, 23, kTol);
  EXPECT_NEAR(r.makespan_us, 33, kTol);
  // Streams (unbounded) launches all three at once: decisions at 0, 3, 6.
  StreamsPolicy streams;
  const SimResult s = simulate(w, streams, options);
  EXPECT_NEAR(s.schedule[2].decided_us, 6, kTol);
}

TEST(GpuModelSimulator, InterleavingAComputeAndAMemoryModelBeatsRunningThemInTurn) {
  // Two models of 4 Steps, 100 blocks each: compute (10 us compute, 1 us DRAM) and memory
  // (1 us, 10 us), two Steps in flight. FIFO launches one request's Steps (one stream: they
  // cannot overlap); round-robin alternates the models, whose kernels co-run (GpuModelLaws: 11 us
  // per pair instead of 20).
  Workload w;
  SimModel compute{"compute", {}}, memory{"memory", {}};
  for (int i = 0; i < 4; ++i) {
    compute.steps.push_back({"c" + std::to_string(i), 10, 1});
    memory.steps.push_back({"m" + std::to_string(i), 1, 10});
  }
  w.models = {compute, memory};
  w.requests = {{"compute", 0}, {"memory", 0}};
  SimOptions options;
  options.gpu = round_gpu();
  options.max_inflight_steps = 2;
  FifoPolicy fifo;
  RoundRobinPolicy rr;
  const SimResult f = simulate(w, fifo, options);
  const SimResult r = simulate(w, rr, options);
  EXPECT_LT(r.makespan_us, 0.8 * f.makespan_us);
  EXPECT_GE(r.makespan_us, r.lower_bound_us - kTol);
  // FIFO: the compute request's Steps fill both in-flight slots, so the memory request starts
  // only as the compute one ends; the compute chain alone is 3 + 4 x 10 = 43 us.
  EXPECT_GE(f.makespan_us, 43 - kTol);
}

TEST(GpuModelSimulator, DeviceMemoryIsRefusedWithTheGpuModel) {
  SimOptions options;
  options.gpu = round_gpu();
  options.device_memory_bytes = 1000;
  FifoPolicy fifo;
  EXPECT_THROW(simulate(two_step_model(), fifo, options), Error);
}

}  // namespace
}  // namespace loom::sim
