// Concat: each input is a strided copy into its slice of the output (one launch per input; a
// single kernel over all inputs would save launches when there are many small ones).
#include "strided_copy.cuh"

#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/strided_layout.hpp"

namespace loom::backend::cuda {
namespace {

class ConcatKernel final : public CudaOpKernel {
 public:
  explicit ConcatKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    const TensorDesc& first = spec.inputs[0];
    const std::size_t rank = first.shape.rank();
    if (rank == 0) throw_bad_shape(spec, "inputs must have rank >= 1");
    if (!spec.node->attrs.has("axis")) throw_bad_shape(spec, "the axis attribute is required");
    const std::size_t axis = normalize_axis(spec, spec.node->attrs.get_int("axis", 0), rank);
    element_bytes_ = dtype_size(first.dtype);

    std::vector<std::int64_t> out_dims = first.shape.dims();
    out_dims[axis] = 0;
    for (const TensorDesc& input : spec.inputs) {
      if (!input.present) throw_bad_shape(spec, "an input is absent");
      if (input.dtype != first.dtype) throw_unsupported(spec, "inputs of different dtypes");
      if (input.shape.rank() != rank) throw_bad_shape(spec, "inputs of different ranks");
      for (std::size_t d = 0; d < rank; ++d)
        if (d != axis && input.shape[d] != first.shape[d])
          throw_bad_shape(spec, input.shape.to_string() + " does not concatenate with " + first.shape.to_string());
      out_dims[axis] += input.shape[axis];
    }
    require_output_shape(spec, 0, Shape(out_dims));
    if (spec.outputs[0].dtype != first.dtype) throw_unsupported(spec, "output dtype differs from the inputs'");

    const std::vector<std::int64_t> out_strides = contiguous_strides(out_dims);
    std::int64_t offset = 0;
    for (const TensorDesc& input : spec.inputs) {
      std::optional<kernels::StridedCopyLayout> layout =
          make_copy_layout(input.shape.dims(), contiguous_strides(input.shape.dims()), out_strides);
      if (!layout) throw_unsupported(spec, "more than 8 dims that cannot be merged");
      pieces_.push_back({*layout, offset * out_strides[axis], input.shape.numel() == 0});
      offset += input.shape[axis];
    }
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    auto* out = static_cast<std::byte*>(outputs[0]);
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      const Piece& piece = pieces_[i];
      if (piece.empty) continue;
      void* dst = out + piece.dst_offset * static_cast<std::int64_t>(element_bytes_);
      kernels::launch_strided_copy(inputs[i], dst, element_bytes_, piece.layout, stream.get());
    }
  }

 private:
  struct Piece {
    kernels::StridedCopyLayout layout;
    std::int64_t dst_offset;  // elements from the output's start to this input's slice
    bool empty;
  };
  std::size_t element_bytes_ = 0;
  std::vector<Piece> pieces_;
};

}  // namespace

std::unique_ptr<OpKernel> create_concat_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, static_cast<std::size_t>(-1), 1, 1);
  return std::make_unique<ConcatKernel>(spec);
}

}  // namespace loom::backend::cuda
