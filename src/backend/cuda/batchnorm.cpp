// BatchNormalization in inference mode: the four per-channel vectors are folded into a scale and a
// shift (in the workspace) on each run, since they arrive as device inputs.
#include "batchnorm.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

class BatchNormKernel final : public CudaOpKernel {
 public:
  explicit BatchNormKernel(const KernelSpec& spec) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {})) {
    if (spec.node->attrs.get_int("training_mode", 0) != 0) throw_unsupported(spec, "training_mode=1");
    for (std::size_t i = 1; i < spec.outputs.size(); ++i)
      if (spec.outputs[i].present) throw_unsupported(spec, "the running mean/var outputs (training only)");
    const Shape& x = spec.inputs[0].shape;
    require_output_shape(spec, 0, x);
    if (x.rank() < 2) throw_bad_shape(spec, "input must be [N, C, ...]");
    batch_ = x[0];
    channels_ = x[1];
    inner_ = product(x, 2, x.rank());
    param_dtype_ = spec.inputs[1].dtype;
    // The per-channel vectors may stay f32 under an f16 model; they are folded to f32 anyway.
    if (!is_compute_float(param_dtype_))
      throw_unsupported(spec, "scale dtype " + std::string(dtype_name(param_dtype_)));
    for (std::size_t i = 1; i <= 4; ++i) {
      if (spec.inputs[i].dtype != param_dtype_) throw_unsupported(spec, "scale, B, mean and var must share a dtype");
      if (spec.inputs[i].shape.numel() != channels_)
        throw_bad_shape(spec, "input " + std::to_string(i) + " has shape " + spec.inputs[i].shape.to_string() +
                                  ", expected " + std::to_string(channels_) + " values");
    }
    epsilon_ = spec.node->attrs.get_float("epsilon", 1e-5f);
  }

  std::size_t workspace_bytes() const override {
    return align_bytes(2 * static_cast<std::size_t>(channels_) * sizeof(float));
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
              CudaStream& stream) override {
    kernels::launch_batchnorm(inputs[0], outputs[0], dtype_, inputs[1], inputs[2], inputs[3], inputs[4], param_dtype_,
                              epsilon_, static_cast<float*>(workspace), batch_, channels_, inner_, stream.get());
  }

 private:
  DType dtype_;
  DType param_dtype_ = DType::f32;
  std::int64_t batch_ = 0, channels_ = 0, inner_ = 0;
  float epsilon_ = 1e-5f;
};

}  // namespace

std::unique_ptr<OpKernel> create_batchnorm_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 5, 5, 1, 3);
  return std::make_unique<BatchNormKernel>(spec);
}

}  // namespace loom::backend::cuda
