// CpuStream: synchronous calls, or a queue served by a worker thread of the stream's own; its
// events (points reached in the queue's order) and the kernel wrapper that puts kernels in it.
#include "backend/cpu/cpu_stream.hpp"

#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {
namespace {

// The stream whose worker this thread is (null on every other thread): calls a kernel makes on
// its own stream while the worker runs it are done inline.
thread_local const CpuStream* worker_of = nullptr;

}  // namespace

void CpuPoint::reach() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (reached_) return;
    reached_ = true;
    if (timed_) at_ = StreamClock::now();
  }
  reached_cv_.notify_all();
}

bool CpuPoint::reached() const {
  std::lock_guard lock(mutex_);
  return reached_;
}

void CpuPoint::wait() const {
  std::unique_lock lock(mutex_);
  reached_cv_.wait(lock, [&] { return reached_; });
}

StreamClock::time_point CpuPoint::reached_at() const {
  std::lock_guard lock(mutex_);
  return at_;
}

std::unique_ptr<CpuEvent> CpuEvent::reached_now(bool timed) {
  auto point = std::make_shared<CpuPoint>(timed);
  point->reach();
  return std::make_unique<CpuEvent>(std::move(point));
}

double CpuEvent::microseconds_since(Event& earlier) {
  auto* other = dynamic_cast<CpuEvent*>(&earlier);
  if (!other)
    throw Error(ErrorCode::invalid_argument, "microseconds_since: the earlier event does not come from a CPU stream");
  if (!point_->timed() || !other->point_->timed())
    throw Error(ErrorCode::invalid_argument, "microseconds_since: both events must come from record_timed()");
  // Both must be reached (the caller synchronised them); waiting here keeps a slip harmless.
  point_->wait();
  other->point_->wait();
  return std::chrono::duration<double, std::micro>(point_->reached_at() - other->point_->reached_at()).count();
}

CpuStream::CpuStream(std::size_t threads, bool workers)
    : backend_threads_(threads), workers_(workers), threads_(threads) {}

CpuStream::~CpuStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  // The worker finishes what is queued first: events recorded on this stream are all reached,
  // so no other stream's worker waits for them forever.
  if (worker_.joinable()) worker_.join();
}

bool CpuStream::runs_inline() const noexcept {
  return !asynchronous_.load(std::memory_order_acquire) || worker_of == this;
}

void CpuStream::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (runs_inline()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  Task task;
  task.work = [dst, src, bytes] { std::memcpy(dst, src, bytes); };
  enqueue(std::move(task));
}

void CpuStream::copy_to_device(void* dst, const void* src, std::size_t bytes) { copy(dst, src, bytes); }
void CpuStream::copy_to_host(void* dst, const void* src, std::size_t bytes) { copy(dst, src, bytes); }
void CpuStream::copy_on_device(void* dst, const void* src, std::size_t bytes) { copy(dst, src, bytes); }

void CpuStream::copy_on_device_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                                  std::size_t row_bytes, std::size_t rows) {
  const auto copy_rows = [=] {
    for (std::size_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<std::byte*>(dst) + r * dst_pitch, static_cast<const std::byte*>(src) + r * src_pitch,
                  row_bytes);
  };
  if (row_bytes == 0 || rows == 0) return;
  if (runs_inline()) return copy_rows();
  Task task;
  task.work = copy_rows;  // one task, not one per row
  enqueue(std::move(task));
}

std::unique_ptr<Event> CpuStream::record_point(bool timed) {
  // Inline, everything before this point is done: the event is reached as it is recorded.
  if (runs_inline()) return CpuEvent::reached_now(timed);
  Task task;
  task.kind = Task::Kind::reach;
  task.point = std::make_shared<CpuPoint>(timed);
  auto event = std::make_unique<CpuEvent>(task.point);
  enqueue(std::move(task));
  return event;
}

void CpuStream::wait(Event& event) {
  auto* cpu_event = dynamic_cast<CpuEvent*>(&event);
  if (runs_inline() || !cpu_event) {
    // A synchronous stream's later work starts when the call returns: the host waits here.
    event.synchronize();
    return;
  }
  if (cpu_event->ready()) return;
  Task task;
  task.kind = Task::Kind::wait;
  task.point = cpu_event->point();
  enqueue(std::move(task));
}

