// A model as the runtime holds it: its compiled plan, one kernel per op on the executor's backend,
// its weights on the device (uploaded once), its kernels' shared scratch and its own stream.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "plan/compiled_model.hpp"
#include "profile/active_profile.hpp"
#include "runtime/memory_pool.hpp"

namespace loom::runtime {

class LoadedModel {
 public:
  // Compiles `model`, creates its kernels, uploads its weights (converted to the compute dtype)
  // and creates its stream. Throws what compile() and Backend::create_kernel() throw.
  // `peaks` are the figures the roofline estimates use: the device profile's, else the backend's.
  LoadedModel(const Model& model, std::string name, std::size_t index, DType compute_dtype, backend::Backend& device,
              MemoryPool& pool, const plan::DevicePeaks& peaks);

  const std::string& name() const noexcept { return name_; }
  std::size_t index() const noexcept { return index_; }
  const plan::CompiledModel& plan() const noexcept { return plan_; }
  const ModelInfo& info() const noexcept { return info_; }
  // "<model>/<step>": the NVTX range name of Step `step`, built once at load.
  const std::string& step_label(std::size_t step) const { return step_labels_.at(step); }
  backend::Stream& stream() noexcept { return *stream_; }

  // Sets every Step's measured_us and probe slowdowns from the profile's entry with this model's
  // fingerprint (when it has one with as many Steps), and info().fingerprint and cost_source.
  void apply_profile(const profile::ActiveProfile& active);

  // Enqueues the kernels of Step `step` for the request whose arena starts at `arena`.
  void run_step(std::size_t step, void* arena);
  // Device address of value `id` for a request whose arena starts at `arena`.
  void* address(int id, void* arena) const;

 private:
  std::string name_;
  std::size_t index_;
  plan::CompiledModel plan_;
  ModelInfo info_;
  std::vector<std::unique_ptr<backend::OpKernel>> kernels_;  // per planned node; null for views
  PooledBuffer weights_;
  PooledBuffer workspace_;
  std::unique_ptr<backend::Stream> stream_;
  std::vector<std::string> step_labels_;
};

}  // namespace loom::runtime
