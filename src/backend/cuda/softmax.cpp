// Softmax and LogSoftmax along one axis (opset 13 semantics): the tensor is viewed as
// [outer, axis, inner].
#include "softmax.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

class SoftmaxKernel final : public CudaOpKernel {
 public:
  explicit SoftmaxKernel(const KernelSpec& spec)
      : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {})), log_softmax_(spec.node->op_type == "LogSoftmax") {
    const Shape& x = spec.inputs[0].shape;
    require_output_shape(spec, 0, x);
    if (x.rank() == 0) {
      outer_ = axis_ = inner_ = 1;  // a scalar's softmax is 1 (its log 0)
      return;
    }
    const std::size_t axis = normalize_axis(spec, spec.node->attrs.get_int("axis", -1), x.rank());
    outer_ = product(x, 0, axis);
    axis_ = x[axis];
    inner_ = product(x, axis + 1, x.rank());
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_softmax(inputs[0], outputs[0], dtype_, outer_, axis_, inner_, log_softmax_, stream.get());
  }

 private:
  DType dtype_;
  bool log_softmax_;
  std::int64_t outer_ = 1, axis_ = 1, inner_ = 1;
};

}  // namespace

std::unique_ptr<OpKernel> create_softmax_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 1);
  return std::make_unique<SoftmaxKernel>(spec);
}

}  // namespace loom::backend::cuda
