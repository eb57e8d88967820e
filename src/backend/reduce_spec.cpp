// Parsing shared by the CPU and CUDA kernels of the reduce family (see reduce_spec.hpp).
#include "backend/reduce_spec.hpp"

#include <optional>
#include <string>

namespace loom::backend {
namespace {

void require_io(const KernelSpec& spec, std::size_t max_inputs, std::size_t outputs) {
  if (spec.inputs.empty() || spec.inputs.size() > max_inputs || !spec.inputs[0].present)
    throw_bad_shape(spec, "expects 1 to " + std::to_string(max_inputs) + " inputs, the first present");
  if (spec.outputs.size() < 1 || !spec.outputs[0].present) throw_bad_shape(spec, "output 0 is missing");
  for (std::size_t i = outputs; i < spec.outputs.size(); ++i)
    if (spec.outputs[i].present) throw_unsupported(spec, "output " + std::to_string(i) + " does not exist");
}

void require_output_shape(const KernelSpec& spec, std::size_t index, const Shape& expected) {
  if (spec.outputs[index].shape != expected)
    throw_bad_shape(spec, "output " + std::to_string(index) + " has shape " + spec.outputs[index].shape.to_string() +
                              ", expected " + expected.to_string());
}

}  // namespace

ReduceSpec parse_reduce_spec(const KernelSpec& spec) {
  const auto kind = reduce_kind(spec.node->op_type);
  if (!kind) throw_unsupported(spec, "not a reduction");
  require_io(spec, 2, 1);
  ReduceSpec result;
  result.kind = *kind;
  const Attributes& attrs = spec.node->attrs;
  const Shape& x = spec.inputs[0].shape;
  const std::size_t rank = x.rank();

  std::optional<std::vector<std::int64_t>> axes_input;
  if (spec.inputs.size() > 1 && spec.inputs[1].present) axes_input = constant_ints(spec, 1, "axes");
  graph::ReducedAxes axes =
      parse_for_node(spec, [&] { return graph::reduced_axes(attrs, x, axes_input ? &*axes_input : nullptr); });
  require_output_shape(spec, 0, Shape(std::move(axes.output)));
  if (axes.identity) {
    result.identity = true;
    result.output_count = x.numel();
    return result;
  }
  const std::vector<bool>& reduced = axes.reduced;
  for (std::size_t d = 0; d < rank; ++d) {
    if (reduced[d])
      result.reduce_count *= x[d];
    else
      result.output_count *= x[d];
    // Size-1 dims change nothing; merging keeps the index arithmetic of the kernels short.
    if (x[d] == 1) continue;
    if (!result.dims.empty() && result.reduced.back() == reduced[d])
      result.dims.back() *= x[d];
    else {
      result.dims.push_back(x[d]);
      result.reduced.push_back(reduced[d]);
    }
  }
  return result;
}

AxisView axis_view(const Shape& shape, std::size_t axis) {
  AxisView view;
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (d < axis)
      view.outer *= shape[d];
    else if (d == axis)
      view.length = shape[d];
    else
      view.inner *= shape[d];
  }
  return view;
}

ArgReduceSpec parse_arg_reduce_spec(const KernelSpec& spec) {
  require_io(spec, 1, 1);
  const Attributes& attrs = spec.node->attrs;
  const Shape& x = spec.inputs[0].shape;
  if (x.rank() == 0) throw_bad_shape(spec, "input must have rank >= 1");
  graph::ArgReduceGeometry geometry = parse_for_node(spec, [&] { return graph::arg_reduce_geometry(attrs, x); });
  ArgReduceSpec result;
  result.view = axis_view(x, geometry.axis);
  result.select_last_index = attrs.get_int("select_last_index", 0) != 0;
  if (result.view.length == 0) throw_bad_shape(spec, "cannot take the index of an empty axis");
  if (spec.outputs[0].dtype != DType::i64)
    throw_unsupported(spec, "output must be i64, got " + std::string(dtype_name(spec.outputs[0].dtype)));
  require_output_shape(spec, 0, Shape(std::move(geometry.output)));
  return result;
}

TopKSpec parse_topk_spec(const KernelSpec& spec) {
  require_io(spec, 2, 2);
  if (spec.inputs.size() != 2 || !spec.inputs[1].present) throw_bad_shape(spec, "input K is missing");
  if (spec.outputs.size() != 2 || !spec.outputs[1].present)
    throw_unsupported(spec, "both outputs (Values and Indices) must be present");
  const Attributes& attrs = spec.node->attrs;
  const Shape& x = spec.inputs[0].shape;
  if (x.rank() == 0) throw_bad_shape(spec, "input must have rank >= 1");
  const auto k = constant_ints(spec, 1, "K");
  const graph::TopKGeometry geometry = parse_for_node(spec, [&] { return graph::topk_geometry(attrs, x, k); });
  TopKSpec result;
  result.view = axis_view(x, geometry.axis);
  result.k = geometry.k;
  result.largest = attrs.get_int("largest", 1) != 0;
  require_output_shape(spec, 0, Shape(geometry.output));
  require_output_shape(spec, 1, Shape(geometry.output));
  if (spec.outputs[0].dtype != spec.inputs[0].dtype)
    throw_unsupported(spec, "Values dtype " + std::string(dtype_name(spec.outputs[0].dtype)) + " differs from X's " +
                                std::string(dtype_name(spec.inputs[0].dtype)));
  if (spec.outputs[1].dtype != DType::i64)
    throw_unsupported(spec, "Indices must be i64, got " + std::string(dtype_name(spec.outputs[1].dtype)));
  return result;
}

}  // namespace loom::backend
