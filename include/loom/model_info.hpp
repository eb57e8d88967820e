// What the layers say about a model and its requests, below all of them: request priority classes,
// a Step as compiled (StepWork) and as loaded (StepInfo), and a loaded model (ModelInfo). The
// planner, the schedulers, the recorder, the simulator and the profiles read these; the Executor
// (loom/executor.hpp) hands them out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/model.hpp"
#include "loom/placement_types.hpp"

namespace loom {

// Who may run: while a request of a higher class is live, lower classes do not start Steps (and
// pause at their next cancellation point); the scheduling policy orders requests within a class.
enum class Priority : int { background = -1, normal = 0, urgent = 1 };
std::string_view priority_name(Priority priority) noexcept;  // "background", "normal", "urgent"
Priority priority_from_name(std::string_view name);          // throws Error(invalid_argument)

// What compiling a model produced, per Step: the unit the scheduler moves (one layer or a block
// of consecutive ops), its work, its roofline estimate and the memory plan at its boundary. Fixed
// once compiled: loading adds its own facts beside it (StepInfo), never into it.
struct StepWork {
  std::string name;
  std::vector<std::string> ops;  // op types, in order
  double flops = 0;
  std::uint64_t weight_bytes = 0;  // initializers read
  std::uint64_t activation_bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t working_set_bytes = 0;  // weights + activations touched
  std::uint64_t live_bytes_after = 0;   // request buffers live at the boundary after this Step
  double compute_us = 0;                // roofline estimate on the executor's device
  double memory_us = 0;
  // Executed across processors (PlacementOptions::execute): the processor whose stream runs the
  // Step, as device strings name it; empty when the model runs on the executor's device alone.
  std::string processor;
  // A copy Step the planner inserted ("Copy" ops, bytes and no FLOPs): the values its later Steps
  // need cross from copy_from's memory to copy_to's. Both empty for a Step of nodes.
  std::string copy_from;
  std::string copy_to;
};

// A Step of a loaded model: what compiling produced, and what Executor::load() adds: the device
// profile's measurements, the cancellation points and whether the Step can pause inside.
struct StepInfo : StepWork {
  double measured_us = 0;             // from the device profile; 0 when none matched
  double compute_probe_slowdown = 0;  // from the profile; 0 when not measured
  double memory_probe_slowdown = 0;
  bool cancellation_point = false;  // lower-priority work may pause at the boundary after this Step
  // The Step holds a device loop (an LSTM or GRU on the CPU backend, or on CUDA's one-direction
  // persistent loop) that lower-priority work may pause inside, after any of its iterations but
  // the last, and resume from there.
  bool pausable_inside = false;
};

// The sizes a symbolic input dimension may take in requests to a loaded model
// (LoadOptions::dim_ranges), as in a TensorRT optimisation profile: 1 <= min <= opt <= max. The
// model is planned at opt (what ModelInfo shows) and at max (which sizes every request's arena).
struct DimRange {
  std::int64_t min = 1;
  std::int64_t opt = 1;
  std::int64_t max = 1;
};

// A loaded model (Executor::model_info()).
struct ModelInfo {
  std::string name;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<StepInfo> steps;
  std::uint64_t weight_bytes = 0;      // uploaded once at load
  std::uint64_t activation_bytes = 0;  // per-request arena (inputs, intermediates, outputs, resume_bytes)
  std::uint64_t resume_bytes = 0;      // of which: where a Step paused inside keeps its state
  std::uint64_t workspace_bytes = 0;   // scratch shared by the model's kernels
  std::string fingerprint;             // model_fingerprint() of the model at the compute dtype
  std::string cost_source;             // "profile <path>" or "roofline"
  DType compute_dtype = DType::f32;    // what the Steps compute in (ExecutorOptions::compute_dtype)
  // Where each node runs and why (LoadOptions::placement, docs/placement.md). Advisory unless
  // PlacementOptions::execute: then each Step runs on its processor (StepWork::processor).
  ModelPlacement placement;
  // Symbolic dims left open at load (LoadOptions::dim_ranges), by name; empty when every dim was
  // bound at load. With ranges, inputs, outputs, steps, placement and the byte figures above are
  // those of the plan at each range's opt size, except activation_bytes, the arena every request
  // gets whatever its shape (the largest plan's: docs/placement.md, "Shapes that stay symbolic").
  std::map<std::string, DimRange> dim_ranges;
  // Per-shape plans made so far (the opt and max plans at load, then one per new request shape);
  // 1 for a model without ranges.
  std::size_t shape_plans = 1;
};

}  // namespace loom
