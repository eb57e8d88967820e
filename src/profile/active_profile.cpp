// Choosing and applying an executor's device profile.
#include "profile/active_profile.hpp"

#include "core/profile_dirs.hpp"

namespace loom::profile {

ActiveProfile resolve_profile(const std::string& option, const std::string& device_name) {
  ActiveProfile active;
  const auto path = core::resolve_file_option(option, "none", [&] { return find_profile(device_name); });
  if (!path) return active;
  active.path = *path;
  active.profile = read_profile(active.path);
  return active;
}

plan::DevicePeaks roofline_peaks(const PeakFigures& peaks, const backend::Backend& device, DType compute_dtype) {
  const double measured_flops = compute_dtype == DType::f32 ? peaks.flops_f32 : peaks.flops_f16;
  return plan::DevicePeaks{measured_flops > 0 ? measured_flops : device.peak_flops(compute_dtype),
                           peaks.bandwidth > 0 ? peaks.bandwidth : device.peak_bandwidth()};
}

plan::DevicePeaks roofline_peaks(const ActiveProfile& active, const backend::Backend& device, DType compute_dtype) {
  return roofline_peaks(active.profile ? active.profile->peaks : PeakFigures{}, device, compute_dtype);
}

std::string apply_profile(const ActiveProfile& active, const std::string& fingerprint, DType compute_dtype,
                          std::vector<StepInfo>& steps) {
  if (!active.profile) return "roofline";
  const ModelProfile* entry = active.profile->find(fingerprint);
  // The fingerprint covers the compute dtype and the Step partition; the checks guard against a
  // hand-edited file.
  if (!entry || entry->compute_dtype != compute_dtype || entry->steps.size() != steps.size()) return "roofline";
  for (std::size_t s = 0; s < steps.size(); ++s) {
    steps[s].measured_us = entry->steps[s].measured_us;
    steps[s].compute_probe_slowdown = entry->steps[s].compute_probe_slowdown;
    steps[s].memory_probe_slowdown = entry->steps[s].memory_probe_slowdown;
  }
  return "profile " + active.path;
}

}  // namespace loom::profile
