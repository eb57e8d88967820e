// Creation-time checks shared by the CPU kernels.
#include "backend/cpu/kernel_support.hpp"

#include <string>

namespace loom::backend::cpu {

void require_input_count(const KernelSpec& spec, std::size_t min, std::size_t max) {
  const std::size_t count = spec.inputs.size();
  if (count < min || count > max)
    throw_bad_shape(spec, "expects " + std::to_string(min) + (min == max ? "" : " to " + std::to_string(max)) +
                              " inputs, got " + std::to_string(count));
  if (spec.constants.size() != 0 && spec.constants.size() != count)
    throw Error(ErrorCode::internal, "KernelSpec for " + spec.node->op_type + " node '" + spec.node->name + "' has " +
                                         std::to_string(spec.constants.size()) + " constants for " +
                                         std::to_string(count) + " inputs");
}

void require_output_count(const KernelSpec& spec, std::size_t min, std::size_t max) {
  const std::size_t count = spec.outputs.size();
  if (count < min)
    throw_bad_shape(spec, "expects at least " + std::to_string(min) + " outputs, got " + std::to_string(count));
  for (std::size_t i = max; i < count; ++i)
    if (spec.outputs[i].present)
      throw_unsupported(spec, "output " + std::to_string(i) + " is not produced by the CPU backend");
}

void require_present(const KernelSpec& spec, std::size_t index, const char* role) {
  if (index >= spec.inputs.size() || !spec.inputs[index].present)
    throw_bad_shape(spec, std::string("required input ") + role + " is missing");
}

static std::string dtype_problem(DType dtype) {
  std::string text = "dtype " + std::string(dtype_name(dtype)) + " is not supported";
  if (dtype == DType::f16 || dtype == DType::bf16)
    text += " on the CPU backend (16-bit float math needs the CUDA backend)";
  return text;
}

void require_dtype(const KernelSpec& spec, const TensorDesc& desc, DType expected, const char* role) {
  if (!desc.present) return;
  if (desc.dtype != expected)
    throw_unsupported(spec, std::string(role) + ": " + dtype_problem(desc.dtype) + " (expects " +
                                std::string(dtype_name(expected)) + ")");
}

void require_f32(const KernelSpec& spec) {
  for (std::size_t i = 0; i < spec.inputs.size(); ++i)
    require_dtype(spec, spec.inputs[i], DType::f32, ("input " + std::to_string(i)).c_str());
  for (std::size_t i = 0; i < spec.outputs.size(); ++i)
    require_dtype(spec, spec.outputs[i], DType::f32, ("output " + std::to_string(i)).c_str());
}

void require_f32_except(const KernelSpec& spec, std::size_t skipped_input) {
  for (std::size_t i = 0; i < spec.inputs.size(); ++i)
    if (i != skipped_input && spec.inputs[i].present)
      require_dtype(spec, spec.inputs[i], DType::f32, ("input " + std::to_string(i)).c_str());
  for (std::size_t i = 0; i < spec.outputs.size(); ++i)
    if (spec.outputs[i].present)
      require_dtype(spec, spec.outputs[i], DType::f32, ("output " + std::to_string(i)).c_str());
}

std::int64_t normalize_axis(const KernelSpec& spec, std::int64_t axis, std::int64_t rank, const char* role) {
  const std::int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    throw_bad_shape(
        spec, std::string(role) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return normalized;
}

std::optional<std::vector<std::int64_t>> broadcast_strides(const Shape& in, const Shape& out) {
  if (in.rank() > out.rank()) return std::nullopt;
  std::vector<std::int64_t> strides(out.rank(), 0);
  const std::size_t offset = out.rank() - in.rank();
  std::int64_t stride = 1;
  for (std::size_t i = in.rank(); i-- > 0;) {
    const std::int64_t dim = in[i];
    if (dim == out[i + offset]) {
      strides[i + offset] = dim == 1 ? 0 : stride;
    } else if (dim != 1) {
      return std::nullopt;
    }
    stride *= dim;
  }
  return strides;
}

void require_shape(const KernelSpec& spec, const Shape& actual, const Shape& expected, const char* role) {
  if (actual != expected)
    throw_bad_shape(spec,
                    std::string(role) + " has shape " + actual.to_string() + ", expected " + expected.to_string());
}

std::int64_t product(const std::vector<std::int64_t>& dims, std::size_t begin, std::size_t end) {
  std::int64_t result = 1;
  for (std::size_t i = begin; i < end && i < dims.size(); ++i) result *= dims[i];
  return result;
}

}  // namespace loom::backend::cpu
