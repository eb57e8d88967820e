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
CompiledModel compile(const Model& model, DType compute_dtype, const DevicePeaks& peaks);

// Alignment of every arena and weight offset, so any dtype and vectorised access is aligned.
inline constexpr std::uint64_t kAlignment = 256;
inline std::uint64_t align_up(std::uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace loom::plan
