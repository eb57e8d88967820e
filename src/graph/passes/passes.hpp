// The graph passes optimize() runs, in order: bind symbolic input dimensions, fold everything
// computable from constants and shapes on the host, drop no-op nodes, fuse BatchNorm into Conv,
// remove dead code. Each pass works on a Model in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph::passes {

// Replaces every symbolic or unknown input dimension with a size (options.input_shapes, then
// options.dim_values by name, then options.default_dim_value) and turns options.constant_inputs
// into initializers. Returns the bound input shapes. Throws Error(invalid_argument).
std::map<std::string, Shape> bind_inputs(Model& model, const OptimizeOptions& options);

struct LoweredValues;  // sequences.hpp

// --- Classification (MISSION.md §2: tensor work and scalar work; docs/placement.md) ---

// Values of at most this many elements, of an integer or bool dtype, are scalar-sized: shapes,
// indices, trip counts. A float value is never scalar-sized (it is data).
inline constexpr std::int64_t kScalarMaxElements = 64;
bool scalar_sized(const ValueInfo& value) noexcept;

// One node's class and the scalar values its kernel takes as arguments.
struct NodeWork {
  WorkClass work_class = WorkClass::tensor;
  // Which rule decided: "shape metadata" (Shape, Size), "index math on scalar values",
  // "computes shape or control inputs", or "tensor work".
  std::string rule;
  // Inputs at the op's host_inputs positions (values that decide shapes: Reshape's shape, Slice's
  // starts...) and control inputs (If's cond, Loop's trip count and cond), in input order.
  std::vector<std::string> scalar_arguments;
};

// Marks each node of `model` (in order) tensor or scalar work: Shape and Size are scalar; so is a
// node whose inputs and outputs are all scalar-sized and that either computes only from constants
// and scalar nodes' outputs, or whose outputs feed only scalar arguments and scalar nodes. Every
// other node is tensor work. Shapes come from inferring node by node with the initializers known,
// so a model whose shape chains are not folded yet classifies too (a value whose shape depends on
// a computed one counts as not scalar-sized). Never throws for a node it cannot infer.
std::vector<NodeWork> classify_work(const Model& model);

// Walks the nodes in order, inferring shapes; a node whose every input is a constant (or a Shape
// node, which needs only its input's static shape; or a Constant node) is run once on the host by
// the CPU backend and its outputs become initializers. A node producing a graph output stays a node
// unless `fold_outputs` (a subgraph's outputs may be constants). Sequence and optional ops are
// lowered to tensor values on the way (lower_sequence_node(), recorded in `lowered`; without one,
// as in a subgraph, an output still holding a sequence or an optional is Error(unsupported)).
// Nodes with subgraphs go through expand_control_flow() first. Returns the number of nodes folded.
// `folded`, when given, receives each folded node (name, op type; class by scalar_sized outputs).
std::size_t fold_constants(Model& model, bool fold_outputs = false, LoweredValues* lowered = nullptr,
                           std::vector<LoadTimeNode>* folded = nullptr);

// Control flow at load (control_flow.cpp), for a node with subgraphs whose inputs are `inputs`
// (static shapes) and `constants` (values known on the host), as fold_constants() sees them. Each
// subgraph is specialised: its constants, its own and those of the enclosing graph, folded on the
// host for these shapes, so that it infers statically and the kernel runs only what depends on
// data. An If whose cond is known is replaced by the branch it takes; a Loop whose body infers only
// with the iteration number known (a Slice at the iteration) is unrolled when M and cond are known
// (at most kMaxUnrolledIterations). Replacement nodes take names from `names` (every name in use in
// the enclosing graph, updated) and may come with new initializers.
inline constexpr std::int64_t kMaxUnrolledIterations = 256;
struct ControlFlowExpansion {
  std::vector<Node> nodes;  // the node specialised (replaced false) or the nodes replacing it
  bool replaced = false;
  std::map<std::string, Tensor> initializers;  // for the enclosing graph
};
ControlFlowExpansion expand_control_flow(const Node& node, std::span<const ValueInfo* const> inputs,
                                         std::span<const Tensor* const> constants, std::set<std::string>& names);

// Identity nodes, and Dropout nodes whose mask is unused, are removed by renaming their consumers'
// inputs, unless their output is a graph output. Returns the number removed.
std::size_t remove_no_ops(Model& model);

// Conv → BatchNormalization (inference) where the Conv output feeds only the BatchNorm and all
// weights are constants: the BatchNorm is folded into the Conv's weights and bias. Returns the
// number fused.
std::size_t fuse_batch_norm(Model& model);

// Drops nodes no graph output depends on and initializers no node reads. Returns nodes dropped.
std::size_t remove_dead_code(Model& model);

}  // namespace loom::graph::passes
