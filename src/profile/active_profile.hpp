// The profile an executor runs with: which file ExecutorOptions::profile names, the peaks its
// roofline estimates use, and the measured Step costs it contributes to a loaded model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/model_info.hpp"
#include "loom/profile.hpp"
#include "plan/compiled_model.hpp"

namespace loom::profile {

struct ActiveProfile {
  std::string path = "none";             // the file read; "none" when Step costs are estimates
  std::optional<DeviceProfile> profile;  // its contents
};

// Resolves ExecutorOptions::profile for the device named `device_name`: "none" uses no profile;
// "auto" the file find_profile() finds, or none when there is none; anything else is a path.
// Throws read_profile()'s Error(invalid_argument) for a file that is named or found but cannot
// be read.
ActiveProfile resolve_profile(const std::string& option, const std::string& device_name);

// Peak figures for roofline estimates at `compute_dtype`: the measured ones in `peaks`, the
// backend's own for a figure that is 0 (not measured).
plan::DevicePeaks roofline_peaks(const PeakFigures& peaks, const backend::Backend& device, DType compute_dtype);
// The same for an executor: the profile's peaks when it has one, else the backend's.
plan::DevicePeaks roofline_peaks(const ActiveProfile& active, const backend::Backend& device, DType compute_dtype);

// Copies measured_us and the probe slowdowns into `steps` from the profile's entry with this
// fingerprint and compute dtype, when there is one with as many Steps. Returns the cost source
// for ModelInfo::cost_source: "profile <path>" when it matched, else "roofline".
std::string apply_profile(const ActiveProfile& active, const std::string& fingerprint, DType compute_dtype,
                          std::vector<StepInfo>& steps);

}  // namespace loom::profile
