// Launcher for Range: y[i] = start + i * delta, with start and delta read from device scalars so
// the op needs no host values.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

// dtype is f32, i64 or i32; start and delta point at one element of it on the device.
void launch_range(const void* start, const void* delta, DType dtype, void* y, std::int64_t count, cudaStream_t stream);

}  // namespace loom::kernels
