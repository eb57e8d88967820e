// The graph IR (ONNX-shaped: named values, ops with attributes, initializers) and a builder for
// making models in code.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "loom/placement_types.hpp"
#include "loom/tensor.hpp"

namespace loom {

struct Model;

// A subgraph (If's branches, Loop's and Scan's body): a nested Model, immutable and shared by the
// copies of the node that holds it. Its inputs are the formal inputs the op binds each time it runs
// the body; a name it reads without defining it (an outer-scope reference) is one of the enclosing
// graph's values, also listed at the end of the node's inputs (see Node).
using Subgraph = std::shared_ptr<const Model>;

// ONNX attribute kinds Loom uses: INT, FLOAT, STRING, INTS, FLOATS, STRINGS, TENSOR and GRAPH.
using AttributeValue = std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>, std::vector<float>,
                                    std::vector<std::string>, Tensor, Subgraph>;

// An op's attributes by name. Getters throw Error(invalid_model) on a value of the wrong kind.
class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttributeValue>> values) : values_(values) {}

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<std::int64_t> get_ints(const std::string& name, const std::vector<std::int64_t>& fallback = {}) const;
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& fallback = {}) const;
  std::vector<std::string> get_strings(const std::string& name, const std::vector<std::string>& fallback = {}) const;
  // nullptr when absent.
  const Tensor* get_tensor(const std::string& name) const;
  // The subgraph attribute `name`; nullptr when absent.
  const Model* get_graph(const std::string& name) const;
  const std::map<std::string, AttributeValue>& all() const noexcept { return values_; }

 private:
  std::map<std::string, AttributeValue> values_;
};

// One op. Op types and attribute names follow ONNX (e.g. "Conv" with "kernel_shape", "pads").
// An empty input name marks an omitted optional input. A node with subgraphs (If, Loop, Scan) lists
// its formal ONNX inputs, then its implicit inputs: one per outer-scope name its subgraphs read
// (graph::implicit_input_names(): sorted, as the subgraphs spell them), so that ordering, the
// memory plan, folding and dead-code removal see the dependency. Passes may rename an implicit
// input in the enclosing graph; the subgraphs keep their spelling and bind it by position.
struct Node {
  std::string op_type;
  std::string name;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  Attributes attrs;
};

// What a graph input of an imported model holds. ONNX sequences and optionals are lowered at load
// (optimize()): a sequence input "s" of K elements becomes the tensor inputs "s[0]".."s[K-1]"
// (OptimizeOptions::sequence_lengths), an optional input its value or nothing
// (OptimizeOptions::absent_optionals). For those kinds, dtype, shape and dim_params describe an
// element (the value).
enum class ValueKind : std::uint8_t { tensor, sequence, optional_tensor, optional_sequence };

// A value's type and shape. Graph inputs of imported models may have symbolic dimensions
// ("batch", "sequence_length"): shape holds -1 there and dim_params the name (empty for a fixed
// dimension). Everything after optimize() is static: dim_params is empty and no dim is negative.
struct ValueInfo {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::string> dim_params;
  ValueKind kind = ValueKind::tensor;
  // False when the file gives an element type without a shape (allowed for sequence and optional
  // inputs only): the shape must then be bound through OptimizeOptions::input_shapes.
  bool rank_known = true;
};

// A model: its graph inputs (fed per request), initializers (weights, uploaded once), nodes in
// topological order, and the names of its outputs.
struct Model {
  std::string name;
  std::vector<ValueInfo> inputs;
  std::vector<std::string> outputs;
  std::vector<Node> nodes;
  std::map<std::string, Tensor> initializers;
  // Free-form facts, e.g. "input_range:ids" = "0,1000" for inputs that index a table.
  std::map<std::string, std::string> metadata;
};

// Type and shape of every value of `model` (inputs, initializers, node outputs), checking each
// node as it goes. Inputs that decide shapes (Reshape's shape...) must be initializers: run
// optimize() first on a model that computes them (Shape → Gather → Concat chains). Throws
// Error(invalid_model|unsupported|shape_mismatch|dtype_mismatch) naming the node and op.
std::map<std::string, ValueInfo> infer_shapes(const Model& model);

// True when some graph input has a symbolic or unknown dimension.
bool has_symbolic_dims(const Model& model) noexcept;

