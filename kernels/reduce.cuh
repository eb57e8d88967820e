// Launcher for the Reduce* ops over an input viewed as merged dims, each one reduced or kept.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

enum class ReduceOp { sum, mean, max, min, prod, sum_square, l1, l2, log_sum, log_sum_exp };

constexpr int kMaxReduceDims = 8;

// The input as row-major dims with adjacent dims of the same kind merged and size-1 dims dropped
// (so reduced and kept alternate); rank 0 for a one-element tensor. The output holds the kept
// dims in order.
struct ReduceShape {
  int rank = 0;
  std::int64_t dims[kMaxReduceDims] = {};
  bool reduced[kMaxReduceDims] = {};
};

// y = op over the reduced dims of x. dtype f32 or f16 (accumulated in f32) for every op; i64 or
// i32 (accumulated in int64) for sum, mean, max, min and prod. output_count, reduce_count: kept
// and reduced element counts.
void launch_reduce(const void* x, void* y, DType dtype, ReduceOp op, const ReduceShape& shape,
                   std::int64_t output_count, std::int64_t reduce_count, cudaStream_t stream);

}  // namespace loom::kernels