void CpuStream::synchronize() {
  if (worker_of == this) return;
  if (asynchronous_.load(std::memory_order_acquire)) record_point(false)->synchronize();
  std::exception_ptr failure;
  {
    std::lock_guard lock(mutex_);
    failure = std::exchange(unscoped_failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

void CpuStream::set_failure_scope(std::shared_ptr<FailureScope> scope) {
  std::lock_guard lock(mutex_);
  scope_ = std::move(scope);
}

void CpuStream::set_thread_share(std::size_t threads) {
  threads_.store(threads > 0 ? threads : backend_threads_, std::memory_order_relaxed);
  if (workers_) asynchronous_.store(true, std::memory_order_release);
}

void CpuStream::execute(std::function<void()> work) {
  if (runs_inline()) {
    KernelThreadsScope threads(kernel_threads());
    work();
    return;
  }
  Task task;
  task.work = std::move(work);
  enqueue(std::move(task));
}

void CpuStream::enqueue(Task task) {
  {
    std::lock_guard lock(mutex_);
    if (task.kind == Task::Kind::work) task.scope = scope_;
    queue_.push_back(std::move(task));
    if (!worker_.joinable()) {
      try {
        worker_ = std::thread([this] { worker_loop(); });
      } catch (const std::system_error& e) {
        queue_.pop_back();
        throw Error(ErrorCode::backend, std::string("cpu stream: cannot start its worker thread: ") + e.what());
      }
    }
  }
  work_cv_.notify_one();
}

void CpuStream::run_task(Task& task) {
  switch (task.kind) {
    case Task::Kind::reach:
      task.point->reach();
      return;
    case Task::Kind::wait:
      task.point->wait();
      return;
    case Task::Kind::work:
      break;
  }
  // The scope's earlier work failed: what follows would run on its wrong data.
  if (task.scope && task.scope->failed()) return;
  try {
    KernelThreadsScope threads(kernel_threads());
    task.work();
  } catch (...) {
    if (task.scope) {
      task.scope->fail(std::current_exception());
    } else {
      std::lock_guard lock(mutex_);
      if (!unscoped_failure_) unscoped_failure_ = std::current_exception();
    }
  }
}

void CpuStream::worker_loop() {
  worker_of = this;
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued is done
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    run_task(task);
  }
}

StreamOrderedKernel::StreamOrderedKernel(const KernelSpec& spec, std::unique_ptr<OpKernel> kernel)
    : OpKernel(spec), kernel_(std::move(kernel)) {}

void StreamOrderedKernel::run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                                   Stream& stream) {
  auto* cpu = dynamic_cast<CpuStream*>(&stream);
  if (!cpu) return kernel_->run(inputs, outputs, workspace, stream);
  if (cpu->runs_inline()) {
    KernelThreadsScope threads(cpu->kernel_threads());
    return kernel_->run(inputs, outputs, workspace, stream);
  }
  // The caller's pointer lists are gone by the time the worker runs the kernel: copy them.
  cpu->execute([kernel = kernel_, in = std::vector<const void*>(inputs.begin(), inputs.end()),
                out = std::vector<void*>(outputs.begin(), outputs.end()), workspace,
                cpu] { kernel->run(in, out, workspace, *cpu); });
}

void StreamOrderedKernel::run_resumable_impl(std::span<const void* const> inputs, std::span<void* const> outputs,
                                             void* workspace, const ResumeContext& context, Stream& stream) {
  auto* cpu = dynamic_cast<CpuStream*>(&stream);
  if (!cpu) return kernel_->run_resumable(inputs, outputs, workspace, context, stream);
  if (cpu->runs_inline()) {
    KernelThreadsScope threads(cpu->kernel_threads());
    return kernel_->run_resumable(inputs, outputs, workspace, context, stream);
  }
  cpu->execute([kernel = kernel_, in = std::vector<const void*>(inputs.begin(), inputs.end()),
                out = std::vector<void*>(outputs.begin(), outputs.end()), workspace, context,
                cpu] { kernel->run_resumable(in, out, workspace, context, *cpu); });
}

}  // namespace loom::backend::cpu
