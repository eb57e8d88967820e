// LoadedModel: kernels created and weights uploaded once per model.
#include "runtime/loaded_model.hpp"

#include <algorithm>
#include <cstring>

#include "profile/fingerprint.hpp"

namespace loom::runtime {

LoadedModel::LoadedModel(const Model& model, std::string name, std::size_t index, DType compute_dtype,
                         backend::Backend& device, MemoryPool& pool, const plan::DevicePeaks& peaks)
    : name_(std::move(name)), index_(index) {
  plan_ = plan::compile(model, compute_dtype, peaks);
  stream_ = device.create_stream(0);

  // Kernels, created from the planned dtypes and shapes.
  std::size_t workspace = 0;
  kernels_.resize(plan_.nodes.size());
  for (std::size_t n = 0; n < plan_.nodes.size(); ++n) {
    const auto& pn = plan_.nodes[n];
    if (pn.is_alias) continue;
    backend::KernelSpec spec;
    spec.node = &plan_.model.nodes[pn.node_index];
    auto describe = [&](int id) {
      if (id < 0) return backend::TensorDesc{DType::f32, Shape{}, false};
      const auto& v = plan_.values[static_cast<std::size_t>(id)];
      return backend::TensorDesc{v.dtype, v.shape, true};
    };
    for (int id : pn.inputs) {
      spec.inputs.push_back(describe(id));
      const Tensor* constant = nullptr;
      if (id >= 0) {
        auto it = plan_.model.initializers.find(plan_.values[static_cast<std::size_t>(id)].name);
        if (it != plan_.model.initializers.end()) constant = &it->second;
      }
      spec.constants.push_back(constant);
    }
    for (int id : pn.outputs) spec.outputs.push_back(describe(id));
    try {
      kernels_[n] = device.create_kernel(spec);
    } catch (const Error& e) {
      throw Error(e.code(), "model '" + name_ + "': " + e.what());
    }
    workspace = std::max(workspace, kernels_[n]->workspace_bytes());
  }
  if (workspace > 0) workspace_ = pool.acquire(workspace);

  // Weights: one block, converted to the device dtype, uploaded once.
  if (plan_.weight_bytes > 0) {
    weights_ = pool.acquire(plan_.weight_bytes);
    std::vector<std::byte> staging(plan_.weight_bytes);
    for (const auto& [wname, tensor] : plan_.model.initializers) {
      const auto& v = plan_.values[static_cast<std::size_t>(plan_.value_ids.at(wname))];
      const Tensor converted = tensor.dtype() == v.dtype ? tensor : tensor.to(v.dtype);
      std::memcpy(staging.data() + v.offset, converted.data(), converted.bytes());
    }
    stream_->copy_to_device(weights_.get(), staging.data(), staging.size());
    stream_->synchronize();
  }

  info_.name = name_;
  info_.inputs = plan_.model.inputs;
  info_.outputs = plan_.output_infos;
  for (const auto& st : plan_.steps) step_labels_.push_back(name_ + "/" + st.name);
  for (const auto& st : plan_.steps) info_.steps.push_back(st.info);
  info_.weight_bytes = plan_.weight_bytes;
  info_.activation_bytes = plan_.arena_bytes;
  info_.workspace_bytes = workspace;
}

void LoadedModel::apply_profile(const profile::ActiveProfile& active) {
  info_.fingerprint = profile::plan_fingerprint(plan_);
  std::vector<StepInfo> steps;
  for (const auto& st : plan_.steps) steps.push_back(st.info);
  info_.cost_source = profile::apply_profile(active, info_.fingerprint, plan_.compute_dtype, steps);
  for (std::size_t s = 0; s < steps.size(); ++s) plan_.steps[s].info = steps[s];
  info_.steps = std::move(steps);
}

void* LoadedModel::address(int id, void* arena) const {
  if (id < 0) return nullptr;
  const auto& v = plan_.storage_of(id);
  auto* base = static_cast<std::byte*>(v.storage == plan::Storage::weight ? weights_.get() : arena);
  return base + v.offset;
}

void LoadedModel::run_step(std::size_t step, void* arena) {
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  for (std::size_t n : plan_.steps.at(step).nodes) {
    const auto& pn = plan_.nodes[n];
    if (pn.is_alias) continue;
    inputs.clear();
    outputs.clear();
    for (int id : pn.inputs) inputs.push_back(address(id, arena));
    for (int id : pn.outputs) outputs.push_back(address(id, arena));
    kernels_[n]->run(inputs, outputs, workspace_.get(), *stream_);
  }
}

}  // namespace loom::runtime
