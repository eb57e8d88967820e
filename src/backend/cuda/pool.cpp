// MaxPool / AveragePool (1-D to 3-D) and GlobalAveragePool / GlobalMaxPool. The window geometry
// (auto_pad, ceil_mode, dilations) is the shared conv_spec one, so it matches the CPU backend.
#include "pool.cuh"

#include "backend/conv_spec.hpp"
#include "backend/cuda/conv_kernels.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

class PoolKernel final : public CudaOpKernel {
 public:
  PoolKernel(const KernelSpec& spec, kernels::PoolKind kind)
      : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {})) {
    const Attributes& attrs = spec.node->attrs;
    if (spec.outputs.size() > 1 && spec.outputs[1].present) throw_unsupported(spec, "the Indices output");
    const Shape& x = spec.inputs[0].shape;
    if (!attrs.has("kernel_shape")) throw_bad_shape(spec, "kernel_shape is required");
    if (x.rank() < 3) throw_bad_shape(spec, "X must be [N, C, spatial...], got " + x.to_string());
    const WindowGeometry window =
        parse_sliding_window(spec, attrs.get_ints("kernel_shape"), x[1], attrs.get_int("ceil_mode", 0) != 0);
    for (std::size_t i = 0; i < window.rank(); ++i) {
      const std::int64_t span = (window.kernel[i] - 1) * window.dilation[i] + 1;
      if (window.pad_begin[i] >= span || window.pad_end[i] >= span)
        throw_unsupported(spec, "pads must be smaller than the (dilated) kernel_shape");
    }
    const WindowGeometry g = window.padded_to(3);
    params_.kind = kind;
    params_.planes = x[0] * x[1];
    for (int a = 0; a < 3; ++a) {
      params_.in[a] = g.input[a];
      params_.out[a] = g.output[a];
      params_.kernel[a] = g.kernel[a];
      params_.stride[a] = g.stride[a];
      params_.dilation[a] = g.dilation[a];
      params_.pad_begin[a] = g.pad_begin[a];
      params_.pad_end[a] = g.pad_end[a];
    }
    params_.count_include_pad = attrs.get_int("count_include_pad", 0) != 0;
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_pool(inputs[0], outputs[0], dtype_, params_, stream.get());
  }

 private:
  DType dtype_;
  kernels::PoolParams params_;
};

class GlobalPoolKernel final : public CudaOpKernel {
 public:
  GlobalPoolKernel(const KernelSpec& spec, kernels::PoolKind kind)
      : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {})), kind_(kind) {
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() < 3) throw_bad_shape(spec, "input must be [N, C, spatial...]");
    std::vector<std::int64_t> out_dims(x.rank(), 1);
    out_dims[0] = x[0];
    out_dims[1] = x[1];
    require_output_shape(spec, 0, Shape(out_dims));
    rows_ = x[0] * x[1];
    cols_ = product(x, 2, x.rank());
    if (cols_ == 0) throw_bad_shape(spec, "empty spatial dims in X " + x.to_string());
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_global_pool(inputs[0], outputs[0], dtype_, kind_, rows_, cols_, stream.get());
  }

 private:
  DType dtype_;
  kernels::PoolKind kind_;
  std::int64_t rows_ = 0, cols_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_pool_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 2);
  const std::string& op = spec.node->op_type;
  // storage_order only shapes the Indices output, which is not supported, so it is ignored.
  if (op == "MaxPool") return std::make_unique<PoolKernel>(spec, kernels::PoolKind::max);
  if (op == "AveragePool") return std::make_unique<PoolKernel>(spec, kernels::PoolKind::average);
  throw_unsupported(spec, "not a pooling op");
}

std::unique_ptr<OpKernel> create_global_average_pool_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 1);
  return std::make_unique<GlobalPoolKernel>(spec, kernels::PoolKind::average);
}

std::unique_ptr<OpKernel> create_global_max_pool_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 1);
  return std::make_unique<GlobalPoolKernel>(spec, kernels::PoolKind::max);
}

}  // namespace loom::backend::cuda
