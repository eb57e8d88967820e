// ExecutorStats → the loom_* metric families. docs/metrics.md lists them in the same order; keep
// the two together.
#include "metrics/prometheus_text.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "metrics/exposition.hpp"

namespace loom::metrics {
namespace {

// Seconds to the nanosecond (finer digits of summed host and event times are noise): whole
// nanoseconds divided by 1e9 give the double nearest the decimal, which prints as such (500 µs:
// 0.0005, not 0.0005000000000000001).
double seconds(double us) { return std::round(us * 1000) / 1e9; }

Labels stage_labels(const StageStats& stage) {
  return {{"stage", stage.name}, {"kind", std::string(stage_kind_name(stage.kind))}};
}

// Busy time over the executor's whole life per thread serving it (device and copy stages: per
// stream), in [0, 1]. Host stages whose thread count changed are measured against today's count:
// rate(loom_stage_busy_seconds_total[1m]) is the windowed figure.
double lifetime_utilization(const StageStats& stage, double uptime_us) {
  if (uptime_us <= 0) return 0;
  const double servers = static_cast<double>(std::max<std::size_t>(stage.threads, 1));
  return std::clamp(stage.busy_us / (uptime_us * servers), 0.0, 1.0);
}

class Families {
 public:
  explicit Families(ExpositionWriter& writer) : w_(writer) {}

  template <class Value>
  void single(const char* name, MetricType type, const char* help, Value value) {
    w_.family(name, type, help);
    w_.sample(name, {}, value);
  }

  template <class Value>
  void per_model(const std::vector<ModelStats>& models, const char* name, MetricType type, const char* help,
                 const std::function<Value(const ModelStats&)>& value) {
    w_.family(name, type, help);
    for (const auto& model : models) w_.sample(name, {{"model", model.name}}, value(model));
  }

  // Every stage `keep` accepts, labelled {stage, kind}.
  template <class Value>
  void per_stage(const std::vector<StageStats>& stages, const char* name, MetricType type, const char* help,
                 const std::function<Value(const StageStats&)>& value,
                 const std::function<bool(const StageStats&)>& keep = {}) {
    w_.family(name, type, help);
    for (const auto& stage : stages)
      if (!keep || keep(stage)) w_.sample(name, stage_labels(stage), value(stage));
  }

