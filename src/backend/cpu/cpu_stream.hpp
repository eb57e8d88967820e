// The CPU backend's streams and events. A stream runs each call to completion on the calling
// thread (the reference mode), or, once given a thread share with stream workers on, queues its
// work for a worker thread of its own (the CPU analogue of a GPU stream on an SM partition).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

using StreamClock = std::chrono::steady_clock;

// A point in a stream's work, shared by the CpuEvent that names it and the stream's queue.
// Reached at most once; a timed point keeps the clock when it was reached.
class CpuPoint {
 public:
  explicit CpuPoint(bool timed) : timed_(timed) {}
  void reach() noexcept;
  bool reached() const;
  void wait() const;
  bool timed() const noexcept { return timed_; }
  // When it was reached (timed points, once reached).
  StreamClock::time_point reached_at() const;

 private:
  const bool timed_;
  mutable std::mutex mutex_;
  mutable std::condition_variable reached_cv_;
  bool reached_ = false;
  StreamClock::time_point at_{};
};

class CpuEvent final : public Event {
 public:
  // An event reached as it is recorded (a synchronous stream, or a record from inside its work).
  static std::unique_ptr<CpuEvent> reached_now(bool timed);
  explicit CpuEvent(std::shared_ptr<CpuPoint> point) : point_(std::move(point)) {}

  void synchronize() override { point_->wait(); }
  bool ready() override { return point_->reached(); }
  double microseconds_since(Event& earlier) override;
  const std::shared_ptr<CpuPoint>& point() const noexcept { return point_; }

 private:
  std::shared_ptr<CpuPoint> point_;
};

// A CPU stream. Synchronous until set_thread_share() is called on a stream created with stream
// workers on; from then on the calls made from other threads are queued, in order, for the
// stream's worker thread (started at the first of them), and calls made from inside the work it
// runs (a control-flow kernel running its body on the same stream) run inline, in place.
// Destruction waits for the queued work to finish (so it must not come from that work).
class CpuStream final : public Stream {
 public:
  // `threads`: what each kernel may use until a share says otherwise; `workers`: HostThreading::
  // stream_workers of the backend that creates it.
  CpuStream(std::size_t threads, bool workers);
  ~CpuStream() override;

  void copy_to_device(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override;
  void copy_on_device_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                         std::size_t row_bytes, std::size_t rows) override;
  std::unique_ptr<Event> record() override { return record_point(false); }
  std::unique_ptr<Event> record_timed() override { return record_point(true); }
  void wait(Event& event) override;
  // Waits for the work enqueued so far, then rethrows (once) a failure of work that belonged to
  // no FailureScope. From inside the stream's own work it returns at once: what came before is done.
  void synchronize() override;
  void set_failure_scope(std::shared_ptr<FailureScope> scope) override;
  void set_thread_share(std::size_t threads) override;

  // Runs `work` in the stream's order with the stream's thread count (KernelThreadsScope): now,
  // when the stream is synchronous or the caller is its worker (an exception then propagates to
  // the caller), else queued, its failure going to the current FailureScope.
  void execute(std::function<void()> work);
  // Whether execute() would run `work` on the calling thread now.
  bool runs_inline() const noexcept;
  // The threads each of this stream's kernels may use.
  int kernel_threads() const noexcept { return static_cast<int>(threads_.load(std::memory_order_relaxed)); }

 private:
  struct Task {
    enum class Kind { work, reach, wait } kind = Kind::work;
    std::function<void()> work;           // Kind::work
    std::shared_ptr<CpuPoint> point;      // Kind::reach and Kind::wait
    std::shared_ptr<FailureScope> scope;  // Kind::work: whose failure it would be
  };

  std::unique_ptr<Event> record_point(bool timed);
  void copy(void* dst, const void* src, std::size_t bytes);
  void enqueue(Task task);
  void run_task(Task& task);
  void worker_loop();

  const std::size_t backend_threads_;
  const bool workers_;
  std::atomic<std::size_t> threads_;
  std::atomic<bool> asynchronous_{false};

  std::mutex mutex_;  // guards everything below
  std::condition_variable work_cv_;
  std::deque<Task> queue_;
  std::shared_ptr<FailureScope> scope_;
  std::exception_ptr unscoped_failure_;
  bool stopping_ = false;
  std::thread worker_;
};

// Every kernel the CPU backend creates, run in its stream's order (CpuStream::execute): on a
// stream with a worker the call is queued with copies of its pointer lists and a reference to
// the kernel (which so lives until its queued runs are done), elsewhere it runs now; either way
// on the stream's thread count. The memory the run touches must outlive it, as on a GPU.
class StreamOrderedKernel final : public OpKernel {
 public:
  StreamOrderedKernel(const KernelSpec& spec, std::unique_ptr<OpKernel> kernel);

  std::size_t workspace_bytes() const override { return kernel_->workspace_bytes(); }
  bool capturable() const noexcept override { return kernel_->capturable(); }
  bool resumable() const noexcept override { return kernel_->resumable(); }
  std::size_t resume_state_bytes() const override { return kernel_->resume_state_bytes(); }
  std::int32_t resume_iterations() const override { return kernel_->resume_iterations(); }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream& stream) override;
  void run_resumable_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                          const ResumeContext& context, Stream& stream) override;

 private:
  std::shared_ptr<OpKernel> kernel_;
};

}  // namespace loom::backend::cpu
