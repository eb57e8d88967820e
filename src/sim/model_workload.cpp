// Simulated models from real ones: the planner's Steps with their roofline or measured costs, the
// live bytes of the memory plan at each boundary and the kernels each Step launches on a GPU.
#include "loom/error.hpp"
#include "loom/sim.hpp"

#include "plan/compiled_model.hpp"
#include "sched/step_cost.hpp"
#include "sim/kernel_estimate.hpp"

namespace loom::sim {

std::vector<SimModel> sim_models(const std::vector<Model>& models, DType compute_dtype, double peak_flops,
                                 double peak_bandwidth) {
  if (!(peak_flops > 0) || !(peak_bandwidth > 0))
    throw Error(ErrorCode::invalid_argument, "sim_models: peak FLOP/s and bandwidth must be positive");
  std::vector<SimModel> result;
  for (const Model& model : models) {
    const plan::CompiledModel compiled =
        plan::compile(model, compute_dtype, plan::DevicePeaks{peak_flops, peak_bandwidth});
    SimModel sim;
    sim.name = model.name;
    for (const plan::Step& step : compiled.steps)
      sim.steps.push_back({step.name, step.info.compute_us, step.info.memory_us, step.info.working_set_bytes,
                           step.info.live_bytes_after, std::nullopt,
                           estimate_kernels(step.info, compute_dtype == DType::f16)});
    result.push_back(std::move(sim));
  }
  return result;
}

SimModel sim_model(const ModelInfo& info) {
  SimModel sim;
  sim.name = info.name;
  for (const StepInfo& step : info.steps) {
    SimStep s{step.name,
              step.compute_us,
              step.memory_us,
              step.working_set_bytes,
              step.live_bytes_after,
              step.cancellation_point,
              estimate_kernels(step, info.compute_dtype == DType::f16)};
    // The sim runs a Step's memory phase, then its compute phase: the measured time split in the
    // roofline's proportion keeps the Step alone as long as measured.
    const StepCost cost = sched::scheduling_cost(step);
    s.compute_us = cost.compute_us;
    s.memory_us = cost.memory_us;
    sim.steps.push_back(std::move(s));
  }
  return sim;
}

std::vector<SimRequest> periodic_requests(const std::vector<SimModel>& models, std::size_t per_model,
                                          double interval_us) {
  std::vector<SimRequest> requests;
  for (std::size_t i = 0; i < per_model; ++i)
    for (const SimModel& model : models) requests.push_back({model.name, static_cast<double>(i) * interval_us, 0});
  return requests;
}

}  // namespace loom::sim
