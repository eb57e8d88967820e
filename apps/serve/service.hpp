// loom-serve's server layer, below its two front ends (KServe v2 over HTTP and over gRPC): the
// model repository, one Executor per device, dynamic batching, and the protocol's requests and
// answers as plain C++ values. Built on Loom's public API only (include/loom/), as any service
// embedding Loom would be. docs/serve.md describes the repository, the config keys and the
// protocol mapping.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loom/executor.hpp"
#include "loom/model_info.hpp"
#include "loom/tensor.hpp"

namespace loom::serve {

// The protocol's datatype names ("FP32", "FP16", "BF16", "FP64", "INT8" ... "INT64", "UINT8" ...
// "UINT64", "BOOL") for Loom's dtypes, and back; nullopt for a name Loom has no dtype for
// ("BYTES").
std::string_view kserve_datatype(DType dtype) noexcept;
std::optional<DType> dtype_from_kserve(std::string_view datatype) noexcept;

// What the protocol says went wrong, mapped to HTTP statuses and gRPC codes by the front ends:
// bad_request 400 / INVALID_ARGUMENT, not_found 404 / NOT_FOUND, unavailable 503 / UNAVAILABLE
// (model not ready, server shutting down), timeout 504 / DEADLINE_EXCEEDED, too_large 413 /
// RESOURCE_EXHAUSTED, internal 500 / INTERNAL.
enum class Status { ok, bad_request, not_found, unavailable, timeout, too_large, internal };
struct Failure {
  Status status = Status::internal;
  std::string message;  // names the model, input, ... as the front end returns it to the client
};

// REPO/<model>/config.json, every key optional; an unknown key or a wrong type is an error
// naming the file and the key (docs/serve.md).
struct ModelConfig {
  Priority priority = Priority::normal;  // "priority": "background" | "normal" | "urgent"
  // "max_batch_size": 0 = no batching. > 0: the model has a symbolic batch dim (the first axis of
  // every input and output, "batch_dim" names it; default: the first input's first dim_param),
  // loaded with the range 1..max_batch_size, and queued requests of the model are joined along
  // axis 0 up to that many rows, waiting at most "max_queue_delay_us" for more.
  std::int64_t max_batch_size = 0;
  std::string batch_dim;
  double max_queue_delay_us = 100;
  std::map<std::string, std::int64_t> dims;    // "dims": {"seq": 16}: symbolic dims bound at load
  std::map<std::string, DimRange> dim_ranges;  // "dim_ranges": {"seq": [1, 16, 128]} (min, opt, max)
  std::optional<int> device;                   // "device": GPU index (several GPUs); default least loaded
  double timeout_ms = 0;                       // "timeout_ms": default request timeout, 0 = none
  int stream_priority = 0;                     // "stream_priority": LoadOptions::stream_priority
};

// An input or output as model metadata shows it: a dim left open (batch, dim_ranges) is -1.
struct TensorMetadata {
  std::string name;
  std::string datatype;  // kserve_datatype()
  std::vector<std::int64_t> shape;
};

// What a batched model's batcher did so far (all zero without batching): joined requests
// submitted to the executor, the client requests they held, the most requests and rows in one.
struct BatchCounts {
  std::uint64_t batches = 0;
  std::uint64_t requests = 0;
  std::uint64_t largest_batch = 0;
  std::int64_t largest_batch_rows = 0;
};

// One model version of the repository, as found and loaded.
struct ModelEntry {
  std::string name;
  std::string version;  // the highest numeric version folder with a model.onnx
  std::string path;     // REPO/<model>/<version>/model.onnx
  ModelConfig config;
  int device = -1;  // index into Service::devices(), -1 when not loaded
  bool ready = false;
  std::string error;                            // why it is not ready (unreadable config, load_onnx or load() error)
  std::vector<TensorMetadata> inputs, outputs;  // valid when ready
  BatchCounts batching;                         // at the time of the models()/model() call
  // The executor's plans for this model (ModelInfo::shape_plans): one per request shape seen,
  // and with batching over the batch dim alone, one per batch size from load (docs/serve.md).
  std::size_t shape_plans = 0;
};

struct ServiceOptions {
  std::string repository;                                 // the model repository folder
  std::string device = "auto";                            // "auto", "cpu", "cuda" (every GPU), "cuda:N"
  ExecutorOptions executor;                               // applied to every executor (its device is set per GPU)
  std::size_t max_request_bytes = std::size_t{64} << 20;  // larger bodies: too_large
};

struct InferInput {
  std::string name;
  Tensor tensor;  // shape and dtype as the client declared them, data decoded
};
struct RequestedOutput {
  std::string name;
  bool binary = false;  // HTTP binary tensor extension: this output goes back as raw bytes
};
struct InferRequest {
  std::string model;
  std::string version;  // "" = the served one
  std::string id;       // echoed back
  std::vector<InferInput> inputs;
  std::vector<RequestedOutput> outputs;  // empty = every output, as JSON (HTTP)
  std::optional<Priority> priority;      // parameter "priority"; default the model's config
  double timeout_ms = 0;                 // parameter "timeout" (microseconds in Triton's clients) or config
};
struct InferOutput {
  std::string name;
  Tensor tensor;
  bool binary = false;
};
struct InferResponse {
  std::string model;
  std::string version;
  std::string id;
  std::vector<InferOutput> outputs;
};
// Exactly one of the two is set.
using InferDone = std::function<void(std::optional<Failure> failure, InferResponse response)>;

class Service {
 public:
  // Reads the repository and loads every model it can; a model that fails is kept, not ready,
  // with its error. Throws loom::Error(invalid_argument) for an unreadable repository folder, and
  // the executors' constructor errors (unknown device, port in use).
  explicit Service(ServiceOptions options);
  ~Service();  // finishes accepted requests
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  bool live() const;   // the process serves
  bool ready() const;  // every model of the repository is ready (Triton's meaning)
  std::vector<ModelEntry> models() const;
  // nullopt: no such model (or version).
  std::optional<ModelEntry> model(const std::string& name, const std::string& version = "") const;
  // The model a request or a metadata call names, as both front ends answer it (one rule, one
  // wording): not_found for an unknown model or version (naming the version served), and with
  // `need_ready`, unavailable with its error for a model that is not ready.
  std::variant<ModelEntry, Failure> lookup(const std::string& name, const std::string& version, bool need_ready) const;
  // lookup()'s answer without the entry (no copy of it, nothing asked of the executor): what the
  // infer route checks per request.
  std::optional<Failure> refusal(const std::string& name, const std::string& version, bool need_ready) const;
  std::vector<std::string> devices() const;  // one per executor: "cpu", "cuda:0", ...

  // Checks the request against the model (unknown model, not ready, input names, dtypes, shapes,
  // requested outputs: a Failure naming what and where, given to `done` at once) and queues it
  // through the model's batcher or straight to its executor. `done` is called exactly once, on
  // an executor's or a batcher's thread, or on the caller's (a refused request); infer() itself
  // throws nothing but what `done` throws there.
  void infer(InferRequest request, InferDone done);

  // The server is stopping: the batchers submit what they hold, and what still arrives, at once
  // instead of waiting for their delay. Requests are still accepted; call it before the front ends
  // stop (they wait for the requests they accepted, which a long delay would otherwise hold).
  void drain();

  // Stops accepting requests and waits for the accepted ones. Idempotent.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::serve
