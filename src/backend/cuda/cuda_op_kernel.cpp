// The checked launch path shared by all CUDA op kernels, and the constructor helpers.
#include "backend/cuda/cuda_op_kernel.hpp"

#include "backend/cuda/cuda_check.hpp"
#include "loom/error.hpp"

namespace loom::backend::cuda {

void CudaOpKernel::run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                            Stream& stream) {
  CudaStream& cuda_stream = as_cuda_stream(stream);
  DeviceGuard guard(cuda_stream.device());
  launch(inputs, outputs, workspace, cuda_stream);
  // Launch-configuration errors surface here; faults inside a kernel surface at the next sync.
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw Error(ErrorCode::backend, op_type() + " node '" + node_name() + "': kernel launch failed: " +
                                        cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

bool has_input(const KernelSpec& spec, std::size_t index) noexcept {
  return index < spec.inputs.size() && spec.inputs[index].present;
}

bool has_output(const KernelSpec& spec, std::size_t index) noexcept {
  return index < spec.outputs.size() && spec.outputs[index].present;
}

void require_arity(const KernelSpec& spec, std::size_t min_inputs, std::size_t max_inputs, std::size_t min_outputs,
                   std::size_t max_outputs) {
  if (spec.inputs.size() < min_inputs || spec.inputs.size() > max_inputs)
    throw_bad_shape(spec, "expects " + std::to_string(min_inputs) + " to " + std::to_string(max_inputs) +
                              " inputs, got " + std::to_string(spec.inputs.size()));
  if (spec.outputs.size() < min_outputs || spec.outputs.size() > max_outputs)
    throw_unsupported(spec, "expects " + std::to_string(min_outputs) + " to " + std::to_string(max_outputs) +
                                " outputs, got " + std::to_string(spec.outputs.size()));
  for (std::size_t i = 0; i < min_inputs; ++i)
    if (!spec.inputs[i].present) throw_bad_shape(spec, "required input " + std::to_string(i) + " is absent");
  for (std::size_t i = 0; i < min_outputs; ++i)
    if (!spec.outputs[i].present) throw_unsupported(spec, "required output " + std::to_string(i) + " is absent");
}

DType require_float_dtype(const KernelSpec& spec, std::initializer_list<std::size_t> same_dtype_inputs) {
  const DType dtype = spec.inputs.at(0).dtype;
  if (!is_compute_float(dtype))
    throw_unsupported(spec,
                      "dtype " + std::string(dtype_name(dtype)) + " (the CUDA backend computes this op in f32 or f16)");
  for (std::size_t index : same_dtype_inputs)
    if (has_input(spec, index) && spec.inputs[index].dtype != dtype)
      throw_unsupported(spec, "input " + std::to_string(index) + " is " +
                                  std::string(dtype_name(spec.inputs[index].dtype)) + " but input 0 is " +
                                  std::string(dtype_name(dtype)));
  if (has_output(spec, 0) && spec.outputs[0].dtype != dtype)
    throw_unsupported(spec, "output dtype " + std::string(dtype_name(spec.outputs[0].dtype)) + " differs from input " +
                                std::string(dtype_name(dtype)));
  return dtype;
}

std::size_t normalize_axis(const KernelSpec& spec, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    throw_bad_shape(spec, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

void require_output_shape(const KernelSpec& spec, std::size_t index, const Shape& expected) {
  const Shape& actual = spec.outputs.at(index).shape;
  if (actual != expected)
    throw_bad_shape(spec, "output " + std::to_string(index) + " has shape " + actual.to_string() + ", expected " +
                              expected.to_string());
}

std::int64_t product(const Shape& shape, std::size_t begin, std::size_t end) {
  std::int64_t result = 1;
  for (std::size_t d = begin; d < end; ++d) result *= shape[d];
  return result;
}

cudaDataType_t cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      throw Error(ErrorCode::internal, "cuda_data_type: no library type for " + std::string(dtype_name(dtype)));
  }
}

}  // namespace loom::backend::cuda
