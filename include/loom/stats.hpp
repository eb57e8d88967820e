// What a running Executor tells about itself (MISSION.md §4): counters, every pipeline stage's
// busy time, queue wait and queue depth, per-model request counts and latency histograms, each
// request's latency split into its phases, and the host stages' re-balancing decisions. Plain data,
// read by Executor::stats(), the metrics endpoint, loom-bench's live view and its reports.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

// One request's wall time from submit() to its completion, split into phases that add up to
// total_us (microseconds; device times mapped onto the host clock):
//   queue:   everything before its first Step starts on the device, except the input copy
//            (waiting in the pre-process queue, conversion, waiting for the dispatcher and for
//            the other requests' Steps it was scheduled behind);
//   h2d:     copying its inputs to the device;
//   compute: from its first Step's start to its last Step's end on the device (other models'
//            Steps interleaved in between count here: that is the latency the request sees);
//   d2h:     copying its outputs back;
//   post:    the rest: waiting for the post-process stage, converting back, the completion.
// Without stage timing (ExecutorOptions::stage_timing = false) only total_us is measured and it
// is all counted as compute.
struct RequestTimes {
  double queue_us = 0;
  double h2d_us = 0;
  double compute_us = 0;
  double d2h_us = 0;
  double post_us = 0;
  double total_us = 0;
  std::uint64_t h2d_bytes = 0;
  std::uint64_t d2h_bytes = 0;
};

enum class StageKind { host, device, copy };
std::string_view stage_kind_name(StageKind kind) noexcept;  // "host", "device", "copy"

// One stage of the pipeline. Names:
//   host:   "pre-process", "dispatcher" (the execute stage's host side), "post-process";
//   device: "stream:<model>" (each model's stream: its Steps);
//   copy:   "copy:h2d" (request inputs), "copy:d2h" (request outputs), "copy:transfer" (dumps and
//           restores of preempted requests' live data).
struct StageStats {
  std::string name;
  StageKind kind = StageKind::host;
  std::size_t threads = 0;          // host stages: threads serving it now; 0 for device and copy stages
  std::uint64_t items = 0;          // requests handled (host), Steps run (device), copies made (copy)
  double busy_us = 0;               // time spent on them (host: summed over the stage's threads)
  std::uint64_t queued = 0;         // items that passed through the stage's input queue (host stages)
  double queue_wait_us = 0;         // summed time they waited in it
  std::size_t queue_depth = 0;      // items waiting now (device: Steps launched and not yet finished)
  std::size_t max_queue_depth = 0;  // the most seen waiting at once
  std::uint64_t bytes = 0;          // copy stages: bytes moved
};

// Request latency per model as a Prometheus histogram: counts[i] requests took at most
// kLatencyBucketsSeconds[i] seconds (not cumulative here; the endpoint accumulates), counts.back()
// the rest.
inline constexpr std::array<double, 16> kLatencyBucketsSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
struct LatencyHistogram {
  std::array<std::uint64_t, kLatencyBucketsSeconds.size() + 1> counts{};
  double sum_seconds = 0;
  std::uint64_t count = 0;
  void add(double seconds) noexcept;
};

struct ModelStats {
  std::string name;
  std::uint64_t requests_completed = 0;
  std::uint64_t requests_failed = 0;
  std::uint64_t steps = 0;   // Steps run for its requests
  LatencyHistogram latency;  // completed requests, submit to completion
  RequestTimes time_sums;    // each phase summed over its completed requests
};

// One move of a thread between the host stages by the automatic re-balancing
// (StageThreadOptions::automatic), or one refusal to move, with the figures it was decided on.
struct RebalanceDecision {
  double at_us = 0;             // since the executor started
  std::string from, to;         // stage names; `from` empty when the budget had a thread to spare
  std::size_t pre_threads = 0;  // the counts after the decision
  std::size_t post_threads = 0;
  double pre_us_per_request = 0;  // measured busy time per request over the last interval
  double post_us_per_request = 0;
  std::string reason;
};

// What Executor::stats() returns (and the metrics endpoint serves, docs/metrics.md): counters since
// the executor started, then the figures above per stage, per model and per re-balancing decision.
struct ExecutorStats {
  double uptime_us = 0;  // since the executor started
  std::uint64_t requests_submitted = 0;
  std::uint64_t requests_completed = 0;
  std::uint64_t requests_failed = 0;
  std::uint64_t pool_bytes_reserved = 0;  // device memory the pool holds
  std::uint64_t pool_allocations = 0;     // blocks handed out
  std::uint64_t pool_reuses = 0;          // of those, served from the free set
  std::uint64_t steps_dispatched = 0;
  // Host time the dispatcher spent from building the candidates through each Step's launch,
  // summed. On the CPU backend the Step runs inside its launch; its run time is left out.
  double dispatch_host_us = 0;
  std::uint64_t preemptions = 0;          // pauses at cancellation points, inside Steps included
  std::uint64_t pauses_inside_steps = 0;  // of which: inside a Step (StepInfo::pausable_inside)
  std::uint64_t bytes_dumped = 0;         // live bytes copied to host memory by preemptions
  std::uint64_t requests_expired = 0;     // failed with deadline_exceeded
  std::uint64_t cuda_graph_steps = 0;     // Steps launched as a CUDA graph (captured or replayed)
  // ExecutorOptions::debug = compare: Steps compared against the CPU, and requests that diverged.
  std::uint64_t debug_steps_compared = 0;
  std::uint64_t debug_divergences = 0;
  // Every stage of the pipeline (StageStats names them), host stages first.
  std::vector<StageStats> stages;
  std::vector<ModelStats> models;             // in load order
  std::vector<RebalanceDecision> rebalances;  // oldest first (the last 256)
  // The re-balancing decisions that moved or added a thread: all of them, where `rebalances`
  // keeps the last 256 decisions, moves or not.
  std::uint64_t thread_moves = 0;
};

}  // namespace loom
