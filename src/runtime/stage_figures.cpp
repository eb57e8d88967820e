// What stats() reports of each pipeline stage and each model (MISSION.md §4: busy time, queue wait
// and depth per stage), and the automatic re-balancing of the host stages' threads from those
// figures (runtime/stage_balancer.hpp decides; this file measures and applies).
#include <chrono>
#include <string>
#include <vector>

#include "runtime/executor_impl.hpp"
#include "runtime/stage_balancer.hpp"

namespace loom {
namespace {

constexpr std::size_t kRebalancesKept = 256;

StageStats host_stage(std::string name, std::size_t threads, const runtime::StageWork& work,
                      const runtime::QueueFigures& queue) {
  StageStats s;
  s.name = std::move(name);
  s.kind = StageKind::host;
  s.threads = threads;
  s.items = work.items;
  s.busy_us = static_cast<double>(work.busy_ns) / 1000.0;
  s.queued = queue.popped;
  s.queue_wait_us = queue.wait_us;
  s.queue_depth = queue.depth;
  s.max_queue_depth = queue.max_depth;
  return s;
}

StageStats copy_stage(std::string name, const runtime::CopyCounters& c) {
  StageStats s;
  s.name = std::move(name);
  s.kind = StageKind::copy;
  s.items = c.items;
  s.busy_us = c.busy_us;
  s.bytes = c.bytes;
  return s;
}

void add_times(RequestTimes& sum, const RequestTimes& t) {
  sum.queue_us += t.queue_us;
  sum.h2d_us += t.h2d_us;
  sum.compute_us += t.compute_us;
  sum.d2h_us += t.d2h_us;
  sum.post_us += t.post_us;
  sum.total_us += t.total_us;
  sum.h2d_bytes += t.h2d_bytes;
  sum.d2h_bytes += t.d2h_bytes;
}

}  // namespace

// A finished request's share of the figures: its model's counts, latency and phases, its
// stream's busy time and its copies.
void Executor::Impl::add_figures(Request& request, const trace::RecordedRequest& recorded, const RequestTimes& times) {
  {
    runtime::ModelCounters& c = *request.counters;
    std::lock_guard lock(c.mutex);
    if (request.error) {
      ++c.finished.requests_failed;
    } else {
      ++c.finished.requests_completed;
      c.finished.latency.add(times.total_us / 1e6);
      add_times(c.finished.time_sums, times);
    }
    c.stream_busy_us += recorded.steps_busy_us;
    c.timed_steps += recorded.steps_run;
  }
  if (recorded.uploads == 0 && recorded.downloads == 0) return;
  std::lock_guard lock(figures_mutex);
  h2d.items += recorded.uploads;
  h2d.bytes += recorded.times.h2d_bytes;
  h2d.busy_us += recorded.times.h2d_us;
  d2h.items += recorded.downloads;
  d2h.bytes += recorded.times.d2h_bytes;
  d2h.busy_us += recorded.times.d2h_us;
}

// A dump or restore of a preempted request's live bytes (host-timed: a dump waits for its copy,
// a restore on an asynchronous backend only enqueues it).
void Executor::Impl::add_transfer(std::uint64_t bytes, double busy_us) {
  std::lock_guard lock(figures_mutex);
  ++transfer.items;
  transfer.bytes += bytes;
  transfer.busy_us += busy_us;
}

std::vector<StageStats> Executor::Impl::stage_stats() const {
  std::vector<StageStats> stages;
  stages.push_back(host_stage("pre-process", pre_workers->threads(), pre_workers->work(), to_pre.figures()));
  {
    runtime::QueueFigures queue = to_exec.figures();
    // Waiting for the dispatcher: in its queue, or held by it and not yet run to the end.
    queue.depth += dispatcher_live.load();
    StageStats dispatcher = host_stage("dispatcher", 1, {steps_dispatched.load(), dispatcher_busy_ns.load()}, queue);
    stages.push_back(std::move(dispatcher));
  }
  stages.push_back(host_stage("post-process", post_workers->threads(), post_workers->work(), to_post.figures()));
  {
    std::shared_lock lock(models_mutex);
    for (const std::string& name : load_order) {
      runtime::ModelCounters& c = *model_counters.at(name);
      StageStats s;
      s.name = "stream:" + name;
      s.kind = StageKind::device;
      s.queue_depth = c.inflight_steps.load();
      s.max_queue_depth = c.max_inflight_steps.load();
      std::lock_guard counters_lock(c.mutex);
      s.items = c.timed_steps;
      s.busy_us = c.stream_busy_us;
      stages.push_back(std::move(s));
    }
  }
  std::lock_guard lock(figures_mutex);
  stages.push_back(copy_stage("copy:h2d", h2d));
  stages.push_back(copy_stage("copy:d2h", d2h));
  stages.push_back(copy_stage("copy:transfer", transfer));
  return stages;
}

std::vector<ModelStats> Executor::Impl::model_stats() const {
  std::vector<ModelStats> models;
  std::shared_lock lock(models_mutex);
  for (const std::string& name : load_order) {
    runtime::ModelCounters& c = *model_counters.at(name);
    std::lock_guard counters_lock(c.mutex);
    models.push_back(c.finished);
    models.back().steps = c.steps.load();
  }
  return models;
}

// Every rebalance_interval_ms: the host stages' work over the interval, the rule's choice,
// applied. Moves are logged, and so is a saturated stage the rule cannot help (once, until the
// reason changes), in ExecutorStats::rebalances and on the timeline's "host:balancer" row.
void Executor::Impl::balance_loop() {
  const StageThreadOptions& config = options.stage_threads;
  const auto interval = std::chrono::duration<double, std::milli>(config.rebalance_interval_ms);
  runtime::StageWork last_pre = pre_workers->work(), last_post = post_workers->work();
  std::string last_refusal;
  std::unique_lock lock(balancer_mutex);
  while (!balancer_wake.wait_for(lock, interval, [&] { return balancer_stop; })) {
    const runtime::StageWork pre = pre_workers->work(), post = post_workers->work();
    const std::size_t pre_threads = pre_workers->threads(), post_threads = post_workers->threads();
    const runtime::StageLoad pre_load{pre_threads, static_cast<double>(pre.busy_ns - last_pre.busy_ns) / 1000.0,
                                      pre.items - last_pre.items};
    const runtime::StageLoad post_load{post_threads, static_cast<double>(post.busy_ns - last_post.busy_ns) / 1000.0,
                                       post.items - last_post.items};
    last_pre = pre;
    last_post = post;
    const runtime::RebalanceChoice choice =
        runtime::choose_rebalance(pre_load, post_load, interval.count() * 1000.0, config.thread_budget);
    using Move = runtime::RebalanceChoice::Move;
    RebalanceDecision decision;
    decision.pre_threads = pre_threads;
    decision.post_threads = post_threads;
    switch (choice.move) {
      case Move::add_to_pre:
        decision.to = "pre-process";
        ++decision.pre_threads;
        break;
      case Move::add_to_post:
        decision.to = "post-process";
        ++decision.post_threads;
        break;
      case Move::post_to_pre:
        decision.from = "post-process";
        decision.to = "pre-process";
        ++decision.pre_threads;
        --decision.post_threads;
        break;
      case Move::pre_to_post:
        decision.from = "pre-process";
        decision.to = "post-process";
        --decision.pre_threads;
        ++decision.post_threads;
        break;
      case Move::none:
        break;
    }
    if (choice.move == Move::none && (!choice.saturated || choice.reason == last_refusal)) continue;
    last_refusal = choice.move == Move::none ? choice.reason : std::string();
    try {
      // Grow first, so the pipeline never has fewer threads than before while it moves one.
      if (decision.pre_threads > pre_threads) pre_workers->set_threads(decision.pre_threads);
      if (decision.post_threads > post_threads) post_workers->set_threads(decision.post_threads);
      if (decision.pre_threads < pre_threads) pre_workers->set_threads(decision.pre_threads);
      if (decision.post_threads < post_threads) post_workers->set_threads(decision.post_threads);
    } catch (const std::exception& e) {
      decision.pre_threads = pre_workers->threads();
      decision.post_threads = post_workers->threads();
      decision.reason = std::string("could not start a thread: ") + e.what() + "; ";
    }
    decision.at_us = now_us();
    decision.pre_us_per_request = choice.pre_us_per_request;
    decision.post_us_per_request = choice.post_us_per_request;
    decision.reason += choice.reason;
    if (timeline_clock && options.record_timeline) {
      TraceEvent event;
      event.name = decision.to.empty() ? "rebalance: no move" : "rebalance: a thread to " + decision.to;
      event.category = "rebalance";
      event.track = "host:balancer";
      event.start_us = timeline_clock->host_now_us();
      event.args = {{"reason", decision.reason},
                    {"pre_threads", std::to_string(decision.pre_threads)},
                    {"post_threads", std::to_string(decision.post_threads)}};
      timeline.add(std::move(event));
    }
    std::lock_guard figures_lock(figures_mutex);
    rebalances.push_back(std::move(decision));
    if (rebalances.size() > kRebalancesKept) rebalances.pop_front();
  }
}

}  // namespace loom
