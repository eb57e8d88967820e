// The placement pass on the command line, shared by loom-run and loom-bench: the thresholds, the
// processors, the function library and turning the pass off (docs/placement.md).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "loom/executor.hpp"

namespace loom::cli {

struct PlacementFlags {
  double th1 = 0;                       // --placement-th1: benefit threshold, µs
  std::optional<double> th2;            // --placement-th2: cost threshold, µs; unset: no bound
  std::vector<std::string> processors;  // --placement-processors, preference order
  std::string library = "auto";         // --function-library
  bool off = false;                     // --no-placement
  bool execute = false;                 // --placement-execute
};

// Adds --placement-th1, --placement-th2, --placement-processors, --function-library,
// --no-placement and --placement-execute to `app`.
void add_placement_flags(CLI::App& app, PlacementFlags& flags);
// Sets LoadOptions::placement and ExecutorOptions::function_library.
void apply_placement_flags(const PlacementFlags& flags, LoadOptions& load, ExecutorOptions& executor);

}  // namespace loom::cli
