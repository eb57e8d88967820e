// Out-of-line formatting for the status checks in cuda_check.hpp.
#include "backend/cuda/cuda_check.hpp"

#include <cstdio>
#include <string>

#include "loom/error.hpp"

namespace loom::backend::cuda {
namespace {

std::string describe(const char* library, const char* status_name, const char* status_text, const char* call,
                     const char* file, int line) {
  std::string message =
      std::string(library) + " call `" + call + "` failed at " + file + ":" + std::to_string(line) + ": " + status_name;
  if (status_text && *status_text) message += std::string(" (") + status_text + ")";
  return message;
}

void log_line(const std::string& message) noexcept {
  // stderr is the one sink every host has; callers here are destructors that must not throw.
  std::fprintf(stderr, "loom: %s\n", message.c_str());
}

}  // namespace

void throw_status(cudaError_t status, const char* call, const char* file, int line) {
  throw Error(ErrorCode::backend,
              describe("CUDA", cudaGetErrorName(status), cudaGetErrorString(status), call, file, line));
}

void throw_status(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(ErrorCode::backend,
              describe("cuBLAS", cublasGetStatusName(status), cublasGetStatusString(status), call, file, line));
}

void throw_status(cudnnStatus_t status, const char* call, const char* file, int line) {
  throw Error(ErrorCode::backend, describe("cuDNN", cudnnGetErrorString(status), nullptr, call, file, line));
}

void log_status(cudaError_t status, const char* call, const char* file, int line) noexcept {
  try {
    log_line(describe("CUDA", cudaGetErrorName(status), cudaGetErrorString(status), call, file, line));
  } catch (...) {
    std::fprintf(stderr, "loom: CUDA call failed at %s:%d\n", file, line);
  }
}

void log_status(cublasStatus_t status, const char* call, const char* file, int line) noexcept {
  try {
    log_line(describe("cuBLAS", cublasGetStatusName(status), cublasGetStatusString(status), call, file, line));
  } catch (...) {
    std::fprintf(stderr, "loom: cuBLAS call failed at %s:%d\n", file, line);
  }
}

void log_status(cudnnStatus_t status, const char* call, const char* file, int line) noexcept {
  try {
    log_line(describe("cuDNN", cudnnGetErrorString(status), nullptr, call, file, line));
  } catch (...) {
    std::fprintf(stderr, "loom: cuDNN call failed at %s:%d\n", file, line);
  }
}

}  // namespace loom::backend::cuda
