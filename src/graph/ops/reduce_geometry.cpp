// Axes and extents of the reduce family's ops, computed once for shape inference and every
// backend (see reduce_geometry.hpp).
#include "graph/ops/reduce_geometry.hpp"

#include <string>

#include "graph/ops.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {

std::optional<ReduceKind> reduce_kind(std::string_view op_type) noexcept {
  if (op_type == "ReduceSum") return ReduceKind::sum;
  if (op_type == "ReduceMean") return ReduceKind::mean;
  if (op_type == "ReduceMax") return ReduceKind::max;
  if (op_type == "ReduceMin") return ReduceKind::min;
  if (op_type == "ReduceProd") return ReduceKind::prod;
  if (op_type == "ReduceSumSquare") return ReduceKind::sum_square;
  if (op_type == "ReduceL1") return ReduceKind::l1;
  if (op_type == "ReduceL2") return ReduceKind::l2;
  if (op_type == "ReduceLogSum") return ReduceKind::log_sum;
  if (op_type == "ReduceLogSumExp") return ReduceKind::log_sum_exp;
  return std::nullopt;
}

bool reduce_takes_integers(ReduceKind kind) noexcept {
  return kind == ReduceKind::sum || kind == ReduceKind::mean || kind == ReduceKind::max || kind == ReduceKind::min ||
         kind == ReduceKind::prod;
}

ReducedAxes reduced_axes(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>* axes_input) {
  if (axes_input && attrs.has("axes")) fail(ErrorCode::invalid_model, "axes given both as attribute and as input 1");
  const std::vector<std::int64_t> axes = axes_input ? *axes_input : attrs.get_ints("axes", {});
  const std::size_t rank = x.rank();
  ReducedAxes result;
  if (axes.empty() && attrs.get_int("noop_with_empty_axes", 0) != 0) {
    result.identity = true;
    result.reduced.assign(rank, false);
    result.output = x.dims();
    return result;
  }
  result.reduced.assign(rank, axes.empty());
  for (const std::int64_t axis : axes) {
    const auto a = static_cast<std::size_t>(normalize_axis(axis, rank));
    if (result.reduced[a]) fail(ErrorCode::invalid_model, "axis " + std::to_string(axis) + " appears twice in axes");
    result.reduced[a] = true;
  }
  const bool keepdims = attrs.get_int("keepdims", 1) != 0;
  for (std::size_t d = 0; d < rank; ++d) {
    if (!result.reduced[d])
      result.output.push_back(x[d]);
    else if (keepdims)
      result.output.push_back(1);
  }
  return result;
}

ArgReduceGeometry arg_reduce_geometry(const Attributes& attrs, const Shape& x) {
  ArgReduceGeometry result;
  result.axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", 0), x.rank()));
  result.output = x.dims();
  if (attrs.get_int("keepdims", 1) != 0)
    result.output[result.axis] = 1;
  else
    result.output.erase(result.output.begin() + static_cast<std::ptrdiff_t>(result.axis));
  return result;
}

TopKGeometry topk_geometry(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>& k_values) {
  if (k_values.size() != 1)
    fail(ErrorCode::invalid_model, "K must hold one value, got " + std::to_string(k_values.size()));
  TopKGeometry result;
  result.axis = static_cast<std::size_t>(normalize_axis(attrs.get_int("axis", -1), x.rank()));
  result.k = k_values[0];
  if (result.k < 0 || result.k > x[result.axis])
    fail(ErrorCode::shape_mismatch, "K = " + std::to_string(result.k) + " is outside [0, " +
                                        std::to_string(x[result.axis]) + "] along axis " + std::to_string(result.axis) +
                                        " of " + x.to_string());
  result.output = x.dims();
  result.output[result.axis] = result.k;
  return result;
}

LossGeometry loss_geometry(const Attributes& attrs, const Shape& input, const Shape& target) {
  LossGeometry g;
  const std::string reduction = attrs.get_string("reduction", "mean");
  if (reduction == "none")
    g.reduction = LossReduction::none;
  else if (reduction == "sum")
    g.reduction = LossReduction::sum;
  else if (reduction != "mean")
    throw Error(ErrorCode::invalid_model, "reduction='" + reduction + "' (expects none, sum or mean)");
  if (attrs.has("ignore_index")) g.ignore_index = attrs.get_int("ignore_index", 0);
  bool fits = input.rank() >= 2 && target.rank() + 1 == input.rank() && target[0] == input[0];
  for (std::size_t d = 1; fits && d < target.rank(); ++d) fits = target[d] == input[d + 1];
  if (!fits)
    throw Error(ErrorCode::shape_mismatch, "target " + target.to_string() + " does not fit input " + input.to_string() +
                                               " (expects input (N, C, d...) and target (N, d...))");
  g.batch = input[0];
  g.classes = input[1];
  for (std::size_t d = 2; d < input.rank(); ++d) g.inner *= input[d];
  if (g.reduction == LossReduction::none) g.output = target.dims();
  return g;
}

std::vector<std::int64_t> mvn_axes(const Attributes& attrs) {
  return attrs.has("axes") ? attrs.get_ints("axes") : std::vector<std::int64_t>{0, 2, 3};
}

}  // namespace loom::graph
