// The executor's debug mode (ExecutorOptions::debug): run on the CPU backend instead of the device,
// or run every Step on both and compare; what a comparison found, and how to print it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/tensor.hpp"

namespace loom {

// off: the device alone. cpu: every model runs on the CPU backend in f32, whatever the device and
// compute dtype say (is the device to blame?). compare: every model runs on the device and, beside
// it, on a CPU reference twin in f32; each Step's outputs are compared as the Step completes.
enum class DebugMode { off, cpu, compare };
std::string_view debug_mode_name(DebugMode mode) noexcept;  // "off", "cpu", "compare"
// Throws Error(invalid_argument) naming the modes there are.
DebugMode debug_mode_from_name(std::string_view name);

// An element diverges where |device - reference| > abs + rel * |reference| (NaN against a number
// diverges; equal infinities and NaN against NaN do not). Integer and bool values must be equal.
struct DebugTolerance {
  double abs = 0;
  double rel = 0;
};
// Suited to the compute dtype: f32 abs 1e-4, rel 1e-3; f16 (one rounding of about 5e-4 per value,
// compounded over the Steps) abs 2e-2, rel 2e-2.
DebugTolerance default_debug_tolerance(DType compute_dtype) noexcept;
// Throws Error(invalid_argument) for a negative or non-finite bound.
void check_debug_tolerance(const DebugTolerance& tolerance);

// How far `device` is from `reference` (same shape; any dtypes, compared as doubles).
struct TensorDifference {
  double max_abs = 0;        // over every element (infinite where NaN meets a number)
  double max_rel = 0;        // |device - reference| / |reference| over elements whose reference is not 0
  std::uint64_t beyond = 0;  // elements beyond the tolerance
  std::int64_t first = -1;   // flat index of the first of them; -1 when none
  double device_value = 0;   // the values at `first`
  double reference_value = 0;
};
// Float dtypes compare under `tolerance`, integer and bool ones exactly. Throws
// Error(shape_mismatch) when the element counts differ.
TensorDifference compare_tensors(const Tensor& device, const Tensor& reference, const DebugTolerance& tolerance);

// A node of a Step, in the Step's execution order.
struct DebugStepNode {
  std::string name;
  std::string op_type;
};

// The first Step of one request whose outputs differed beyond tolerance (debug = compare). The
// blamed node is the first of the Step, in execution order, with an output beyond tolerance: every
// node before it matched, so it computed a wrong answer from right inputs.
struct DebugDivergence {
  std::string model;
  std::uint64_t request_id = 0;
  std::size_t step_index = 0;
  std::size_t step_count = 0;  // of the model
  std::string step_name;
  std::vector<DebugStepNode> step_nodes;  // the Step's nodes (views included), in order
  std::string node;                       // the blamed node
  std::string op_type;
  std::string value;  // its output that diverged
  Shape value_shape;
  TensorDifference difference;  // over that output (the first element beyond tolerance, maxima)
  DebugTolerance tolerance;
  std::string device;  // the device's name
  // The request's inputs as the device received them (in the model's dtypes; with f16 compute,
  // already rounded to f16, so submitting them again reproduces the device's run exactly).
  std::vector<std::string> input_names;
  std::vector<Tensor> inputs;
};

// What compare mode saw of one model.
struct DebugModelSummary {
  std::string model;
  std::uint64_t requests_compared = 0;  // requests compared to their end or to their divergence
  std::uint64_t steps_compared = 0;
  std::uint64_t values_compared = 0;  // Step outputs (views not counted: they alias another)
  std::uint64_t divergent_requests = 0;
  double max_abs_diff = 0;  // over every element compared within tolerance (divergent ones excluded)
  double max_rel_diff = 0;
};

// Executor::debug_report(): the mode, the tolerance and, in compare mode, every model's summary (in
// load order) and the first divergence of each divergent request, oldest first (the first
// kMaxDebugDivergences of them; summaries count them all).
inline constexpr std::size_t kMaxDebugDivergences = 64;
struct DebugReport {
  DebugMode mode = DebugMode::off;
  std::string device;  // the device's name
  DebugTolerance tolerance;
  std::vector<DebugModelSummary> models;
  std::vector<DebugDivergence> divergences;
};

// Several lines (each ending in '\n'): model, request, Step and its nodes, the blamed node, op and
// output, the first element beyond tolerance with its index in the output's shape, the maxima, the
// tolerance and the request's inputs.
std::string format_divergence(const DebugDivergence& divergence);
// One line without '\n': "no divergence: N Steps compared on <device> against the CPU, max abs diff
// X" or "N of M requests diverged (first at Step ...)".
std::string format_debug_summary(const DebugModelSummary& summary, const DebugReport& report);

}  // namespace loom
