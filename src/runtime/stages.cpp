// The executor's host stages, each served by one or more threads (runtime/stage_workers.hpp):
//   pre-process:  runs the model's pre_process transform, converts inputs to the device dtype,
//                 takes an arena when memory allows (else the dispatcher finds one later), uploads
//                 the inputs on the thread's own stream, hands the request on;
//   post-process: waits for the request's last Step, copies its outputs out on the thread's own
//                 stream, converts them back, runs the post_process transform, gives the arena back
//                 and completes the request (callback or future) with its RequestTimes.
// With several threads in a stage, requests may leave it in another order than they came.
#include <exception>
#include <string>
#include <vector>

#include "plan/compiled_model.hpp"
#include "runtime/executor_impl.hpp"
#include "trace/nvtx.hpp"

namespace loom {
namespace {

// Runs a model's pre/post-process transform; its exception becomes the request's named error.
void run_transform(const std::function<void(std::vector<Tensor>&)>& transform, std::vector<Tensor>& tensors,
                   const runtime::Request& request, const char* which) {
  try {
    transform(tensors);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::invalid_argument, "model '" + request.model->name() + "', request " +
                                                 std::to_string(request.id) + ": its " + which +
                                                 " transform failed: " + e.what());
  } catch (...) {
    throw Error(ErrorCode::invalid_argument, "model '" + request.model->name() + "', request " +
                                                 std::to_string(request.id) + ": its " + which +
                                                 " transform threw a non-standard exception");
  }
}

std::uint64_t total_bytes(const std::vector<Tensor>& tensors) {
  std::uint64_t bytes = 0;
  for (const auto& t : tensors) bytes += t.bytes();
  return bytes;
}

}  // namespace

void Executor::Impl::start_host_stages() {
  const auto prepare = [this](std::vector<std::unique_ptr<backend::Stream>>& streams, std::size_t worker) {
    std::lock_guard lock(worker_streams_mutex);
    while (streams.size() <= worker) streams.push_back(device->create_stream(0));
  };
  pre_workers = std::make_unique<runtime::StageWorkers<RequestPtr>>(
      to_pre, [this](std::size_t worker, RequestPtr request) { pre_process(worker, std::move(request)); },
      [this, prepare](std::size_t worker) { prepare(upload_streams, worker); }, [this] { pre_process_finished(); });
  post_workers = std::make_unique<runtime::StageWorkers<RequestPtr>>(
      to_post, [this](std::size_t worker, RequestPtr request) { post_process(worker, std::move(request)); },
      [this, prepare](std::size_t worker) { prepare(download_streams, worker); }, nullptr);
  pre_workers->set_threads(options.stage_threads.pre_process);
  post_workers->set_threads(options.stage_threads.post_process);
}

// Any stage may fail a request; completion always happens on a post-process thread.
void Executor::Impl::fail(RequestPtr& request, std::exception_ptr error) {
  request->error = error;
  to_post.push(request);
}

// The request's deadline has passed: it fails, named, without running.
bool Executor::Impl::expire_if_late(RequestPtr& request, Clock::time_point now) {
  if (!request->has_deadline() || now <= request->options.deadline) return false;
  const double late_us = std::chrono::duration<double, std::micro>(now - request->options.deadline).count();
  ++requests_expired;
  // The exception first, then the hand-over: the temporary Error (sharing its message with the
  // exception object) is gone before another thread can see the request.
  std::exception_ptr error = std::make_exception_ptr(Error(
      ErrorCode::deadline_exceeded, "model '" + request->model->name() + "', request " + std::to_string(request->id) +
                                        ": the deadline passed " + std::to_string(static_cast<long long>(late_us)) +
                                        " us before its first Step"));
  fail(request, std::move(error));
  return true;
}

// The bytes charged to the budget for one arena of `model`.
std::uint64_t Executor::Impl::arena_charge(const runtime::LoadedModel& model) {
  return plan::align_up(std::max<std::uint64_t>(model.request_arena_bytes(), 1));
}

