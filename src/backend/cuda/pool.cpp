// MaxPool / AveragePool (2-D) and GlobalAveragePool. The output size comes from the planner's
// shape inference; the constructor only checks it is one the ONNX formulas allow.
#include "pool.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

std::vector<std::int64_t> ints_or(const KernelSpec& spec, const char* name, std::size_t count, std::int64_t fallback) {
  std::vector<std::int64_t> values = spec.node->attrs.get_ints(name, std::vector<std::int64_t>(count, fallback));
  if (values.size() != count)
    throw_unsupported(spec, std::string(name) + " must have " + std::to_string(count) + " values (2-D pooling)");
  return values;
}

// Output extent along one dim: floor mode exactly; ceil mode either the plain ceiling or one less
// (the rule, adopted by later opsets and PyTorch, that drops a last window starting in the padding).
bool extent_allowed(std::int64_t out, std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pads,
                    bool ceil_mode) {
  const std::int64_t span = in + pads - kernel;
  if (span < 0) return false;
  const std::int64_t floor_out = span / stride + 1;
  if (!ceil_mode) return out == floor_out;
  const std::int64_t ceil_out = (span + stride - 1) / stride + 1;
  return out == ceil_out || out == ceil_out - 1 || out == floor_out;
}

class Pool2dKernel final : public CudaOpKernel {
 public:
  Pool2dKernel(const KernelSpec& spec, kernels::PoolKind kind) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {})) {
    const Attributes& attrs = spec.node->attrs;
    if (spec.outputs.size() > 1 && spec.outputs[1].present) throw_unsupported(spec, "the Indices output");
    const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET") throw_unsupported(spec, "auto_pad=" + auto_pad + " (NOTSET only)");
    const Shape& x = spec.inputs[0].shape;
    const Shape& y = spec.outputs[0].shape;
    if (x.rank() != 4) throw_unsupported(spec, "input of rank " + std::to_string(x.rank()) + " (2-D pooling only)");
    if (!attrs.has("kernel_shape")) throw_bad_shape(spec, "kernel_shape is required");
    const std::vector<std::int64_t> kernel = ints_or(spec, "kernel_shape", 2, 1);
    const std::vector<std::int64_t> strides = ints_or(spec, "strides", 2, 1);
    const std::vector<std::int64_t> pads = ints_or(spec, "pads", 4, 0);
    const std::vector<std::int64_t> dilations = ints_or(spec, "dilations", 2, 1);
    if (dilations[0] != 1 || dilations[1] != 1) throw_unsupported(spec, "dilations other than 1");
    for (std::int64_t v : kernel)
      if (v < 1) throw_bad_shape(spec, "kernel_shape values must be positive");
    for (std::int64_t v : strides)
      if (v < 1) throw_bad_shape(spec, "strides must be positive");
    for (std::int64_t v : pads)
      if (v < 0) throw_bad_shape(spec, "pads must not be negative");
    const bool ceil_mode = attrs.get_int("ceil_mode", 0) != 0;

    if (y.rank() != 4 || y[0] != x[0] || y[1] != x[1] ||
        !extent_allowed(y[2], x[2], kernel[0], strides[0], pads[0] + pads[2], ceil_mode) ||
        !extent_allowed(y[3], x[3], kernel[1], strides[1], pads[1] + pads[3], ceil_mode))
      throw_bad_shape(spec, "output shape " + y.to_string() + " does not match input " + x.to_string() +
                                " and the pooling attributes");

    params_.kind = kind;
    params_.batch = x[0];
    params_.channels = x[1];
    params_.in_h = x[2];
    params_.in_w = x[3];
    params_.out_h = y[2];
    params_.out_w = y[3];
    params_.kernel_h = kernel[0];
    params_.kernel_w = kernel[1];
    params_.stride_h = strides[0];
    params_.stride_w = strides[1];
    params_.pad_top = pads[0];
    params_.pad_left = pads[1];
    params_.pad_bottom = pads[2];
    params_.pad_right = pads[3];
    params_.count_include_pad = attrs.get_int("count_include_pad", 0) != 0;
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*,
              CudaStream& stream) override {
    kernels::launch_pool2d(inputs[0], outputs[0], dtype_, params_, stream.get());
  }

 private:
  DType dtype_;
  kernels::Pool2dParams params_;
};

class GlobalAveragePoolKernel final : public CudaOpKernel {
 public:
  explicit GlobalAveragePoolKernel(const KernelSpec& spec) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {})) {
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() < 3) throw_bad_shape(spec, "input must be [N, C, spatial...]");
    std::vector<std::int64_t> out_dims(x.rank(), 1);
    out_dims[0] = x[0];
    out_dims[1] = x[1];
    require_output_shape(spec, 0, Shape(out_dims));
    rows_ = x[0] * x[1];
    cols_ = product(x, 2, x.rank());
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*,
              CudaStream& stream) override {
    kernels::launch_global_average_pool(inputs[0], outputs[0], dtype_, rows_, cols_, stream.get());
  }

 private:
  DType dtype_;
  std::int64_t rows_ = 0, cols_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_pool_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 2);
  const std::string& op = spec.node->op_type;
  // storage_order only shapes the Indices output, which is not supported, so it is ignored.
  if (op == "MaxPool") return std::make_unique<Pool2dKernel>(spec, kernels::PoolKind::max);
  if (op == "AveragePool") return std::make_unique<Pool2dKernel>(spec, kernels::PoolKind::average);
  throw_unsupported(spec, "not a pooling op");
}

std::unique_ptr<OpKernel> create_global_average_pool_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 1);
  return std::make_unique<GlobalAveragePoolKernel>(spec);
}

}  // namespace loom::backend::cuda
