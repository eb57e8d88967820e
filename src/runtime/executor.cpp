// The Executor: three pipeline stages on their own threads, joined by bounded queues.
//   pre-process: take an arena from the pool, convert inputs to the device dtype, copy them in
//   execute:     the dispatcher asks the policy which live request's next Step runs, launches it
//                on that model's stream, and keeps a bounded number of Steps in flight
//   post-process: wait for the request's last Step, copy outputs out, convert back, complete
#include "loom/executor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <shared_mutex>
#include <thread>

#include "backend/backend.hpp"
#include "backend/open_backend.hpp"
#include "loom/policy.hpp"
#include "profile/active_profile.hpp"
#include "runtime/bounded_queue.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/memory_pool.hpp"
#include "sched/device_shadow.hpp"
#include "trace/nvtx.hpp"
#include "trace/request_recorder.hpp"

namespace loom {

int cuda_device_count() noexcept { return backend::cuda_device_count(); }

const char* version() noexcept { return "0.1.0"; }

namespace {

using Clock = std::chrono::steady_clock;

struct Request {
  std::uint64_t id = 0;
  runtime::LoadedModel* model = nullptr;
  std::vector<Tensor> inputs;
  RequestOptions options;
  Callback done;
  runtime::PooledBuffer arena;
  std::unique_ptr<backend::Event> inputs_ready;
  std::unique_ptr<backend::Event> finished;
  std::size_t next_step = 0;
  std::uint32_t passed_over = 0;
  Clock::time_point ready_at;
  std::exception_ptr error;
  std::uint64_t nvtx_range = 0;
  std::unique_ptr<trace::RequestRecorder> recorder;  // only when recording a timeline
};
using RequestPtr = std::unique_ptr<Request>;

}  // namespace

struct Executor::Impl {
  ExecutorOptions options;
  std::unique_ptr<backend::Backend> device_holder;
  backend::Backend* device = nullptr;
  std::unique_ptr<SchedulingPolicy> policy;
  std::unique_ptr<runtime::MemoryPool> pool;
  std::unique_ptr<backend::Stream> upload_stream, download_stream;

  mutable std::shared_mutex models_mutex;
  std::map<std::string, std::unique_ptr<runtime::LoadedModel>> models;

  runtime::BoundedQueue<RequestPtr> to_pre, to_exec, to_post;
  std::thread pre_thread, exec_thread, post_thread;
  std::atomic<bool> accepting{true};
  std::mutex shutdown_mutex;
  bool stopped = false;
  std::atomic<std::uint64_t> next_id{0}, submitted{0}, completed{0}, failed{0};
  profile::ActiveProfile profile;  // resolved from options.profile at start
  Timeline timeline;
  std::unique_ptr<trace::TimelineClock> timeline_clock;  // set when options.record_timeline
  Clock::time_point epoch = Clock::now();

  explicit Impl(ExecutorOptions opts)
      : options(std::move(opts)),
        to_pre(options.queue_capacity),
        to_exec(options.queue_capacity),
        to_post(options.queue_capacity) {
    policy = make_policy(options.policy, options.policy_options);
    if (options.compute_dtype != DType::f32 && options.compute_dtype != DType::f16)
      throw Error(ErrorCode::invalid_argument, "compute_dtype must be f32 or f16");
    device_holder = backend::open_backend(options.device);
    device = device_holder.get();
    profile = profile::resolve_profile(options.profile, device->device_name());
    if (options.compute_dtype == DType::f16 && device->kind() != backend::Kind::cuda)
      throw Error(ErrorCode::unsupported,
                  "f16 compute needs the CUDA backend; device '" + options.device + "' resolved to " + device->name());
    pool = std::make_unique<runtime::MemoryPool>(*device);
    upload_stream = device->create_stream(0);
    download_stream = device->create_stream(0);
    if (options.record_timeline) timeline_clock = std::make_unique<trace::TimelineClock>(*upload_stream);
    pre_thread = std::thread([this] { pre_process_loop(); });
    exec_thread = std::thread([this] { execute_loop(); });
    post_thread = std::thread([this] { post_process_loop(); });
  }

  ~Impl() { stop(); }

  void stop() {
    std::lock_guard lock(shutdown_mutex);
    if (stopped) return;
    stopped = true;
    accepting = false;
    to_pre.close();
    if (pre_thread.joinable()) pre_thread.join();
    if (exec_thread.joinable()) exec_thread.join();
    if (post_thread.joinable()) post_thread.join();
  }

