// loom::serve::Service: the repository loaded into one Executor per device, requests checked
// against each model's metadata and sent to its executor, straight or through its batcher.
#include "serve/service.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

#include "loom/error.hpp"
#include "loom/onnx.hpp"
#include "serve/batcher.hpp"
#include "serve/devices.hpp"
#include "serve/repository.hpp"

namespace loom::serve {

namespace {

struct DatatypeName {
  DType dtype;
  std::string_view name;
};
constexpr DatatypeName kDatatypes[] = {
    {DType::f32, "FP32"},     {DType::f16, "FP16"},   {DType::bf16, "BF16"},  {DType::f64, "FP64"},
    {DType::i8, "INT8"},      {DType::i16, "INT16"},  {DType::i32, "INT32"},  {DType::i64, "INT64"},
    {DType::u8, "UINT8"},     {DType::u16, "UINT16"}, {DType::u32, "UINT32"}, {DType::u64, "UINT64"},
    {DType::boolean, "BOOL"},
};

}  // namespace

std::string_view kserve_datatype(DType dtype) noexcept {
  for (const auto& d : kDatatypes)
    if (d.dtype == dtype) return d.name;
  return "";
}

std::optional<DType> dtype_from_kserve(std::string_view datatype) noexcept {
  for (const auto& d : kDatatypes)
    if (d.name == datatype) return d.dtype;
  return std::nullopt;
}

namespace {

constexpr std::int64_t kOpen = -1;

// One axis of an input as requests must give it: a fixed size, or an open dim (the batch or one of
// dim_ranges) with the sizes it may take.
struct AxisRule {
  std::int64_t size = kOpen;
  std::string dim;  // the open dim's name
  std::int64_t min = 1, max = 1;
  bool batch = false;
};
struct InputRule {
  std::string name;
  DType dtype = DType::f32;
  std::vector<AxisRule> axes;
};

// A model of the repository and, when it loaded, what serving it needs.
struct ServedModel {
  ModelEntry entry;
  Executor* executor = nullptr;
  std::vector<InputRule> inputs;     // in the executor's input order
  std::vector<std::string> outputs;  // in the executor's output order
  std::unique_ptr<Batcher> batcher;  // max_batch_size > 0
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

Failure failure(Status status, std::string message) { return Failure{status, std::move(message)}; }

// The one mapping of the library's errors to the protocol's statuses (docs/serve.md, "Errors").
Failure failure_from(std::exception_ptr error, const std::string& model) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    // The executor's messages name the model already; others get it in front.
    const std::string what = e.what();
    const std::string message =
        what.find(quoted(model)) != std::string::npos ? what : "model " + quoted(model) + ": " + what;
    switch (e.code()) {
      case ErrorCode::shape_mismatch:
      case ErrorCode::dtype_mismatch:
      case ErrorCode::invalid_argument:
        return failure(Status::bad_request, message);
      case ErrorCode::unknown_model:
        return failure(Status::not_found, message);
      case ErrorCode::deadline_exceeded:
        return failure(Status::timeout, message);
      case ErrorCode::shutdown:
        return failure(Status::unavailable, message);
      default:
        return failure(Status::internal, message);
    }
  } catch (const std::exception& e) {
    return failure(Status::internal, "model " + quoted(model) + ": " + e.what());
  } catch (...) {
    return failure(Status::internal, "model " + quoted(model) + ": unknown failure");
  }
}

// The sizes of every output with the open dims bound to `dims`, through optimize() and
// infer_shapes() (no executor): what tells which output axes follow an open dim.
std::map<std::string, Shape> output_shapes(const Model& model, const std::map<std::string, std::int64_t>& dims) {
  OptimizeOptions options;
  options.dim_values = dims;
  const Model bound = optimize(model, options);
  const auto values = infer_shapes(bound);
  std::map<std::string, Shape> shapes;
  for (const auto& name : bound.outputs)
    if (auto it = values.find(name); it != values.end()) shapes[name] = it->second.shape;
  return shapes;
}

}  // namespace

struct Service::Impl {
  ServiceOptions options;
  std::vector<std::string> devices;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<std::uint64_t> weight_bytes;           // per executor, the models placed so far
  std::vector<std::unique_ptr<ServedModel>> models;  // in name order; fixed after the constructor
  std::atomic<bool> accepting{true};
  std::mutex shutdown_mutex;
  bool shut_down = false;