// How optimize() turns a model into the static graph the planner compiles.
struct OptimizeOptions {
  // Concrete shapes for graph inputs, by input name; they must agree with the fixed dimensions.
  std::map<std::string, Shape> input_shapes;
  // Sizes of symbolic dimensions by name ("batch" = 8), for inputs not in input_shapes.
  std::map<std::string, std::int64_t> dim_values;
  // Size given to a symbolic dimension named nowhere above; <= 0 makes such a dimension an error.
  std::int64_t default_dim_value = 1;
  // Graph inputs whose values are fixed at load (shape tensors fed as inputs): they become
  // initializers and stop being request inputs.
  std::map<std::string, Tensor> constant_inputs;
  // Lengths of sequence inputs (and of present optional sequences) by input name: input "s" of
  // length K becomes the tensor inputs "s[0]".."s[K-1]", each bound as any other input
  // (input_shapes["s[1]"]; a symbolic element dimension is named "s[1]:<axis>"). A sequence input
  // without a length is an Error(invalid_argument).
  std::map<std::string, std::int64_t> sequence_lengths;
  // Optional inputs that are absent (empty) for this load; every other optional input is present
  // and fed as its value.
  std::set<std::string> absent_optionals;
  bool fold_constants = true;    // nodes whose inputs are all known run once, on the host
  bool fuse_batch_norm = true;   // BatchNormalization after a Conv folds into its weights
  bool remove_dead_code = true;  // nodes no output depends on, unused initializers, Identity/Dropout
};

// A node optimize() did not leave in the graph: evaluated on the host, or taken out.
struct LoadTimeNode {
  std::string name;
  std::string op_type;
  // Its class in the graph as given, with the inputs bound (graph::passes::classify_work); a node
  // that folding itself made (a control-flow expansion's) is scalar when its outputs are small
  // integer values.
  WorkClass work_class = WorkClass::tensor;
};

// What optimize() did, for logs, tests and the placement report.
struct OptimizeReport {
  std::size_t nodes_before = 0;
  std::size_t nodes_after = 0;
  std::size_t folded_nodes = 0;  // evaluated on the host into initializers
  std::size_t fused_batch_norms = 0;
  std::size_t removed_nodes = 0;              // dead or no-op nodes dropped
  std::map<std::string, Shape> bound_inputs;  // the input shapes used
  // Folded nodes in the order they were evaluated: scalar work (shape chains) and constant tensor
  // work computed once on the CPU, whose values the kernels take as arguments.
  std::vector<LoadTimeNode> folded;
  // Nodes of the model given that are neither in the result nor folded: no-ops, dead code,
  // BatchNorms fused into their Conv, control-flow nodes replaced by what they run.
  std::vector<LoadTimeNode> removed;
};

// Binds symbolic input dimensions (sequence and optional inputs lowered to tensors first), then
// folds shape-only and constant computations on the host (sequence and optional ops lowered to
// tensor values: a sequence output "out" of K elements becomes the outputs "out[0]".."out[K-1]"),
// fuses BatchNorm into a preceding Conv and drops dead code. The result has static shapes and
// passes infer_shapes(). Throws Error(invalid_argument) for a binding that contradicts the model
// and the errors of infer_shapes() naming node and op.
Model optimize(const Model& model, const OptimizeOptions& options = {}, OptimizeReport* report = nullptr);

// Random request inputs for `model`, seeded: floats uniform in [-1, 1), integer inputs uniform in
// the "input_range:<name>" metadata range (default [0, 2)).
std::vector<Tensor> random_inputs(const Model& model, std::uint64_t seed);

// Builds a Model node by node. Names are generated ("conv_3", "conv_3.weight") unless given.
// Weights are drawn from a seeded generator, so the same calls give the same model.
class ModelBuilder {
 public:
  explicit ModelBuilder(std::string model_name, std::uint64_t seed = 1);

  std::string input(const std::string& name, DType dtype, Shape shape);
  // An initializer holding `value`.
  std::string constant(const std::string& name, Tensor value);
  // An f32 initializer uniform in [-scale, scale).
  std::string random_weight(const std::string& name, Shape shape, float scale);
  // Adds a node; returns its output names ("<name>.out0", ...). Give a node with subgraphs (If,
  // Loop, Scan) its formal inputs only: the outer-scope names its subgraphs read are appended.
  std::vector<std::string> node(const std::string& op_type, std::vector<std::string> inputs, Attributes attrs = {},
                                int num_outputs = 1, std::string name = "");
  std::string op(const std::string& op_type, std::vector<std::string> inputs, Attributes attrs = {});
  void output(const std::string& value);
  void metadata(const std::string& key, const std::string& value);

  // Layers built from the ops above, with weights initialised for stable activations.
  std::string conv2d(const std::string& x, std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel,
                     std::int64_t stride, std::int64_t pad, bool bias = true);
  std::string batch_norm(const std::string& x, std::int64_t channels);
  std::string linear(const std::string& x, std::int64_t in_features, std::int64_t out_features);
  std::string layer_norm(const std::string& x, std::int64_t features);
  std::string relu(const std::string& x) { return op("Relu", {x}); }
  std::string gelu(const std::string& x) { return op("Gelu", {x}); }
  std::string add(const std::string& a, const std::string& b) { return op("Add", {a, b}); }
  std::string reshape(const std::string& x, const std::vector<std::int64_t>& shape);
  std::string transpose(const std::string& x, const std::vector<std::int64_t>& perm);

  // Returns the model after checking it with infer_shapes().
  Model build();

 private:
  std::string unique(const std::string& base);
  Model model_;
  std::uint64_t rng_state_;
  std::map<std::string, int> counters_;
};

}  // namespace loom
