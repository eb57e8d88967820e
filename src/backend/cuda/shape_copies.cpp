// Slice, Expand and Tile as one strided-copy launch each (the view from backend/shape_spec.hpp:
// negative strides for negative steps, zero strides for broadcast and repeated dims), and Split as
// one strided copy per output.
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/shape_ops.hpp"
#include "backend/cuda/strided_layout.hpp"
#include "backend/shape_spec.hpp"
#include "strided_copy.cuh"

namespace loom::backend::cuda {
namespace {

// The copy layout of a destination read through `dims` and `src_strides`; throws when the merged
// dims are still more than the kernel takes.
kernels::StridedCopyLayout dense_layout(const KernelSpec& spec, const std::vector<std::int64_t>& dims,
                                        const std::vector<std::int64_t>& src_strides,
                                        const std::vector<std::int64_t>& dst_strides) {
  std::optional<kernels::StridedCopyLayout> layout = make_copy_layout(dims, src_strides, dst_strides);
  if (!layout)
    throw_unsupported(spec,
                      "more than " + std::to_string(kernels::kMaxCopyRank) +
                          " dims remain after merging (a Tile repeating more than 4 axes, or a view of rank > 8)");
  return *layout;
}

class StridedViewKernel final : public CudaOpKernel {
 public:
  explicit StridedViewKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    const StridedView view = parse_strided_view(spec);
    element_bytes_ = dtype_size(spec.inputs[0].dtype);
    count_ = spec.outputs[0].shape.numel();
    src_offset_bytes_ = view.src_offset * static_cast<std::int64_t>(element_bytes_);
    // Walking the view row-major fills the output densely, whatever the view's rank.
    layout_ = dense_layout(spec, view.dims, view.src_strides, contiguous_strides(view.dims));
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    if (count_ == 0) return;
    const void* src = static_cast<const std::byte*>(inputs[0]) + src_offset_bytes_;
    if (layout_.rank == 0 || (layout_.rank == 1 && layout_.src_strides[0] == 1))
      stream.copy_on_device(outputs[0], src, static_cast<std::size_t>(count_) * element_bytes_);
    else
      kernels::launch_strided_copy(src, outputs[0], element_bytes_, layout_, stream.get());
  }

 private:
  std::size_t element_bytes_ = 0;
  std::int64_t count_ = 0;
  std::int64_t src_offset_bytes_ = 0;
  kernels::StridedCopyLayout layout_;
};

class SplitKernel final : public CudaOpKernel {
 public:
  explicit SplitKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    const SplitSpec split = parse_split_spec(spec);
    const Shape& in = spec.inputs[0].shape;
    element_bytes_ = dtype_size(spec.inputs[0].dtype);
    const std::vector<std::int64_t> in_strides = contiguous_strides(in.dims());
    std::int64_t offset = 0;  // along the axis
    for (const std::int64_t size : split.sizes) {
      std::vector<std::int64_t> dims = in.dims();
      dims[split.axis] = size;
      Part part;
      part.src_offset = offset * in_strides[split.axis];
      part.count = Shape(dims).numel();
      if (part.count > 0) part.layout = dense_layout(spec, dims, in_strides, contiguous_strides(dims));
      parts_.push_back(part);
      offset += size;
    }
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    const auto* src = static_cast<const std::byte*>(inputs[0]);
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      const Part& part = parts_[i];
      if (!outputs[i] || part.count == 0) continue;
      const void* from = src + part.src_offset * static_cast<std::int64_t>(element_bytes_);
      if (part.layout.rank == 0 || (part.layout.rank == 1 && part.layout.src_strides[0] == 1))  // one run
        stream.copy_on_device(outputs[i], from, static_cast<std::size_t>(part.count) * element_bytes_);
      else
        kernels::launch_strided_copy(from, outputs[i], element_bytes_, part.layout, stream.get());
    }
  }

 private:
  struct Part {
    kernels::StridedCopyLayout layout;
    std::int64_t src_offset = 0;  // elements from the input's start to this part
    std::int64_t count = 0;
  };
  std::size_t element_bytes_ = 0;
  std::vector<Part> parts_;
};

}  // namespace

std::unique_ptr<OpKernel> create_strided_view_kernel(const KernelSpec& spec, CudaBackend&) {
  return std::make_unique<StridedViewKernel>(spec);
}

std::unique_ptr<OpKernel> create_split_kernel(const KernelSpec& spec, CudaBackend&) {
  return std::make_unique<SplitKernel>(spec);
}

}  // namespace loom::backend::cuda
