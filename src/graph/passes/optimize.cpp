// Placeholder until the passes land: checks that shapes are static and returns the model as is.
#include "loom/model.hpp"

namespace loom {

bool has_symbolic_dims(const Model& model) noexcept {
  for (const auto& input : model.inputs)
    for (auto d : input.shape.dims())
      if (d < 0) return true;
  return false;
}

Model optimize(const Model& model, const OptimizeOptions&, OptimizeReport* report) {
  if (report) report->nodes_before = report->nodes_after = model.nodes.size();
  return model;
}

}  // namespace loom
