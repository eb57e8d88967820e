// Launchers for the interference probes loom-profile runs beside a Step: one loads the SMs' FP32
// pipes, the other the device-memory bandwidth. Each launch is one short wave of blocks (tens of
// microseconds); the host relaunches them back to back for as long as the probe runs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace loom::kernels {

// Every block runs `iterations` rounds of eight independent FMA chains per thread. `sink` holds
// one float per block (written only to keep the work from being optimised away).
void launch_compute_probe(float* sink, int blocks, int threads, int iterations, cudaStream_t stream);

// Float4s one launch of launch_memory_probe reads (and writes).
std::size_t memory_probe_elements(int blocks, int threads, int iterations);

// Copies memory_probe_elements() float4s from the first half of `buffer` (`bytes`) to the second,
// starting at float4 `start` of the half and wrapping at its end. The half must hold more than
// four times blocks x threads float4s.
void launch_memory_probe(void* buffer, std::size_t bytes, std::size_t start, int blocks, int threads, int iterations,
                         cudaStream_t stream);

}  // namespace loom::kernels