 private:
  ExpositionWriter& w_;
};

using U64 = std::uint64_t;

}  // namespace

std::string prometheus_text(const ExecutorStats& s, const ExecutorIdentity& identity) {
  ExpositionWriter w;
  Families f(w);
  const auto counter = MetricType::counter;
  const auto gauge = MetricType::gauge;

  w.family("loom_info", gauge, "Which Loom serves these metrics, on which device and policy (always 1).");
  w.sample("loom_info",
           {{"version", identity.version},
            {"device", identity.device},
            {"backend", identity.backend},
            {"policy", identity.policy}},
           U64{1});
  f.single("loom_uptime_seconds", gauge, "Seconds since the executor started.", seconds(s.uptime_us));

  // Requests.
  f.single("loom_requests_submitted_total", counter, "Requests accepted by submit(), every model.",
           s.requests_submitted);
  w.family("loom_requests_total", counter, "Requests finished, per model and outcome (completed or failed).");
  for (const auto& model : s.models) {
    w.sample("loom_requests_total", {{"model", model.name}, {"status", "completed"}}, model.requests_completed);
    w.sample("loom_requests_total", {{"model", model.name}, {"status", "failed"}}, model.requests_failed);
  }
  f.single("loom_requests_expired_total", counter,
           "Requests failed because their deadline passed before their first Step (among the failed).",
           s.requests_expired);
  w.family("loom_request_duration_seconds", MetricType::histogram,
           "Latency of completed requests, submit() to completion, per model.");
  for (const auto& model : s.models)
    w.histogram("loom_request_duration_seconds", {{"model", model.name}}, kLatencyBucketsSeconds, model.latency.counts,
                seconds(model.latency.sum_seconds * 1e6));
  w.family("loom_request_phase_seconds_total", counter,
           "Latency of completed requests split into phases (queue, h2d, compute, d2h, post), summed per model.");
  for (const auto& model : s.models) {
    const auto& t = model.time_sums;
    const std::pair<const char*, double> phases[] = {
        {"queue", t.queue_us}, {"h2d", t.h2d_us}, {"compute", t.compute_us}, {"d2h", t.d2h_us}, {"post", t.post_us}};
    for (const auto& [phase, us] : phases)
      w.sample("loom_request_phase_seconds_total", {{"model", model.name}, {"phase", phase}}, seconds(us));
  }

  // Steps and the dispatcher.
  f.per_model<U64>(s.models, "loom_steps_total", counter, "Steps run for the model's requests.",
                   [](const ModelStats& m) { return m.steps; });
  f.single("loom_cuda_graph_steps_total", counter, "Steps launched as a CUDA graph (captured or replayed).",
           s.cuda_graph_steps);
  f.single("loom_dispatch_host_seconds_total", counter, "Host time the dispatcher spent choosing and launching Steps.",
           seconds(s.dispatch_host_us));

  // Pipeline stages. Only host stages have threads and an input queue.
  const std::function<bool(const StageStats&)> host_only = [](const StageStats& st) {
    return st.kind == StageKind::host;
  };
  f.per_stage<double>(s.stages, "loom_stage_busy_seconds_total", counter,
                      "Time the stage spent on its items (host stages: summed over their threads).",
                      [](const StageStats& st) { return seconds(st.busy_us); });
  f.per_stage<U64>(s.stages, "loom_stage_items_total", counter,
                   "Items the stage handled: requests (host), Steps (device), copies (copy).",
                   [](const StageStats& st) { return st.items; });
  f.per_stage<U64>(
      s.stages, "loom_stage_queued_total", counter,
      "Items that passed through a host stage's input queue (the queue wait's count).",
      [](const StageStats& st) { return st.queued; }, host_only);
  f.per_stage<double>(
      s.stages, "loom_stage_queue_wait_seconds_total", counter,
      "Time items waited in a host stage's input queue, summed.",
      [](const StageStats& st) { return seconds(st.queue_wait_us); }, host_only);
  f.per_stage<U64>(s.stages, "loom_stage_queue_depth", gauge,
                   "Items waiting for the stage now (device: Steps launched and not yet finished).",
                   [](const StageStats& st) { return static_cast<U64>(st.queue_depth); });
  f.per_stage<U64>(s.stages, "loom_stage_max_queue_depth", gauge, "The most items seen waiting for the stage at once.",
                   [](const StageStats& st) { return static_cast<U64>(st.max_queue_depth); });
  f.per_stage<U64>(
      s.stages, "loom_stage_threads", gauge, "Threads serving a host stage now.",
      [](const StageStats& st) { return static_cast<U64>(st.threads); }, host_only);
  const double uptime_us = s.uptime_us;
  f.per_stage<double>(s.stages, "loom_stage_utilization_ratio", gauge,
                      "Busy time since the executor started over uptime per thread (device and copy stages: per "
                      "stream), 0 to 1; rate(loom_stage_busy_seconds_total[1m]) is the recent figure.",
                      [uptime_us](const StageStats& st) { return lifetime_utilization(st, uptime_us); });
  w.family("loom_copy_bytes_total", counter, "Bytes a copy stage moved.");
  for (const auto& stage : s.stages)
    if (stage.kind == StageKind::copy) w.sample("loom_copy_bytes_total", {{"stage", stage.name}}, stage.bytes);

  // Memory.
  f.single("loom_pool_reserved_bytes", gauge, "Device memory the executor's pool holds.", s.pool_bytes_reserved);
  f.single("loom_pool_allocations_total", counter, "Blocks the pool handed out.", s.pool_allocations);
  f.single("loom_pool_reuses_total", counter, "Blocks the pool handed out from its free set (among the allocations).",
           s.pool_reuses);

  // Preemption.
  f.single("loom_preemptions_total", counter,
           "Pauses of lower-priority requests for a higher class, inside Steps included.", s.preemptions);
  f.single("loom_pauses_inside_steps_total", counter, "Pauses inside a Step's device loop (among the preemptions).",
           s.pauses_inside_steps);
  f.single("loom_dumped_bytes_total", counter, "Live bytes of paused requests copied to host memory.", s.bytes_dumped);

  // Host stage threads.
  f.single("loom_rebalances_total", counter,
           "Threads the automatic re-balancing moved between the host stages or added from the budget.",
           s.thread_moves);

  return w.take();
}

}  // namespace loom::metrics
