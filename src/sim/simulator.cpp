// The discrete-event accelerator model of sim.hpp: one loop over scheduling points, each asking
// the policy for one Step among the requests priority lets run, and placing its memory and
// compute phases on the two resources (and any dump or restore on the host link, any host stage
// on the host CPU).
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loom/error.hpp"
#include "loom/sim.hpp"
#include "plan/tiling.hpp"
#include "sched/admission.hpp"
#include "sched/cancellation.hpp"
#include "sched/device_shadow.hpp"
#include "sim/gpu_engine.hpp"
#include "sim/workload_check.hpp"

namespace loom::sim {
namespace {

using detail::number_text;

constexpr double kNever = std::numeric_limits<double>::infinity();

// A dispatched Step holding on-chip bytes until its compute ends.
struct Reservation {
  double release_us = 0;
  std::uint64_t bytes = 0;
};

// What the simulator needs of each model beyond its Steps.
struct ModelFacts {
  std::vector<bool> points;  // cancellation point after each Step
  std::uint64_t arena = 0;   // device memory a request holds while it runs
  // Per Step, its tiles when it exceeds the on-chip capacity (the accelerator), else empty.
  std::vector<std::vector<plan::Tile>> tiles;
  // Per Step, the on-chip bytes it needs to start: its largest tile's, or all of them.
  std::vector<std::uint64_t> onchip_need;
};

ModelFacts model_facts(const SimModel& model, std::uint64_t capacity, const SimOptions& options) {
  ModelFacts facts{cancellation_points(model, options), arena_bytes(model), {}, {}};
  for (const SimStep& step : model.steps) {
    std::vector<plan::Tile> tiles;
    if (!options.gpu && capacity > 0 && step.onchip_bytes > capacity)
      tiles = plan::tile_step(step.compute_us, step.memory_us, step.onchip_bytes, {capacity, options.tile_buffers});
    std::uint64_t need = step.onchip_bytes;
    if (!tiles.empty()) {
      need = 0;
      for (const plan::Tile& tile : tiles) need = std::max(need, tile.onchip_bytes);
    }
    facts.tiles.push_back(std::move(tiles));
    facts.onchip_need.push_back(need);
  }
  return facts;
}

// Per-request progress while simulating. Requests get ids as they arrive.
struct RequestState {
  std::size_t workload_index = 0;  // into Workload::requests
  std::size_t model = 0;           // into Workload::models
  int priority = 0;
  double arrival_us = 0;            // when it became live (after `follows` and its host stage)
  std::size_t next_step = 0;        // first Step not yet dispatched
  std::uint32_t passed_over = 0;    // times its next Step was offered and not chosen
  double last_compute_end_us = 0;   // of its latest dispatched Step
  bool holds_arena = false;         // its arena is in device memory (see admit(); not while dumped or released)
  bool waiting_for_memory = false;  // arrived without its arena and has not had it since
  bool dumped = false;              // its live bytes are on the host
  std::ptrdiff_t open_pause = -1;   // index into the preemptions while paused
  bool started() const { return next_step > 0; }
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
  return std::max(t, now);
}

// One run of the model: the loop over scheduling points. Records phases, decisions and
// preemptions into `timeline` when it is given.
class Engine {
 public:
  Engine(const Workload& workload, const std::vector<std::size_t>& model_of, const std::vector<ModelFacts>& facts,
         const SimOptions& options, SchedulingPolicy& policy, Timeline* timeline)
      : workload_(workload),
        model_of_(model_of),
        facts_(facts),
        options_(options),
        policy_(policy),
        timeline_(timeline) {
    if (options.gpu) {
      gpu_.emplace(*options.gpu);
      AcceleratorState empty;
      empty.onchip_capacity_bytes = options.gpu->l2_bytes;  // as the executor: the backend's on-chip size
      empty.one_stream_per_model = true;                    // each model's kernels go to the model's stream
      shadow_ = sched::DeviceShadow(empty);
    }
    arrival_of.assign(workload.requests.size(), 0.0);
    submitted_of.assign(workload.requests.size(), 0.0);
    host_start_of.assign(workload.requests.size(), 0.0);
    followers_.resize(workload.requests.size());
  }

  void run();

  std::vector<ScheduledStep> schedule;  // in dispatch order
  std::vector<Preemption> preemptions;  // in the order the pauses began
  std::vector<double> arrival_of;       // per Workload::requests, actual
  double host_link_busy_us = 0;
  std::vector<double> submitted_of, host_start_of;  // per workload request
  double host_cpu_busy_us = 0;