  void load(ServedModel& served);
  void warm_batch_sizes(const ServedModel& served);
  const ServedModel* find(const std::string& name) const {
    for (const auto& m : models)
      if (m->entry.name == name) return m.get();
    return nullptr;
  }
  ModelEntry snapshot(const ServedModel& m) const {
    ModelEntry entry = m.entry;
    if (m.batcher) entry.batching = m.batcher->counts();
    if (m.entry.ready) entry.shape_plans = m.executor->model_info(m.entry.name).shape_plans;
    return entry;
  }
  std::optional<Failure> refusal(const ServedModel* m, const std::string& name, const std::string& version,
                                 bool need_ready) const;
  std::optional<Failure> check(const ServedModel& m, InferRequest& request, std::vector<Tensor>& inputs,
                               std::int64_t& rows) const;
  std::optional<Failure> start(InferRequest& request, InferDone& done);
};

// Loads one found model: its device, LoadOptions from its config, then the metadata.
void Service::Impl::load(ServedModel& served) {
  ModelEntry& entry = served.entry;
  const ModelConfig& config = entry.config;
  const std::string config_file = options.repository + "/" + entry.name + "/config.json";
  Model model = load_onnx(entry.path);

  // Dims left open: dim_ranges, and the batch dim when batching.
  std::map<std::string, DimRange> open = config.dim_ranges;
  std::string batch_dim;
  if (config.max_batch_size > 0) {
    if (model.inputs.empty())
      throw std::runtime_error(config_file + ": key \"max_batch_size\": the model has no inputs");
    batch_dim = config.batch_dim;
    if (batch_dim.empty()) {
      const ValueInfo& first = model.inputs.front();
      if (first.shape.rank() == 0 || first.dim_params.empty() || first.dim_params[0].empty())
        throw std::runtime_error(config_file +
                                 ": key \"max_batch_size\": batching needs a symbolic first axis (the batch), "
                                 "and input " +
                                 quoted(first.name) + " has shape " + first.shape.to_string());
      batch_dim = first.dim_params[0];
    }
    for (const ValueInfo& input : model.inputs)
      if (input.dim_params.empty() || input.dim_params[0] != batch_dim)
        throw std::runtime_error(
            config_file + ": key \"max_batch_size\": batching needs the batch dim " + quoted(batch_dim) +
            " as the first axis of every input, and input " + quoted(input.name) + " has " +
            (input.dim_params.empty() || input.dim_params[0].empty() ? "a fixed first axis"
                                                                     : "the dim " + quoted(input.dim_params[0])) +
            " there");
    if (auto it = open.find(batch_dim); it == open.end())
      open[batch_dim] = DimRange{1, config.max_batch_size, config.max_batch_size};
    else if (it->second.max < config.max_batch_size || it->second.min > 1)
      throw std::runtime_error(config_file + ": key \"dim_ranges." + batch_dim +
                               "\": the batch dim's range must hold 1 to " + "max_batch_size (" +
                               std::to_string(config.max_batch_size) + ")");
  }

  // The device: the config's, else the executor with the fewest weight bytes (ties: lowest index).
  const std::optional<std::size_t> chosen = choose_device(weight_bytes, config.device);
  if (!chosen)
    throw std::runtime_error(config_file + ": key \"device\": index " + std::to_string(config.device.value_or(-1)) +
                             " is out of range (the server has " + std::to_string(executors.size()) + " device" +
                             (executors.size() == 1 ? "" : "s") + ")");
  const std::size_t device = *chosen;

  LoadOptions load;
  load.name = entry.name;
  load.optimize.dim_values = config.dims;
  load.dim_ranges = open;
  load.stream_priority = config.stream_priority;

  // Which output axes follow an open dim, and whether the batch is axis 0 of every output and
  // nothing else of it: the output shapes at two bindings of the open dims (the batch at 1 and 2,
  // the others at opt and a neighbour within their range), and at the first with the batch at 2.
  std::map<std::string, Shape> first_shapes, second_shapes, batch_two_shapes;
  if (!open.empty()) {
    std::map<std::string, std::int64_t> first = config.dims, second = config.dims;
    for (const auto& [dim, range] : open) {
      if (dim == batch_dim) {
        first[dim] = 1;
        second[dim] = 2;
      } else {
        first[dim] = range.opt;
        second[dim] = range.opt + 1 <= range.max ? range.opt + 1 : std::max(range.min, range.opt - 1);
      }
    }
    try {
      first_shapes = output_shapes(model, first);
      second_shapes = output_shapes(model, second);
      if (!batch_dim.empty()) {
        std::map<std::string, std::int64_t> batch_two = first;
        batch_two[batch_dim] = 2;
        // With the batch the only open dim, that binding is the second (no third optimize()).
        batch_two_shapes = batch_two == second ? second_shapes : output_shapes(model, batch_two);
      }
    } catch (const std::exception& e) {
      throw std::runtime_error("model " + quoted(entry.name) + ": the output shapes with the open dims (" +
                               (batch_dim.empty() ? "" : "the batch dim " + quoted(batch_dim) + ", ") +
                               "dim_ranges) at two sizes could not be worked out: " + e.what());
    }
    // The batcher splits each output along axis 0 only: the batch must be axis 0 and no other.
    if (!batch_dim.empty())
      for (const auto& [name, a] : first_shapes) {
        const Shape& b = batch_two_shapes[name];
        if (a.rank() == 0 || b.rank() != a.rank() || a[0] != 1 || b[0] != 2)
          throw std::runtime_error(config_file +
                                   ": key \"max_batch_size\": batching needs the batch as axis 0 of "
                                   "every output, and output " +
                                   quoted(name) + " has shape " + a.to_string() + " at batch 1 and " + b.to_string() +
                                   " at batch 2");
        for (std::size_t axis = 1; axis < a.rank(); ++axis)
          if (a[axis] != b[axis])
            throw std::runtime_error(config_file + ": key \"max_batch_size\": model " + quoted(entry.name) +
                                     ": output " + quoted(name) + "'s axis " + std::to_string(axis) +
                                     " follows the batch (shape " + a.to_string() + " at batch 1, " + b.to_string() +
                                     " at batch 2): a joined batch could not be split back per request");
      }
  }

  executors[device]->load(model, load);
  const ModelInfo info = executors[device]->model_info(entry.name);
  weight_bytes[device] += info.weight_bytes;
  served.executor = executors[device].get();
  entry.device = static_cast<int>(device);

  for (const ValueInfo& in : info.inputs) {
    InputRule rule{in.name, in.dtype, {}};
    const ValueInfo* declared = nullptr;
    for (const ValueInfo& d : model.inputs)
      if (d.name == in.name) declared = &d;
    TensorMetadata meta{in.name, std::string(kserve_datatype(in.dtype)), {}};
    for (std::size_t axis = 0; axis < in.shape.rank(); ++axis) {
      AxisRule a;
      a.size = in.shape[axis];
      const std::string dim =
          declared && axis < declared->dim_params.size() ? declared->dim_params[axis] : std::string();
      if (!dim.empty())
        if (auto it = open.find(dim); it != open.end()) {
          a = AxisRule{kOpen, dim, it->second.min, it->second.max, dim == batch_dim};
          if (a.batch) a.max = config.max_batch_size;
        }
      meta.shape.push_back(a.size);
      rule.axes.push_back(a);
    }
    served.inputs.push_back(std::move(rule));
    entry.inputs.push_back(std::move(meta));
  }
  for (const ValueInfo& out : info.outputs) {
    TensorMetadata meta{out.name, std::string(kserve_datatype(out.dtype)), out.shape.dims()};
    const auto a = first_shapes.find(out.name), b = second_shapes.find(out.name);
    if (a != first_shapes.end() && b != second_shapes.end() && a->second.rank() == meta.shape.size() &&
        b->second.rank() == meta.shape.size())
      for (std::size_t axis = 0; axis < meta.shape.size(); ++axis)
        if (a->second[axis] != b->second[axis]) meta.shape[axis] = kOpen;
    served.outputs.push_back(out.name);
    entry.outputs.push_back(std::move(meta));
  }

  if (config.max_batch_size > 0) {
    Executor* executor = served.executor;
    const std::string name = entry.name;
    Batcher::Options batching{name, config.max_batch_size,
                              std::chrono::microseconds(static_cast<std::int64_t>(config.max_queue_delay_us))};
    served.batcher = std::make_unique<Batcher>(
        batching, [executor, name](std::vector<Tensor> inputs, RequestOptions request, Callback done) {
          executor->submit(name, std::move(inputs), std::move(done), request);
        });
    if (open.size() == 1) warm_batch_sizes(served);
  }
  entry.ready = true;
}

