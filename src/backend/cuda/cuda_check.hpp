// Status checks for the CUDA runtime, cuBLAS and cuDNN: one macro per status type. A failed call
// throws Error(backend) naming the call, the file:line and the library's own error text; the
// _NOTHROW variants log instead, for destructors and other places that must not throw.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace loom::backend::cuda {

// Formatting happens out of line so that the check at each call site stays a compare and a branch.
[[noreturn]] void throw_status(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_status(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_status(cudnnStatus_t status, const char* call, const char* file, int line);
void log_status(cudaError_t status, const char* call, const char* file, int line) noexcept;
void log_status(cublasStatus_t status, const char* call, const char* file, int line) noexcept;
void log_status(cudnnStatus_t status, const char* call, const char* file, int line) noexcept;

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) [[unlikely]]
    throw_status(status, call, file, line);
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw_status(status, call, file, line);
}
inline void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) [[unlikely]]
    throw_status(status, call, file, line);
}

// Returns true when the call succeeded; otherwise logs it and returns false.
inline bool log_cuda(cudaError_t status, const char* call, const char* file, int line) noexcept {
  if (status == cudaSuccess) return true;
  log_status(status, call, file, line);
  return false;
}
inline bool log_cublas(cublasStatus_t status, const char* call, const char* file, int line) noexcept {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  log_status(status, call, file, line);
  return false;
}
inline bool log_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) noexcept {
  if (status == CUDNN_STATUS_SUCCESS) return true;
  log_status(status, call, file, line);
  return false;
}

}  // namespace loom::backend::cuda

// The macros only add the call's text and location. Each function takes exactly its own status
// type (the enums do not convert into each other), so a mismatched macro does not compile.
#define LOOM_CUDA_CHECK(call) ::loom::backend::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define LOOM_CUBLAS_CHECK(call) ::loom::backend::cuda::check_cublas((call), #call, __FILE__, __LINE__)
#define LOOM_CUDNN_CHECK(call) ::loom::backend::cuda::check_cudnn((call), #call, __FILE__, __LINE__)

// Evaluate to true on success; on failure log and evaluate to false. For destructors.
#define LOOM_CUDA_CHECK_NOTHROW(call) ::loom::backend::cuda::log_cuda((call), #call, __FILE__, __LINE__)
#define LOOM_CUBLAS_CHECK_NOTHROW(call) ::loom::backend::cuda::log_cublas((call), #call, __FILE__, __LINE__)
#define LOOM_CUDNN_CHECK_NOTHROW(call) ::loom::backend::cuda::log_cudnn((call), #call, __FILE__, __LINE__)
