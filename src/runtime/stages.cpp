// The executor's host stages, each on its own thread:
//   pre-process:  converts inputs to the device dtype, takes an arena when memory allows (else the
//                 dispatcher finds one later), uploads the inputs, hands the request on;
//   post-process: waits for the request's last Step, copies its outputs out, converts them back,
//                 gives the arena back and completes the request (callback or future).
#include <exception>
#include <string>
#include <vector>

#include "plan/compiled_model.hpp"
#include "runtime/executor_impl.hpp"
#include "trace/nvtx.hpp"

namespace loom {

// Any stage may fail a request; completion always happens on the post-process thread.
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
  if (request.recorder) request.recorder->begin(trace::RequestRecorder::Span::upload, stream);
  request.model->upload_inputs(request.arena.get(), request.inputs, stream);
  if (request.recorder) request.recorder->end(stream);
  request.inputs_ready = stream.record();
}

void Executor::Impl::pre_process_loop() {
  while (auto item = to_pre.pop()) {
    RequestPtr request = std::move(*item);
    std::exception_ptr error;
    try {
      if (request->has_deadline() && expire_if_late(request, Clock::now())) continue;
      auto& model = *request->model;
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
        upload_inputs(*request, *upload_stream);
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
  {
    std::lock_guard lock(running_mutex);
    pre_process_done = true;
  }
  handed_over_changed.notify_all();
  to_exec.close();
}

// A request that failed or expired may still have work queued that touches its arena: the
// upload of its inputs (upload or transfer stream), its launched Steps and any partly launched
// one (its model's stream), a restore (transfer stream), a partial download. Nothing more will
// be queued for it, so an event recorded now on each of those streams marks the end of all of
// it, and the pool reuses the arena only once they are reached (without this thread waiting).
void Executor::Impl::release_failed_arena(Request& request) {
  if (!request.arena.get()) return;
  backend::Stream* streams[] = {upload_stream.get(), transfer_stream.get(), download_stream.get(),
                                &request.model->stream()};
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

void Executor::Impl::post_process_loop() {
  while (auto item = to_post.pop()) {
    RequestPtr request = std::move(*item);
    Outputs outputs;
    if (!request->error) {
      try {
        auto& model = *request->model;
        download_stream->wait(*request->finished);
        const auto& infos = model.info().outputs;
        if (request->recorder) request->recorder->begin(trace::RequestRecorder::Span::download, *download_stream);
        std::vector<Tensor> device_outputs = model.download_outputs(request->arena.get(), *download_stream);
        if (request->recorder) request->recorder->end(*download_stream);
        download_stream->synchronize();
        for (std::size_t i = 0; i < device_outputs.size(); ++i)
          outputs.push_back(device_outputs[i].dtype() == infos[i].dtype ? std::move(device_outputs[i])
                                                                        : device_outputs[i].to(infos[i].dtype));
      } catch (...) {
        request->error = std::current_exception();
      }
    }
    if (request->error)
      release_failed_arena(*request);
    else
      request->arena.reset();  // its download was synchronised: nothing queued touches it
    request->charge.reset();
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

}  // namespace loom
