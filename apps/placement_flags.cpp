// The tools' side of the placement pass (placement_flags.hpp): flag wiring.
#include "placement_flags.hpp"

#include "cli_support.hpp"

namespace loom::cli {

void add_placement_flags(CLI::App& app, PlacementFlags& flags) {
  app.add_option("--placement-th1", flags.th1,
                 "Placement: a processor passes when the benefit p = s + o (µs) is at least this (th1)")
      ->check(non_negative_number())
      ->type_name("US")
      ->capture_default_str();
  app.add_option("--placement-th2", flags.th2,
                 "Placement: ... and the cost c = t + a (µs) at most this (th2; default: no bound)")
      ->check(non_negative_number())
      ->type_name("US");
  app.add_option("--placement-processors", flags.processors,
                 "Placement: processors in preference order, e.g. cpu:accel,cpu (default: --device's, then the "
                 "function library's others that this build can open)")
      ->delimiter(',')
      ->type_name("NAME[,NAME...]");
  app.add_option("--function-library", flags.library,
                 "Placement figures: auto (profiles/library/<device>.json, else the built-in defaults), defaults, or "
                 "a library JSON file (loom-profile --library writes one)")
      ->type_name("auto|defaults|FILE")
      ->capture_default_str();
  app.add_flag("--no-placement", flags.off, "Skip the placement pass at load");
  app.add_flag("--placement-execute", flags.execute,
               "Run each Step on the processor the placement chose, with copies between processors (default: the "
               "placement is recorded only)");
}

void apply_placement_flags(const PlacementFlags& flags, LoadOptions& load, ExecutorOptions& executor) {
  load.placement.enabled = !flags.off;
  load.placement.benefit_threshold_us = flags.th1;
  if (flags.th2) load.placement.cost_threshold_us = *flags.th2;
  load.placement.processors = flags.processors;
  load.placement.execute = flags.execute;
  executor.function_library = flags.library;
}

}  // namespace loom::cli
