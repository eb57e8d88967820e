// CUDA interference probes (Backend::start_probe): compute- or bandwidth-saturating kernels,
// relaunched back to back on their own least-urgent stream until Probe::stop().
#pragma once

#include <cstddef>
#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cuda {

// What a probe needs to know about the device it loads.
struct ProbeTarget {
  int device = 0;
  int stream_priority = 0;  // CUDA's number for the least urgent priority
  int sm_count = 1;
  std::size_t l2_bytes = 0;
};

// Starts the probe and returns once it loads the device. Throws Error(backend) when CUDA fails or
// the kernels do not run within seconds, Error(out_of_memory) for its buffer. Its stop() rethrows
// an error the relaunching thread met; its destructor stops it without throwing.
std::unique_ptr<Probe> start_probe(ProbeKind kind, const ProbeTarget& target);

}  // namespace loom::backend::cuda
