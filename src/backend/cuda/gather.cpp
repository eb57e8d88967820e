// Gather along one axis. Indices are read on the device, so out-of-range values cannot raise an
// error per request; the kernel clamps them (docs/onnx-support.md records this CPU/CUDA difference).
#include "gather.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

class GatherKernel final : public CudaOpKernel {
 public:
  explicit GatherKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    const TensorDesc& data = spec.inputs[0];
    const TensorDesc& indices = spec.inputs[1];
    if (data.shape.rank() == 0) throw_bad_shape(spec, "data must have rank >= 1");
    index_dtype_ = indices.dtype;
    if (index_dtype_ != DType::i64 && index_dtype_ != DType::i32)
      throw_unsupported(spec, "indices of dtype " + std::string(dtype_name(index_dtype_)));
    const std::size_t axis = normalize_axis(spec, spec.node->attrs.get_int("axis", 0), data.shape.rank());

    std::vector<std::int64_t> out_dims(data.shape.dims().begin(), data.shape.dims().begin() + axis);
    out_dims.insert(out_dims.end(), indices.shape.dims().begin(), indices.shape.dims().end());
    out_dims.insert(out_dims.end(), data.shape.dims().begin() + axis + 1, data.shape.dims().end());
    require_output_shape(spec, 0, Shape(out_dims));
    if (spec.outputs[0].dtype != data.dtype) throw_unsupported(spec, "output dtype differs from the data's");
    if (data.shape[axis] == 0 && indices.shape.numel() > 0) throw_bad_shape(spec, "gathering from an empty axis");

    element_bytes_ = dtype_size(data.dtype);
    outer_ = product(data.shape, 0, axis);
    axis_ = data.shape[axis];
    inner_ = product(data.shape, axis + 1, data.shape.rank());
    index_count_ = indices.shape.numel();
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_gather(inputs[0], inputs[1], index_dtype_, outputs[0], element_bytes_, outer_, axis_, inner_,
                           index_count_, stream.get());
  }

 private:
  DType index_dtype_ = DType::i64;
  std::size_t element_bytes_ = 0;
  std::int64_t outer_ = 0, axis_ = 0, inner_ = 0, index_count_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_gather_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 2, 2, 1, 1);
  return std::make_unique<GatherKernel>(spec);
}

}  // namespace loom::backend::cuda