// Pre-process has put a request of class `priority` on the dispatcher's queue: a pausable Step
// of a lower class that is running now pauses at its next iteration.
void Executor::Impl::handed_over_to_dispatcher(Priority priority) {
  {
    std::lock_guard lock(running_mutex);
    ++handed_over[class_index(priority)];
    if (running.flag && priority > running.priority) running.flag->set();
  }
  handed_over_changed.notify_all();
}

// Copies the request's (converted) inputs into its arena on `stream`.
void Executor::Impl::upload_inputs(Request& request, backend::Stream& stream) {
  if (request.recorder)
    request.recorder->begin(trace::RequestRecorder::Span::upload, stream, 0, total_bytes(request.inputs));
  request.model->upload_inputs(request.arena.get(), request.inputs, stream);
  if (request.recorder) request.recorder->end(stream);
  request.inputs_ready = stream.record();
  request.upload_stream = &stream;
}

void Executor::Impl::pre_process(std::size_t worker, RequestPtr request) {
  std::exception_ptr error;
  try {
    if (request->has_deadline() && expire_if_late(request, Clock::now())) return;
    auto& model = *request->model;
    if (request->load->pre_process) {
      run_transform(request->load->pre_process, request->inputs, *request, "pre_process");
      try {
        check_inputs(model, request->inputs);
      } catch (const Error& e) {
        throw Error(e.code(), std::string(e.what()) + " (the inputs its pre_process transform produced)");
      }
    }
    const auto& plan = model.plan();
    // Format conversion happens here, on the host, so the device sees only its own dtype.
    for (std::size_t i = 0; i < plan.input_ids.size(); ++i) {
      const auto& value = plan.values[static_cast<std::size_t>(plan.input_ids[i])];
      if (request->inputs[i].dtype() != value.dtype) request->inputs[i] = request->inputs[i].to(value.dtype);
    }
    bool admitted = true;
    if (budget->limited()) {
      const std::uint64_t bytes = arena_charge(model);
      if (bytes > budget->limit())
        throw Error(ErrorCode::out_of_memory, "model '" + model.name() + "', request " + std::to_string(request->id) +
                                                  ": its arena needs " + std::to_string(bytes) +
                                                  " bytes, more than arena_memory_limit_bytes (" +
                                                  std::to_string(budget->limit()) + ")");
      admitted = arena_waiters == 0 && budget->try_charge(bytes);
      if (admitted) request->charge = runtime::BudgetCharge(budget.get(), bytes);
    }
    if (admitted) {
      request->arena = pool->acquire(model.request_arena_bytes());
      backend::Stream* stream = nullptr;
      {
        std::lock_guard lock(worker_streams_mutex);
        stream = upload_streams.at(worker).get();
      }
      upload_inputs(*request, *stream);
    } else {
      request->deferred = true;
      ++arena_waiters;
    }
    if (options.preemption && model.info().resume_bytes > 0) request->pause_flag = device->create_pause_flag();
    request->ready_at = Clock::now();
    const Priority priority = request->options.priority;
    if (to_exec.push(request)) handed_over_to_dispatcher(priority);
  } catch (...) {
    error = std::current_exception();
  }
  // Handed on only once the handler has ended: the exception object then has no owner left on
  // this thread but `error`, and whoever frees it last does so through exception_ptr (ordered
  // by its count; tests/tsan.supp).
  if (error) fail(request, std::move(error));
}

// The last pre-process thread has left (its queue closed and drained): the dispatcher gets no more.
void Executor::Impl::pre_process_finished() {
  {
    std::lock_guard lock(running_mutex);
    pre_process_done = true;
  }
  handed_over_changed.notify_all();
  to_exec.close();
}

