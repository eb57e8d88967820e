// The Executor: loads models once, then runs requests for all of them through a pipeline of
// pre-process, execute and post-process stages, each on its own thread.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "loom/model.hpp"
#include "loom/tensor.hpp"

namespace loom {

struct ExecutorOptions {
  // "auto" (CUDA when a GPU is present, else CPU), "cpu", "cuda" or "cuda:N".
  std::string device = "auto";
  // A name from policy_names().
  std::string policy = "fifo";
  // Precision of weights and activations on the device: f32, or f16 (CUDA only). Requests are
  // always given and returned in the model's own dtypes; the pre/post stages convert.
  DType compute_dtype = DType::f32;
  // Requests each pipeline queue holds before submit() blocks.
  std::size_t queue_capacity = 64;
  // Steps launched on the device and not yet finished, across all models.
  std::size_t max_inflight_steps = 8;
};

struct RequestOptions {
  int priority = 0;  // recorded on the request; the FIFO policy ignores it
};

// What compiling a model produced, per Step: the unit the scheduler moves (one layer or a block
// of consecutive ops), its work, and the memory plan at its boundary.
struct StepInfo {
  std::string name;
  std::vector<std::string> ops;         // op types, in order
  double flops = 0;
  std::uint64_t weight_bytes = 0;       // initializers read
  std::uint64_t activation_bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t working_set_bytes = 0;  // weights + activations touched
  std::uint64_t live_bytes_after = 0;   // request buffers live at the boundary after this Step
  double compute_us = 0;                // roofline estimate on the executor's device
  double memory_us = 0;
};

struct ModelInfo {
  std::string name;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<StepInfo> steps;
  std::uint64_t weight_bytes = 0;      // uploaded once at load
  std::uint64_t activation_bytes = 0;  // per-request arena (inputs, intermediates, outputs)
  std::uint64_t workspace_bytes = 0;   // scratch shared by the model's kernels
};

struct ExecutorStats {
  std::uint64_t requests_submitted = 0;
  std::uint64_t requests_completed = 0;
  std::uint64_t requests_failed = 0;
  std::uint64_t pool_bytes_reserved = 0;  // device memory the pool holds
  std::uint64_t pool_allocations = 0;     // blocks handed out
  std::uint64_t pool_reuses = 0;          // of those, served from the free set
};

using Outputs = std::vector<Tensor>;
using Callback = std::function<void(std::exception_ptr error, Outputs outputs)>;

class Executor {
 public:
  // Throws Error(invalid_argument) for an unknown device or policy, Error(backend) when the
  // requested device cannot be opened.
  explicit Executor(ExecutorOptions options = {});
  ~Executor();  // finishes accepted requests, then stops the stage threads
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Compiles `model` into Steps, uploads its weights once and gives it a stream. The model is
  // known by `name` (default: model.name). Throws Error(invalid_argument) for a duplicate name and
  // the compile errors of infer_shapes() and of the backend (unsupported ops).
  void load(const Model& model, std::string name = "");
  std::vector<std::string> models() const;
  ModelInfo model_info(const std::string& name) const;

  // Queues a request. Inputs are checked here: a wrong count, dtype or shape, an unknown model or
  // a call after shutdown() throws loom::Error and nothing is queued. Failures while running
  // (e.g. out of memory) arrive through the future. Blocks while the first queue is full.
  std::future<Outputs> submit(const std::string& model, std::vector<Tensor> inputs,
                              RequestOptions options = {});
  // As above, but `done` is called on the post-process thread with an error or the outputs.
  void submit(const std::string& model, std::vector<Tensor> inputs, Callback done,
              RequestOptions options = {});

  // Stops accepting requests and waits for every accepted one to finish. Idempotent.
  void shutdown();

  std::string device_name() const;   // e.g. "cpu", "NVIDIA H100 80GB HBM3"
  std::string backend_name() const;  // "cpu" or "cuda"
  std::string policy_name() const;
  ExecutorStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Number of CUDA devices this build can use: 0 without the CUDA backend or without a GPU.
int cuda_device_count() noexcept;

// The library version, "major.minor.patch".
const char* version() noexcept;

}  // namespace loom
