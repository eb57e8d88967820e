// Strided views behind Slice, Expand and Tile, the part sizes of Split and the generators' values,
// shared by the CPU and CUDA kernels; extents from graph/ops/shape_geometry.
#include "backend/shape_spec.hpp"

#include <optional>
#include <string>

namespace loom::backend {
namespace {

std::string dims_text(const std::vector<std::int64_t>& dims) { return Shape(dims).to_string(); }

bool present(const KernelSpec& spec, std::size_t index) {
  return index < spec.inputs.size() && spec.inputs[index].present;
}

void require_copy_arity(const KernelSpec& spec, std::size_t min_inputs, std::size_t max_inputs) {
  if (spec.inputs.size() < min_inputs || spec.inputs.size() > max_inputs)
    throw_bad_shape(spec, "expects " + std::to_string(min_inputs) + " to " + std::to_string(max_inputs) +
                              " inputs, got " + std::to_string(spec.inputs.size()));
  for (std::size_t i = 0; i < min_inputs; ++i)
    if (!spec.inputs[i].present) throw_bad_shape(spec, "required input " + std::to_string(i) + " is absent");
  if (spec.outputs.size() != 1 || !spec.outputs[0].present) throw_bad_shape(spec, "expects one output");
  if (spec.outputs[0].dtype != spec.inputs[0].dtype)
    throw_unsupported(spec, "output dtype " + std::string(dtype_name(spec.outputs[0].dtype)) +
                                " differs from the input's " + std::string(dtype_name(spec.inputs[0].dtype)));
}

void require_output_dims(const KernelSpec& spec, const std::vector<std::int64_t>& expected) {
  if (spec.outputs[0].shape.dims() != expected)
    throw_bad_shape(spec,
                    "output has shape " + spec.outputs[0].shape.to_string() + ", expected " + dims_text(expected));
}

}  // namespace

std::vector<std::int64_t> dense_strides(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.rank(), 1);
  for (std::size_t d = shape.rank(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

StridedView parse_slice_view(const KernelSpec& spec) {
  require_copy_arity(spec, 3, 5);
  const Shape& in = spec.inputs[0].shape;
  const auto starts = constant_ints(spec, 1, "starts");
  const auto ends = constant_ints(spec, 2, "ends");
  std::optional<std::vector<std::int64_t>> axes, steps;
  if (present(spec, 3)) axes = constant_ints(spec, 3, "axes");
  if (present(spec, 4)) steps = constant_ints(spec, 4, "steps");
  const graph::SlicePlan plan = parse_for_node(
      spec, [&] { return graph::plan_slice(in, starts, ends, axes ? &*axes : nullptr, steps ? &*steps : nullptr); });

  const std::vector<std::int64_t> strides = dense_strides(in);
  StridedView view{plan.dims, strides, 0};
  for (std::size_t axis = 0; axis < in.rank(); ++axis) {
    view.src_strides[axis] = strides[axis] * plan.step[axis];
    view.src_offset += plan.start[axis] * strides[axis];
  }
  require_output_dims(spec, view.dims);
  return view;
}

StridedView parse_expand_view(const KernelSpec& spec) {
  require_copy_arity(spec, 2, 2);
  const Shape& in = spec.inputs[0].shape;
  const Shape& out = spec.outputs[0].shape;
  if (present(spec, 1) && spec.constants.size() > 1 && spec.constants[1]) {
    const auto target = constant_ints(spec, 1, "shape");
    require_output_dims(spec, parse_for_node(spec, [&] { return graph::expanded_shape(in, target); }).dims());
  }
  if (in.rank() > out.rank()) throw_bad_shape(spec, "output has a lower rank than the input");
  const std::vector<std::int64_t> dense = dense_strides(in);
  StridedView view{out.dims(), std::vector<std::int64_t>(out.rank(), 0), 0};
  const std::size_t lead = out.rank() - in.rank();
  for (std::size_t d = 0; d < in.rank(); ++d) {
    if (in[d] == out[lead + d])
      view.src_strides[lead + d] = in[d] == 1 ? 0 : dense[d];
    else if (in[d] != 1)
      throw_bad_shape(spec, "input " + in.to_string() + " does not broadcast to " + out.to_string());
  }
  return view;
}

StridedView parse_tile_view(const KernelSpec& spec) {
  require_copy_arity(spec, 2, 2);
  const Shape& in = spec.inputs[0].shape;
  const Shape& out = spec.outputs[0].shape;
  if (out.rank() != in.rank()) throw_bad_shape(spec, "output rank differs from the input's");
  std::vector<std::int64_t> repeats(in.rank());
  if (spec.constants.size() > 1 && spec.constants[1]) {
    repeats = constant_ints(spec, 1, "repeats");
    require_output_dims(spec, parse_for_node(spec, [&] { return graph::tiled_shape(in, repeats); }).dims());
  } else {
    // Without the constant the output shape decides; an empty input dim leaves it open, and
    // nothing is copied then anyway.
    for (std::size_t d = 0; d < in.rank(); ++d) {
      if (in[d] == 0 ? out[d] != 0 : out[d] % in[d] != 0)
        throw_bad_shape(spec, "output " + out.to_string() + " is not a tiling of " + in.to_string());
      repeats[d] = in[d] == 0 ? 0 : out[d] / in[d];
    }
  }
  const std::vector<std::int64_t> dense = dense_strides(in);
  StridedView view;
  for (std::size_t d = 0; d < in.rank(); ++d) {
    view.dims.push_back(repeats[d]);
    view.src_strides.push_back(0);
    view.dims.push_back(in[d]);
    view.src_strides.push_back(dense[d]);
  }
  return view;
}

StridedView parse_strided_view(const KernelSpec& spec) {
  const std::string& op = spec.node->op_type;
  if (op == "Slice") return parse_slice_view(spec);
  if (op == "Expand") return parse_expand_view(spec);
  if (op == "Tile") return parse_tile_view(spec);
  throw_unsupported(spec, "is not a strided view op (Slice, Expand, Tile)");
}

SplitSpec parse_split_spec(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.inputs.size() > 2 || !spec.inputs[0].present)
    throw_bad_shape(spec, "expects the input and an optional split");
  const TensorDesc& in = spec.inputs[0];
  const auto rank = static_cast<std::int64_t>(in.shape.rank());
  const std::int64_t attr_axis = spec.node->attrs.get_int("axis", 0);
  const std::int64_t axis = attr_axis < 0 ? attr_axis + rank : attr_axis;
  if (axis < 0 || axis >= rank)
    throw_bad_shape(spec, "axis " + std::to_string(attr_axis) + " is out of range for rank " + std::to_string(rank));
  if (spec.outputs.empty()) throw_bad_shape(spec, "expects at least one output");
  SplitSpec split{static_cast<std::size_t>(axis), {}};
  std::int64_t total = 0;
  for (std::size_t i = 0; i < spec.outputs.size(); ++i) {
    const TensorDesc& out = spec.outputs[i];
    if (!out.present) {
      split.sizes.push_back(-1);  // filled in below from the split input, or rejected
      continue;
    }
    if (out.dtype != in.dtype)
      throw_unsupported(spec, "output " + std::to_string(i) + " dtype differs from the input's");
    if (out.shape.rank() != in.shape.rank())
      throw_bad_shape(spec, "output " + std::to_string(i) + " rank differs from the input's");
    for (std::size_t d = 0; d < in.shape.rank(); ++d)
      if (d != split.axis && out.shape[d] != in.shape[d])
        throw_bad_shape(spec, "output " + std::to_string(i) + " " + out.shape.to_string() + " differs from the input " +
                                  in.shape.to_string() + " outside axis " + std::to_string(axis));
    split.sizes.push_back(out.shape[split.axis]);
  }
  if (present(spec, 1) && spec.constants.size() > 1 && spec.constants[1]) {
    const auto sizes = constant_ints(spec, 1, "split");
    if (sizes.size() != spec.outputs.size())
      throw_bad_shape(spec, "split has " + std::to_string(sizes.size()) + " entries for " +
                                std::to_string(spec.outputs.size()) + " outputs");
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (split.sizes[i] >= 0 && split.sizes[i] != sizes[i])
        throw_bad_shape(spec, "output " + std::to_string(i) + " has " + std::to_string(split.sizes[i]) +
                                  " along the axis, split says " + std::to_string(sizes[i]));
      split.sizes[i] = sizes[i];
    }
  }
  for (std::size_t i = 0; i < split.sizes.size(); ++i) {
    if (split.sizes[i] < 0) throw_unsupported(spec, "output " + std::to_string(i) + " is absent and its size unknown");
    total += split.sizes[i];
  }
  if (total != in.shape[split.axis])
    throw_bad_shape(spec, "outputs add up to " + std::to_string(total) + " along axis " + std::to_string(axis) +
                              ", the input has " + std::to_string(in.shape[split.axis]));
  return split;
}

Tensor parse_constant_value(const KernelSpec& spec) {
  if (!spec.inputs.empty()) throw_bad_shape(spec, "takes no inputs");
  if (spec.outputs.size() != 1 || !spec.outputs[0].present) throw_bad_shape(spec, "expects one output");
  Tensor value = parse_for_node(spec, [&] { return graph::constant_value(spec.node->attrs); });
  if (value.dtype() != spec.outputs[0].dtype || value.shape() != spec.outputs[0].shape)
    throw_bad_shape(spec, "output is " + std::string(dtype_name(spec.outputs[0].dtype)) + " " +
                              spec.outputs[0].shape.to_string() + ", the value is " +
                              std::string(dtype_name(value.dtype())) + " " + value.shape().to_string());
  return value;
}

Tensor parse_shape_value(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || !spec.inputs[0].present) throw_bad_shape(spec, "expects one input");
  if (spec.outputs.size() != 1 || !spec.outputs[0].present) throw_bad_shape(spec, "expects one output");
  const Shape& in = spec.inputs[0].shape;
  const graph::DimRange range = graph::shape_op_range(spec.node->attrs, in.rank());
  const std::vector<std::int64_t> dims(in.dims().begin() + range.start, in.dims().begin() + range.end);
  Tensor value = Tensor::from<std::int64_t>(Shape{range.end - range.start}, dims);
  if (spec.outputs[0].dtype != DType::i64 || spec.outputs[0].shape != value.shape())
    throw_bad_shape(spec, "output is " + std::string(dtype_name(spec.outputs[0].dtype)) + " " +
                              spec.outputs[0].shape.to_string() + ", expected i64 " + value.shape().to_string());
  return value;
}