  double now_us() const { return std::chrono::duration<double, std::micro>(Clock::now() - epoch).count(); }

  // Any stage may fail a request; completion always happens on the post-process thread.
  void fail(RequestPtr& request, std::exception_ptr error) {
    request->error = error;
    to_post.push(request);
  }

  void pre_process_loop() {
    while (auto item = to_pre.pop()) {
      RequestPtr request = std::move(*item);
      try {
        auto& model = *request->model;
        const auto& plan = model.plan();
        request->arena = pool->acquire(plan.arena_bytes);
        // Format conversion happens here, on the host, so the device sees only its own dtype.
        for (std::size_t i = 0; i < plan.input_ids.size(); ++i) {
          const auto& value = plan.values[static_cast<std::size_t>(plan.input_ids[i])];
          if (request->inputs[i].dtype() != value.dtype) request->inputs[i] = request->inputs[i].to(value.dtype);
        }
        if (request->recorder) request->recorder->begin(trace::RequestRecorder::Span::upload, *upload_stream);
        for (std::size_t i = 0; i < plan.input_ids.size(); ++i)
          upload_stream->copy_to_device(model.address(plan.input_ids[i], request->arena.get()),
                                        request->inputs[i].data(), request->inputs[i].bytes());
        if (request->recorder) request->recorder->end(*upload_stream);
        request->inputs_ready = upload_stream->record();
        request->ready_at = Clock::now();
        to_exec.push(request);
      } catch (...) {
        fail(request, std::current_exception());
      }
    }
    to_exec.close();
  }

  void execute_loop() {
    std::vector<RequestPtr> live;
    std::deque<std::unique_ptr<backend::Event>> inflight;
    std::vector<StepCandidate> candidates;
    // The AcceleratorState policies see: the Steps launched, placed by their estimated costs.
    AcceleratorState empty;
    empty.onchip_capacity_bytes = device->onchip_bytes();
    sched::DeviceShadow shadow(empty);
    for (;;) {
      if (live.empty()) {
        auto item = to_exec.pop();
        if (!item) break;
        live.push_back(std::move(*item));
      }
      while (auto item = to_exec.try_pop()) live.push_back(std::move(*item));
      // A model whose outputs are all constants or inputs compiles to no Steps: its requests only
      // wait for their inputs to land before the outputs are copied out.
      for (auto it = live.begin(); it != live.end();) {
        if (!(*it)->model->plan().steps.empty()) {
          ++it;
          continue;
        }
        try {
          auto& stream = (*it)->model->stream();
          stream.wait(*(*it)->inputs_ready);
          (*it)->finished = stream.record();
        } catch (...) {
          (*it)->error = std::current_exception();
        }
        RequestPtr done = std::move(*it);
        it = live.erase(it);
        to_post.push(done);
      }
      if (live.empty()) continue;

      candidates.clear();
      for (const auto& r : live) {
        const auto& step = r->model->plan().steps[r->next_step].info;
        StepCandidate c;
        c.request_id = r->id;
        c.model_index = r->model->index();
        c.step_index = r->next_step;
        c.step_count = r->model->plan().steps.size();
        c.arrival_us = std::chrono::duration<double, std::micro>(r->ready_at - epoch).count();
        c.compute_us = step.compute_us;
        c.memory_us = step.memory_us;
        c.bytes = step.weight_bytes + step.activation_bytes_read + step.bytes_written;
        c.working_set_bytes = step.working_set_bytes;
        c.passed_over = r->passed_over;
        c.priority = r->options.priority;
        const auto& steps = r->model->plan().steps;
        c.lookahead_count = std::min(kMaxLookahead, steps.size() - r->next_step - 1);
        for (std::size_t k = 0; k < c.lookahead_count; ++k) {
          const auto& ahead = steps[r->next_step + 1 + k].info;
          c.lookahead[k] = {ahead.compute_us, ahead.memory_us, ahead.working_set_bytes};
        }
        candidates.push_back(c);
      }
      shadow.advance_to(now_us());
      std::size_t chosen = policy->pick(candidates, shadow.state());
      if (chosen >= live.size()) chosen = 0;  // a policy bug must not crash the executor
      for (std::size_t i = 0; i < live.size(); ++i)
        if (i != chosen) ++live[i]->passed_over;
      live[chosen]->passed_over = 0;  // its next Step is a new candidate
      shadow.launch(candidates[chosen].cost());

      RequestPtr& request = live[chosen];
      auto& model = *request->model;
      bool finished = false;
      try {
        auto* recorder = request->recorder.get();
        if (recorder) recorder->picked(timeline_clock->host_now_us(), request->next_step, candidates.size());
        if (request->next_step == 0) model.stream().wait(*request->inputs_ready);
        // The timed events bracket the Step on its stream, after the wait for the inputs.
        if (recorder) recorder->begin(trace::RequestRecorder::Span::step, model.stream(), request->next_step);
        {
          trace::ScopedRange range(model.step_label(request->next_step));
          model.run_step(request->next_step, request->arena.get());
        }
        if (recorder) recorder->end(model.stream());
        ++request->next_step;
        inflight.push_back(model.stream().record());
        // Bound the work queued ahead of the device so the policy's later choices still matter.
        while (policy->bounded() && inflight.size() > options.max_inflight_steps) {
          inflight.front()->synchronize();
          inflight.pop_front();
        }
        while (!inflight.empty() && inflight.front()->ready()) inflight.pop_front();
        if (inflight.empty()) shadow.idle_at(now_us());
        if (request->next_step == model.plan().steps.size()) {
          request->finished = model.stream().record();
          finished = true;
        }
      } catch (...) {
        request->error = std::current_exception();
        finished = true;
      }
      if (finished) {
        RequestPtr done = std::move(request);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(chosen));
        to_post.push(done);
      }
    }
    to_post.close();
  }

