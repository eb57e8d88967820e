// The GPU device model's block scheduler (docs/simulator.md, "The GPU model"): kernels queue on
// streams, the blocks of the kernels at the streams' heads are placed on the SMs by occupancy in
// (priority, launch) order, and the resident blocks share the SMs' compute and the DRAM
// bandwidth. Time advances only when asked, so the host side (the dispatcher in simulator.cpp,
// simulate_kernels) can launch between events without ever launching in the past.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "loom/sim.hpp"

namespace loom::sim::detail {

class GpuBlockScheduler {
 public:
  explicit GpuBlockScheduler(const GpuDevice& device);

  // Queues `kernel` on `stream` at `at_us` (>= now()); it may start launch_latency_us later, once
  // the kernel launched before it on that stream has finished. Returns its id (0, 1, ...).
  // Throws Error(invalid_argument) for a block that cannot run on an SM, a cooperative grid
  // larger than the GPU holds at once, or negative work.
  std::size_t launch(const KernelSpec& kernel, int stream, int priority, double at_us);

  double now() const noexcept { return now_; }
  // Runs the device up to `t` (never back).
  void advance_to(double t);
  // When the device's state next changes: a group of blocks ends or a queued kernel becomes
  // eligible (infinity when nothing is queued or running).
  double next_event_time();
  // Runs the device until kernel `id` has finished; returns its end.
  double run_until_finished(std::size_t id);
  // Runs the device until every launched kernel has finished; returns the last end.
  double run_until_idle();

  bool finished(std::size_t id) const { return kernels_[id].done; }
  double start_us(std::size_t id) const { return kernels_[id].start_us; }
  double end_us(std::size_t id) const { return kernels_[id].end_us; }
  std::size_t kernel_count() const noexcept { return kernels_.size(); }
  // Kernels finished since the last call, in the order they finished.
  std::vector<std::size_t> take_finished();

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  struct Kernel {
    KernelSpec spec;
    int stream = 0;
    int priority = 0;
    double launched_us = 0;
    double eligible_us = kNever;  // when its blocks may be dispatched (kNever: behind its stream)
    std::size_t next_on_stream = kNone;
    std::uint32_t pending = 0;  // blocks not yet dispatched
    std::uint32_t running = 0;
    std::uint32_t max_resident = 0;  // sm_count x blocks_per_sm
    // Per block: SM-time of its compute (us of one SM at peak) and its DRAM bytes.
    double sm_us = 0, bytes = 0;
    double warps = 0;
    // Aggregate per-block resource use: threads (whole warps), registers, shared memory.
    double threads = 0, registers = 0, shared = 0;
    double start_us = kNever, end_us = kNever;
    bool started = false, done = false;
  };
  // Blocks of one kernel dispatched at the same moment: they progress together.
  struct Cohort {
    std::size_t kernel = 0;
    std::uint32_t blocks = 0;
    double remaining = 1;  // fraction of each block's work left
    double rate = 0;       // fraction per microsecond, set by share()
  };
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  void dispatch_blocks();
  bool fits(const Kernel& k, std::uint32_t blocks) const;
  std::uint32_t blocks_that_fit(const Kernel& k) const;
  void share();
  double next_event() const;
  void step_to(double t);
  void finish_kernel(std::size_t id);

  GpuDevice device_;
  double sm_bandwidth_ = 0;  // bytes/us one SM can draw
  double now_ = 0;
  std::vector<Kernel> kernels_;
  std::vector<std::size_t> stream_tail_;  // per stream index (dense): last kernel queued, kNone
  std::vector<int> stream_ids_;
  std::vector<std::size_t> waiting_;  // kernels with pending blocks, eligible or not
  std::vector<Cohort> cohorts_;
  std::vector<std::size_t> finished_;
  // Resources held by resident blocks, against the GPU's totals.
  double used_threads_ = 0, used_registers_ = 0, used_shared_ = 0, used_blocks_ = 0;
  double total_threads_ = 0, total_registers_ = 0, total_shared_ = 0, total_blocks_ = 0;
  bool rates_valid_ = false;
};

}  // namespace loom::sim::detail
