// The kernels a compiled Step becomes on a GPU, for the simulator's GPU model: one launch per op
// (two or three where the CUDA backend launches more), shaped as the CUDA backend shapes them.
#pragma once

#include <vector>

#include "loom/model_info.hpp"
#include "loom/sim.hpp"

namespace loom::sim {

// The kernel launches of `step` on the CUDA backend, in order, computing in f16 (`f16`) or f32.
// Ops Loom runs itself get the launch configuration of their kernels in kernels/*.cu (block size,
// grid formula and its cap, static shared memory, the registers ptxas reports); MatMul, Gemm and
// Conv, which run on cuBLAS and cuDNN, get an estimate from the problem size (kernel_estimate.cpp
// says which). StepWork holds totals only, so the sizes are inferred: every launching op of a Step
// writes the same number of elements (a Step is an anchor op and the pointwise ops applied to its
// output); the Step's FLOPs go to its first launching op but 1 per element of each later one; its
// bytes are split so that each kernel reads and writes its own tensors. The kernels' flops and
// bytes add up to the Step's exactly. View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity)
// launch nothing: a Step of views only gives no kernels.
//
// The persistent recurrent loop (LSTM, GRU) is cooperative and its grid depends on the GPU (one
// block per SM, kernels/decode_recurrent.cu): it is planned for the smallest shipped GPU (L4, 58
// SMs), so that all its blocks are co-resident on every shipped one.
std::vector<KernelSpec> estimate_kernels(const StepWork& step, bool f16);

}  // namespace loom::sim
