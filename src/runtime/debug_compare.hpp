// The debug mode's compare side (ExecutorOptions::debug = compare): every loaded model gets a
// reference twin, the same optimized model compiled in f32 for a CPU backend of its own; as each
// Step of a request completes on the device, the dispatcher has the twin run the same Step on the
// request's own twin arena and every value the Step produced is compared on the host.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/debug.hpp"
#include "loom/executor.hpp"
#include "runtime/memory_pool.hpp"

namespace loom::runtime {

class LoadedModel;
struct Request;

// A request's side of the comparison, owned by the request so that it ends with it however the
// request ends (its twin arena goes back to the twin pool).
struct DebugRequestState {
  PooledBuffer twin_arena;     // the twin's arena for this request; empty once it stops comparing
  std::vector<Tensor> inputs;  // as the device received them, in the model's dtypes: the report's
};

// Checks ExecutorOptions::debug and debug_tolerance: Error(invalid_argument) for a mode outside the
// enum or a negative or non-finite tolerance. debug = cpu computes in f32 (the CPU's only dtype).
void check_debug_options(ExecutorOptions& options);
// The tolerance compare mode uses: debug_tolerance, else the compute dtype's default.
DebugTolerance debug_tolerance(const ExecutorOptions& options);
// Executor::device_name(): the device's name, saying when the debug mode changes what runs.
std::string debug_device_name(const ExecutorOptions& options, const std::string& device_name);

class DebugCompare {
 public:
  // Opens the reference CPU backend (one of its own: its memory is apart from the device's even
  // when the device is a CPU too). `device_name` names the compared device in the reports.
  DebugCompare(DebugTolerance tolerance, std::string device_name);
  ~DebugCompare();
  DebugCompare(const DebugCompare&) = delete;
  DebugCompare& operator=(const DebugCompare&) = delete;

  // Load path, before the executor adds `device_model` to its models: builds its twin from
  // `model`, the optimized model it was compiled from. Throws Error(unsupported) naming the model
  // and Step when the twin's Steps, or the nodes and output shapes in them, differ from the
  // device's (there would be nothing to compare Step by Step), Error(invalid_argument) when a
  // model of that name has a twin already (a load of the same name racing this one), and what
  // LoadedModel's constructor throws.
  void add_model(const Model& model, const LoadedModel& device_model);
  // Dispatcher thread: Step `step` of `request` completed on the device (its launch returned; this
  // waits for the model's stream). At the request's first Step the twin's arena is taken and
  // filled with the request's inputs. Runs the Step on the twin, compares, and on the first
  // divergence records it and stops comparing the request. Throws Error naming the model, request
  // and Step when the twin cannot run (its allocation or kernel failed).
  void step_completed(Request& request, std::size_t step);

  DebugReport report() const;
  // ExecutorStats::debug_steps_compared and debug_divergences.
  void add_counts(ExecutorStats& stats) const;

 private:
  struct Twin;
  Twin& twin_of(const LoadedModel& device_model);
  void compare_step(Request& request, Twin& twin, std::size_t step);

  const DebugTolerance tolerance_;
  const std::string device_name_;
  // Declared in this order so that the twins go first, then the pool, then the backend.
  std::unique_ptr<backend::Backend> cpu_;
  std::unique_ptr<MemoryPool> pool_;
  mutable std::mutex mutex_;                            // twins_ (the map, and each summary), divergences_
  std::map<std::string, std::unique_ptr<Twin>> twins_;  // by model name: models are never unloaded
  std::vector<DebugDivergence> divergences_;            // the first kMaxDebugDivergences
};

}  // namespace loom::runtime