 private:
  void submit(double at, std::size_t index);
  void run_host_stages(double now);
  void admit(double now);
  void release_arenas(double now);
  std::uint64_t arena_in_use() const;
  sched::AdmissionView view(const RequestState& r) const;
  void fill_views();
  bool arena_fits(std::size_t live_index) const;
  void choose_candidates(double now);
  void dispatch(std::size_t pick, double now, const AcceleratorState& state);
  // The accelerator: the Step's memory and compute phases (each tile's, in order, for a tiled
  // Step), holding their on-chip bytes until their compute ends.
  ScheduledStep run_on_accelerator(RequestState& chosen, const SimStep& step, double now, double ready);
  void dump(std::size_t id, double now);
  // The GPU model (SimOptions::gpu): Steps launched by the one host dispatcher thread onto their
  // model's stream, finishing when the block scheduler says.
  ScheduledStep launch_on_gpu(RequestState& chosen, const SimStep& step, double now, double ready);
  void gpu_advance(double now);
  void gpu_step_done(std::size_t record);
  double restore(RequestState& r, double ready);
  std::uint64_t paused_live_bytes(const RequestState& r) const {
    return workload_.models[r.model].steps[r.next_step - 1].live_bytes_after;
  }
  std::string label(const RequestState& r) const {
    return workload_.models[r.model].name + "#" + std::to_string(r.workload_index);
  }
  void add_event(const std::string& what, const RequestState& r, double start, double duration, bool host_link,
                 std::map<std::string, std::string> args);

  const Workload& workload_;
  const std::vector<std::size_t>& model_of_;
  const std::vector<ModelFacts>& facts_;
  const SimOptions& options_;
  SchedulingPolicy& policy_;
  Timeline* timeline_;

  std::vector<std::vector<std::size_t>> followers_;      // per request: the requests that follow it
  std::set<std::pair<double, std::size_t>> pending_;     // (arrival, workload index) known, not yet live
  std::set<std::pair<double, std::size_t>> host_queue_;  // (submission, workload index) awaiting the host CPU
  std::vector<RequestState> requests_;                   // by id (order of arrival)
  std::vector<std::size_t> live_;                        // ids of arrived requests with Steps left, ascending
  std::vector<std::size_t> holders_;                     // ids holding their arena
  std::vector<double> finish_of_;                        // by id: last compute end once all Steps are dispatched
  std::vector<Reservation> held_;                        // on-chip reservations ending after the current point
  std::vector<std::size_t> candidate_ids_;               // ids offered at the current point
  std::vector<sched::AdmissionView> views_;              // of live_, for the rules
  sched::Admission admission_;
  std::vector<StepCandidate> candidates_;
  double memory_free_at_ = 0, compute_free_at_ = 0, host_link_free_at_ = 0;
  double dump_release_at_ = 0;  // arenas freed by dumps are free once the dumps end
  double host_cpu_free_at_ = 0;

