// Executing one model across processors (PlacementOptions::execute, docs/placement.md): the
// assignment of nodes to processors read from the placement, and the one rule that orders work on
// one processor's stream after work on another's.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/model.hpp"
#include "loom/placement.hpp"
#include "plan/compiled_model.hpp"

namespace loom::runtime {

class MemoryPool;

// A processor a model runs on: its backend and the pool its memory comes from (the executor opens
// each once and owns both; processor 0 is the executor's device).
struct ProcessorHandle {
  backend::Backend* backend = nullptr;
  MemoryPool* pool = nullptr;
};

// What a LoadedModel executed across processors is built from.
struct AcrossProcessors {
  plan::ProcessorAssignment assignment;
  std::vector<ProcessorHandle> handles;  // per assignment.processors
};

// The processors `placement` (of `model`, the loaded graph) uses, `home` (the executor's device, as
// Backend::name() spells it) first and the others in order of first use, each node's index among
// them, and which is the host (from `library`'s figures, else the built-in defaults'). A model
// placed on `home` alone gets processors == {home}. Throws Error(invalid_argument) when the
// placement did not run or does not cover the graph.
plan::ProcessorAssignment assign_processors(const ModelPlacement& placement, const Model& model,
                                            const std::string& home, const FunctionLibrary& library);

// Makes `consumer`'s later work start after `event` (recorded on a stream of `producer`): the
// consumer's stream waits for it where its backend can wait for that backend's events (the same
// backend, or one that runs on the host: a CPU stream waits for any event), and otherwise the
// calling thread waits for it (a CUDA stream cannot wait for a CPU event).
void order_after(backend::Stream& consumer, const backend::Backend& consumer_backend, backend::Event& event,
                 const backend::Backend& producer);

}  // namespace loom::runtime
