// What the placement pass (MISSION.md §2, docs/placement.md) decides for each node: its work
// class, the processor the source text's rule chose and the cost/benefit figures behind the
// choice. Plain types below every layer: optimize() reports the class of what it folds, ModelInfo
// carries a loaded model's placement and LoadOptions the thresholds.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

// Tensor work: convolutions, matrix products, vector ops over tensors. Scalar work: shape
// arithmetic, loop counts, small index math and control decisions (docs/placement.md has the rule).
enum class WorkClass { tensor, scalar };
std::string_view work_class_name(WorkClass work_class) noexcept;  // "tensor", "scalar"

// Why a node went where it went.
enum class PlacementReason {
  passed,               // the first processor in preference order passed both thresholds
  next_processor,       // an earlier processor failed a threshold; this later one passed
  fused_with_previous,  // evaluated fused with the previous node, the pair passed on its processor
  min_cost_fallback,    // no processor passed: the smallest cost (ties: the largest benefit)
  folded_at_load,       // computed once on the CPU while loading (constants, shape chains): the
                        // value reaches the kernels that read it as a kernel argument
  removed_at_load,      // no work left: a no-op, dead code, a BatchNorm fused into its Conv, or a
                        // control-flow node replaced by the nodes of the branch or iterations it runs
};
std::string_view placement_reason_name(PlacementReason reason) noexcept;  // "passed", "next_processor", ...

// The source text's terms for one node on one processor, in microseconds: cost c = t + a, benefit
// p = s + o (docs/placement.md defines each in Loom's terms).
struct PlacementTerms {
  double transfer_us = 0;     // t: data crossing between processors, control round trips
  double accumulated_us = 0;  // a: the op's time on the processor plus its launch
  double speed_us = 0;        // s: time saved against the slowest processor considered
  double complexity_us = 0;   // o: complexity benefit (the host's for scalar work)
  double cost() const noexcept { return transfer_us + accumulated_us; }
  double benefit() const noexcept { return speed_us + complexity_us; }
};

// One processor the rule evaluated for a node, alone (not fused).
struct ProcessorEvaluation {
  std::string processor;
  PlacementTerms terms;
  bool passed = false;  // benefit >= th1 and cost <= th2
};

// Where one node runs and why. With PlacementOptions::execute the executor runs the node there;
// otherwise on its own device.
struct NodePlacement {
  std::string node;  // the node's name
  std::string op;    // its op type
  WorkClass work_class = WorkClass::tensor;
  std::string processor;  // "cpu", "cpu:accel", "cuda"... as device strings name them
  PlacementTerms terms;   // on `processor`, the node alone
  double cost_us = 0;     // what the rule compared with th2: the fused pair's cost when fused
  double benefit_us = 0;  // ... and with th1
  bool fused_with_previous = false;
  PlacementReason reason = PlacementReason::passed;
  std::vector<ProcessorEvaluation> evaluated;  // in preference order; empty for folded/removed nodes
  // Scalar inputs the node's kernel takes as arguments, computed on the CPU before launch (values
  // deciding shapes, a Loop's trip count and condition, an If's condition).
  std::vector<std::string> scalar_arguments;
};

// A loaded model's placement (ModelInfo::placement): one entry per node of the loaded graph, in
// its order (nodes[i] is the graph's node i), then one per node folded at load in the order it was
// evaluated, then one per node removed at load (processor "none").
struct ModelPlacement {
  bool enabled = false;                 // false: the pass did not run (PlacementOptions::enabled), nodes is empty
  std::string library;                  // the function library's source: its path, or "built-in defaults"
  std::vector<std::string> processors;  // in preference order
  double benefit_threshold_us = 0;      // th1
  double cost_threshold_us = std::numeric_limits<double>::infinity();  // th2
  std::size_t graph_nodes = 0;  // the first graph_nodes entries are the loaded graph's nodes
  std::vector<NodePlacement> nodes;
};

// How the placement pass runs at load (LoadOptions::placement).
struct PlacementOptions {
  bool enabled = true;
  // th1: a processor passes when the benefit p >= benefit_threshold_us ...
  double benefit_threshold_us = 0;
  // ... and the cost c <= cost_threshold_us (th2; infinity = no bound).
  double cost_threshold_us = std::numeric_limits<double>::infinity();
  // Processors in preference order, as device strings name them ("cuda", "cpu:accel", "cpu").
  // Empty: the executor's device first, then every other processor of the function library that
  // this build can open, in the library's order.
  std::vector<std::string> processors;
  // Run each Step on the processor the pass chose (docs/placement.md, "Execution across
  // processors"): the planner splits Steps where the processor changes and inserts the copies
  // between processors. Off (the default): the placement is recorded only and every Step runs on
  // the executor's device. On with the pass off, or with debug = compare when the placement uses
  // more than one processor: Error(invalid_argument) from load().
  bool execute = false;
};

}  // namespace loom
