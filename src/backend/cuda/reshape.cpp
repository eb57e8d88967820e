// Reshape, Flatten, Squeeze, Unsqueeze and Identity: the planner fixed the output shape, so on a
// dense layout each is a device copy of the bytes (or nothing, when the memory plan aliases output
// and input). Dropout at inference is the same copy plus an all-true mask.
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/shape_ops.hpp"
#include "backend/shape_spec.hpp"

namespace loom::backend::cuda {
namespace {

class ReshapeKernel final : public CudaOpKernel {
 public:
  explicit ReshapeKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    const TensorDesc& x = spec.inputs[0];
    const TensorDesc& y = spec.outputs[0];
    if (x.dtype != y.dtype) throw_unsupported(spec, "output dtype differs from the input's");
    if (x.shape.numel() != y.shape.numel())
      throw_bad_shape(spec, "cannot reshape " + x.shape.to_string() + " into " + y.shape.to_string());
    bytes_ = static_cast<std::size_t>(x.shape.numel()) * dtype_size(x.dtype);
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    stream.copy_on_device(outputs[0], inputs[0], bytes_);
  }

 private:
  std::size_t bytes_ = 0;
};

class DropoutKernel final : public CudaOpKernel {
 public:
  explicit DropoutKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    check_dropout(spec);
    const TensorDesc& x = spec.inputs[0];
    count_ = static_cast<std::size_t>(x.shape.numel());
    bytes_ = count_ * dtype_size(x.dtype);
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    stream.copy_on_device(outputs[0], inputs[0], bytes_);
    if (outputs.size() > 1 && outputs[1] && count_ > 0)
      LOOM_CUDA_CHECK(cudaMemsetAsync(outputs[1], 1, count_, stream.get()));
  }

 private:
  std::size_t count_ = 0, bytes_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_reshape_kernel(const KernelSpec& spec, CudaBackend&) {
  const std::string& op = spec.node->op_type;
  if (op == "Reshape")
    require_arity(spec, 2, 2, 1, 1);  // the shape input is only read by shape inference
  else if (op == "Squeeze" || op == "Unsqueeze")
    require_arity(spec, 1, 2, 1, 1);  // likewise the axes
  else
    require_arity(spec, 1, 1, 1, 1);
  return std::make_unique<ReshapeKernel>(spec);
}

std::unique_ptr<OpKernel> create_dropout_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 3, 1, 2);
  return std::make_unique<DropoutKernel>(spec);
}

}  // namespace loom::backend::cuda
