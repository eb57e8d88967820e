// TopK on the CUDA backend: K is read from its constant input when the kernel is created; the
// kernel always returns the elements sorted (allowed for sorted=0 too).
#include "topk.cuh"

#include <string>

#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/reduce_spec.hpp"

namespace loom::backend::cuda {
namespace {

class TopKKernel final : public CudaOpKernel {
 public:
  explicit TopKKernel(const KernelSpec& spec) : CudaOpKernel(spec), topk_(parse_topk_spec(spec)) {
    dtype_ = spec.inputs[0].dtype;
    if (dtype_ != DType::i64 && dtype_ != DType::i32 && !is_compute_float(dtype_))
      throw_unsupported(spec, "dtype " + std::string(dtype_name(dtype_)) + " (f32, f16, i64 or i32)");
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_topk(inputs[0], outputs[0], static_cast<std::int64_t*>(outputs[1]), dtype_, topk_.view.outer,
                         topk_.view.length, topk_.view.inner, topk_.k, topk_.largest, stream.get());
  }

 private:
  TopKSpec topk_;
  DType dtype_ = DType::f32;
};

}  // namespace

std::unique_ptr<OpKernel> create_topk_kernel(const KernelSpec& spec, CudaBackend&) {
  return std::make_unique<TopKKernel>(spec);
}

}  // namespace loom::backend::cuda
