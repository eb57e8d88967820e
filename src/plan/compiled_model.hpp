// Compiling a model: Steps (the unit every scheduler moves), a static memory plan (where each
// value lives and which request buffers are live at every Step boundary) and each Step's work.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/model.hpp"
#include "loom/model_info.hpp"

namespace loom::plan {

// Where a value's bytes are: in the model's weight block (uploaded once at load) or in the
// per-request arena (inputs, intermediates, outputs).
enum class Storage { weight, arena };

struct Value {
  std::string name;
  DType dtype = DType::f32;  // on the device (f16 for float values when compiling for f16)
  Shape shape;
  std::uint64_t bytes = 0;
  Storage storage = Storage::arena;
  std::uint64_t offset = 0;  // into the weight block or the arena
  int alias_of = -1;         // a view's storage root (Reshape/Flatten move no data), else -1
  int def_step = -1;         // Step that writes it; -1 for graph inputs and weights
  int last_step = -1;        // last Step that reads it; step_count for graph outputs
};

struct PlannedNode {
  std::size_t node_index = 0;  // into Model::nodes
  std::vector<int> inputs;     // value ids; -1 for an omitted optional input
  std::vector<int> outputs;    // value ids; -1 for an omitted optional output
  bool is_alias = false;       // a view whose output shares its input's bytes: nothing to run
  double flops = 0;
};

struct Step {
  std::string name;
  std::vector<std::size_t> nodes;  // into CompiledModel::nodes, in execution order
  StepWork info;                   // work, bytes and the boundary's live bytes
  std::vector<int> live_after;     // arena values live at the boundary after this Step
  // Heterogeneous plans (ProcessorAssignment): the processor whose stream runs the Step, an index
  // into CompiledModel::processors; 0 otherwise.
  int processor = 0;
  // A copy Step the planner inserted: the arena values (storage roots) copied from processor
  // copy_from's arena to copy_to's, at the same offsets; nodes is then empty. -1/-1 for a Step of nodes.
  std::vector<int> copies;
  int copy_from = -1;
  int copy_to = -1;
  // Every value live at the boundary after this Step is held by processor 0 (the executor's
  // device) and by no other, so the boundary can be dumped and restored from processor 0's arena
  // alone. Always true for a plan on one processor.
  bool live_on_first_processor_only = true;
  bool is_copy() const noexcept { return copy_from >= 0; }
};

// Where each node runs, for a plan across processors (PlacementOptions::execute). processors[0]
// is the executor's device, where the request's inputs arrive and its outputs are read.
struct ProcessorAssignment {
  std::vector<std::string> processors;  // as device strings name them: "cpu", "cpu:accel", "cuda"
  std::vector<bool> host;               // per processor: its memory is the host's (the CPU backend)
  std::vector<int> node_processor;      // per Model node, an index into processors
};

struct CompiledModel {
  Model model;  // the source graph (weights as given, in their own dtypes)
  DType compute_dtype = DType::f32;
  std::vector<Value> values;
  std::map<std::string, int> value_ids;
  std::vector<PlannedNode> nodes;
  std::vector<Step> steps;
  std::vector<int> input_ids;
  std::vector<int> output_ids;
  std::vector<ValueInfo> output_infos;  // the graph outputs as the model declares them (model dtypes)
  std::uint64_t arena_bytes = 0;
  std::uint64_t weight_bytes = 0;
  // Heterogeneous plans only (empty otherwise): the processors, as ProcessorAssignment names them,
  // and per processor the weights (storage roots) its Steps read. Processor 0 holds the whole weight
  // block at Value::offset; each other processor a block of its own, see weight_offsets.
  std::vector<std::string> processors;
  std::vector<std::vector<int>> weights_on;
  // Per processor, per value id: the offset of a weight root in that processor's block (processor
  // 0: Value::offset); kNoOffset where the processor does not hold it.
  std::vector<std::vector<std::uint64_t>> weight_offsets;
  std::vector<std::uint64_t> weight_bytes_on;  // per processor

  bool heterogeneous() const noexcept { return processors.size() > 1; }

  // The storage root of value `id` (follows aliases).
  const Value& storage_of(int id) const;
};

// Peak figures the roofline estimate uses.
struct DevicePeaks {
  double flops = 1e12;      // FLOP/s at the compute dtype
  double bandwidth = 1e11;  // bytes/s
};

// Compiles `model` for a device computing in `compute_dtype` (f32, or f16: float values and
// weights are stored as f16). Throws the errors of infer_shapes().
// With `assignment` naming more than one processor, Steps never straddle processors: a Step
// closes where the next non-view node runs elsewhere (a view stays with the Step before it, as it
// moves no data), and a copy Step is inserted before each Step for the values it reads that its
// processor does not hold, and at the end for graph outputs not on processor 0 (docs/placement.md,
// "Execution across processors"). Every processor's arena has the same layout. Throws
// Error(invalid_argument) when a copy would join two processors neither of which is the host.
CompiledModel compile(const Model& model, DType compute_dtype, const DevicePeaks& peaks,
                      const ProcessorAssignment* assignment = nullptr);

inline constexpr std::uint64_t kNoOffset = ~std::uint64_t{0};

// Alignment of every arena and weight offset, so any dtype and vectorised access is aligned.
inline constexpr std::uint64_t kAlignment = 256;
inline std::uint64_t align_up(std::uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace loom::plan
