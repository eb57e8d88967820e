// Parsing shared by the CPU and CUDA kernels of the reduce family (see reduce_spec.hpp).
#include "backend/reduce_spec.hpp"

#include <string>

namespace loom::backend {
namespace {

std::int64_t checked_axis(const KernelSpec& spec, std::int64_t axis, std::size_t rank, const char* role) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    throw_bad_shape(
        spec, std::string(role) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

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

ReduceSpec parse_reduce_spec(const KernelSpec& spec) {
  const auto kind = reduce_kind(spec.node->op_type);
  if (!kind) throw_unsupported(spec, "not a reduction");
  require_io(spec, 2, 1);
  ReduceSpec result;
  result.kind = *kind;
  const Attributes& attrs = spec.node->attrs;
  const Shape& x = spec.inputs[0].shape;
  const std::size_t rank = x.rank();

  std::vector<std::int64_t> axes;
  if (spec.inputs.size() > 1 && spec.inputs[1].present) {
    if (attrs.has("axes")) throw_bad_shape(spec, "axes given both as attribute and as input 1");
    axes = constant_ints(spec, 1, "axes");
  } else {
    axes = attrs.get_ints("axes", {});
  }
  const bool keepdims = attrs.get_int("keepdims", 1) != 0;
  if (axes.empty() && attrs.get_int("noop_with_empty_axes", 0) != 0) {
    result.identity = true;
    require_output_shape(spec, 0, x);
    result.output_count = x.numel();
    return result;
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (const std::int64_t axis : axes) {
    const auto a = static_cast<std::size_t>(checked_axis(spec, axis, rank, "axis"));
    if (reduced[a]) throw_bad_shape(spec, "axis " + std::to_string(axis) + " appears twice in axes");
    reduced[a] = true;
  }
  std::vector<std::int64_t> out_dims;
  for (std::size_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      out_dims.push_back(x[d]);
    else if (keepdims)
      out_dims.push_back(1);
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
  require_output_shape(spec, 0, Shape(std::move(out_dims)));
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
  const auto axis = static_cast<std::size_t>(checked_axis(spec, attrs.get_int("axis", 0), x.rank(), "axis"));
  ArgReduceSpec result;
  result.view = axis_view(x, axis);
  result.select_last_index = attrs.get_int("select_last_index", 0) != 0;
  if (result.view.length == 0) throw_bad_shape(spec, "cannot take the index of an empty axis");
  std::vector<std::int64_t> dims(x.begin(), x.end());
  if (attrs.get_int("keepdims", 1) != 0)
    dims[axis] = 1;
  else
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  if (spec.outputs[0].dtype != DType::i64)
    throw_unsupported(spec, "output must be i64, got " + std::string(dtype_name(spec.outputs[0].dtype)));
  require_output_shape(spec, 0, Shape(std::move(dims)));
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
  const auto axis = static_cast<std::size_t>(checked_axis(spec, attrs.get_int("axis", -1), x.rank(), "axis"));
  const auto k = constant_ints(spec, 1, "K");
  if (k.size() != 1) throw_bad_shape(spec, "K must hold one value, got " + std::to_string(k.size()));
  TopKSpec result;
  result.view = axis_view(x, axis);
  result.k = k[0];
  result.largest = attrs.get_int("largest", 1) != 0;
  if (result.k < 0 || result.k > result.view.length)
    throw_bad_shape(spec, "K = " + std::to_string(result.k) + " is outside [0, " + std::to_string(result.view.length) +
                              "] along axis " + std::to_string(axis));
  std::vector<std::int64_t> dims(x.begin(), x.end());
  dims[axis] = result.k;
  require_output_shape(spec, 0, Shape(dims));
  require_output_shape(spec, 1, Shape(dims));
  if (spec.outputs[0].dtype != spec.inputs[0].dtype)
    throw_unsupported(spec, "Values dtype " + std::string(dtype_name(spec.outputs[0].dtype)) + " differs from X's " +
                                std::string(dtype_name(spec.inputs[0].dtype)));
  if (spec.outputs[1].dtype != DType::i64)
    throw_unsupported(spec, "Indices must be i64, got " + std::string(dtype_name(spec.outputs[1].dtype)));
  return result;
}

}  // namespace loom::backend
