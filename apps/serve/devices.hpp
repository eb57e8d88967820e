// Which executors loom-serve opens and which one a model goes to (docs/serve.md, "Devices"): the
// rules alone, without executors, so that they read (and are tested) in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::serve {

// One device string per executor for ServiceOptions::device: "auto" = "cuda:0".."cuda:N-1" with
// `gpu_count` GPUs, else "cpu"; "cuda" = every GPU (Error(invalid_argument) with none); anything
// else ("cpu", "cuda:N", "cpu:accel") is one executor, whose constructor checks the string.
std::vector<std::string> executor_devices(const std::string& device, int gpu_count);

// The executor a model is loaded on: `configured` (config.json "device") when given, else the one
// with the fewest weight bytes loaded so far, the lowest index on a tie. nullopt: `configured`
// is out of range.
std::optional<std::size_t> choose_device(const std::vector<std::uint64_t>& weight_bytes, std::optional<int> configured);

// The metrics port of executor `index` when ServiceOptions::executor.metrics_port is `base`:
// base + index (0 stays off).
int executor_metrics_port(int base, std::size_t index);

}  // namespace loom::serve