  void post_process_loop() {
    while (auto item = to_post.pop()) {
      RequestPtr request = std::move(*item);
      Outputs outputs;
      if (!request->error) {
        try {
          auto& model = *request->model;
          const auto& plan = model.plan();
          download_stream->wait(*request->finished);
          const auto& infos = model.info().outputs;
          std::vector<Tensor> device_outputs;
          for (std::size_t i = 0; i < plan.output_ids.size(); ++i) {
            const auto& value = plan.values[static_cast<std::size_t>(plan.output_ids[i])];
            device_outputs.emplace_back(value.dtype, value.shape);
          }
          if (request->recorder) request->recorder->begin(trace::RequestRecorder::Span::download, *download_stream);
          for (std::size_t i = 0; i < plan.output_ids.size(); ++i)
            download_stream->copy_to_host(device_outputs[i].data(),
                                          model.address(plan.output_ids[i], request->arena.get()),
                                          device_outputs[i].bytes());
          if (request->recorder) request->recorder->end(*download_stream);
          download_stream->synchronize();
          for (std::size_t i = 0; i < device_outputs.size(); ++i)
            outputs.push_back(device_outputs[i].dtype() == infos[i].dtype ? std::move(device_outputs[i])
                                                                          : device_outputs[i].to(infos[i].dtype));
        } catch (...) {
          request->error = std::current_exception();
        }
      }
      request->arena.reset();
      trace::end_range(request->nvtx_range);
      // Before the counters and the callback: whoever saw the request complete sees its events.
      if (request->recorder)
        request->recorder->complete(*timeline_clock, request->model->info().steps, timeline_clock->host_now_us(),
                                    request->error != nullptr, timeline);
      (request->error ? failed : completed)++;
      try {
        request->done(request->error, std::move(outputs));
      } catch (...) {
        // A throwing user callback must not take the pipeline down with it.
      }
    }
  }

  runtime::LoadedModel& find(const std::string& name) const {
    std::shared_lock lock(models_mutex);
    auto it = models.find(name);
    if (it == models.end()) {
      std::string known;
      for (const auto& [n, m] : models) known += (known.empty() ? "" : ", ") + n;
      throw Error(ErrorCode::unknown_model, "no model named '" + name + "' is loaded (loaded: " +
                                                (known.empty() ? std::string("none") : known) + ")");
    }
    return *it->second;
  }

  void check_inputs(const runtime::LoadedModel& model, const std::vector<Tensor>& inputs) const {
    const auto& expected = model.info().inputs;
    const std::string where = "model '" + model.name() + "'";
    if (inputs.size() != expected.size())
      throw Error(ErrorCode::invalid_argument, where + " takes " + std::to_string(expected.size()) + " input(s), got " +
                                                   std::to_string(inputs.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype() != expected[i].dtype)
        throw Error(ErrorCode::dtype_mismatch, where + ", input " + std::to_string(i) + " '" + expected[i].name +
                                                   "': expected " + std::string(dtype_name(expected[i].dtype)) +
                                                   ", got " + std::string(dtype_name(inputs[i].dtype())));
      if (inputs[i].shape() != expected[i].shape)
        throw Error(ErrorCode::shape_mismatch, where + ", input " + std::to_string(i) + " '" + expected[i].name +
                                                   "': expected shape " + expected[i].shape.to_string() + ", got " +
                                                   inputs[i].shape().to_string());
    }
  }

