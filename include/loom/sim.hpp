// The accelerator simulator (MISSION.md §1): a deterministic discrete-event model of a device with
// a compute resource, a memory-access resource and a limited on-chip capacity, driven by the same
// SchedulingPolicy objects as the executor, so a schedule can be tested exactly without a GPU.
//
// The model. Each Step of a request has a memory phase (memory_us on the memory resource: bringing
// its weights and inputs on chip) followed by a compute phase (compute_us on the compute resource).
// At every scheduling point the policy picks one candidate — the next Step of each live request —
// and that Step is dispatched:
//   - its memory phase starts when the memory resource is free and on-chip capacity holds its
//     onchip_bytes (reserved at memory start, released at its compute end); while capacity is
//     short the memory resource waits (memory idle);
//   - its compute phase starts when its memory phase has ended, the compute resource is free and
//     the request's previous Step has finished computing (compute idle otherwise).
// Both resources serve Steps in dispatch order. A scheduling point occurs each time the memory
// resource can take the next Step; a request is live from its arrival time until its last Step is
// dispatched, and its next Step is a candidate as soon as the one before it is dispatched (so a
// Step's load may overlap the compute of its predecessor). When no request is live at a
// scheduling point, time jumps to the next arrival. Candidates are offered in arrival order
// (request_id: position in arrival order, ties in list order). docs/simulator.md has the details.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "loom/executor.hpp"
#include "loom/model.hpp"
#include "loom/policy.hpp"
#include "loom/tensor.hpp"
#include "loom/trace.hpp"

namespace loom::sim {

struct SimStep {
  std::string name;
  double compute_us = 0;
  double memory_us = 0;
  std::uint64_t onchip_bytes = 0;  // held on chip from its memory start to its compute end
};

struct SimModel {
  std::string name;
  std::vector<SimStep> steps;
};

struct SimRequest {
  std::string model;
  double arrival_us = 0;
  int priority = 0;
};

struct Workload {
  std::vector<SimModel> models;
  std::vector<SimRequest> requests;
  std::uint64_t onchip_capacity_bytes = 0;  // 0 = unlimited
};

// One dispatched Step in the schedule.
struct ScheduledStep {
  std::size_t request = 0;  // index into Workload::requests
  std::size_t step = 0;
  double decided_us = 0;  // the scheduling point at which the policy chose it
  double memory_start_us = 0, memory_end_us = 0;
  double compute_start_us = 0, compute_end_us = 0;
};

struct RequestResult {
  std::size_t request = 0;
  std::string model;
  double arrival_us = 0, start_us = 0, finish_us = 0, latency_us = 0;
};

struct SimResult {
  std::vector<ScheduledStep> schedule;  // in dispatch order
  std::vector<RequestResult> requests;  // in Workload::requests order
  double makespan_us = 0;               // first arrival to last compute end
  double compute_busy_us = 0, memory_busy_us = 0;
  double compute_idle_us = 0, memory_idle_us = 0;  // makespan minus busy
  double resource_bound_us = 0;                    // max(total compute, total memory)
  double chain_bound_us = 0;                       // max over requests of arrival + its model alone on the device
  double lower_bound_us = 0;                       // max of the two bounds (measured from the first arrival)
  Timeline timeline;  // tracks "sim:memory", "sim:compute", "host:scheduler", "request:<model>"
};

// Runs `workload` under `policy`. Throws Error(invalid_argument) for a request naming an unknown
// model, a negative time or a Step larger than the on-chip capacity (also: a duplicate model
// name, a model without Steps, a non-finite time), naming the field; Error(internal) when the
// policy answers an index outside the candidates. Same input, same result.
SimResult simulate(const Workload& workload, SchedulingPolicy& policy);

// The workload file (docs/workload-format.md): JSON with "models", "requests" and optional
// "onchip_capacity_bytes". Throws Error(invalid_argument) naming the file and the field.
Workload read_workload(const std::string& path);
Workload parse_workload(std::istream& in, const std::string& source_name);

// The result as the JSON document loom-sim --json prints.
std::string result_json(const SimResult& result, const Workload& workload, const std::string& policy);

// `workload` as a workload file (one entry per request); parse_workload reads a valid workload
// with at least one request back equal.
std::string workload_json(const Workload& workload);

// --- Workloads from real models ---

// `models` compiled into Steps (the planner's, as the executor runs them) for a device computing
// in `compute_dtype` with these peak figures: each Step's roofline estimate, compute_us = FLOPs /
// peak_flops and memory_us = bytes read and written / peak_bandwidth; onchip_bytes = its working
// set. SimModel names are Model::name. Throws Error(invalid_argument) for a peak that is not
// positive, and the errors of infer_shapes().
std::vector<SimModel> sim_models(const std::vector<Model>& models, DType compute_dtype, double peak_flops,
                                 double peak_bandwidth);

// The Steps an Executor compiled (Executor::model_info): the roofline estimates, except that a
// Step with a measured time (StepInfo::measured_us > 0, from the device profile) takes that time,
// split between memory and compute in proportion to its roofline memory_us and compute_us (all
// compute when both are 0), so the Step alone on the simulated device lasts what was measured.
// onchip_bytes = working_set_bytes.
SimModel sim_model(const ModelInfo& info);

// `per_model` requests of every model, the i-th request of each arriving at i * interval_us;
// listed by arrival, models in the given order at equal times.
std::vector<SimRequest> periodic_requests(const std::vector<SimModel>& models, std::size_t per_model,
                                          double interval_us);

}  // namespace loom::sim