// A batched model whose only open dim is the batch: one request of zeros per batch size, so that
// each size's plan is made now (Executor: a shape's plan is made on its first request, on the
// submitting thread, which is the batcher's) and no client's request waits for one. A warm-up
// request that fails is not the model's failure (zeros may be data the model refuses): the plan
// was made before it ran, and real requests of that size report their own errors.
void Service::Impl::warm_batch_sizes(const ServedModel& served) {
  for (std::int64_t rows = 1; rows <= served.entry.config.max_batch_size; ++rows) {
    std::vector<Tensor> inputs;
    for (const InputRule& rule : served.inputs) {
      std::vector<std::int64_t> dims;
      for (const AxisRule& axis : rule.axes) dims.push_back(axis.batch ? rows : axis.size);
      inputs.emplace_back(rule.dtype, Shape(dims));
    }
    try {
      served.executor->submit(served.entry.name, std::move(inputs)).wait();
    } catch (const std::exception&) {
      // submit() refused the shape: real requests of that size will be refused the same way.
    }
  }
}

Service::Service(ServiceOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = std::move(options);
  std::vector<ModelEntry> found = scan_repository(s.options.repository);
  s.devices = executor_devices(s.options.device, cuda_device_count());
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    ExecutorOptions executor = s.options.executor;
    executor.device = s.devices[i];
    executor.metrics_port = executor_metrics_port(executor.metrics_port, i);
    s.executors.push_back(std::make_unique<Executor>(executor));
  }
  s.weight_bytes.assign(s.executors.size(), 0);
  for (ModelEntry& entry : found) {
    auto served = std::make_unique<ServedModel>();
    served->entry = std::move(entry);
    if (served->entry.error.empty()) {
      try {
        s.load(*served);
      } catch (const std::exception& e) {
        ModelEntry& failed = served->entry;
        failed.error = e.what();
        failed.ready = false;
        failed.device = -1;
        failed.inputs.clear();
        failed.outputs.clear();
        served->inputs.clear();
        served->outputs.clear();
        served->batcher.reset();
      }
    }
    s.models.push_back(std::move(served));
  }
}

