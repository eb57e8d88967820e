// loom-gpu-calibrate's cases: each a few kernel launches that mirror one law of the GPU model
// (tests/unit/test_sim_gpu_laws.cpp, docs/simulator.md "The GPU model"), sized from the GPU's SM
// count and the model's occupancy, and the quantities compared: measured on the GPU
// (calibrate_measure.hpp), simulated on the model (loom::sim::simulate_kernels). No CUDA call here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate_kernels.cuh"
#include "loom/sim.hpp"

namespace loom::calibrate {

// The time, on the model, of one unit of work: each kernel alone (or each wave of a grid larger
// than the GPU holds) is sized to last a whole number of units, or a stated fraction of one. Long
// against launch latencies and the device clock's resolution, short enough that the whole
// calibration takes seconds.
inline constexpr double kUnitUs = 1000;

// A kernel's resources as the model's KernelSpec takes them.
struct KernelResources {
  std::uint32_t registers_per_thread = kRegisterCap;
  std::uint64_t shared_bytes_per_block = 0;  // static + dynamic
};

// What sizes the cases: the GPU's SM count, each kernel's resources, and how many 16-byte elements a
// copy kernel's buffers hold (each of its two buffers, per pass).
struct DeviceShape {
  int sm_count = 0;
  KernelResources compute, copy, wide_copy;
  std::size_t copy_region_elements = 0;
  const KernelResources& resources(KernelKind kind) const;
};

// 16-byte elements of one copy buffer: 256 MiB, or 4 x the L2 cache when that is larger, so that
// every pass reads and writes DRAM.
std::size_t copy_region_elements(std::uint64_t l2_bytes);

// The nominal launch configuration (--simulate-only): the description's SM count, kRegisterCap
// registers per thread (the bound every kernel is compiled under), no shared memory.
DeviceShape nominal_shape(const sim::GpuDevice& description);

// One kernel launch of a case.
struct PlannedLaunch {
  sim::KernelSpec spec;  // what the model is given; grid, block and work as launched
  KernelKind kind = KernelKind::compute;
  int stream = 0;       // the case's stream
  bool urgent = false;  // on the greatest-priority stream (model priority 1; every other launch 0)
  bool cooperative = false;
  double at_us = 0;          // launched this long after the case's first launch
  int iterations = 0;        // compute: FMA rounds per thread
  int passes = 0;            // copy: passes over its elements
  std::size_t elements = 0;  // copy: 16-byte elements per pass
  int buffer = 0;            // copy: which of two buffer pairs, so that co-running copies share no data
};

enum class Quantity {
  launch_to_end,      // `launch`: from its launch to its last block's end
  makespan,           // the case's first launch to its last kernel's end
  first_block_after,  // `launch`'s first block after the case's first block (device clock)
  last_first_block,   // the latest first block of any launch after the case's first block (device clock)
};

struct CaseQuantity {
  std::string name;
  Quantity kind = Quantity::makespan;
  int launch = 0;
};

struct CalibrationCase {
  std::string name;
  std::string law;     // the law it mirrors and how, for --help and the JSON
  bool gated = false;  // the launches wait on one gate and start together
  std::vector<PlannedLaunch> launches;
  std::vector<CaseQuantity> quantities;
  bool needs_cooperative_launch() const;
};

// One launch in one run of a case, in microseconds. From events (measured) or launch times (model):
// when its stream reached the launch and when it ended, from the case's start. From the device clock
// (measured) or the block scheduler (model): its first block's start and last block's end, from the
// case's first block.
struct LaunchTimes {
  double launched_us = 0, ended_us = 0;
  double first_block_us = 0, last_block_us = 0;
};

// Every case, sized for `shape` on `description` (whose occupancy calculator decides how many blocks
// fill the GPU). Throws Error(invalid_argument) when a kernel does not fit on one of its SMs.
std::vector<CalibrationCase> calibration_cases(const sim::GpuDevice& description, const DeviceShape& shape);

// The case on the model.
std::vector<LaunchTimes> simulate_case(const sim::GpuDevice& description, const CalibrationCase& calibration_case);

// The case's quantities, in its order, from one run's times.
std::vector<double> case_quantities(const CalibrationCase& calibration_case, const std::vector<LaunchTimes>& times);

// Host time of launches: kernels one by one, or a captured graph of `kernels_per_graph` kernels.
struct LaunchOverheadCase {
  std::string name;
  std::string law;
  std::string quantity;
  int kernels_per_graph = 0;  // 0: plain kernel launches
  int launches = 0;           // timed back to back per sample
  double simulated_us = 0;    // the description's launch_us or graph_launch_us
};
std::vector<LaunchOverheadCase> launch_overhead_cases(const sim::GpuDevice& description);

// Every case's name and law, in order (kernel cases, then launch overhead), for --help.
std::vector<std::pair<std::string, std::string>> case_catalogue();

}  // namespace loom::calibrate
