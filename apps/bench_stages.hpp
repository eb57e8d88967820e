// loom-bench's host-stage flags and report: threads per stage (fixed or re-balanced), a dialled
// pre-process cost (to see the re-balancing work), and the table of every pipeline stage's figures.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "loom/executor.hpp"

namespace loom::bench {

struct StageFlags {
  std::string threads = "pre-process=1,post-process=1";  // or "auto"
  std::size_t thread_budget = 4;                         // read with --stage-threads=auto only
  double rebalance_interval_ms = 200;
  std::string pre_process_cost;  // "" or US[:spin|sleep]
  std::string stage_timing = "on";
  bool nvtx_ops = false;
  bool print_stages = false;
};

// Adds --stage-threads, --thread-budget, --rebalance-interval, --pre-process-cost, --stage-timing,
// --nvtx-ops and --stages to `app`.
void add_stage_flags(CLI::App& app, StageFlags& flags);

// Applies the flags to `options`; throws cli::UsageError naming the flag for a bad spelling, an
// unknown stage name or a count or budget of 0.
void apply_stage_flags(const StageFlags& flags, ExecutorOptions& options);

// The --pre-process-cost transform for every model's LoadOptions (empty when not asked for): each
// request's pre-process spends that long (spinning the CPU, or sleeping as a conversion blocked on
// I/O would) before the inputs go on unchanged.
std::function<void(std::vector<Tensor>&)> pre_process_cost(const StageFlags& flags);

// A table of every stage over `uptime`: threads, items, busy % (per thread), mean queue wait, depth,
// and the re-balancing decisions.
void print_stages(const ExecutorStats& stats);
nlohmann::ordered_json stages_json(const ExecutorStats& stats);

}  // namespace loom::bench