Service::~Service() { shutdown(); }

bool Service::live() const { return true; }

bool Service::ready() const {
  return impl_->accepting &&
         std::all_of(impl_->models.begin(), impl_->models.end(), [](const auto& m) { return m->entry.ready; });
}

std::vector<ModelEntry> Service::models() const {
  std::vector<ModelEntry> entries;
  for (const auto& m : impl_->models) entries.push_back(impl_->snapshot(*m));
  return entries;
}

std::optional<ModelEntry> Service::model(const std::string& name, const std::string& version) const {
  const ServedModel* m = impl_->find(name);
  if (!m || (!version.empty() && version != m->entry.version)) return std::nullopt;
  return impl_->snapshot(*m);
}

std::vector<std::string> Service::devices() const { return impl_->devices; }

// Why `m` (the model found for `name`, or nullptr) cannot answer for `version`: the one wording of
// an unknown model or version and a model not ready, for infer() and both front ends' calls.
std::optional<Failure> Service::Impl::refusal(const ServedModel* m, const std::string& name, const std::string& version,
                                              bool need_ready) const {
  if (!m) return failure(Status::not_found, "unknown model " + quoted(name));
  if (!version.empty() && version != m->entry.version)
    return failure(Status::not_found,
                   "model " + quoted(m->entry.name) + " has no version " + quoted(version) +
                       (m->entry.version.empty() ? "" : " (it serves version " + m->entry.version + ")"));
  if (need_ready && !m->entry.ready)
    return failure(Status::unavailable, "model " + quoted(m->entry.name) + " is not ready: " + m->entry.error);
  return std::nullopt;
}

std::optional<Failure> Service::refusal(const std::string& name, const std::string& version, bool need_ready) const {
  return impl_->refusal(impl_->find(name), name, version, need_ready);
}

std::variant<ModelEntry, Failure> Service::lookup(const std::string& name, const std::string& version,
                                                  bool need_ready) const {
  const ServedModel* m = impl_->find(name);
  if (auto refused = impl_->refusal(m, name, version, need_ready)) return std::move(*refused);
  return impl_->snapshot(*m);
}