// A request that failed or expired may still have work queued that touches its arena: the
// upload of its inputs (a pre-process thread's stream or the transfer stream), its launched
// Steps and any partly launched one (its model's stream), a restore (transfer stream), a partial
// download (`download`). Nothing more will be queued for it, so an event recorded now on each of
// those streams marks the end of all of it, and the pool reuses the arena only once they are
// reached (without this thread waiting).
void Executor::Impl::release_failed_arena(Request& request, backend::Stream& download) {
  if (!request.arena.get()) return;
  std::vector<backend::Stream*> streams = {transfer_stream.get(), &download};
  for (backend::Stream* stream : request.model->streams()) streams.push_back(stream);
  if (request.upload_stream && request.upload_stream != transfer_stream.get()) streams.push_back(request.upload_stream);
  std::vector<std::unique_ptr<backend::Event>> after;
  try {
    for (backend::Stream* stream : streams) after.push_back(stream->record());
  } catch (...) {
    // Recording failed (a failed device): wait for the streams instead. A stream that cannot
    // be waited for belongs to a context whose work has been abandoned.
    for (backend::Stream* stream : streams) {
      try {
        stream->synchronize();
      } catch (...) {
      }
    }
    request.arena.reset();
    return;
  }
  pool->release_after(std::move(request.arena), std::move(after));
}

void Executor::Impl::post_process(std::size_t worker, RequestPtr request) {
  backend::Stream* download = nullptr;
  {
    std::lock_guard lock(worker_streams_mutex);
    download = download_streams.at(worker).get();
  }
  Outputs outputs;
  if (!request->error) {
    try {
      auto& model = *request->model;
      download->wait(*request->finished);
      const auto& infos = model.info().outputs;
      if (request->recorder)
        request->recorder->begin(trace::RequestRecorder::Span::download, *download, 0, model.output_bytes());
      std::vector<Tensor> device_outputs = model.download_outputs(request->arena.get(), *download);
      if (request->recorder) request->recorder->end(*download);
      download->synchronize();
      // A kernel of the request that failed after its launch returned (CPU stream shares), too
      // late for the dispatcher to see: the outputs are not the model's.
      if (auto failure = request->failure_scope->failure()) std::rethrow_exception(failure);
      for (std::size_t i = 0; i < device_outputs.size(); ++i)
        outputs.push_back(device_outputs[i].dtype() == infos[i].dtype ? std::move(device_outputs[i])
                                                                      : device_outputs[i].to(infos[i].dtype));
    } catch (...) {
      request->error = std::current_exception();
    }
  }
  if (request->error)
    release_failed_arena(*request, *download);
  else
    request->arena.reset();  // its download was synchronised: nothing queued touches it
  request->charge.reset();
  if (!request->error && request->load->post_process) {
    try {
      run_transform(request->load->post_process, outputs, *request, "post_process");
    } catch (...) {
      request->error = std::current_exception();
      outputs.clear();
    }
  }
  complete(*request, std::move(outputs));
}

// Ends a request: its NVTX range, its times and figures, the timeline, the counters, then the
// caller's callback.
void Executor::Impl::complete(Request& request, Outputs outputs) {
  trace::end_range(request.nvtx_range);
  RequestTimes times;
  trace::RecordedRequest recorded;
  if (request.recorder) {
    // Before the counters and the callback: whoever saw the request complete sees its events.
    recorded = request.recorder->complete(*timeline_clock, request.model->info().steps, timeline_clock->host_now_us(),
                                          request.error != nullptr, options.record_timeline ? &timeline : nullptr);
    times = recorded.times;
  } else {
    times.total_us = std::chrono::duration<double, std::micro>(Clock::now() - request.submitted_at).count();
    times.compute_us = times.total_us;
  }
  add_figures(request, recorded, times);
  (request.error ? failed : completed)++;
  try {
    request.done(request.error, std::move(outputs), times);
  } catch (...) {
    // A throwing user callback must not take the pipeline down with it.
  }
}

}  // namespace loom
