// The load generator behind loom-bench: one client thread per model, either keeping a fixed number
// of requests outstanding (closed loop) or submitting at Poisson arrival times (open loop), so every
// chosen model shares the device at the same time.
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

struct LoadResult;

struct LoadConfig {
  std::size_t min_requests = 10;  // measured requests each model completes at least
  double warmup_ms = 200;         // closed-loop warm-up before measuring; 0 = none
  double min_duration_s = 0;      // the measured phase lasts at least this long
  std::size_t concurrency = 1;    // closed loop: requests outstanding per model
  // > 0: open loop. Each model's requests arrive as a Poisson process of this many requests per
  // second (poisson_arrivals_ms() with arrival_seed + the model's index), until the model has
  // min_requests arrivals and min_duration_s is covered; `concurrency` is then unused. The warm-up
  // stays closed loop.
  double arrival_rate_per_s = 0;
  std::uint64_t arrival_seed = 1;
  // > 0: the measured phase is cut into windows of this many ms (perf_analyzer's measurement
  // intervals). At the end of each, run_load() calls `stop_after_window` on its calling thread with
  // the measured requests completed by then (LoadResult::windows = the windows ended so far,
  // measured_s = their span); when it returns true, no more requests are submitted. min_requests no
  // longer ends a closed loop: only stop_after_window (or a failure) does. An open loop's arrivals
  // are still generated to cover min_duration_s, and it ends when they run out if nothing stopped
  // it before.
  double window_ms = 0;
  std::function<bool(const LoadResult& completed)> stop_after_window;
  double tick_interval_ms = 250;  // how often run_load() calls its on_tick
};

// One model to drive: the name it was loaded under, the inputs every request sends and the
// options (priority) every request carries.
struct LoadTarget {
  std::string model;
  std::vector<Tensor> inputs;
  RequestOptions options = {};
};

// One measured request; times in ms from the start of the measured phase.
struct RequestTiming {
  std::size_t index = 0;  // 0, 1, 2, ... in submission order, per model
  double start_ms = 0;    // closed loop: just before submit(); open loop: the scheduled arrival
  double end_ms = 0;      // when the executor reported the result ready
  RequestTimes times;     // the executor's split of submit() -> completion into phases
  double latency_ms() const { return end_ms - start_ms; }
};

struct ModelTimings {
  std::string model;
  std::size_t warmup_requests = 0;
  std::vector<RequestTiming> requests;  // ordered by index
};

struct LoadResult {
  std::vector<ModelTimings> models;
  double measured_s = 0;    // from the start of the measured phase to the last completion
  std::size_t windows = 0;  // LoadConfig::window_ms > 0: the windows that ended before the load stopped
};

// Where the run is, for a progress display; fraction in [0, 1].
struct LoadProgress {
  bool warming_up = true;
  double fraction = 0;
  std::vector<std::size_t> completed;  // measured requests done, per target
  double measured_s = 0;               // since the measured phase started; 0 while warming up
  // Latencies (ms, as RequestTiming::latency_ms) of the measured requests completed since the
  // previous tick, per target: each is in exactly one tick's progress, except those completing
  // after the last tick (run_load()'s result has them all).
  std::vector<std::vector<double>> new_latencies_ms;
};

// Runs the warm-up, then the measured phase. Closed loop: each model keeps submitting until every
// model has completed `min_requests` and `min_duration_s` has passed; requests still outstanding
// then are waited for and counted. Open loop: each model submits at its arrival times (a submit
// that blocks on a full queue delays the next ones, whose latency still counts from their
// scheduled arrival), then waits for its last result.
// `on_tick` (may be empty) is called from the calling thread every config.tick_interval_ms. Throws the
// first loom::Error (or other exception) a request raised, after all outstanding requests have
// finished.
LoadResult run_load(Executor& executor, const std::vector<LoadTarget>& targets, const LoadConfig& config,
                    const std::function<void(const LoadProgress&)>& on_tick);

// Arrival times in ms (from 0, increasing) of a Poisson process with `rate_per_s` arrivals per
// second: exponential gaps drawn from a 64-bit Mersenne twister seeded with `seed` by inverting the
// CDF, so the same arguments give the same times on every platform. Times are generated until
// there are at least `min_count` and the last is at or after `min_duration_s`. Throws
// std::invalid_argument when rate_per_s is not a positive finite number.
std::vector<double> poisson_arrivals_ms(double rate_per_s, std::size_t min_count, double min_duration_s,
                                        std::uint64_t seed);

// The measured phase of a timeline the executor recorded during run_load(): the events of
// the requests submitted after the warm-up, times shifted so that 0 is the first measured submit.
// Relies on every warm-up request completing before the first measured one is submitted, which
// run_load() guarantees. `warmup_requests`: all models' together (LoadResult).
Timeline measured_phase(const Timeline& whole_run, std::size_t warmup_requests);

}  // namespace loom::bench
