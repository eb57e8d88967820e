// LayerNormalization: normalises over dims [axis, rank); Scale and optional B hold one value per
// normalised element. The optional Mean and InvStdDev outputs (X's shape with the normalised dims
// set to 1) are written in X's dtype.
#include "layernorm.cuh"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

class LayerNormKernel final : public CudaOpKernel {
 public:
  explicit LayerNormKernel(const KernelSpec& spec) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {1, 2})) {
    if (spec.node->attrs.get_int("stash_type", 1) != 1) throw_unsupported(spec, "stash_type other than 1 (float)");
    const Shape& x = spec.inputs[0].shape;
    require_output_shape(spec, 0, x);
    if (x.rank() == 0) throw_bad_shape(spec, "input must have rank >= 1");
    const std::size_t axis = normalize_axis(spec, spec.node->attrs.get_int("axis", -1), x.rank());
    std::vector<std::int64_t> stat_dims = x.dims();
    std::fill(stat_dims.begin() + static_cast<std::ptrdiff_t>(axis), stat_dims.end(), 1);
    for (std::size_t i = 1; i < spec.outputs.size(); ++i) {
      if (!spec.outputs[i].present) continue;
      require_output_shape(spec, i, Shape(stat_dims));
      if (spec.outputs[i].dtype != dtype_)
        throw_unsupported(spec, "output " + std::to_string(i) + " is " +
                                    std::string(dtype_name(spec.outputs[i].dtype)) + " but X is " +
                                    std::string(dtype_name(dtype_)) + " (statistics are written in X's dtype)");
    }
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
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    const void* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    void* mean = outputs.size() > 1 ? outputs[1] : nullptr;
    void* inv_std = outputs.size() > 2 ? outputs[2] : nullptr;
    kernels::launch_layernorm(inputs[0], inputs[1], bias, outputs[0], mean, inv_std, dtype_, rows_, cols_, epsilon_,
                              stream.get());
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
