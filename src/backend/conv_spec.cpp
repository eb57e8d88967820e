// Kernel-side wrappers of the shared window geometry.
#include "backend/conv_spec.hpp"

#include <optional>
#include <string>

namespace loom::backend {
namespace {

template <class Parse>
WindowGeometry checked(const KernelSpec& spec, std::int64_t channels, Parse parse) {
  WindowGeometry geometry = parse_for_node(spec, parse);
  std::vector<std::int64_t> dims{spec.inputs[0].shape[0], channels};
  dims.insert(dims.end(), geometry.output.begin(), geometry.output.end());
  const Shape expected(dims);
  if (spec.outputs.empty() || spec.outputs[0].shape != expected)
    throw_bad_shape(spec, "output Y " +
                              (spec.outputs.empty() ? std::string("(none)") : spec.outputs[0].shape.to_string()) +
                              " differs from " + expected.to_string() + " computed from X " +
                              spec.inputs[0].shape.to_string() + " and the attributes");
  return geometry;
}

}  // namespace

WindowGeometry parse_sliding_window(const KernelSpec& spec, const std::vector<std::int64_t>& kernel,
                                    std::int64_t channels, bool ceil_mode) {
  return checked(spec, channels,
                 [&] { return graph::sliding_window(spec.node->attrs, spec.inputs[0].shape, kernel, ceil_mode); });
}

WindowGeometry parse_transposed_window(const KernelSpec& spec, const std::vector<std::int64_t>& kernel,
                                       std::int64_t channels) {
  return checked(spec, channels,
                 [&] { return graph::transposed_window(spec.node->attrs, spec.inputs[0].shape, kernel); });
}

PadSpec parse_pad(const KernelSpec& spec) {
  if (spec.inputs.empty() || !spec.inputs[0].present) throw_bad_shape(spec, "missing input data");
  if (spec.inputs.size() > 4) throw_bad_shape(spec, "Pad takes at most 4 inputs");
  if (spec.inputs.size() > 3 && spec.inputs[3].present) throw_unsupported(spec, "the axes input (opset 18)");
  const Attributes& attrs = spec.node->attrs;
  std::optional<std::vector<std::int64_t>> pads;
  if (spec.inputs.size() > 1 && spec.inputs[1].present) {
    const Tensor* constant = spec.constants.size() > 1 ? spec.constants[1] : nullptr;
    if (!constant) throw_unsupported(spec, "pads must be a constant known when the model is compiled");
    const Tensor ints = constant->to(DType::i64);
    pads.emplace(ints.values<std::int64_t>().begin(), ints.values<std::int64_t>().end());
  }
  const Shape& x = spec.inputs[0].shape;
  graph::PadGeometry geometry =
      parse_for_node(spec, [&] { return graph::pad_geometry(attrs, x, pads ? &*pads : nullptr); });
  PadSpec pad;
  pad.mode = geometry.mode;
  pad.pad_begin = std::move(geometry.pad_begin);
  pad.pad_end = std::move(geometry.pad_end);
  pad.has_value_input = spec.inputs.size() > 2 && spec.inputs[2].present;
  if (pad.has_value_input) {
    if (spec.inputs[2].dtype != spec.inputs[0].dtype) throw_bad_shape(spec, "constant_value must have X's dtype");
    if (spec.inputs[2].shape.numel() != 1) throw_bad_shape(spec, "constant_value must hold one value");
  }
  pad.attribute_value = attrs.get_float("value", 0.0f);
  const Shape dims(std::move(geometry.output));
  if (spec.outputs.empty() || spec.outputs[0].shape != dims || spec.outputs[0].dtype != spec.inputs[0].dtype)
    throw_bad_shape(spec, "output must be " + dims.to_string() + " of X's dtype");
  return pad;
}

std::int64_t pad_source_index(std::int64_t out_index, std::int64_t pad_begin, std::int64_t input, PadMode mode) {
  std::int64_t i = out_index - pad_begin;
  if (i >= 0 && i < input) return i;
  switch (mode) {
    case PadMode::constant:
      return -1;
    case PadMode::edge:
      return i < 0 ? 0 : input - 1;
    case PadMode::reflect: {
      if (input == 1) return 0;
      const std::int64_t period = 2 * (input - 1);
      i %= period;
      if (i < 0) i += period;
      return i < input ? i : period - i;
    }
  }
  return -1;
}

graph::ResizePlan parse_resize(const KernelSpec& spec) {
  if (spec.inputs.empty() || !spec.inputs[0].present) throw_bad_shape(spec, "missing input X");
  if (spec.inputs.size() > 4) throw_bad_shape(spec, "Resize takes at most 4 inputs");
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
  for (std::size_t i : {std::size_t{2}, std::size_t{3}}) {
    if (spec.inputs.size() <= i || !spec.inputs[i].present || spec.inputs[i].shape.numel() == 0) continue;
    const Tensor* constant = spec.constants.size() > i ? spec.constants[i] : nullptr;
    if (!constant)
      throw_unsupported(
          spec, std::string(i == 2 ? "scales" : "sizes") + " must be a constant known when the model is compiled");
    (i == 2 ? scales : sizes) = constant;
  }
  graph::ResizePlan plan =
      parse_for_node(spec, [&] { return graph::plan_resize(spec.node->attrs, spec.inputs[0].shape, scales, sizes); });
  if (spec.outputs.empty() || spec.outputs[0].shape != Shape(plan.output) ||
      spec.outputs[0].dtype != spec.inputs[0].dtype)
    throw_bad_shape(spec, "output must be " + Shape(plan.output).to_string() + " of X's dtype");
  return plan;
}

}  // namespace loom::backend
