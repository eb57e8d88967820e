// Opening a backend from a device string, as ExecutorOptions::device and the tools spell it.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace loom::backend {

// "cpu"; "auto" (CUDA device 0 when one is present, else the CPU); "cuda" or "cuda:N". Throws
// Error(invalid_argument) for another spelling, Error(backend) when the CUDA device is absent or
// cannot be opened.
std::unique_ptr<Backend> open_backend(const std::string& device);

}  // namespace loom::backend