// The request against the model's inputs and outputs; on success `inputs` holds the tensors in
// the executor's order and `rows` the batch size (1 without batching).
std::optional<Failure> Service::Impl::check(const ServedModel& m, InferRequest& request, std::vector<Tensor>& inputs,
                                            std::int64_t& rows) const {
  const std::string model = "model " + quoted(m.entry.name);
  std::size_t bytes = 0;
  for (const InferInput& in : request.inputs) bytes += in.tensor.bytes();
  if (bytes > options.max_request_bytes)
    return failure(Status::too_large, model + ": the request's inputs hold " + std::to_string(bytes) +
                                          " bytes, more than the server's limit of " +
                                          std::to_string(options.max_request_bytes));
  std::vector<InferInput*> by_rule(m.inputs.size(), nullptr);
  for (InferInput& in : request.inputs) {
    const auto rule =
        std::find_if(m.inputs.begin(), m.inputs.end(), [&](const InputRule& r) { return r.name == in.name; });
    if (rule == m.inputs.end()) {
      std::string known;
      for (const InputRule& r : m.inputs) known += (known.empty() ? "" : ", ") + r.name;
      return failure(Status::bad_request, model + " has no input " + quoted(in.name) + " (its inputs: " + known + ")");
    }
    auto& slot = by_rule[static_cast<std::size_t>(rule - m.inputs.begin())];
    if (slot) return failure(Status::bad_request, model + ": input " + quoted(in.name) + " is given twice");
    slot = &in;
  }
  // Sizes of the open dims as the inputs give them: two inputs must agree.
  std::map<std::string, std::pair<std::int64_t, std::string>> dims;
  rows = 1;
  for (std::size_t i = 0; i < m.inputs.size(); ++i) {
    const InputRule& rule = m.inputs[i];
    const std::string input = model + ", input " + quoted(rule.name);
    if (!by_rule[i]) return failure(Status::bad_request, model + ": input " + quoted(rule.name) + " is missing");
    const Tensor& t = by_rule[i]->tensor;
    if (t.dtype() != rule.dtype)
      return failure(Status::bad_request, input + ": datatype " + std::string(kserve_datatype(t.dtype())) +
                                              ", expected " + std::string(kserve_datatype(rule.dtype)));
    if (t.shape().rank() != rule.axes.size())
      return failure(Status::bad_request, input + ": shape " + t.shape().to_string() + " has rank " +
                                              std::to_string(t.shape().rank()) + ", expected rank " +
                                              std::to_string(rule.axes.size()));
    for (std::size_t axis = 0; axis < rule.axes.size(); ++axis) {
      const AxisRule& a = rule.axes[axis];
      const std::int64_t size = t.shape()[axis];
      const std::string where = input + ", axis " + std::to_string(axis);
      if (a.size != kOpen) {
        if (size != a.size)
          return failure(Status::bad_request,
                         where + ": size " + std::to_string(size) + ", expected " + std::to_string(a.size));
        continue;
      }
      if (size < a.min || size > a.max)
        return failure(Status::bad_request, where + " (dim " + quoted(a.dim) + "): size " + std::to_string(size) +
                                                " is outside " + std::to_string(a.min) + ".." + std::to_string(a.max) +
                                                (a.batch ? " (the model's max_batch_size)" : " (its dim_ranges)"));
      auto [it, added] = dims.emplace(a.dim, std::make_pair(size, rule.name));
      if (!added && it->second.first != size)
        return failure(Status::bad_request, where + " (dim " + quoted(a.dim) + "): size " + std::to_string(size) +
                                                " differs from input " + quoted(it->second.second) + "'s " +
                                                std::to_string(it->second.first));
      if (a.batch) rows = size;
    }
  }
  for (std::size_t i = 0; i < m.inputs.size(); ++i) inputs.push_back(std::move(by_rule[i]->tensor));
  return std::nullopt;
}

