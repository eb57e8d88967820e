// The generators: Constant and Shape copy a value uploaded once when the kernel is created (so a
// run issues no host-to-device copy); ConstantOfShape fills; Range computes from device scalars.
#include <cstring>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/shape_ops.hpp"
#include "backend/shape_spec.hpp"
#include "fill.cuh"
#include "range.cuh"

namespace loom::backend::cuda {
namespace {

class ValueKernel final : public CudaOpKernel {
 public:
  ValueKernel(const KernelSpec& spec, const Tensor& value) : CudaOpKernel(spec), bytes_(value.bytes()) {
    if (bytes_ == 0) return;
    void* ptr = nullptr;
    LOOM_CUDA_CHECK(cudaMalloc(&ptr, bytes_));
    value_ = DeviceBuffer(ptr);
    LOOM_CUDA_CHECK(cudaMemcpy(ptr, value.data(), bytes_, cudaMemcpyHostToDevice));
  }

 protected:
  void launch(std::span<const void* const>, std::span<void* const> outputs, void*, CudaStream& stream) override {
    stream.copy_on_device(outputs[0], value_.get(), bytes_);
  }

 private:
  std::size_t bytes_;
  DeviceBuffer value_;
};

class FillKernel final : public CudaOpKernel {
 public:
  FillKernel(const KernelSpec& spec, const Tensor& element)
      : CudaOpKernel(spec), element_bytes_(element.bytes()), count_(spec.outputs[0].shape.numel()) {
    std::memcpy(&bits_, element.data(), element_bytes_);  // little-endian: the low bytes
  }

 protected:
  void launch(std::span<const void* const>, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_fill(outputs[0], element_bytes_, bits_, count_, stream.get());
  }

 private:
  std::size_t element_bytes_;
  std::uint64_t bits_ = 0;
  std::int64_t count_;
};

class RangeKernel final : public CudaOpKernel {
 public:
  explicit RangeKernel(const KernelSpec& spec) : CudaOpKernel(spec) {
    check_range(spec);
    dtype_ = spec.outputs[0].dtype;
    count_ = spec.outputs[0].shape[0];
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    kernels::launch_range(inputs[0], inputs[2], dtype_, outputs[0], count_, stream.get());
  }

 private:
  DType dtype_ = DType::f32;
  std::int64_t count_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> create_value_kernel(const KernelSpec& spec, CudaBackend&) {
  const Tensor value = spec.node->op_type == "Shape" ? parse_shape_value(spec) : parse_constant_value(spec);
  return std::make_unique<ValueKernel>(spec, value);
}

std::unique_ptr<OpKernel> create_constant_of_shape_kernel(const KernelSpec& spec, CudaBackend&) {
  return std::make_unique<FillKernel>(spec, parse_fill_value(spec));
}

std::unique_ptr<OpKernel> create_range_kernel(const KernelSpec& spec, CudaBackend&) {
  return std::make_unique<RangeKernel>(spec);
}

}  // namespace loom::backend::cuda
