// Reshape and Flatten: the planner fixed the output shape, so on a dense layout both are a device
// copy of the bytes (or nothing, when the memory plan aliases output and input).
#include "backend/cuda/cuda_op_kernel.hpp"

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
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*,
              CudaStream& stream) override {
    stream.copy_on_device(outputs[0], inputs[0], bytes_);
  }

 private:
  std::size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_reshape_kernel(const KernelSpec& spec, CudaBackend&) {
  if (spec.node->op_type == "Reshape")
    require_arity(spec, 2, 2, 1, 1);  // the shape input is only read by shape inference
  else
    require_arity(spec, 1, 1, 1, 1);
  return std::make_unique<ReshapeKernel>(spec);
}

}  // namespace loom::backend::cuda
