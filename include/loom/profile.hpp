// Device profiles: the device's measured peak figures and each Step's measured time, written by
// loom-profile to profiles/<device>.json and read by the executor at start. Without a profile, a
// roofline estimate from the backend's peak figures stands in.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/model.hpp"
#include "loom/model_info.hpp"
#include "loom/tensor.hpp"

namespace loom {

struct PeakFigures {
  double flops_f32 = 0;  // FLOP/s, dense GEMM
  double flops_f16 = 0;  // FLOP/s, dense GEMM (0 where not measured)
  double bandwidth = 0;  // bytes/s, device-to-device copy (read + write counted)
  std::string method;    // how they were obtained, e.g. "cuBLAS 8192^3 GEMM, 1 GiB D2D copy"
};

struct StepProfile {
  std::string name;
  double measured_us = 0;             // median time of the Step alone
  double compute_probe_slowdown = 0;  // time co-running with a compute-saturating probe / alone; 0 = not measured
  double memory_probe_slowdown = 0;   // time co-running with a bandwidth-saturating probe / alone; 0 = not measured
};

struct ModelProfile {
  std::string model;        // name when profiled
  std::string fingerprint;  // model_fingerprint(): matches the same graph, shapes and dtype
  DType compute_dtype = DType::f32;
  std::vector<StepProfile> steps;
};

struct DeviceProfile {
  int format_version = 1;
  std::string device_name;  // as the backend reports it
  std::string created;      // ISO-8601 date-time
  std::string loom_version;
  std::string command;  // the command that wrote it
  PeakFigures peaks;
  std::vector<ModelProfile> models;

  // The model entry with this fingerprint, if any.
  const ModelProfile* find(const std::string& fingerprint) const;
};

// Throws Error(invalid_argument) naming the path and the problem (missing file, bad JSON, a field
// of the wrong type, an unknown format_version).
DeviceProfile read_profile(const std::string& path);
// As read_profile() on a profile document read from `in`; `source_name` stands for the file in
// messages. Throws Error(invalid_argument) and nothing else, whatever the bytes.
DeviceProfile parse_profile(std::istream& in, const std::string& source_name);
// Throws Error(invalid_argument) when the file cannot be written.
void write_profile(const DeviceProfile& profile, const std::string& path);

// "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3.json".
std::string profile_file_name(const std::string& device_name);

// A stable hex digest of what determines Step costs: op types, attributes, value shapes and dtypes,
// the Step partition and the compute dtype; not the weights' values.
std::string model_fingerprint(const Model& model, DType compute_dtype);

// Where the executor looks for profiles/<file>: $LOOM_PROFILE_DIR, then ./profiles, then the
// installed share/loom/profiles. The first existing match wins; nullopt when none does.
std::optional<std::string> find_profile(const std::string& device_name);

// --- Measuring a profile (what loom-profile runs; docs/profile-format.md describes the method) ---

struct ProfilerOptions {
  // As ExecutorOptions::device: "auto", "cpu", "cuda" or "cuda:N".
  std::string device = "auto";
  int runs = 50;   // timed runs per Step (and per peak figure); the median is kept
  int warmup = 5;  // untimed runs before them
  // Also time each Step co-running with the backend's compute- and bandwidth-saturating probes
  // (CUDA only; on a backend without probes the slowdowns stay 0).
  bool probes = true;
  // Before every timed run, a device copy over 2x the on-chip cache evicts what the previous run
  // left there, so a Step starts cold as it would after other models' work.
  bool flush_cache = true;
  // Peak-figure sizes; 0 = chosen for the backend (CUDA: 8192^3 GEMM and a 1 GiB copy; CPU:
  // 512^3 and 64 MiB).
  std::int64_t gemm_size = 0;
  std::uint64_t copy_bytes = 0;
  // Request arenas rotated between runs: enough to exceed 2x the on-chip cache, at most this many.
  int max_arenas = 16;
  // Receives one line per stage (e.g. to print on stderr); may be empty.
  std::function<void(const std::string&)> progress;
};

// One model as measured: the profile entry, and per Step the plan's work and roofline estimate
// (from the peaks passed in) with measured_us and the probe slowdowns filled in.
struct ModelMeasurement {
  ModelProfile profile;
  std::vector<StepInfo> steps;
};

// Measures a device's peaks and the Steps of models on it. Not thread-safe; one at a time per
// device (measurements of a shared device disturb each other).
class Profiler {
 public:
  // Opens the device; throws as Executor's constructor does for a bad or absent device.
  explicit Profiler(ProfilerOptions options = {});
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  std::string device_name() const;   // e.g. "NVIDIA H100 80GB HBM3"
  std::string backend_name() const;  // "cpu" or "cuda"

  // Dense GEMM FLOP/s (f32, and f16 where the backend computes in f16) and device-copy bandwidth,
  // each the median of `runs` timed runs. Throws Error(backend|out_of_memory) from the device.
  PeakFigures measure_peaks();
  // Times every Step of `model` alone (and with probes), computing in `compute_dtype`. Roofline
  // estimates use `peaks`, falling back to the backend's own figures for a zero entry. Throws
  // what compiling and loading the model throw (Error(unsupported) for f16 on the CPU backend).
  ModelMeasurement measure_model(const Model& model, DType compute_dtype, const PeakFigures& peaks);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom
