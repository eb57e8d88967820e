// loom-gpu-calibrate's measuring side: runs a case's launches on the GPU with a CUDA event around
// each kernel and the device clock at its first and last block, and times launches from the host.
// Every wait on the GPU is bounded (kWaitLimitSeconds); past it the program ends at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "calibrate_cases.hpp"

namespace loom::calibrate {

// A wait on the GPU longer than this ends the program with exit status 3 and a message on stderr,
// without freeing device memory (cudaFree would wait for the GPU too). Every sample's work is
// milliseconds, so only a GPU that no longer answers gets there.
inline constexpr double kWaitLimitSeconds = 10;

// What the CUDA runtime says of the device.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int compute_capability_major = 0, compute_capability_minor = 0;
  int clock_khz = 0;         // peak SM clock (cudaDevAttrClockRate)
  int memory_clock_khz = 0;  // peak memory clock (cudaDevAttrMemoryClockRate)
  int memory_bus_bits = 0;
  std::uint64_t l2_bytes = 0;
  std::uint64_t global_memory_bytes = 0;
  bool cooperative_launch = false;  // cudaDevAttrCooperativeLaunch
  int least_stream_priority = 0, greatest_stream_priority = 0;
};

// CUDA devices present; 0 (not an error) without a driver or a device.
int cuda_device_count() noexcept;

// Owns the streams, events, buffers and graphs of the measurements on one device. Not copyable.
class GpuRunner {
 public:
  // Makes `ordinal` current and allocates the copy buffers (4 x copy_region_elements x 16 bytes).
  // Throws Error(backend) or Error(out_of_memory).
  explicit GpuRunner(int ordinal);
  // Waits (bounded) for everything queued, then frees.
  ~GpuRunner();
  GpuRunner(const GpuRunner&) = delete;
  GpuRunner& operator=(const GpuRunner&) = delete;

  const DeviceInfo& info() const;
  // The device's SM count and, from cudaFuncGetAttributes, each kernel's registers and shared memory.
  const DeviceShape& shape() const;
  // cudaOccupancyMaxActiveBlocksPerMultiprocessor of `kind` at its block size.
  int cuda_blocks_per_sm(KernelKind kind) const;

  // One run of `calibration_case`: every launch in order on its stream (the gated ones held until all
  // are queued; one with at_us waits that long after the first launch reached the GPU), then, per
  // launch, events and device-clock times (LaunchTimes). Throws Error on a failed CUDA call or a gate
  // that gave up.
  std::vector<LaunchTimes> run(const CalibrationCase& calibration_case);

  // One sample of `overhead`: host microseconds per launch over its launches back to back.
  double host_launch_us(const LaunchOverheadCase& overhead);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace loom::calibrate
