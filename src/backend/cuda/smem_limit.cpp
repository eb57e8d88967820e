// Raising a kernel's dynamic shared-memory limit once per device (see smem_limit.hpp).
#include "backend/cuda/smem_limit.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "loom/error.hpp"

namespace loom::backend::cuda {
namespace {

// The limits set so far, by (kernel, device). Process-wide because the CUDA setting it mirrors is.
struct RaisedLimits {
  std::mutex mutex;
  std::map<std::pair<const void*, int>, std::size_t> bytes;
};

RaisedLimits& raised_limits() {
  static RaisedLimits limits;
  return limits;
}

}  // namespace

std::size_t raise_smem_limit(const void* kernel, int device) {
  RaisedLimits& raised = raised_limits();
  // Held across the first raise: a launch of the same kernel on another thread waits here until
  // the attribute has its final value.
  std::lock_guard lock(raised.mutex);
  const std::pair key{kernel, device};
  if (const auto found = raised.bytes.find(key); found != raised.bytes.end()) return found->second;
  DeviceGuard guard(device);
  int optin = 0;
  LOOM_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  LOOM_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  const auto device_max = static_cast<std::size_t>(optin);
  const std::size_t limit = device_max > attributes.sharedSizeBytes ? device_max - attributes.sharedSizeBytes : 0;
  LOOM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(limit)));
  raised.bytes.emplace(key, limit);
  return limit;
}

void require_smem_limit(const void* kernel, std::size_t bytes, const char* what) {
  if (bytes == 0) return;
  int device = 0;
  LOOM_CUDA_CHECK(cudaGetDevice(&device));
  const std::size_t limit = raise_smem_limit(kernel, device);
  if (bytes > limit)
    throw Error(ErrorCode::unsupported, std::string(what) + ": " + std::to_string(bytes) +
                                            " bytes of dynamic shared memory per block; device " +
                                            std::to_string(device) + " allows at most " + std::to_string(limit));
}

}  // namespace loom::backend::cuda