Tensor parse_fill_value(const KernelSpec& spec) {
  if (spec.inputs.size() != 1 || !spec.inputs[0].present) throw_bad_shape(spec, "expects the shape input");
  if (spec.outputs.size() != 1 || !spec.outputs[0].present) throw_bad_shape(spec, "expects one output");
  const Tensor value = parse_for_node(spec, [&] { return graph::fill_value(spec.node->attrs); });
  if (spec.outputs[0].dtype != value.dtype())
    throw_bad_shape(spec, "output is " + std::string(dtype_name(spec.outputs[0].dtype)) + ", the value is " +
                              std::string(dtype_name(value.dtype())));
  if (spec.constants.size() > 0 && spec.constants[0]) require_output_dims(spec, constant_ints(spec, 0, "shape"));
  return value;
}

void check_dropout(const KernelSpec& spec) {
  if (spec.inputs.empty() || spec.inputs.size() > 3 || !spec.inputs[0].present)
    throw_bad_shape(spec, "expects data and the optional ratio and training_mode");
  if (spec.outputs.empty() || spec.outputs.size() > 2 || !spec.outputs[0].present)
    throw_bad_shape(spec, "expects the output and an optional mask");
  const TensorDesc& x = spec.inputs[0];
  if (spec.outputs[0].dtype != x.dtype) throw_unsupported(spec, "output dtype differs from the input's");
  if (spec.outputs[0].shape != x.shape) throw_bad_shape(spec, "output shape differs from the input's");
  if (spec.outputs.size() > 1 && spec.outputs[1].present) {
    if (spec.outputs[1].dtype != DType::boolean) throw_unsupported(spec, "the mask output must be bool");
    if (spec.outputs[1].shape != x.shape) throw_bad_shape(spec, "mask shape differs from the input's");
  }
  if (!present(spec, 2)) return;
  const Tensor* training = spec.constants.size() > 2 ? spec.constants[2] : nullptr;
  if (!training) throw_unsupported(spec, "training_mode must be a constant");
  const Tensor* ratio = present(spec, 1) && spec.constants.size() > 1 ? spec.constants[1] : nullptr;
  parse_for_node(spec, [&] { graph::require_inference_dropout(*training, ratio); });
}

