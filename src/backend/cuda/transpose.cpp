// Transpose: a strided copy whose source strides are the input's, permuted.
#include "strided_copy.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/strided_layout.hpp"
#include "graph/ops/shape_geometry.hpp"

namespace loom::backend::cuda {
namespace {

class TransposeKernel final : public CudaOpKernel {
 public:
  explicit TransposeKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    const TensorDesc& x = spec.inputs[0];
    const std::size_t rank = x.shape.rank();
    const std::vector<std::int64_t> perm =
        parse_for_node(spec, [&] { return graph::transpose_perm(spec.node->attrs, rank); });
    const std::vector<std::int64_t> in_strides = contiguous_strides(x.shape.dims());
    std::vector<std::int64_t> out_dims(rank), src_strides(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t p = perm[d];
      out_dims[d] = x.shape[p];
      src_strides[d] = in_strides[p];
    }
    require_output_shape(spec, 0, Shape(out_dims));
    if (spec.outputs[0].dtype != x.dtype) throw_unsupported(spec, "output dtype differs from the input's");
    element_bytes_ = dtype_size(x.dtype);
    std::optional<kernels::StridedCopyLayout> layout =
        make_copy_layout(out_dims, src_strides, contiguous_strides(out_dims));
    if (!layout) throw_unsupported(spec, "a permutation of more than 8 dims that cannot be merged");
    layout_ = *layout;
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    // After merging, an identity permutation is one contiguous run: a plain copy is faster.
    if (layout_.rank <= 1)
      stream.copy_on_device(outputs[0], inputs[0], (layout_.rank == 0 ? 1 : layout_.dims[0]) * element_bytes_);
    else
      kernels::launch_strided_copy(inputs[0], outputs[0], element_bytes_, layout_, stream.get());
  }

 private:
  std::size_t element_bytes_ = 0;
  kernels::StridedCopyLayout layout_;
};

}  // namespace

std::unique_ptr<OpKernel> create_transpose_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 1, 1, 1);
  return std::make_unique<TransposeKernel>(spec);
}

}  // namespace loom::backend::cuda
