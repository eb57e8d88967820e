// The backends this build has, each registered by its own files, and the one parser of device
// strings (ExecutorOptions::device, the tools' --device) that opens them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace loom::backend {

// One backend as device strings name it. Registered once, at library load, by the backend's own
// files (backend/cpu/cpu_backend.cpp, backend/cuda/cuda_backend.cpp), so opening a device asks
// the registry instead of naming backends.
struct BackendEntry {
  std::string name;    // "cpu", "cpu:accel", "cuda": the device string's name
  int preference = 0;  // "auto" opens the backend with a device present and the highest preference
  int (*device_count)() noexcept = nullptr;               // devices present now; 0 = none (never throws)
  std::unique_ptr<Backend> (*open)(int index) = nullptr;  // throws Error(backend) when it cannot
};

// Adds `entry`; returns true (for use as a static initializer). A second entry with the same name
// replaces nothing and is ignored.
bool register_backend(BackendEntry entry) noexcept;
// Every registered backend, highest preference first.
std::vector<BackendEntry> registered_backends();

// "auto" (the preferred backend with a device present: CUDA device 0 when there is one, else the
// CPU), "NAME" (device 0) or "NAME:N" for a registered NAME ("cpu", "cuda", "cuda:1"); a registered
// name holding a colon ("cpu:accel") opens that backend's device 0 before NAME:N is tried. Throws
// Error(invalid_argument) for another spelling or an unknown name (naming those there are),
// Error(backend) when the device is absent or cannot be opened.
std::unique_ptr<Backend> open_backend(const std::string& device);

}  // namespace loom::backend
