// LayerNormalization: normalises over dims [axis, rank); Scale and optional B hold one value per
// normalised element. Only the Y output (the optional Mean / InvStdDev are training outputs).
#include "layernorm.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

class LayerNormKernel final : public CudaOpKernel {
 public:
  explicit LayerNormKernel(const KernelSpec& spec) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {1, 2})) {
    for (std::size_t i = 1; i < spec.outputs.size(); ++i)
      if (spec.outputs[i].present) throw_unsupported(spec, "the Mean and InvStdDev outputs");
    const Shape& x = spec.inputs[0].shape;
    require_output_shape(spec, 0, x);
    if (x.rank() == 0) throw_bad_shape(spec, "input must have rank >= 1");
    const std::size_t axis = normalize_axis(spec, spec.node->attrs.get_int("axis", -1), x.rank());
    rows_ = product(x, 0, axis);
    cols_ = product(x, axis, x.rank());
    epsilon_ = spec.node->attrs.get_float("epsilon", 1e-5f);
    // Scale and B broadcast against the normalised dims in ONNX; the kernel reads one value per
    // normalised element, so they must hold exactly that many (the usual case).
    for (std::size_t i = 1; i <= 2; ++i)
      if (has_input(spec, i) && spec.inputs[i].shape.numel() != cols_)
        throw_unsupported(spec, "input " + std::to_string(i) + " of shape " + spec.inputs[i].shape.to_string() +
                                    " (must hold the " + std::to_string(cols_) + " normalised elements)");
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*,
              CudaStream& stream) override {
    const void* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    kernels::launch_layernorm(inputs[0], inputs[1], bias, outputs[0], dtype_, rows_, cols_, epsilon_, stream.get());
  }

 private:
  DType dtype_;
  std::int64_t rows_ = 0, cols_ = 0;
  float epsilon_ = 1e-5f;
};

}  // namespace

std::unique_ptr<OpKernel> create_layernorm_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 2, 3, 1, 3);
  return std::make_unique<LayerNormKernel>(spec);
}

}  // namespace loom::backend::cuda
