// What the planner knows about each op, independent of any backend: its role in Step
// partitioning, its output types and shapes, and its arithmetic work.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph {

enum class OpRole {
  anchor,     // heavy op (Conv, MatMul, LSTM, pooling, normalisation...): starts a new Step
  pointwise,  // elementwise op that joins the Step producing its input (Relu, Add, BatchNorm...)
  view,       // data-layout op that moves no math (Reshape, Flatten): joins the current Step
};

bool is_supported_op(std::string_view op_type) noexcept;
std::vector<std::string> supported_ops();
// Throws Error(unsupported) for an op outside supported_ops().
OpRole op_role(const Node& node);
// Whether `node` reads only its input's metadata (shape, element count), never its bytes: Shape
// and Size. Folding computes them from shapes alone, classification calls them scalar work, and a
// plan across processors copies nothing for them.
bool reads_only_metadata(const Node& node) noexcept;

// Output types and shapes of `node`. inputs[i] is nullptr for an omitted optional input;
// constants[i] is the value of input i when it is an initializer, else nullptr. Throws
// Error(shape_mismatch|dtype_mismatch|invalid_model|unsupported) with a message that names the
// problem (the caller adds model, node and op).
std::vector<ValueInfo> infer_node(const Node& node, std::span<const ValueInfo* const> inputs,
                                  std::span<const Tensor* const> constants);

// Floating-point operations `node` performs (multiply-add = 2).
double node_flops(const Node& node, std::span<const ValueInfo* const> inputs,
                  std::span<const ValueInfo* const> outputs);

// numpy broadcasting of two shapes; throws Error(shape_mismatch).
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis against `rank`; throws Error(invalid_model).
std::int64_t normalize_axis(std::int64_t axis, std::size_t rank);

}  // namespace loom::graph
