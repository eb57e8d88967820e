// Reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceSumSquare, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp) and ArgMax / ArgMin.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_reduce_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_arg_reduce_kernel(const KernelSpec& spec);  // ArgMax, ArgMin

}  // namespace loom::backend::cpu
