// The discrete-event accelerator model of sim.hpp: one loop over scheduling points, each asking
// the policy for one Step and placing its memory and compute phases on the two resources.
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "loom/error.hpp"
#include "loom/sim.hpp"
#include "sim/workload_check.hpp"

namespace loom::sim {
namespace {

using detail::number_text;

// A dispatched Step holding on-chip bytes until its compute ends.
struct Reservation {
  double release_us = 0;
  std::uint64_t bytes = 0;
};

// Per-request progress while simulating.
struct RequestState {
  std::size_t workload_index = 0;  // into Workload::requests
  std::size_t model = 0;           // into Workload::models
  std::size_t next_step = 0;       // first Step not yet dispatched
  std::uint32_t passed_over = 0;   // times its next Step was offered and not chosen
  double last_compute_end_us = 0;  // of its latest dispatched Step
};

std::string step_label(const Workload& workload, const ScheduledStep& s, std::size_t model) {
  return workload.models[model].name + "#" + std::to_string(s.request) + "/" + std::to_string(s.step);
}

// Earliest time >= now at which `need` more bytes fit beside `held` (every reservation in `held`
// ends after now; nothing dispatched later can start before this Step, so only releases matter).
double capacity_ready_at(const std::vector<Reservation>& held, std::uint64_t need, std::uint64_t capacity, double now) {
  if (capacity == 0) return now;
  std::uint64_t used = 0;
  for (const auto& r : held) used += r.bytes;
  if (used + need <= capacity) return now;
  std::vector<Reservation> by_release = held;
  std::sort(by_release.begin(), by_release.end(),
            [](const Reservation& a, const Reservation& b) { return a.release_us < b.release_us; });
  double t = now;
  std::size_t i = 0;
  // need <= capacity (checked up front), so this ends at the latest when everything is released.
  while (used + need > capacity) {
    t = by_release[i].release_us;
    for (; i < by_release.size() && by_release[i].release_us <= t; ++i) used -= by_release[i].bytes;
  }
  return t;
}

// The schedule of `workload` under `policy` (model_of: each request's model index). Records the
// phases and decisions into `timeline` when it is given.
std::vector<ScheduledStep> run_schedule(const Workload& workload, const std::vector<std::size_t>& model_of,
                                        SchedulingPolicy& policy, Timeline* timeline) {
  // request_id = position in arrival order, ties in workload order.
  std::vector<std::size_t> order(workload.requests.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return workload.requests[a].arrival_us < workload.requests[b].arrival_us;
  });
  std::vector<RequestState> requests;
  std::size_t steps_left = 0;
  for (std::size_t index : order) {
    RequestState state;
    state.workload_index = index;
    state.model = model_of[index];
    requests.push_back(state);
    steps_left += workload.models[state.model].steps.size();
  }

  std::vector<ScheduledStep> schedule;
  schedule.reserve(steps_left);
  std::vector<Reservation> held;  // reservations still holding bytes after the current point
  std::vector<std::size_t> live;  // ids of arrived requests with Steps left, ascending
  std::size_t next_arrival = 0;   // id of the first request not yet arrived
  std::vector<StepCandidate> candidates;
  double memory_free_at = 0, compute_free_at = 0;
  const auto arrival_of = [&](std::size_t id) { return workload.requests[requests[id].workload_index].arrival_us; };

