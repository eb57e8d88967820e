// Move-only owners for CUDA runtime, cuBLAS and cuDNN handles, and a scope guard for the current
// device. Every CUDA object the backend creates lives in one of these, so no error path leaks one.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

#include "backend/cuda/cuda_check.hpp"

namespace loom::backend::cuda {

// Runs `release`, a call that synchronises the device (cudaFree, cudaFreeHost, cublasDestroy,
// cudnnDestroy), outside every graph capture in flight on `device` (the current device when
// omitted): at once when none is, else when the last one ends (backend/release_gate.hpp), with
// `device` current either way. Never throws. Defined in cuda_backend.cpp.
void release_outside_captures(int device, std::function<void()> release) noexcept;
void release_outside_captures(std::function<void()> release) noexcept;

// Owns one handle; Traits names its type and how to destroy it (logging, never throwing).
template <class Traits>
class UniqueHandle {
 public:
  using handle_type = typename Traits::handle_type;

  UniqueHandle() noexcept = default;
  explicit UniqueHandle(handle_type handle) noexcept : handle_(handle) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, handle_type{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, handle_type{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  handle_type get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != handle_type{}; }
  void reset() noexcept {
    if (handle_ != handle_type{}) Traits::destroy(handle_);
    handle_ = handle_type{};
  }

 private:
  handle_type handle_{};
};

struct StreamTraits {
  using handle_type = cudaStream_t;
  static void destroy(cudaStream_t h) noexcept { LOOM_CUDA_CHECK_NOTHROW(cudaStreamDestroy(h)); }
};
struct EventTraits {
  using handle_type = cudaEvent_t;
  static void destroy(cudaEvent_t h) noexcept { LOOM_CUDA_CHECK_NOTHROW(cudaEventDestroy(h)); }
};
struct DeviceMemoryTraits {
  using handle_type = void*;
  static void destroy(void* h) noexcept {
    release_outside_captures([h] { LOOM_CUDA_CHECK_NOTHROW(cudaFree(h)); });
  }
};
struct GraphTraits {
  using handle_type = cudaGraph_t;
  static void destroy(cudaGraph_t h) noexcept { LOOM_CUDA_CHECK_NOTHROW(cudaGraphDestroy(h)); }
};
// An instance still running when destroyed is freed by the driver once it completes.
struct GraphExecTraits {
  using handle_type = cudaGraphExec_t;
  static void destroy(cudaGraphExec_t h) noexcept { LOOM_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(h)); }
};
struct CublasTraits {
  using handle_type = cublasHandle_t;
  static void destroy(cublasHandle_t h) noexcept {
    release_outside_captures([h] { LOOM_CUBLAS_CHECK_NOTHROW(cublasDestroy(h)); });
  }
};
struct CublasLtTraits {
  using handle_type = cublasLtHandle_t;
  static void destroy(cublasLtHandle_t h) noexcept {
    release_outside_captures([h] { LOOM_CUBLAS_CHECK_NOTHROW(cublasLtDestroy(h)); });
  }
};
struct CudnnTraits {
  using handle_type = cudnnHandle_t;
  static void destroy(cudnnHandle_t h) noexcept {
    release_outside_captures([h] { LOOM_CUDNN_CHECK_NOTHROW(cudnnDestroy(h)); });
  }
};
struct CudnnTensorDescTraits {
  using handle_type = cudnnTensorDescriptor_t;
  static void destroy(cudnnTensorDescriptor_t h) noexcept { LOOM_CUDNN_CHECK_NOTHROW(cudnnDestroyTensorDescriptor(h)); }
};
struct CudnnFilterDescTraits {
  using handle_type = cudnnFilterDescriptor_t;
  static void destroy(cudnnFilterDescriptor_t h) noexcept { LOOM_CUDNN_CHECK_NOTHROW(cudnnDestroyFilterDescriptor(h)); }
};
struct CudnnConvDescTraits {
  using handle_type = cudnnConvolutionDescriptor_t;
  static void destroy(cudnnConvolutionDescriptor_t h) noexcept {
    LOOM_CUDNN_CHECK_NOTHROW(cudnnDestroyConvolutionDescriptor(h));
  }
};

using StreamHandle = UniqueHandle<StreamTraits>;
using EventHandle = UniqueHandle<EventTraits>;
using DeviceBuffer = UniqueHandle<DeviceMemoryTraits>;
using GraphHandle = UniqueHandle<GraphTraits>;
using GraphExecHandle = UniqueHandle<GraphExecTraits>;
using CublasHandle = UniqueHandle<CublasTraits>;
using CublasLtHandle = UniqueHandle<CublasLtTraits>;
using CudnnHandle = UniqueHandle<CudnnTraits>;
using CudnnTensorDesc = UniqueHandle<CudnnTensorDescTraits>;
using CudnnFilterDesc = UniqueHandle<CudnnFilterDescTraits>;
using CudnnConvDesc = UniqueHandle<CudnnConvDescTraits>;

// Factories: each creates on the current device and throws Error(backend) on failure.
inline StreamHandle create_stream_handle(unsigned flags, int priority) {
  cudaStream_t stream = nullptr;
  LOOM_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, flags, priority));
  return StreamHandle(stream);
}
inline EventHandle create_event_handle(unsigned flags) {
  cudaEvent_t event = nullptr;
  LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&event, flags));
  return EventHandle(event);
}
inline CublasHandle create_cublas_handle() {
  cublasHandle_t handle = nullptr;
  LOOM_CUBLAS_CHECK(cublasCreate(&handle));
  return CublasHandle(handle);
}
inline CublasLtHandle create_cublas_lt_handle() {
  cublasLtHandle_t handle = nullptr;
  LOOM_CUBLAS_CHECK(cublasLtCreate(&handle));
  return CublasLtHandle(handle);
}
inline CudnnHandle create_cudnn_handle() {
  cudnnHandle_t handle = nullptr;
  LOOM_CUDNN_CHECK(cudnnCreate(&handle));
  return CudnnHandle(handle);
}
inline CudnnTensorDesc create_tensor_desc() {
  cudnnTensorDescriptor_t desc = nullptr;
  LOOM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc));
  return CudnnTensorDesc(desc);
}
inline CudnnFilterDesc create_filter_desc() {
  cudnnFilterDescriptor_t desc = nullptr;
  LOOM_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc));
  return CudnnFilterDesc(desc);
}
inline CudnnConvDesc create_conv_desc() {
  cudnnConvolutionDescriptor_t desc = nullptr;
  LOOM_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc));
  return CudnnConvDesc(desc);
}

// Makes `device` current for the guard's scope and restores the previous device after. Executor
// threads share one backend, and the CUDA current device is per host thread, so every entry point
// that creates or launches work opens one of these.
class DeviceGuard {
 public:
  struct NoThrow {};

  explicit DeviceGuard(int device) {
    LOOM_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) LOOM_CUDA_CHECK(cudaSetDevice(device));
    switched_ = previous_ != device;
  }
  // For destructors: a failure is logged and the guard then does nothing.
  DeviceGuard(int device, NoThrow) noexcept {
    if (!LOOM_CUDA_CHECK_NOTHROW(cudaGetDevice(&previous_))) return;
    if (previous_ != device) switched_ = LOOM_CUDA_CHECK_NOTHROW(cudaSetDevice(device));
  }
  ~DeviceGuard() {
    if (switched_) LOOM_CUDA_CHECK_NOTHROW(cudaSetDevice(previous_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace loom::backend::cuda
