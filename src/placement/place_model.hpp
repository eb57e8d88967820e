// The placement pass at load (docs/placement.md): which function library, which processors, and
// a loaded model's nodes placed by the rule (rule.hpp) with figures from the library.
#pragma once

#include <string>
#include <vector>

#include "loom/model.hpp"
#include "loom/placement.hpp"

namespace loom::placement {

struct ActiveLibrary {
  std::string source = "built-in defaults";  // the file read, or "built-in defaults"
  FunctionLibrary library = default_function_library();
};

// ExecutorOptions::function_library for the device named `device_name`: "defaults" the built-in
// figures; "auto" find_function_library(device_name), or the defaults when there is none; anything
// else a path. Throws read_function_library()'s Error(invalid_argument) for a file that is named or
// found but cannot be read.
ActiveLibrary resolve_function_library(const std::string& option, const std::string& device_name);

// The processors to place between, in preference order: options.processors when given (each must
// be in `available`, none twice), else `device` first (when the library or the defaults have
// figures for it), then every processor of the library that is in `available`, in the library's
// order, and "cpu" when that leaves none. `available`: the processors this build can open now.
// Throws Error(invalid_argument) naming a processor that is not available and those that are.
std::vector<std::string> choose_processors(const PlacementOptions& options, const std::string& device,
                                           const FunctionLibrary& library, const std::vector<std::string>& available);

// Classifies `model` (optimized: static shapes, shape chains folded), places each node on one of
// `processors` by the rule, and adds the nodes `report` says were folded (on the CPU, at load) and
// removed. Throws Error(invalid_argument) for a threshold that is not a number, or a processor with
// no figures in the library or the defaults, and the errors of infer_shapes().
ModelPlacement place_model(const Model& model, const OptimizeReport& report, const ActiveLibrary& library,
                           const std::vector<std::string>& processors, const PlacementOptions& options);

}  // namespace loom::placement
