// The debug mode on the command line, shared by loom-run and loom-bench: the flags (--debug,
// --debug-compare, --debug-tolerance), and what the tools print after a compare run.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "loom/debug.hpp"
#include "loom/executor.hpp"

namespace loom::cli {

struct DebugFlags {
  std::string mode = "off";       // --debug
  bool compare = false;           // --debug-compare: --debug=compare
  std::vector<double> tolerance;  // --debug-tolerance ABS,REL; empty: the compute dtype's default
};

// Adds --debug, --debug-compare and --debug-tolerance to `app`.
void add_debug_flags(CLI::App& app, DebugFlags& flags);
// Sets ExecutorOptions::debug and debug_tolerance; a UsageError for a mode that is not one, a
// tolerance that is not two numbers >= 0, or --debug-compare beside another --debug mode.
void apply_debug_flags(const DebugFlags& flags, ExecutorOptions& options);

// After a run in compare mode: one line per model (format_debug_summary), and for each model that
// diverged the report of its first divergence (format_divergence), on `out`. Returns whether any
// request diverged. Prints nothing and returns false outside compare mode.
bool print_debug_report(std::FILE* out, const DebugReport& report);

// Writes `divergence`'s inputs into `dir` (created if missing) as input_0.pb, input_1.pb, ...
// (TensorProto, named after the model's inputs): the layout loom-run --input-dir reads, so the
// request can be run again. Throws loom::Error when a file cannot be written.
void write_divergence_inputs(const DebugDivergence& divergence, const std::string& dir);

}  // namespace loom::cli