void check_range(const KernelSpec& spec) {
  if (spec.inputs.size() != 3) throw_bad_shape(spec, "expects start, limit and delta");
  if (spec.outputs.size() != 1 || !spec.outputs[0].present) throw_bad_shape(spec, "expects one output");
  const DType dtype = spec.outputs[0].dtype;
  if (dtype != DType::f32 && dtype != DType::i64 && dtype != DType::i32)
    throw_unsupported(spec, "dtype " + std::string(dtype_name(dtype)) + " (f32, i64 and i32 are supported)");
  if (spec.outputs[0].shape.rank() != 1) throw_bad_shape(spec, "output must be 1-D");
  const char* names[] = {"start", "limit", "delta"};
  bool all_constant = true;
  for (std::size_t i = 0; i < 3; ++i) {
    const TensorDesc& in = spec.inputs[i];
    if (!in.present) throw_bad_shape(spec, std::string("required input ") + names[i] + " is absent");
    if (in.dtype != dtype) throw_unsupported(spec, std::string(names[i]) + " dtype differs from the output's");
    if (in.shape.numel() != 1) throw_bad_shape(spec, std::string(names[i]) + " must be a scalar");
    all_constant =
        all_constant && i < spec.constants.size() && spec.constants[i] && spec.constants[i]->dtype() == dtype;
  }
  if (!all_constant) return;
  const std::int64_t expected = parse_for_node(
      spec, [&] { return graph::range_length(*spec.constants[0], *spec.constants[1], *spec.constants[2]); });
  if (spec.outputs[0].shape[0] != expected)
    throw_bad_shape(spec, "output has " + std::to_string(spec.outputs[0].shape[0]) + " elements, the range has " +
                              std::to_string(expected));
}

}  // namespace loom::backend