  // GPU model state.
  struct GpuStep {
    std::size_t schedule_index = 0;  // into schedule
    std::size_t request = 0;         // id
    std::vector<std::size_t> kernels;
    std::size_t unfinished = 0;
    bool last = false;  // the request's last Step
  };
  std::optional<detail::GpuBlockScheduler> gpu_;
  std::vector<GpuStep> gpu_steps_;
  std::vector<std::size_t> step_of_kernel_;  // kernel id -> index into gpu_steps_
  std::deque<std::size_t> inflight_;         // gpu_steps_ launched and not seen finished, in launch order
  double host_free_at_ = 0;                  // the dispatcher thread is free to decide again
  sched::DeviceShadow shadow_;               // the AcceleratorState the policy sees, as the executor keeps it
};

// A request is submitted: with a host stage it queues for the host CPU, otherwise it is known to
// arrive then.
void Engine::submit(double at, std::size_t index) {
  submitted_of[index] = at;
  host_start_of[index] = at;
  if (workload_.requests[index].host_us > 0)
    host_queue_.insert({at, index});
  else
    pending_.insert({at, index});
}

// Starts the host stages submitted by `now` on the host CPU, one at a time in submission order;
// each request arrives when its stage ends. Every submission at or before `now` is known by then
// (a follower is submitted when its predecessor's last Step is dispatched, at or before its end),
// so first-submitted-first-served holds.
void Engine::run_host_stages(double now) {
  while (!host_queue_.empty() && host_queue_.begin()->first <= now) {
    const auto [submitted, index] = *host_queue_.begin();
    host_queue_.erase(host_queue_.begin());
    const double host_us = workload_.requests[index].host_us;
    const double start = std::max(submitted, host_cpu_free_at_);
    host_cpu_free_at_ = start + host_us;
    host_cpu_busy_us += host_us;
    host_start_of[index] = start;
    pending_.insert({host_cpu_free_at_, index});
    if (timeline_) {
      const std::string& model = workload_.requests[index].model;
      timeline_->add({"host " + model + "#" + std::to_string(index),
                      "host",
                      "sim:host-cpu",
                      start,
                      host_us,
                      {{"model", model},
                       {"request", std::to_string(index)},
                       {"submitted_us", number_text(submitted)},
                       {"wait_us", number_text(start - submitted)}}});
    }
  }
}

void Engine::admit(double now) {
  while (!pending_.empty() && pending_.begin()->first <= now) {
    const auto [arrival, index] = *pending_.begin();
    pending_.erase(pending_.begin());
    RequestState state;
    state.workload_index = index;
    state.model = model_of_[index];
    state.priority = workload_.requests[index].priority;
    state.arrival_us = arrival;
    arrival_of[index] = arrival;
    // As the executor's pre-process stage: a request takes its arena on arrival when it fits and
    // no earlier request is waiting for memory; otherwise it waits until the rules give it some.
    const std::uint64_t need = facts_[state.model].arena;
    const bool someone_waits =
        std::any_of(live_.begin(), live_.end(), [&](std::size_t id) { return requests_[id].waiting_for_memory; });
    const bool fits =
        options_.device_memory_bytes == 0 || (!someone_waits && arena_in_use() + need <= options_.device_memory_bytes);
    state.holds_arena = fits;
    state.waiting_for_memory = !fits;
    const std::size_t id = requests_.size();
    if (fits) holders_.push_back(id);
    live_.push_back(id);
    requests_.push_back(state);
    finish_of_.push_back(kNever);
  }
}

void Engine::release_arenas(double now) {
  std::erase_if(holders_, [&](std::size_t id) {
    if (finish_of_[id] > now) return false;
    requests_[id].holds_arena = false;
    return true;
  });
}

std::uint64_t Engine::arena_in_use() const {
  std::uint64_t used = 0;
  for (std::size_t id : holders_) used += facts_[requests_[id].model].arena;
  return used;
}

// What the rules of sched/admission.hpp see of a request (the simulator does not pause inside
// Steps).
sched::AdmissionView Engine::view(const RequestState& r) const {
  sched::AdmissionView v;
  v.priority = r.priority;
  v.started = r.started();
  v.at_cancellation_point = r.started() && facts_[r.model].points[r.next_step - 1];
  v.holds_arena = r.holds_arena;
  v.paused = r.open_pause >= 0;
  return v;
}

void Engine::fill_views() {
  views_.clear();
  for (std::size_t id : live_) views_.push_back(view(requests_[id]));
}

// Whether live_[live_index] (not holding its arena) could take it now, with the memory of the
// requests the rules would evict for it.
bool Engine::arena_fits(std::size_t live_index) const {
  const std::uint64_t need = facts_[requests_[live_[live_index]].model].arena;
  if (options_.device_memory_bytes == 0 || need == 0) return true;
  std::uint64_t available = options_.device_memory_bytes - arena_in_use();
  for (std::size_t victim : sched::eviction_order(views_, live_index))
    available += facts_[requests_[live_[victim]].model].arena;
  return available >= need;
}

// The ids offered to the policy at `now` and the pauses that begin here, by the rules of
// sched/admission.hpp (docs/simulator.md, "Priorities and preemption").
void Engine::choose_candidates(double now) {
  candidate_ids_.clear();
  fill_views();
  sched::decide_admission(views_, options_.preemption, admission_);
  for (std::size_t i : admission_.pause) {
    RequestState& r = requests_[live_[i]];
    Preemption p;
    p.request = r.workload_index;
    p.after_step = r.next_step - 1;
    p.paused_at_us = std::max(now, r.last_compute_end_us);
    r.open_pause = static_cast<std::ptrdiff_t>(preemptions.size());
    preemptions.push_back(p);
    add_event("pause", r, p.paused_at_us, 0, false,
              {{"after_step", std::to_string(p.after_step)}, {"decision", std::to_string(schedule.size())}});
    views_[i].paused = true;  // a victim from now on
  }
  for (std::size_t i : admission_.offered) candidate_ids_.push_back(live_[i]);
  if (admission_.draining) return;
  // The requests that need memory are offered when it fits (the dumps happen once one is picked).
  for (std::size_t i : admission_.need_memory)
    if (arena_fits(i)) candidate_ids_.push_back(live_[i]);
  std::sort(candidate_ids_.begin(), candidate_ids_.end());  // arrival order
}

void Engine::add_event(const std::string& what, const RequestState& r, double start, double duration, bool host_link,
                       std::map<std::string, std::string> args) {
  if (!timeline_) return;
  const std::string& model = workload_.models[r.model].name;
  args["request"] = std::to_string(r.workload_index);
  args["model"] = model;
  TraceEvent event{what + " " + label(r), "preempt", "request:" + model, start, duration, args};
  if (host_link) {
    TraceEvent link = event;
    link.track = "sim:host-link";
    timeline_->add(std::move(link));
  }
  timeline_->add(std::move(event));
}

void Engine::dump(std::size_t id, double now) {
  RequestState& q = requests_[id];
  Preemption& p = preemptions[static_cast<std::size_t>(q.open_pause)];
  p.bytes_dumped = paused_live_bytes(q);
  p.dump_start_us = std::max({host_link_free_at_, q.last_compute_end_us, now});
  p.dump_end_us = p.dump_start_us + static_cast<double>(p.bytes_dumped) / options_.host_link_bytes_per_us;
  host_link_free_at_ = p.dump_end_us;
  host_link_busy_us += p.dump_end_us - p.dump_start_us;
  dump_release_at_ = std::max(dump_release_at_, p.dump_end_us);
  q.dumped = true;
  q.holds_arena = false;
  std::erase(holders_, id);
  add_event("dump", q, p.dump_start_us, p.dump_end_us - p.dump_start_us, true,
            {{"bytes", std::to_string(p.bytes_dumped)},
             {"after_step", std::to_string(p.after_step)},
             {"decision", std::to_string(schedule.size())}});
}

double Engine::restore(RequestState& r, double ready) {
  Preemption& p = preemptions[static_cast<std::size_t>(r.open_pause)];
  p.bytes_restored = paused_live_bytes(r);
  p.restore_start_us = std::max(host_link_free_at_, ready);
  p.restore_end_us = p.restore_start_us + static_cast<double>(p.bytes_restored) / options_.host_link_bytes_per_us;
  host_link_free_at_ = p.restore_end_us;
  host_link_busy_us += p.restore_end_us - p.restore_start_us;
  r.dumped = false;
  add_event("restore", r, p.restore_start_us, p.restore_end_us - p.restore_start_us, true,
            {{"bytes", std::to_string(p.bytes_restored)},
             {"after_step", std::to_string(p.after_step)},
             {"decision", std::to_string(schedule.size())}});
  return p.restore_end_us;
}

void Engine::dispatch(std::size_t pick, double now, const AcceleratorState& state) {
  const std::size_t id = candidate_ids_[pick];
  RequestState& chosen = requests_[id];
  const SimStep& step = workload_.models[chosen.model].steps[chosen.next_step];

  // Device memory: a request takes its arena at its first Step and after a dump; paused
  // lower-priority requests are dumped (lowest priority first, then the latest arrival) until
  // it fits.
  double ready = now;
  if (!chosen.holds_arena) {
    const std::uint64_t need = facts_[chosen.model].arena;
    if (options_.device_memory_bytes > 0 && need > 0) {
      std::uint64_t free = options_.device_memory_bytes - arena_in_use();
      if (free < need) {
        // The views are those the decision saw: nothing has changed since.
        const auto at = std::find(live_.begin(), live_.end(), id);
        for (std::size_t victim : sched::eviction_order(views_, static_cast<std::size_t>(at - live_.begin()))) {
          if (free >= need) break;
          const std::size_t q = live_[victim];
          free += facts_[requests_[q].model].arena;
          if (requests_[q].started()) {
            dump(q, now);
          } else {  // gives its arena back at once; it takes one again when it may run
            requests_[q].holds_arena = false;
            std::erase(holders_, q);
          }
        }
      }
      ready = std::max(ready, dump_release_at_);
    }
    chosen.holds_arena = true;
    chosen.waiting_for_memory = false;
    holders_.push_back(id);
    if (chosen.dumped) ready = restore(chosen, ready);
  }

  ScheduledStep s;
  if (gpu_) {
    s = launch_on_gpu(chosen, step, now, ready);
  } else {
    s = run_on_accelerator(chosen, step, now, ready);
  }
  chosen.passed_over = 0;  // its next Step is a new candidate
  if (chosen.open_pause >= 0) {
    // GPU model: it resumes when its next Step's launch ends (its kernels' start is not known yet).
    const double resumed = gpu_ ? host_free_at_ : s.memory_start_us;
    preemptions[static_cast<std::size_t>(chosen.open_pause)].resumed_at_us = resumed;
    chosen.open_pause = -1;
    add_event("resume", chosen, resumed, 0, false,
              {{"step", std::to_string(s.step)}, {"decision", std::to_string(schedule.size())}});
  }
  ++chosen.next_step;
  if (chosen.next_step == workload_.models[chosen.model].steps.size()) {
    std::erase(live_, id);
    if (!gpu_) {  // the GPU model learns the end when the last kernel finishes (gpu_step_done)
      finish_of_[id] = s.compute_end_us;
      for (std::size_t f : followers_[chosen.workload_index])
        submit(s.compute_end_us + workload_.requests[f].arrival_us, f);
    } else {
      gpu_steps_.back().last = true;
    }
  }

  if (timeline_) {
    const std::string step_name = step_label(workload_, s, chosen.model);
    const std::string& model_name = workload_.models[chosen.model].name;
    TraceEvent decision;
    decision.name = "pick " + step_name;
    decision.category = "decision";
    decision.track = "host:scheduler";
    decision.start_us = now;
    decision.args = {{"policy", std::string(policy_.name())},
                     {"candidates", std::to_string(candidates_.size())},
                     {"compute_free_at_us", number_text(state.compute_free_at_us)},
                     {"memory_free_at_us", number_text(state.memory_free_at_us)},
                     {"onchip_used_bytes", std::to_string(state.onchip_used_bytes)}};
    timeline_->add(std::move(decision));
    const std::map<std::string, std::string> step_args = {{"model", model_name},
                                                          {"request", std::to_string(s.request)},
                                                          {"step", std::to_string(s.step)},
                                                          {"step_name", step.name},
                                                          {"onchip_bytes", std::to_string(step.onchip_bytes)}};
    if (!gpu_ && s.tiles.empty()) {  // the GPU model adds its kernels when they have run (gpu_step_done)
      TraceEvent memory{step_name, "step", "sim:memory", s.memory_start_us, step.memory_us, step_args};
      memory.args["phase"] = "memory";
      memory.args["capacity_wait_us"] = number_text(s.memory_start_us - ready);
      timeline_->add(std::move(memory));
      TraceEvent compute{step_name, "step", "sim:compute", s.compute_start_us, step.compute_us, step_args};
      compute.args["phase"] = "compute";
      timeline_->add(std::move(compute));
    } else if (!gpu_) {
      // A tiled Step: one memory and one compute event per tile, named "<step> tile k/n".
      double memory_ready = ready;
      for (std::size_t k = 0; k < s.tiles.size(); ++k) {
        const ScheduledTile& tile = s.tiles[k];
        const std::string tile_name =
            step_name + " tile " + std::to_string(k + 1) + "/" + std::to_string(s.tiles.size());
        std::map<std::string, std::string> tile_args = step_args;
        tile_args["onchip_bytes"] = std::to_string(tile.onchip_bytes);
        tile_args["tile"] = std::to_string(k);
        tile_args["tiles"] = std::to_string(s.tiles.size());
        TraceEvent memory{
            tile_name, "tile", "sim:memory", tile.memory_start_us, tile.memory_end_us - tile.memory_start_us,
            tile_args};
        memory.args["phase"] = "memory";
        memory.args["capacity_wait_us"] = number_text(tile.memory_start_us - memory_ready);
        timeline_->add(std::move(memory));
        TraceEvent compute{
            tile_name, "tile", "sim:compute", tile.compute_start_us, tile.compute_end_us - tile.compute_start_us,
            tile_args};
        compute.args["phase"] = "compute";
        timeline_->add(std::move(compute));
        memory_ready = tile.memory_end_us;
      }
    } else {
      timeline_->add({"launch " + step_name, "launch", "host:dispatcher", now, host_free_at_ - now, step_args});
    }
  }
  schedule.push_back(s);
  if (!gpu_) return;

  // As the executor's dispatcher (bound_inflight): finished Steps leave the count wherever they
  // are; past max_inflight_steps under a bounded policy the thread waits for the oldest
  // unfinished one.
  inflight_.push_back(gpu_steps_.size() - 1);
  const auto finished = [&](std::size_t k) { return gpu_steps_[k].unfinished == 0; };
  gpu_advance(host_free_at_);
  std::erase_if(inflight_, finished);
  while (policy_.bounded() && inflight_.size() > options_.max_inflight_steps) {
    const GpuStep& oldest = gpu_steps_[inflight_.front()];
    for (std::size_t k : oldest.kernels) host_free_at_ = std::max(host_free_at_, gpu_->run_until_finished(k));
    gpu_advance(host_free_at_);
    std::erase_if(inflight_, finished);
  }
  if (inflight_.empty()) shadow_.idle_at(host_free_at_);
}

ScheduledStep Engine::run_on_accelerator(RequestState& chosen, const SimStep& step, double now, double ready) {
  ScheduledStep s;
  s.request = chosen.workload_index;
  s.step = chosen.next_step;
  s.decided_us = now;
  const std::uint64_t capacity = workload_.onchip_capacity_bytes;
  const std::vector<plan::Tile>& tiles = facts_[chosen.model].tiles[chosen.next_step];
  if (tiles.empty()) {
    s.memory_start_us = capacity_ready_at(held_, step.onchip_bytes, capacity, ready);
    s.memory_end_us = s.memory_start_us + step.memory_us;
    s.compute_start_us = std::max({s.memory_end_us, compute_free_at_, chosen.last_compute_end_us});
    s.compute_end_us = s.compute_start_us + step.compute_us;
    if (step.onchip_bytes > 0) held_.push_back({s.compute_end_us, step.onchip_bytes});
  } else {
    // Tile k loads once the memory resource has loaded tile k - 1 and its bytes fit beside what
    // is held (earlier tiles included), and computes after tile k - 1 has computed.
    double memory_ready = ready;
    double compute_ready = std::max(compute_free_at_, chosen.last_compute_end_us);
    for (const plan::Tile& tile : tiles) {
      ScheduledTile t;
      t.onchip_bytes = tile.onchip_bytes;
      t.memory_start_us = capacity_ready_at(held_, tile.onchip_bytes, capacity, memory_ready);
      t.memory_end_us = t.memory_start_us + tile.memory_us;
      t.compute_start_us = std::max(t.memory_end_us, compute_ready);
      t.compute_end_us = t.compute_start_us + tile.compute_us;
      if (tile.onchip_bytes > 0) held_.push_back({t.compute_end_us, tile.onchip_bytes});
      memory_ready = t.memory_end_us;
      compute_ready = t.compute_end_us;
      s.tiles.push_back(t);
    }
    s.memory_start_us = s.tiles.front().memory_start_us;
    s.memory_end_us = s.tiles.back().memory_end_us;
    s.compute_start_us = s.tiles.front().compute_start_us;
    s.compute_end_us = s.tiles.back().compute_end_us;
  }
  memory_free_at_ = s.memory_end_us;
  compute_free_at_ = s.compute_end_us;
  chosen.last_compute_end_us = s.compute_end_us;
  return s;
}

ScheduledStep Engine::launch_on_gpu(RequestState& chosen, const SimStep& step, double now, double ready) {
  const GpuDevice& device = *options_.gpu;
  ScheduledStep s;
  s.request = chosen.workload_index;
  s.step = chosen.next_step;
  s.decided_us = now;
  GpuStep record;
  record.schedule_index = schedule.size();
  record.request = static_cast<std::size_t>(&chosen - requests_.data());
  const std::vector<KernelSpec> kernels =
      step.kernels.empty() ? std::vector<KernelSpec>{default_kernel(step, device)} : step.kernels;
  double t = std::max(now, ready);
  if (options_.cuda_graphs) t += device.graph_launch_us;
  gpu_->advance_to(now);
  for (const KernelSpec& kernel : kernels) {
    if (!options_.cuda_graphs) t += device.launch_us;
    // One stream per model, as the executor's; its priority is the request's class.
    record.kernels.push_back(gpu_->launch(kernel, static_cast<int>(chosen.model), chosen.priority, t));
    step_of_kernel_.push_back(gpu_steps_.size());
  }
  record.unfinished = record.kernels.size();
  host_free_at_ = t;
  gpu_steps_.push_back(std::move(record));
  // Times are filled in when the kernels have run; until then the Step counts as unfinished.
  s.memory_start_us = s.compute_start_us = t;
  s.memory_end_us = s.compute_end_us = kNever;
  shadow_.launch({step.compute_us, step.memory_us, step.onchip_bytes});
  return s;
}

// Runs the GPU up to `now` and takes note of every Step that finished by then.
void Engine::gpu_advance(double now) {
  gpu_->advance_to(now);
  for (std::size_t k : gpu_->take_finished()) {
    GpuStep& record = gpu_steps_[step_of_kernel_[k]];
    if (--record.unfinished == 0) gpu_step_done(step_of_kernel_[k]);
  }
}

void Engine::gpu_step_done(std::size_t index) {
  const GpuStep& record = gpu_steps_[index];
  ScheduledStep& s = schedule[record.schedule_index];
  double start = kNever, end = 0;
  for (std::size_t k : record.kernels) {
    start = std::min(start, gpu_->start_us(k));
    end = std::max(end, gpu_->end_us(k));
  }
  s.memory_start_us = s.compute_start_us = start;
  s.memory_end_us = s.compute_end_us = end;
  RequestState& r = requests_[record.request];
  r.last_compute_end_us = std::max(r.last_compute_end_us, end);
  if (timeline_) {
    const SimModel& model = workload_.models[r.model];
    for (std::size_t i = 0; i < record.kernels.size(); ++i) {
      const std::size_t k = record.kernels[i];
      timeline_->add({step_label(workload_, s, r.model) + (record.kernels.size() > 1 ? "." + std::to_string(i) : ""),
                      "kernel",
                      "gpu:stream " + model.name,
                      gpu_->start_us(k),
                      gpu_->end_us(k) - gpu_->start_us(k),
                      {{"model", model.name},
                       {"request", std::to_string(s.request)},
                       {"step", std::to_string(s.step)},
                       {"step_name", model.steps[s.step].name}}});
    }
  }
  if (!record.last) return;
  finish_of_[record.request] = end;
  for (std::size_t f : followers_[r.workload_index]) submit(end + workload_.requests[f].arrival_us, f);
}

void Engine::run() {
  std::size_t steps_left = 0;
  for (std::size_t r = 0; r < workload_.requests.size(); ++r) {
    const SimRequest& request = workload_.requests[r];
    if (request.follows)
      followers_[*request.follows].push_back(r);
    else
      submit(request.arrival_us, r);
    steps_left += workload_.models[model_of_[r]].steps.size();
  }
  schedule.reserve(steps_left);

  while (steps_left > 0) {
    // A scheduling point: the memory resource can take the next Step. When no request may run
    // (none live, or none whose arena fits), time jumps to the next arrival, host-stage
    // submission or arena release.
    double now = gpu_ ? host_free_at_ : memory_free_at_;
    for (;;) {
      if (gpu_) gpu_advance(now);
      run_host_stages(now);
      admit(now);
      release_arenas(now);
      choose_candidates(now);
      if (!candidate_ids_.empty()) break;
      double next = pending_.empty() ? kNever : pending_.begin()->first;
      if (!host_queue_.empty()) next = std::min(next, host_queue_.begin()->first);
      for (std::size_t id : holders_) next = std::min(next, finish_of_[id]);
      if (gpu_) next = std::min(next, gpu_->next_event_time());
      if (!(next > now) || next == kNever)
        throw Error(ErrorCode::internal, "simulator: no request can run at " + number_text(now) + " us");
      now = next;
    }

    candidates_.clear();
    for (std::size_t id : candidate_ids_) {
      const RequestState& r = requests_[id];
      const SimModel& model = workload_.models[r.model];
      const SimStep& step = model.steps[r.next_step];
      StepCandidate c;
      c.request_id = id;
      c.model_index = r.model;
      c.step_index = r.next_step;
      c.step_count = model.steps.size();
      c.arrival_us = r.arrival_us;
      c.compute_us = step.compute_us;
      c.memory_us = step.memory_us;
      // A tiled Step needs its largest tile on chip at once, not its whole working set.
      c.bytes = facts_[r.model].onchip_need[r.next_step];
      c.working_set_bytes = c.bytes;
      c.passed_over = r.passed_over;
      c.priority = r.priority;
      c.lookahead_count = std::min(kMaxLookahead, model.steps.size() - r.next_step - 1);
      for (std::size_t k = 0; k < c.lookahead_count; ++k) {
        const SimStep& ahead = model.steps[r.next_step + 1 + k];
        c.lookahead[k] = {ahead.compute_us, ahead.memory_us, facts_[r.model].onchip_need[r.next_step + 1 + k]};
      }
      candidates_.push_back(c);
    }
    std::erase_if(held_, [&](const Reservation& r) { return r.release_us <= now; });

    AcceleratorState state;
    if (gpu_) {  // as the executor: the launched Steps placed by their estimated costs
      shadow_.advance_to(now);
      state = shadow_.state();
    } else {
      state.now_us = now;
      state.compute_free_at_us = compute_free_at_;
      state.memory_free_at_us = memory_free_at_;
      for (const auto& r : held_) state.onchip_used_bytes += r.bytes;
      state.onchip_capacity_bytes = workload_.onchip_capacity_bytes;
    }

    const std::size_t pick = policy_.pick(candidates_, state);
    if (pick >= candidates_.size())
      throw Error(ErrorCode::internal, "policy '" + std::string(policy_.name()) + "' picked candidate " +
                                           std::to_string(pick) + " of " + std::to_string(candidates_.size()));
    for (std::size_t i = 0; i < candidate_ids_.size(); ++i)
      if (i != pick) ++requests_[candidate_ids_[i]].passed_over;
    dispatch(pick, now, state);
    --steps_left;
  }
  if (gpu_) {
    gpu_->run_until_idle();
    gpu_advance(gpu_->now());
  }
}

// The work of one Step on each resource: its compute_us and memory_us; with the GPU model and
// kernels given, their flops at the GPU's peak and their bytes at its DRAM bandwidth.
std::pair<double, double> step_work_us(const SimStep& step, const SimOptions& options) {
  if (!options.gpu || step.kernels.empty()) return {step.compute_us, step.memory_us};
  const GpuDevice& gpu = *options.gpu;
  double compute = 0, memory = 0;
  for (const KernelSpec& k : step.kernels) {
    const double peak = k.f16 && gpu.peak_flops_f16 > 0 ? gpu.peak_flops_f16 : gpu.peak_flops_f32;
    compute += k.flops / peak * 1e6;
    memory += static_cast<double>(k.bytes) / gpu.dram_bytes_per_s * 1e6;
  }
  return {compute, memory};
}

}  // namespace

std::vector<bool> cancellation_points(const SimModel& model, const SimOptions& options) {
  const std::size_t n = model.steps.size();
  std::vector<bool> points(n, false);
  bool given = false;
  for (const SimStep& step : model.steps) given = given || step.cancellation_point.has_value();
  if (given) {
    for (std::size_t i = 0; i + 1 < n; ++i) points[i] = model.steps[i].cancellation_point.value_or(false);
    return points;
  }
  // A Step alone on the device takes about the larger of its phases: its load overlaps the
  // previous Step's compute.
  std::vector<double> step_us(n);
  std::vector<std::uint64_t> live(n);
  for (std::size_t i = 0; i < n; ++i) {
    step_us[i] = std::max(model.steps[i].compute_us, model.steps[i].memory_us);
    live[i] = model.steps[i].live_bytes_after;
  }
  return sched::choose_cancellation_points(step_us, live,
                                           {options.cancellation_interval_us, options.cancellation_max_live_bytes});
}

std::uint64_t arena_bytes(const SimModel& model) {
  std::uint64_t peak = 0;
  for (const SimStep& step : model.steps) peak = std::max(peak, step.live_bytes_after);
  return peak;
}

LatencySummary summarize_latencies(std::vector<double> latencies_us) {
  LatencySummary summary;
  if (latencies_us.empty()) return summary;
  std::sort(latencies_us.begin(), latencies_us.end());
  const auto n = static_cast<double>(latencies_us.size());
  const auto nearest_rank = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::clamp(std::ceil(p / 100.0 * n), 1.0, n));
    return latencies_us[rank - 1];
  };
  summary.requests = latencies_us.size();
  summary.mean_us = std::accumulate(latencies_us.begin(), latencies_us.end(), 0.0) / n;
  summary.p50_us = nearest_rank(50);
  summary.p99_us = nearest_rank(99);
  summary.max_us = latencies_us.back();
  return summary;
}