// Checks `request` and queues it, taking `done` (left empty) when it does; a Failure when it
// refuses the request (`done` kept for the caller to answer).
std::optional<Failure> Service::Impl::start(InferRequest& request, InferDone& done) {
  Impl& s = *this;
  auto fail = [](Status status, std::string message) { return failure(status, std::move(message)); };
  if (!s.accepting) return fail(Status::unavailable, "the server is shutting down");
  const ServedModel* m = s.find(request.model);
  if (auto refused = s.refusal(m, request.model, request.version, true)) return refused;

  // Requested outputs: indices into the executor's outputs, in request order.
  std::vector<std::pair<std::size_t, bool>> selected;
  if (request.outputs.empty()) {
    for (std::size_t i = 0; i < m->outputs.size(); ++i) selected.emplace_back(i, false);
  } else {
    std::set<std::string> seen;
    for (const RequestedOutput& out : request.outputs) {
      const auto it = std::find(m->outputs.begin(), m->outputs.end(), out.name);
      if (it == m->outputs.end())
        return fail(Status::bad_request, "model " + quoted(m->entry.name) + " has no output " + quoted(out.name));
      if (!seen.insert(out.name).second)
        return fail(Status::bad_request,
                    "model " + quoted(m->entry.name) + ": output " + quoted(out.name) + " is requested twice");
      selected.emplace_back(static_cast<std::size_t>(it - m->outputs.begin()), out.binary);
    }
  }

  std::vector<Tensor> inputs;
  std::int64_t rows = 1;
  if (auto refused = s.check(*m, request, inputs, rows)) return refused;

  RequestOptions options;
  options.priority = request.priority.value_or(m->entry.config.priority);
  // A timeout beyond kLongestTimeoutMs is none (its deadline would overflow the clock).
  constexpr double kLongestTimeoutMs = 1e10;
  const double timeout_ms = request.timeout_ms > 0 ? request.timeout_ms : m->entry.config.timeout_ms;
  if (timeout_ms > 0 && timeout_ms < kLongestTimeoutMs)
    options.deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double, std::milli>(timeout_ms));

  InferResponse response{m->entry.name, m->entry.version, request.id, {}};
  const std::string name = m->entry.name;
  const std::vector<std::string>* output_names = &m->outputs;
  // Shared by both paths: outputs (the model's, in its order) into the response, or the failure.
  InferDone taken = std::move(done);
  done = nullptr;
  auto finish = [done = std::move(taken), response = std::move(response), selected = std::move(selected), name,
                 output_names](std::exception_ptr error, Outputs outputs) mutable {
    if (error) return done(failure_from(error, name), InferResponse{});
    if (outputs.size() != output_names->size())
      return done(failure(Status::internal, "model " + quoted(name) + " returned " + std::to_string(outputs.size()) +
                                                " outputs, expected " + std::to_string(output_names->size())),
                  InferResponse{});
    for (const auto& [index, binary] : selected)
      response.outputs.push_back(InferOutput{(*output_names)[index], std::move(outputs[index]), binary});
    done(std::nullopt, std::move(response));
  };

  if (m->batcher) {
    Batcher::Item item{std::move(inputs), rows, options.priority, options.deadline, std::move(finish)};
    if (!m->batcher->push(item))
      item.done(std::make_exception_ptr(Error(ErrorCode::shutdown, "the server is shutting down")), {});
    return std::nullopt;
  }
  // The executor calls `finish` unless submit throws, in which case nothing was queued.
  auto shared = std::make_shared<decltype(finish)>(std::move(finish));
  try {
    m->executor->submit(
        name, std::move(inputs),
        [shared](std::exception_ptr error, Outputs outputs) { (*shared)(error, std::move(outputs)); }, options);
  } catch (...) {
    (*shared)(std::current_exception(), {});
  }
  return std::nullopt;
}

void Service::infer(InferRequest request, InferDone done) {
  std::optional<Failure> refused;
  try {
    refused = impl_->start(request, done);
  } catch (const std::exception& e) {
    if (!done) throw;  // `done` was handed over (and may have run): never a second answer
    refused = failure(Status::internal, "model " + quoted(request.model) + ": " + e.what());
  }
  if (refused) done(std::move(*refused), InferResponse{});
}

void Service::drain() {
  for (auto& m : impl_->models)
    if (m->batcher) m->batcher->flush();
}

void Service::shutdown() {
  Impl& s = *impl_;
  std::lock_guard lock(s.shutdown_mutex);
  if (s.shut_down) return;
  s.accepting = false;
  // Batchers first: what they hold is submitted to executors that still accept it.
  for (auto& m : s.models)
    if (m->batcher) m->batcher->close();
  for (auto& e : s.executors) e->shutdown();
  s.shut_down = true;
}

}  // namespace loom::serve
