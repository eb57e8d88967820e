// Resize on CUDA: the shared plan's per-axis tap tables (indices and weights, computed on the
// host in double) are uploaded once at creation; the kernel only gathers and weighs.
#include "resize.cuh"

#include <vector>

#include "backend/conv_spec.hpp"
#include "backend/cuda/conv_kernels.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

DeviceBuffer upload(const void* data, std::size_t bytes) {
  void* ptr = nullptr;
  LOOM_CUDA_CHECK(cudaMalloc(&ptr, std::max<std::size_t>(bytes, 1)));
  DeviceBuffer buffer(ptr);
  if (bytes > 0) LOOM_CUDA_CHECK(cudaMemcpy(ptr, data, bytes, cudaMemcpyHostToDevice));
  return buffer;
}

class ResizeKernel final : public CudaOpKernel {
 public:
  explicit ResizeKernel(const KernelSpec& spec) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {})) {
    const graph::ResizePlan plan = parse_resize(spec);
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() > static_cast<std::size_t>(kernels::kMaxResizeRank))
      throw_unsupported(spec, "X of rank " + std::to_string(x.rank()) + " (at most 8)");
    std::vector<std::int64_t> index;
    std::vector<float> weight;
    layout_.rank = static_cast<int>(x.rank());
    std::int64_t stride = 1;
    for (std::size_t a = x.rank(); a-- > 0;) {
      layout_.in_stride[a] = stride;
      stride *= x[a];
    }
    for (std::size_t a = 0; a < x.rank(); ++a) {
      layout_.out[a] = plan.output[a];
      layout_.taps[a] = plan.axes[a].taps;
      layout_.offset[a] = static_cast<std::int64_t>(index.size());
      index.insert(index.end(), plan.axes[a].index.begin(), plan.axes[a].index.end());
      weight.insert(weight.end(), plan.axes[a].weight.begin(), plan.axes[a].weight.end());
    }
    index_ = upload(index.data(), index.size() * sizeof(std::int64_t));
    weight_ = upload(weight.data(), weight.size() * sizeof(float));
    layout_.index = static_cast<const std::int64_t*>(index_.get());
    layout_.weight = static_cast<const float*>(weight_.get());
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_resize(inputs[0], outputs[0], dtype_, layout_, stream.get());
  }

 private:
  DType dtype_;
  DeviceBuffer index_, weight_;
  kernels::ResizeLayout layout_;
};

}  // namespace

std::unique_ptr<OpKernel> create_resize_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 1, 4, 1, 1);
  return std::make_unique<ResizeKernel>(spec);
}

}  // namespace loom::backend::cuda
