// The debug mode's plain parts (loom/debug.hpp): mode names, tolerances, the element comparison
// compare mode and loom-run --check share, and the report's text.
#include "loom/debug.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "loom/error.hpp"

namespace loom {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", value);
  return text;
}

// "[0,2,1,3]": flat index `flat` of a row-major tensor of `shape`.
std::string element_index(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> index(shape.rank());
  for (std::size_t axis = shape.rank(); axis-- > 0;) {
    const std::int64_t extent = shape[axis] > 0 ? shape[axis] : 1;
    index[axis] = flat % extent;
    flat /= extent;
  }
  std::string text = "[";
  for (std::size_t axis = 0; axis < index.size(); ++axis) {
    if (axis > 0) text += ',';
    text += std::to_string(index[axis]);
  }
  return text + "]";
}

std::string describe(const Tensor& tensor) {
  return tensor.shape().to_string() + " " + std::string(dtype_name(tensor.dtype()));
}

}  // namespace

std::string_view debug_mode_name(DebugMode mode) noexcept {
  switch (mode) {
    case DebugMode::off:
      return "off";
    case DebugMode::cpu:
      return "cpu";
    case DebugMode::compare:
      return "compare";
  }
  return "off";
}

DebugMode debug_mode_from_name(std::string_view name) {
  for (DebugMode mode : {DebugMode::off, DebugMode::cpu, DebugMode::compare})
    if (name == debug_mode_name(mode)) return mode;
  throw Error(ErrorCode::invalid_argument, "unknown debug mode '" + std::string(name) + "' (known: off, cpu, compare)");
}

DebugTolerance default_debug_tolerance(DType compute_dtype) noexcept {
  if (compute_dtype == DType::f16) return {2e-2, 2e-2};
  return {1e-4, 1e-3};
}

void check_debug_tolerance(const DebugTolerance& tolerance) {
  for (const auto& [bound, name] : {std::pair{tolerance.abs, "abs"}, std::pair{tolerance.rel, "rel"}})
    if (!(bound >= 0) || !std::isfinite(bound))
      throw Error(ErrorCode::invalid_argument,
                  std::string("debug tolerance: ") + name + " = " + number(bound) + " is not a finite number >= 0");
}

TensorDifference compare_tensors(const Tensor& device, const Tensor& reference, const DebugTolerance& tolerance) {
  if (device.numel() != reference.numel())
    throw Error(ErrorCode::shape_mismatch, "compare_tensors: the device's " + describe(device) +
                                               " against the reference's " + describe(reference));
  const std::vector<double> d = to_doubles(device), r = to_doubles(reference);
  // Integers compare exactly, by their bits where the dtypes agree: doubles lose 64-bit values
  // beyond 2^53.
  const bool exact = !is_floating(reference.dtype());
  const std::size_t element_bytes = exact && device.dtype() == reference.dtype() ? dtype_size(device.dtype()) : 0;
  const auto* device_bytes = static_cast<const std::byte*>(device.data());
  const auto* reference_bytes = static_cast<const std::byte*>(reference.data());
  TensorDifference diff;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const bool device_nan = std::isnan(d[i]), reference_nan = std::isnan(r[i]);
    double gap = 0;
    bool beyond = false;
    if (device_nan || reference_nan) {
      beyond = device_nan != reference_nan;
      gap = beyond ? INFINITY : 0;
    } else if (d[i] != r[i]) {  // equal infinities are equal
      gap = std::fabs(d[i] - r[i]);
      beyond = exact || !(gap <= tolerance.abs + tolerance.rel * std::fabs(r[i]));
    }
    if (element_bytes > 0)
      beyond = std::memcmp(device_bytes + i * element_bytes, reference_bytes + i * element_bytes, element_bytes) != 0;
    diff.max_abs = std::max(diff.max_abs, gap);
    if (std::isfinite(r[i]) && r[i] != 0) diff.max_rel = std::max(diff.max_rel, gap / std::fabs(r[i]));
    if (!beyond) continue;
    if (diff.beyond++ == 0) {
      diff.first = static_cast<std::int64_t>(i);
      diff.device_value = d[i];
      diff.reference_value = r[i];
    }
  }
  return diff;
}

std::string format_divergence(const DebugDivergence& v) {
  std::string text = "divergence: model '" + v.model + "', request " + std::to_string(v.request_id) + ", Step " +
                     std::to_string(v.step_index) + " of " + std::to_string(v.step_count) + " '" + v.step_name +
                     "' on " + v.device + " against the CPU\n";
  text += "  Step nodes:";
  for (std::size_t k = 0; k < v.step_nodes.size(); ++k)
    text += std::string(k ? ", " : " ") + v.step_nodes[k].name + " (" + v.step_nodes[k].op_type + ")";
  text += "\n  blamed: node '" + v.node + "' (" + v.op_type + "), output '" + v.value + "' " +
          v.value_shape.to_string() + (v.node == v.step_nodes.front().name ? "" : "; the nodes before it matched") +
          "\n";
  const TensorDifference& d = v.difference;
  text += "  first element beyond tolerance: " + std::to_string(d.first) + " " + element_index(d.first, v.value_shape) +
          ": device " + number(d.device_value) + ", CPU " + number(d.reference_value) + " (|diff| " +
          number(std::fabs(d.device_value - d.reference_value)) + " > " + number(v.tolerance.abs) + " + " +
          number(v.tolerance.rel) + " * |cpu|)\n";
  text += "  over the output: " + std::to_string(d.beyond) + " of " + std::to_string(v.value_shape.numel()) +
          " elements beyond tolerance, max abs diff " + number(d.max_abs) + ", max rel diff " + number(d.max_rel) +
          "\n";
  text += "  the request's inputs:";
  for (std::size_t i = 0; i < v.inputs.size(); ++i)
    text +=
        std::string(i ? ", " : " ") + (i < v.input_names.size() ? v.input_names[i] : "?") + " " + describe(v.inputs[i]);
  return text + "\n";
}

std::string format_debug_summary(const DebugModelSummary& s, const DebugReport& report) {
  if (s.divergent_requests == 0)
    return s.model + ": no divergence: " + std::to_string(s.steps_compared) + " Steps (" +
           std::to_string(s.requests_compared) + " requests) compared on " + report.device +
           " against the CPU, max abs diff " + number(s.max_abs_diff) + ", max rel diff " + number(s.max_rel_diff);
  std::string text = s.model + ": " + std::to_string(s.divergent_requests) + " of " +
                     std::to_string(s.requests_compared) + " requests diverged from the CPU";
  for (const DebugDivergence& v : report.divergences) {
    if (v.model != s.model) continue;
    text += ", first at Step " + std::to_string(v.step_index) + " '" + v.step_name + "', node '" + v.node + "' (" +
            v.op_type + ")";
    break;
  }
  return text;
}

}  // namespace loom
