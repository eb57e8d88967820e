// The CPU backend's kernels on oneDNN (Debian's libdnnl-dev), chosen by measurement
// (docs/cpu-backend.md): Conv (blocked layout inside, weights re-laid once) and MatMul/Gemm (weights
// packed once), each with its fusion epilogue as the library's post-ops. Each factory returns
// nullptr where the library does not take the node (an attribute, shape or post-op it refuses, or
// only a reference implementation of its own): the caller then uses our own kernel. Built with
// LOOM_HAVE_DNNL (CMake option LOOM_ENABLE_DNNL); without it every factory returns nullptr.
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "backend/cpu/epilogue.hpp"

namespace loom::backend::cpu {

#if defined(LOOM_HAVE_DNNL)
std::unique_ptr<OpKernel> make_dnnl_conv_kernel(const KernelSpec& spec, const FusedRun* fused);
std::unique_ptr<OpKernel> make_dnnl_matmul_kernel(const KernelSpec& spec, const FusedRun* fused);
std::unique_ptr<OpKernel> make_dnnl_gemm_kernel(const KernelSpec& spec, const FusedRun* fused);
#else
inline std::unique_ptr<OpKernel> make_dnnl_conv_kernel(const KernelSpec&, const FusedRun*) { return nullptr; }
inline std::unique_ptr<OpKernel> make_dnnl_matmul_kernel(const KernelSpec&, const FusedRun*) { return nullptr; }
inline std::unique_ptr<OpKernel> make_dnnl_gemm_kernel(const KernelSpec&, const FusedRun*) { return nullptr; }
#endif

// Whether this build runs Conv, MatMul and Gemm on oneDNN.
constexpr bool dnnl_available() noexcept {
#if defined(LOOM_HAVE_DNNL)
  return true;
#else
  return false;
#endif
}

}  // namespace loom::backend::cpu
