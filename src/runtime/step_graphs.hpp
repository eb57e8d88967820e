// The graphs a model's Steps were captured into, by request arena. A Step's kernels read and write
// the weights, the model's workspace (fixed at load) and the request's arena, so a capture made for
// one arena base address replays correctly for any later request given the same base; the memory
// pool hands the same blocks out again and again, so bases repeat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.hpp"

namespace loom::runtime {

class StepGraphs {
 public:
  static constexpr std::size_t kDefaultMaxArenas = 8;

  // `capturable[s]` is false for Steps never worth capturing (no kernels). At most `max_arenas`
  // (>= 1) arenas keep graphs; the least recently used one loses all of its graphs when another
  // arena needs room.
  StepGraphs(std::vector<bool> capturable, std::size_t max_arenas = kDefaultMaxArenas);

  // Whether Step `step` may be captured: it has kernels and no capture of it has failed.
  bool capturable(std::size_t step) const { return capturable_.at(step); }
  // A Step runs once with plain launches before its first capture: that first run creates what
  // kernels create lazily (cuBLAS and cuDNN handles, the cuBLAS workspace, lazily loaded device
  // code), none of which may happen while a capture is open.
  bool warmed(std::size_t step) const { return warmed_.at(step); }
  void mark_warmed(std::size_t step) { warmed_.at(step) = true; }
  // A capture of `step` failed: it runs with plain launches from now on.
  void disable(std::size_t step);

  // The graph captured for (step, arena), marking the arena most recently used; nullptr if none.
  backend::Graph* find(std::size_t step, const void* arena);
  // Keeps `graph` for (step, arena), evicting the least recently used arena when full.
  void store(std::size_t step, const void* arena, std::unique_ptr<backend::Graph> graph);

  std::size_t arena_count() const noexcept { return entries_.size(); }
  std::size_t graph_count() const noexcept;
  std::size_t max_arenas() const noexcept { return max_arenas_; }

 private:
  struct Entry {
    const void* arena = nullptr;
    std::uint64_t last_use = 0;
    std::vector<std::unique_ptr<backend::Graph>> graphs;  // per Step; null where not captured
  };
  Entry* entry_for(const void* arena);

  std::vector<bool> capturable_;
  std::vector<bool> warmed_;
  std::size_t max_arenas_;
  std::uint64_t clock_ = 0;
  std::vector<Entry> entries_;  // a handful: a linear scan beats any index
};

}  // namespace loom::runtime