  void enqueue(const std::string& name, std::vector<Tensor> inputs, Callback done, RequestOptions options) {
    if (!accepting) throw Error(ErrorCode::shutdown, "the executor is shut down; request for '" + name + "' refused");
    auto& model = find(name);
    check_inputs(model, inputs);
    auto request = std::make_unique<Request>();
    request->id = next_id++;
    request->model = &model;
    request->inputs = std::move(inputs);
    request->options = options;
    request->done = std::move(done);
    request->nvtx_range = trace::start_range("request " + std::to_string(request->id) + " " + name);
    if (timeline_clock)
      request->recorder = std::make_unique<trace::RequestRecorder>(request->id, name, timeline_clock->host_now_us());
    if (!to_pre.push(request)) {
      trace::end_range(request->nvtx_range);
      throw Error(ErrorCode::shutdown, "the executor is shut down; request for '" + name + "' refused");
    }
    ++submitted;
  }
};

Executor::Executor(ExecutorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Executor::~Executor() = default;

void Executor::load(const Model& model, std::string name) {
  LoadOptions options;
  options.name = std::move(name);
  load(model, options);
}

void Executor::load(const Model& original, const LoadOptions& options) {
  std::string name = options.name.empty() ? original.name : options.name;
  if (name.empty()) throw Error(ErrorCode::invalid_argument, "load: the model has no name; pass one");
  if (!impl_->accepting) throw Error(ErrorCode::shutdown, "the executor is shut down; cannot load '" + name + "'");
  {
    std::shared_lock lock(impl_->models_mutex);
    if (impl_->models.count(name))
      throw Error(ErrorCode::invalid_argument, "a model named '" + name + "' is already loaded");
  }
  trace::ScopedRange range("load " + name);
  const Model model = optimize(original, options.optimize);
  std::unique_lock lock(impl_->models_mutex);
  auto loaded = std::make_unique<runtime::LoadedModel>(
      model, name, impl_->models.size(), impl_->options.compute_dtype, *impl_->device, *impl_->pool,
      profile::roofline_peaks(impl_->profile, *impl_->device, impl_->options.compute_dtype));
  loaded->apply_profile(impl_->profile);
  if (!impl_->models.emplace(name, std::move(loaded)).second)
    throw Error(ErrorCode::invalid_argument, "a model named '" + name + "' is already loaded");
}

std::vector<std::string> Executor::models() const {
  std::shared_lock lock(impl_->models_mutex);
  std::vector<std::string> names;
  for (const auto& [name, model] : impl_->models) names.push_back(name);
  return names;
}

ModelInfo Executor::model_info(const std::string& name) const { return impl_->find(name).info(); }

std::future<Outputs> Executor::submit(const std::string& model, std::vector<Tensor> inputs, RequestOptions options) {
  auto promise = std::make_shared<std::promise<Outputs>>();
  auto future = promise->get_future();
  impl_->enqueue(
      model, std::move(inputs),
      [promise](std::exception_ptr error, Outputs outputs) {
        if (error)
          promise->set_exception(error);
        else
          promise->set_value(std::move(outputs));
      },
      options);
  return future;
}

void Executor::submit(const std::string& model, std::vector<Tensor> inputs, Callback done, RequestOptions options) {
  if (!done) throw Error(ErrorCode::invalid_argument, "submit: the callback is empty");
  impl_->enqueue(model, std::move(inputs), std::move(done), options);
}

void Executor::shutdown() { impl_->stop(); }

std::string Executor::device_name() const { return impl_->device->device_name(); }
std::string Executor::backend_name() const { return impl_->device->name(); }
std::string Executor::policy_name() const { return std::string(impl_->policy->name()); }

std::string Executor::profile_path() const { return impl_->profile.path; }
Timeline Executor::timeline() const { return impl_->timeline; }

ExecutorStats Executor::stats() const {
  ExecutorStats s;
  s.requests_submitted = impl_->submitted;
  s.requests_completed = impl_->completed;
  s.requests_failed = impl_->failed;
  const auto pool = impl_->pool->stats();
  s.pool_bytes_reserved = pool.bytes_reserved;
  s.pool_allocations = pool.allocations;
  s.pool_reuses = pool.reuses;
  return s;
}

}  // namespace loom