  while (steps_left > 0) {
    // A scheduling point: the memory resource can take the next Step. When nothing is live, time
    // jumps to the next arrival (one exists: Steps are left and every arrived request is done).
    double now = memory_free_at;
    if (live.empty()) now = std::max(now, arrival_of(next_arrival));
    for (; next_arrival < requests.size() && arrival_of(next_arrival) <= now; ++next_arrival)
      live.push_back(next_arrival);

    candidates.clear();
    for (std::size_t id : live) {
      const RequestState& r = requests[id];
      const SimRequest& request = workload.requests[r.workload_index];
      const SimModel& model = workload.models[r.model];
      const SimStep& step = model.steps[r.next_step];
      StepCandidate c;
      c.request_id = id;
      c.model_index = r.model;
      c.step_index = r.next_step;
      c.step_count = model.steps.size();
      c.arrival_us = request.arrival_us;
      c.compute_us = step.compute_us;
      c.memory_us = step.memory_us;
      c.bytes = step.onchip_bytes;
      c.working_set_bytes = step.onchip_bytes;
      c.passed_over = r.passed_over;
      c.priority = request.priority;
      c.lookahead_count = std::min(kMaxLookahead, model.steps.size() - r.next_step - 1);
      for (std::size_t k = 0; k < c.lookahead_count; ++k) {
        const SimStep& ahead = model.steps[r.next_step + 1 + k];
        c.lookahead[k] = {ahead.compute_us, ahead.memory_us, ahead.onchip_bytes};
      }
      candidates.push_back(c);
    }
    std::erase_if(held, [&](const Reservation& r) { return r.release_us <= now; });

    AcceleratorState state;
    state.now_us = now;
    state.compute_free_at_us = compute_free_at;
    state.memory_free_at_us = memory_free_at;
    for (const auto& r : held) state.onchip_used_bytes += r.bytes;
    state.onchip_capacity_bytes = workload.onchip_capacity_bytes;

    const std::size_t pick = policy.pick(candidates, state);
    if (pick >= candidates.size())
      throw Error(ErrorCode::internal, "policy '" + std::string(policy.name()) + "' picked candidate " +
                                           std::to_string(pick) + " of " + std::to_string(candidates.size()));
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (i != pick) ++requests[live[i]].passed_over;

    RequestState& chosen = requests[live[pick]];
    const SimStep& step = workload.models[chosen.model].steps[chosen.next_step];
    ScheduledStep s;
    s.request = chosen.workload_index;
    s.step = chosen.next_step;
    s.decided_us = now;
    s.memory_start_us = capacity_ready_at(held, step.onchip_bytes, workload.onchip_capacity_bytes, now);
    s.memory_end_us = s.memory_start_us + step.memory_us;
    s.compute_start_us = std::max({s.memory_end_us, compute_free_at, chosen.last_compute_end_us});
    s.compute_end_us = s.compute_start_us + step.compute_us;
    memory_free_at = s.memory_end_us;
    compute_free_at = s.compute_end_us;
    chosen.last_compute_end_us = s.compute_end_us;
    chosen.passed_over = 0;  // its next Step is a new candidate
    ++chosen.next_step;
    --steps_left;
    if (chosen.next_step == workload.models[chosen.model].steps.size()) live.erase(live.begin() + pick);
    if (step.onchip_bytes > 0) held.push_back({s.compute_end_us, step.onchip_bytes});

    if (timeline) {
      const std::string label = step_label(workload, s, chosen.model);
      const std::string& model_name = workload.models[chosen.model].name;
      TraceEvent decision;
      decision.name = "pick " + label;
      decision.category = "decision";
      decision.track = "host:scheduler";
      decision.start_us = now;
      decision.args = {{"policy", std::string(policy.name())},
                       {"candidates", std::to_string(candidates.size())},
                       {"compute_free_at_us", number_text(state.compute_free_at_us)},
                       {"memory_free_at_us", number_text(state.memory_free_at_us)},
                       {"onchip_used_bytes", std::to_string(state.onchip_used_bytes)}};
      timeline->add(std::move(decision));
      const std::map<std::string, std::string> step_args = {{"model", model_name},
                                                            {"request", std::to_string(s.request)},
                                                            {"step", std::to_string(s.step)},
                                                            {"step_name", step.name},
                                                            {"onchip_bytes", std::to_string(step.onchip_bytes)}};
      TraceEvent memory{label, "step", "sim:memory", s.memory_start_us, step.memory_us, step_args};
      memory.args["phase"] = "memory";
      memory.args["capacity_wait_us"] = number_text(s.memory_start_us - s.decided_us);
      timeline->add(std::move(memory));
      TraceEvent compute{label, "step", "sim:compute", s.compute_start_us, step.compute_us, step_args};
      compute.args["phase"] = "compute";
      timeline->add(std::move(compute));
    }
    schedule.push_back(s);
  }
  return schedule;
}

}  // namespace

