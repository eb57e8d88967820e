// DFT and STFT on the CPU (opset 17): a direct O(n^2) transform, in double.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// f32 real or complex input; axis, inverse, onesided; dft_length constant when given.
std::unique_ptr<OpKernel> make_dft_kernel(const KernelSpec& spec);
// STFT: f32 real or complex signal, constant frame_step and frame_length, optional window, onesided.
std::unique_ptr<OpKernel> make_stft_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
