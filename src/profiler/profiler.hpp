// The measurements behind a device profile, on any backend: peak figures (a large GEMM, a large
// device copy) and each Step of a model timed alone and beside the backend's probes. Only timed
// events, kernels and streams of the backend seam are used, so the CPU backend runs (and tests)
// the same code as CUDA. It loads models as the runtime does (runtime::LoadedModel), so it sits
// above the runtime; src/profile/ (the profiles themselves) sits below it.
#pragma once

#include <functional>
#include <vector>

#include "backend/backend.hpp"
#include "loom/profile.hpp"
#include "profile/active_profile.hpp"

namespace loom::profile {

// Median of `samples` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> samples);

// Times `body(i)` for i in [0, warmup + runs) on `stream`, each between two timed events;
// `before(i)` (may be empty) runs first, outside them; the first `warmup` runs are not kept.
// Returns the timed runs' microseconds, in order, after one synchronisation.
std::vector<double> time_runs(backend::Stream& stream, int warmup, int runs, const std::function<void(int)>& before,
                              const std::function<void(int)>& body);

// GEMM FLOP/s per dtype (f16 left 0 where the backend's MatMul rejects f16) and copy bandwidth
// (bytes read + written per second), each the median of options.runs timed runs.
PeakFigures measure_peaks(backend::Backend& device, const ProfilerOptions& options);

// Loads `model` on `device` and times each Step alone, then (options.probes, and where the
// backend has probes) co-running with a compute and with a memory probe. See Profiler.
ModelMeasurement measure_model(backend::Backend& device, const Model& model, DType compute_dtype,
                               const PeakFigures& peaks, const ProfilerOptions& options);

}  // namespace loom::profile