SimResult simulate(const Workload& workload, SchedulingPolicy& policy) { return simulate(workload, policy, {}); }

SimResult simulate(const Workload& workload, SchedulingPolicy& policy, const SimOptions& options) {
  const std::vector<std::size_t> model_of = detail::check_workload(workload);
  if (!std::isfinite(options.host_link_bytes_per_us) || !(options.host_link_bytes_per_us > 0))
    throw Error(ErrorCode::invalid_argument,
                "simulator options: host_link_bytes_per_us must be a positive number, got " +
                    number_text(options.host_link_bytes_per_us));
  if (options.gpu && options.device_memory_bytes > 0)
    throw Error(ErrorCode::invalid_argument,
                "simulator options: device_memory_bytes (request arenas, dumps and restores) is not modelled with the "
                "GPU device model; leave it 0");
  if (options.gpu && options.max_inflight_steps == 0)
    throw Error(ErrorCode::invalid_argument, "simulator options: max_inflight_steps must be at least 1");
  if (options.tile_buffers == 0)
    throw Error(ErrorCode::invalid_argument, "simulator options: tile_buffers must be at least 1");
  std::vector<ModelFacts> facts;
  for (const SimModel& model : workload.models)
    facts.push_back(model_facts(model, workload.onchip_capacity_bytes, options));
  if (options.device_memory_bytes > 0)
    for (std::size_t r = 0; r < workload.requests.size(); ++r)
      if (facts[model_of[r]].arena > options.device_memory_bytes)
        throw Error(ErrorCode::invalid_argument,
                    "workload: requests[" + std::to_string(r) + "].model: model '" + workload.requests[r].model +
                        "' needs an arena of " + std::to_string(facts[model_of[r]].arena) +
                        " bytes (its largest live_bytes_after), more than device_memory_bytes = " +
                        std::to_string(options.device_memory_bytes));

  SimResult result;
  result.options = options;
  policy.reset();  // a policy reused across runs starts each one afresh: same input, same result
  Engine engine(workload, model_of, facts, options, policy, &result.timeline);
  engine.run();
  result.schedule = std::move(engine.schedule);
  result.preemptions = std::move(engine.preemptions);
  result.host_link_busy_us = engine.host_link_busy_us;
  result.host_cpu_busy_us = engine.host_cpu_busy_us;

  // Per request: first memory start, last compute end.
  result.requests.resize(workload.requests.size());
  for (std::size_t r = 0; r < workload.requests.size(); ++r) {
    RequestResult& rr = result.requests[r];
    rr.request = r;
    rr.model = workload.requests[r].model;
    rr.priority = workload.requests[r].priority;
    rr.arrival_us = engine.arrival_of[r];
    rr.submitted_us = engine.submitted_of[r];
    rr.host_start_us = engine.host_start_of[r];
  }
  for (const ScheduledStep& s : result.schedule) {
    RequestResult& rr = result.requests[s.request];
    if (s.step == 0) rr.start_us = s.memory_start_us;
    rr.finish_us = std::max(rr.finish_us, s.compute_end_us);
  }
  for (RequestResult& rr : result.requests) rr.latency_us = rr.finish_us - rr.arrival_us;

  double first_arrival = std::numeric_limits<double>::infinity(), last_end = 0;
  for (const RequestResult& rr : result.requests) first_arrival = std::min(first_arrival, rr.arrival_us);
  for (const ScheduledStep& s : result.schedule) {
    const auto [compute_us, memory_us] = step_work_us(workload.models[model_of[s.request]].steps[s.step], options);
    result.compute_busy_us += compute_us;
    result.memory_busy_us += memory_us;
    last_end = std::max(last_end, s.compute_end_us);
  }
  if (!workload.requests.empty()) result.makespan_us = last_end - first_arrival;
  result.compute_idle_us = result.makespan_us - result.compute_busy_us;
  result.memory_idle_us = result.makespan_us - result.memory_busy_us;

  // Bounds. Resource: neither resource can finish before it has done all of its work. Chain: no
  // request can finish before its arrival plus the time its model takes alone on the device (same
  // capacity, nothing else running), measured from the first arrival.
  result.resource_bound_us = std::max(result.compute_busy_us, result.memory_busy_us);
  result.model_alone_us.assign(workload.models.size(), 0.0);
  for (std::size_t m = 0; m < workload.models.size(); ++m) {
    Workload alone;
    alone.models = {workload.models[m]};
    alone.requests = {SimRequest{workload.models[m].name, 0, 0}};
    alone.onchip_capacity_bytes = workload.onchip_capacity_bytes;
    const std::vector<ModelFacts> alone_facts = {facts[m]};
    const std::vector<std::size_t> alone_model_of = {0};
    SimOptions alone_options = options;
    alone_options.device_memory_bytes = 0;  // one request: its arena fits (checked above for every requested model)
    FifoPolicy only_candidate;
    Engine solo(alone, alone_model_of, alone_facts, alone_options, only_candidate, nullptr);
    solo.run();
    result.model_alone_us[m] = solo.schedule.back().compute_end_us;
  }
  for (std::size_t r = 0; r < workload.requests.size(); ++r)
    result.chain_bound_us = std::max(
        result.chain_bound_us, result.requests[r].arrival_us - first_arrival + result.model_alone_us[model_of[r]]);
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
                 {"priority", std::to_string(rr.priority)}};
    result.timeline.add(std::move(life));
  }
  return result;
}

}  // namespace loom::sim