SimResult simulate(const Workload& workload, SchedulingPolicy& policy) {
  const std::vector<std::size_t> model_of = detail::check_workload(workload);
  SimResult result;
  policy.reset();  // a policy reused across runs starts each one afresh: same input, same result
  result.schedule = run_schedule(workload, model_of, policy, &result.timeline);

  // Per request: first memory start, last compute end.
  result.requests.resize(workload.requests.size());
  for (std::size_t r = 0; r < workload.requests.size(); ++r) {
    RequestResult& rr = result.requests[r];
    rr.request = r;
    rr.model = workload.requests[r].model;
    rr.arrival_us = workload.requests[r].arrival_us;
  }
  for (const ScheduledStep& s : result.schedule) {
    RequestResult& rr = result.requests[s.request];
    if (s.step == 0) rr.start_us = s.memory_start_us;
    rr.finish_us = std::max(rr.finish_us, s.compute_end_us);
  }
  for (RequestResult& rr : result.requests) rr.latency_us = rr.finish_us - rr.arrival_us;

  double first_arrival = std::numeric_limits<double>::infinity(), last_end = 0;
  for (const SimRequest& request : workload.requests) first_arrival = std::min(first_arrival, request.arrival_us);
  for (const ScheduledStep& s : result.schedule) {
    const SimStep& step = workload.models[model_of[s.request]].steps[s.step];
    result.compute_busy_us += step.compute_us;
    result.memory_busy_us += step.memory_us;
    last_end = std::max(last_end, s.compute_end_us);
  }
  if (!workload.requests.empty()) result.makespan_us = last_end - first_arrival;
  result.compute_idle_us = result.makespan_us - result.compute_busy_us;
  result.memory_idle_us = result.makespan_us - result.memory_busy_us;

  // Bounds. Resource: neither resource can finish before it has done all of its work. Chain: no
  // request can finish before its arrival plus the time its model takes alone on the device (same
  // capacity, nothing else running), measured from the first arrival.
  result.resource_bound_us = std::max(result.compute_busy_us, result.memory_busy_us);
  std::vector<double> alone_us(workload.models.size(), -1.0);
  for (std::size_t r = 0; r < workload.requests.size(); ++r) {
    const std::size_t m = model_of[r];
    if (alone_us[m] < 0) {
      Workload alone;
      alone.models = {workload.models[m]};
      alone.requests = {SimRequest{workload.models[m].name, 0, 0}};
      alone.onchip_capacity_bytes = workload.onchip_capacity_bytes;
      FifoPolicy only_candidate;
      alone_us[m] = run_schedule(alone, {0}, only_candidate, nullptr).back().compute_end_us;
    }
    result.chain_bound_us =
        std::max(result.chain_bound_us, workload.requests[r].arrival_us - first_arrival + alone_us[m]);
  }
  result.lower_bound_us = std::max(result.resource_bound_us, result.chain_bound_us);

  for (const RequestResult& rr : result.requests) {
    TraceEvent life;
    life.name = rr.model + "#" + std::to_string(rr.request);
    life.category = "request";
    life.track = "request:" + rr.model;
    life.start_us = rr.arrival_us;
    life.duration_us = rr.latency_us;
    life.args = {{"arrival_us", number_text(rr.arrival_us)},
                 {"start_us", number_text(rr.start_us)},
                 {"finish_us", number_text(rr.finish_us)},
                 {"latency_us", number_text(rr.latency_us)},
                 {"priority", std::to_string(workload.requests[rr.request].priority)}};
    result.timeline.add(std::move(life));
  }
  return result;
}

}  // namespace loom::sim
