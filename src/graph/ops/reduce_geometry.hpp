// The reduce family's attribute parsing and geometry (Reduce*, ArgMax/ArgMin, TopK), shared by
// shape inference and the kernels of every backend so they agree on the axes and every extent.
// Each function throws Error about the attributes alone; shape inference adds model, node and op,
// the backends the node (backend::parse_for_node).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph {

enum class ReduceKind { sum, mean, max, min, prod, sum_square, l1, l2, log_sum, log_sum_exp };

// The kind for an op type ("ReduceSum" -> sum...), nullopt for any other op.
std::optional<ReduceKind> reduce_kind(std::string_view op_type) noexcept;
// Sum, Mean, Max, Min and Prod also reduce i64/i32 tensors; the others are float only.
bool reduce_takes_integers(ReduceKind kind) noexcept;

// Reduce*: the axes come from constant input 1 (`axes_input`, nullptr when the input is absent:
// ReduceSum 13+, every reduction from opset 18) or the `axes` attribute (older opsets); no axes
// means all axes unless noop_with_empty_axes makes the op an identity; keepdims keeps reduced
// axes as 1. Throws Error(invalid_model) for axes given twice, an axis out of range or repeated.
struct ReducedAxes {
  bool identity = false;             // noop_with_empty_axes with no axes: the output is X
  std::vector<bool> reduced;         // per axis of X
  std::vector<std::int64_t> output;  // the output dims
};
ReducedAxes reduced_axes(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>* axes_input);

// ArgMax / ArgMin over X: the normalised `axis` (default 0) and the i64 output's dims
// (`keepdims`, default 1). Throws Error(invalid_model) for an axis out of range.
struct ArgReduceGeometry {
  std::size_t axis = 0;
  std::vector<std::int64_t> output;
};
ArgReduceGeometry arg_reduce_geometry(const Attributes& attrs, const Shape& x);

// TopK over X with K from constant input 1: the normalised `axis` (default -1), K and the dims of
// both outputs. Throws Error(invalid_model) when K does not hold one value or the axis is out of
// range, Error(shape_mismatch) when K is outside [0, X's extent along the axis].
struct TopKGeometry {
  std::size_t axis = 0;
  std::int64_t k = 0;
  std::vector<std::int64_t> output;
};
TopKGeometry topk_geometry(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>& k_values);

// MeanVarianceNormalization's `axes` (default 0, 2, 3), not yet normalised.
std::vector<std::int64_t> mvn_axes(const Attributes& attrs);

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: input (N, C, d1..dk), target (N, d1..dk)
// with class indices; `reduction` none (the output has the target's shape), sum or mean (a
// scalar; mean divides by the summed weights of the targets not ignored); ignore_index when set.
// Throws Error(invalid_model) for another reduction, Error(shape_mismatch) for a target that does
// not fit the input.
enum class LossReduction { none, sum, mean };
struct LossGeometry {
  LossReduction reduction = LossReduction::mean;
  std::optional<std::int64_t> ignore_index;
  std::int64_t batch = 0, classes = 0, inner = 1;  // N, C and d1*...*dk
  std::vector<std::int64_t> output;
};
LossGeometry loss_geometry(const Attributes& attrs, const Shape& input, const Shape& target);

}  // namespace loom::graph
