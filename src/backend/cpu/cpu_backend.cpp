// The CPU backend object: memory from the C heap, streams (cpu_stream.hpp) and kernel creation
// through the op registry (kernel_registry.hpp), each kernel wrapped to run in its stream's order.
#include "backend/cpu/cpu_backend.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "backend/cpu/cpu_stream.hpp"
#include "backend/cpu/fusion.hpp"
#include "backend/cpu/kernel_registry.hpp"
#include "backend/cpu/parallel.hpp"
#include "backend/open_backend.hpp"

namespace loom::backend {
namespace cpu {
namespace {

constexpr std::size_t kAlignment = 256;

void* aligned_allocation(std::size_t bytes, const char* what) {
  // aligned_alloc wants a size that is a multiple of the alignment, and a zero-byte request
  // should still give a pointer the caller can free.
  const std::size_t blocks = bytes / kAlignment + (bytes % kAlignment != 0 || bytes == 0 ? 1 : 0);
  void* ptr = blocks > SIZE_MAX / kAlignment ? nullptr : std::aligned_alloc(kAlignment, blocks * kAlignment);
  if (!ptr)
    throw Error(ErrorCode::out_of_memory,
                std::string("cpu backend: ") + what + " of " + std::to_string(bytes) + " bytes failed");
  return ptr;
}

// "model name" from /proc/cpuinfo, so traces say which CPU ran; "cpu" where it is unavailable.
std::string read_cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    if (start == std::string::npos) break;
    return line.substr(start);
  }
  return "cpu";
}

float load_as_float(const void* src, DType dtype, std::size_t i) {
  switch (dtype) {
    case DType::f32:
      return static_cast<const float*>(src)[i];
    case DType::f16:
      return f16_to_float(static_cast<const f16_t*>(src)[i]);
    case DType::bf16:
      return bf16_to_float(static_cast<const bf16_t*>(src)[i]);
    default:
      return 0.0f;  // excluded by the caller's check
  }
}

void store_from_float(void* dst, DType dtype, std::size_t i, float value) {
  switch (dtype) {
    case DType::f32:
      static_cast<float*>(dst)[i] = value;
      break;
    case DType::f16:
      static_cast<f16_t*>(dst)[i] = float_to_f16(value);
      break;
    case DType::bf16:
      static_cast<bf16_t*>(dst)[i] = float_to_bf16(value);
      break;
    default:
      break;  // excluded by the caller's check
  }
}

}  // namespace

CpuBackend::CpuBackend(std::string name, const std::string& role)
    : name_(std::move(name)),
      device_name_(role.empty() ? read_cpu_model_name() : role + ": " + read_cpu_model_name()),
      threads_(static_cast<std::size_t>(cores_available())) {}

void CpuBackend::set_host_threading(const HostThreading& threading) {
  threads_ = threading.threads > 0 ? threading.threads : static_cast<std::size_t>(cores_available());
  stream_workers_ = threading.stream_workers;
}

Capabilities CpuBackend::capabilities() const noexcept {
  Capabilities c;
  c.synchronous_launches = !stream_workers_;
  return c;
}

// Rough roofline figures for one core of a recent x86 server CPU running this backend's
// single-threaded kernels (the packed GEMM reaches 30-50 GFLOP/s with AVX2); they only rank
// steps as compute- or memory-bound, they are not measurements.
double CpuBackend::peak_flops(DType dtype) const { return dtype == DType::f32 ? 50e9 : 5e9; }
double CpuBackend::peak_bandwidth() const { return 20e9; }
std::size_t CpuBackend::onchip_bytes() const { return std::size_t{32} << 20; }

std::unique_ptr<OpKernel> CpuBackend::create_kernel(const KernelSpec& spec) {
  if (!spec.node) throw Error(ErrorCode::internal, "cpu backend: create_kernel without a node");
  const KernelFactory factory = kernel_registry().find(spec.node->op_type);
  if (!factory) throw_unsupported(spec, "op type is not implemented by the CPU backend");
  // A kernel that makes its primitives at creation makes them for the count its runs will have.
  const KernelThreadsScope run_threads(static_cast<int>(threads_));
  if (spec.backend == this) return std::make_unique<StreamOrderedKernel>(spec, factory(spec));
  KernelSpec own = spec;  // kernels running subgraphs create their body's kernels through it
  own.backend = this;
  return std::make_unique<StreamOrderedKernel>(own, factory(own));
}

std::optional<FusedKernel> CpuBackend::create_fused_kernel(const FusionCandidate& candidate) {
  const KernelThreadsScope run_threads(static_cast<int>(threads_));
  return cpu::create_fused_kernel(candidate);
}

std::unique_ptr<Stream> CpuBackend::create_stream(int) {
  return std::make_unique<CpuStream>(threads_, stream_workers_);
}

void* CpuBackend::allocate(std::size_t bytes) { return aligned_allocation(bytes, "allocation"); }
void CpuBackend::deallocate(void* ptr) noexcept { std::free(ptr); }
void* CpuBackend::allocate_host(std::size_t bytes) { return aligned_allocation(bytes, "host allocation"); }
void CpuBackend::deallocate_host(void* ptr) noexcept { std::free(ptr); }

void CpuBackend::convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t count,
                         Stream& stream) {
  const auto convertible = [](DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; };
  if (!convertible(src_dtype) || !convertible(dst_dtype))
    throw Error(ErrorCode::unsupported, "cpu backend: cannot convert " + std::string(dtype_name(src_dtype)) + " to " +
                                            std::string(dtype_name(dst_dtype)) + " (only f32, f16 and bf16)");
  if (count == 0) return;
  const auto run = [=] {
    if (src_dtype == dst_dtype) {
      if (dst != src) std::memmove(dst, src, count * dtype_size(src_dtype));
      return;
    }
    for (std::size_t i = 0; i < count; ++i) store_from_float(dst, dst_dtype, i, load_as_float(src, src_dtype, i));
  };
  // Device work like any other: in the stream's order.
  if (auto* cpu = dynamic_cast<CpuStream*>(&stream))
    cpu->execute(run);
  else
    run();
}

}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }

namespace {

int cpu_device_count() noexcept { return 1; }
std::unique_ptr<Backend> open_cpu(int) { return make_cpu_backend(); }
// Always there, and the last choice of "auto".
[[maybe_unused]] const bool cpu_registered = register_backend({"cpu", 0, cpu_device_count, open_cpu});

// "cpu:accel": the same kernels in a backend instance of its own, so that a test or a debug
// session (ExecutorOptions::debug = compare) has a second device whose memory is not the reference
// CPU backend's. Below "cpu" in preference: "auto" never picks it.
std::unique_ptr<Backend> open_cpu_accel(int) {
  return std::make_unique<cpu::CpuBackend>("cpu:accel", "CPU stand-in for an accelerator (test and debug device)");
}
[[maybe_unused]] const bool cpu_accel_registered =
    register_backend({"cpu:accel", -1, cpu_device_count, open_cpu_accel});

}  // namespace

}  // namespace loom::backend
