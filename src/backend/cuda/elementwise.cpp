// Relu, Sigmoid, Tanh, Gelu and broadcasting Add/Mul: attribute and shape handling around the
// launchers in kernels/elementwise.cu.
#include "elementwise.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/strided_layout.hpp"

namespace loom::backend::cuda {
namespace {

class UnaryKernel final : public CudaOpKernel {
 public:
  UnaryKernel(const KernelSpec& spec, kernels::UnaryOp op)
      : CudaOpKernel(spec), op_(op), dtype_(require_float_dtype(spec, {})),
        count_(static_cast<std::size_t>(spec.inputs[0].shape.numel())) {
    require_output_shape(spec, 0, spec.inputs[0].shape);
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*,
              CudaStream& stream) override {
    kernels::launch_unary(op_, inputs[0], outputs[0], dtype_, count_, stream.get());
  }

 private:
  kernels::UnaryOp op_;
  DType dtype_;
  std::size_t count_;
};

class BinaryKernel final : public CudaOpKernel {
 public:
  BinaryKernel(const KernelSpec& spec, kernels::BinaryOp op) : CudaOpKernel(spec), op_(op) {
    const TensorDesc& a = spec.inputs[0];
    const TensorDesc& b = spec.inputs[1];
    dtype_ = a.dtype;
    if (dtype_ != DType::f32 && dtype_ != DType::f16 && dtype_ != DType::i32 && dtype_ != DType::i64)
      throw_unsupported(spec, "dtype " + std::string(dtype_name(dtype_)) + " (f32, f16, i32 and i64 only)");
    if (b.dtype != dtype_ || spec.outputs[0].dtype != dtype_)
      throw_unsupported(spec, "inputs and output must share one dtype");

    const std::optional<Shape> out = broadcast_shapes(a.shape, b.shape);
    if (!out) throw_bad_shape(spec, a.shape.to_string() + " and " + b.shape.to_string() + " do not broadcast");
    require_output_shape(spec, 0, *out);
    same_shape_ = a.shape == *out && b.shape == *out;
    std::optional<kernels::BroadcastLayout> layout =
        make_broadcast_layout(out->dims(), *broadcast_strides(a.shape, *out), *broadcast_strides(b.shape, *out));
    if (!layout) throw_unsupported(spec, "broadcast over more than 8 dims that cannot be merged");
    layout_ = *layout;
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*,
              CudaStream& stream) override {
    kernels::launch_binary(op_, inputs[0], inputs[1], outputs[0], dtype_, layout_, same_shape_, stream.get());
  }

 private:
  kernels::BinaryOp op_;
  DType dtype_ = DType::f32;
  kernels::BroadcastLayout layout_;
  bool same_shape_ = false;
};

}  // namespace

std::unique_ptr<OpKernel> create_unary_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 1);
  const std::string& op = spec.node->op_type;
  kernels::UnaryOp kind = kernels::UnaryOp::relu;
  if (op == "Relu") {
    kind = kernels::UnaryOp::relu;
  } else if (op == "Sigmoid") {
    kind = kernels::UnaryOp::sigmoid;
  } else if (op == "Tanh") {
    kind = kernels::UnaryOp::tanh;
  } else if (op == "Gelu") {
    const std::string approximate = spec.node->attrs.get_string("approximate", "none");
    if (approximate == "none")
      kind = kernels::UnaryOp::gelu_erf;
    else if (approximate == "tanh")
      kind = kernels::UnaryOp::gelu_tanh;
    else
      throw_unsupported(spec, "approximate=\"" + approximate + "\"");
  } else {
    throw_unsupported(spec, "not a unary op");
  }
  return std::make_unique<UnaryKernel>(spec, kind);
}

std::unique_ptr<OpKernel> create_binary_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 2, 2, 1, 1);
  const std::string& op = spec.node->op_type;
  if (op != "Add" && op != "Mul") throw_unsupported(spec, "not a binary op");
  return std::make_unique<BinaryKernel>(spec, op == "Add" ? kernels::BinaryOp::add : kernels::BinaryOp::mul);
}

}  // namespace loom::backend::cuda
