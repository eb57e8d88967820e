// StepGraphs: a small LRU of per-arena graph tables.
#include "runtime/step_graphs.hpp"

#include <algorithm>
#include <string>

#include "loom/error.hpp"

namespace loom::runtime {

StepGraphs::StepGraphs(std::vector<bool> capturable, std::size_t max_arenas)
    : capturable_(std::move(capturable)), warmed_(capturable_.size(), false), max_arenas_(max_arenas) {
  if (max_arenas_ == 0) throw Error(ErrorCode::internal, "StepGraphs: max_arenas must be at least 1");
}

void StepGraphs::disable(std::size_t step) {
  capturable_.at(step) = false;
  for (auto& entry : entries_) entry.graphs[step].reset();
}

StepGraphs::Entry* StepGraphs::entry_for(const void* arena) {
  for (auto& entry : entries_)
    if (entry.arena == arena) return &entry;
  return nullptr;
}

backend::Graph* StepGraphs::find(std::size_t step, const void* arena) {
  Entry* entry = entry_for(arena);
  if (!entry) return nullptr;
  entry->last_use = ++clock_;
  return entry->graphs.at(step).get();
}

void StepGraphs::store(std::size_t step, const void* arena, std::unique_ptr<backend::Graph> graph) {
  if (step >= capturable_.size())
    throw Error(ErrorCode::internal,
                "StepGraphs::store: Step " + std::to_string(step) + " of " + std::to_string(capturable_.size()));
  Entry* entry = entry_for(arena);
  if (!entry) {
    if (entries_.size() == max_arenas_) {
      // Destroying an instance that is still running is safe: the driver frees it on completion.
      auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                     [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
      entries_.erase(oldest);
    }
    entries_.push_back(Entry{arena, 0, {}});
    entry = &entries_.back();
    entry->graphs.resize(capturable_.size());
  }
  entry->last_use = ++clock_;
  entry->graphs[step] = std::move(graph);
}

std::size_t StepGraphs::graph_count() const noexcept {
  std::size_t count = 0;
  for (const auto& entry : entries_)
    count += static_cast<std::size_t>(
        std::count_if(entry.graphs.begin(), entry.graphs.end(), [](const auto& g) { return g != nullptr; }));
  return count;
}

}  // namespace loom::runtime
