// The CPU backend: host memory, streams (cpu_stream.hpp: each call run to completion, or queued for
// a worker thread of the stream's own), kernels that split large loops over a configurable number
// of threads (parallel.hpp), and the reference kernel of every op in docs/onnx-support.md.
// Registered twice: "cpu", and "cpu:accel", a separate instance standing in for an accelerator in
// tests and debugging (its own memory and streams).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

class CpuBackend final : public Backend {
 public:
  // `name` as device strings spell it ("cpu", "cpu:accel"); `role` goes before the CPU's model
  // name in device_name() (empty for the plain CPU backend).
  explicit CpuBackend(std::string name = "cpu", const std::string& role = "");

  void set_host_threading(const HostThreading& threading) override;
  std::size_t host_threads() const noexcept override { return threads_; }
  // Each call runs to completion on the calling thread unless stream workers are on; f32 only;
  // no graphs.
  Capabilities capabilities() const noexcept override;
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
  std::size_t threads_;  // HostThreading::threads resolved
  bool stream_workers_ = false;
};

}  // namespace loom::backend::cpu
