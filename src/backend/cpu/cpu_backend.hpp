// The CPU backend: host memory, streams that run each call to completion, and the reference
// kernel of every op in docs/onnx-support.md. Registered twice: "cpu", and "cpu:accel", a separate
// instance standing in for an accelerator in tests and debugging (its own memory and streams).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

class CpuBackend final : public Backend {
 public:
  // `name` as device strings spell it ("cpu", "cpu:accel"); `role` goes before the CPU's model
  // name in device_name() (empty for the plain CPU backend).
  explicit CpuBackend(std::string name = "cpu", const std::string& role = "");

  // Each call runs to completion on the calling thread; f32 only; no graphs.
  Capabilities capabilities() const noexcept override { return {}; }
  std::string name() const override { return name_; }
  std::string device_name() const override { return device_name_; }
  double peak_flops(DType dtype) const override;
  double peak_bandwidth() const override;
  std::size_t onchip_bytes() const override;

  std::unique_ptr<OpKernel> create_kernel(const KernelSpec& spec) override;
  // A Conv, MatMul or Gemm with the pointwise ops after it (fusion.hpp).
  std::optional<FusedKernel> create_fused_kernel(const FusionCandidate& candidate) override;
  std::unique_ptr<Stream> create_stream(int priority = 0) override;
  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr) noexcept override;
  void* allocate_host(std::size_t bytes) override;
  void deallocate_host(void* ptr) noexcept override;
  void convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t count,
               Stream& stream) override;
  // CPU streams run each call as it is made: there is no launch cost for a graph to save.

 private:
  std::string name_;
  std::string device_name_;
};

}  // namespace loom::backend::cpu
