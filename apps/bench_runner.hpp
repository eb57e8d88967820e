// The closed-loop load generator behind loom-bench: one client thread per model keeps a fixed
// number of requests outstanding, so every chosen model shares the device at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loom/executor.hpp"
#include "loom/tensor.hpp"
#include "loom/trace.hpp"

namespace loom::bench {

struct LoadConfig {
  std::size_t min_requests = 10;  // measured requests each model completes at least
  double warmup_ms = 200;         // closed-loop warm-up before measuring; 0 = none
  double min_duration_s = 0;      // the measured phase lasts at least this long
  std::size_t concurrency = 1;    // requests outstanding per model
};

// One model to drive: the name it was loaded under and the inputs every request sends.
struct LoadTarget {
  std::string model;
  std::vector<Tensor> inputs;
};

// One measured request; times in ms from the start of the measured phase.
struct RequestTiming {
  std::size_t index = 0;  // 0, 1, 2, ... in submission order, per model
  double start_ms = 0;    // just before submit()
  double end_ms = 0;      // when the executor reported the result ready
  double latency_ms() const { return end_ms - start_ms; }
};

struct ModelTimings {
  std::string model;
  std::size_t warmup_requests = 0;
  std::vector<RequestTiming> requests;  // ordered by index
};

struct LoadResult {
  std::vector<ModelTimings> models;
  double measured_s = 0;  // from the start of the measured phase to the last completion
};

// Where the run is, for a progress display; fraction in [0, 1].
struct LoadProgress {
  bool warming_up = true;
  double fraction = 0;
  std::vector<std::size_t> completed;  // measured requests done, per target
};

// Runs the warm-up, then the measured phase: each model keeps submitting until every model has
// completed `min_requests` and `min_duration_s` has passed; requests still outstanding then are
// waited for and counted. `on_tick` (may be empty) is called from the calling thread about four
// times a second. Throws the first loom::Error (or other exception) a request raised, after all
// outstanding requests have finished.
LoadResult run_closed_loop(Executor& executor, const std::vector<LoadTarget>& targets,
                           const LoadConfig& config,
                           const std::function<void(const LoadProgress&)>& on_tick);

// The measured phase of a timeline the executor recorded during run_closed_loop(): the events of
// the requests submitted after the warm-up, times shifted so that 0 is the first measured submit.
// Relies on every warm-up request completing before the first measured one is submitted, which
// run_closed_loop() guarantees. `warmup_requests`: all models' together (LoadResult).
Timeline measured_phase(const Timeline& whole_run, std::size_t warmup_requests);

}  // namespace loom::bench
