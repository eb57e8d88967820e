// The node-to-processor assignment of a model executed across processors, and cross-stream order.
#include "runtime/across_processors.hpp"

#include <algorithm>

#include "loom/error.hpp"
#include "placement/figures.hpp"

namespace loom::runtime {

plan::ProcessorAssignment assign_processors(const ModelPlacement& placement, const Model& model,
                                            const std::string& home, const FunctionLibrary& library) {
  if (!placement.enabled)
    throw Error(ErrorCode::invalid_argument,
                "placement.execute needs the placement pass (placement.enabled = false): nothing to execute");
  if (placement.graph_nodes != model.nodes.size() || placement.nodes.size() < model.nodes.size())
    throw Error(ErrorCode::internal, "placement of " + std::to_string(placement.graph_nodes) +
                                         " nodes for a graph of " + std::to_string(model.nodes.size()));
  plan::ProcessorAssignment a;
  a.processors.push_back(home);
  for (std::size_t n = 0; n < model.nodes.size(); ++n) {
    const std::string& name = placement.nodes[n].processor;
    auto it = std::find(a.processors.begin(), a.processors.end(), name);
    if (it == a.processors.end()) it = a.processors.insert(a.processors.end(), name);
    a.node_processor.push_back(static_cast<int>(it - a.processors.begin()));
  }
  for (const std::string& name : a.processors) a.host.push_back(placement::processor_figures(library, name).host);
  return a;
}

void order_after(backend::Stream& consumer, const backend::Backend& consumer_backend, backend::Event& event,
                 const backend::Backend& producer) {
  if (&consumer_backend == &producer || !consumer_backend.capabilities().accelerator)
    consumer.wait(event);
  else
    event.synchronize();
}

}  // namespace loom::runtime
