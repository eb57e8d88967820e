// The threads of one host stage (pre-process or post-process): each takes the next item from the
// stage's queue and handles it. The count can change while the stage runs (re-balancing): a larger
// count starts threads, a smaller one parks the highest-numbered ones after their current item.
// Busy time and items taken are counted here, for the stage's figures and the re-balancing.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "runtime/bounded_queue.hpp"

namespace loom::runtime {

struct StageWork {
  std::uint64_t items = 0;
  std::uint64_t busy_ns = 0;
};

template <class Item>
class StageWorkers {
 public:
  // Handles one item on worker `worker` (0-based, stable for the thread's life). Must not throw.
  using Handler = std::function<void(std::size_t worker, Item item)>;
  // Called on the thread that raises the count, before worker `worker` starts, for each new worker
  // (its own streams, say). May throw: the count then stays as it was.
  using Prepare = std::function<void(std::size_t worker)>;

  StageWorkers(BoundedQueue<Item>& queue, Handler handle, Prepare prepare, std::function<void()> after_last)
      : queue_(queue), handle_(std::move(handle)), prepare_(std::move(prepare)), after_last_(std::move(after_last)) {}
  ~StageWorkers() { join(); }
  StageWorkers(const StageWorkers&) = delete;
  StageWorkers& operator=(const StageWorkers&) = delete;

  // Serves with `count` threads (>= 1) from now on. Threads never started before are started;
  // surplus ones park once their current item is done. Ignored once the queue has closed and
  // drained (the workers are leaving).
  void set_threads(std::size_t count) {
    count = std::max<std::size_t>(count, 1);
    std::lock_guard lock(mutex_);
    if (finished_) return;
    while (threads_.size() < count) {
      const std::size_t index = threads_.size();
      prepare_(index);
      ++running_;
      try {
        threads_.emplace_back([this, index] { run(index); });
      } catch (...) {
        --running_;
        throw;
      }
    }
    target_ = count;
    park_changed_.notify_all();
  }
  std::size_t threads() const {
    std::lock_guard lock(mutex_);
    return target_;
  }
  StageWork work() const { return {items_.load(), busy_ns_.load()}; }

  // Waits for every worker to leave (they leave once the queue is closed and drained).
  void join() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }

 private:
  static constexpr std::chrono::milliseconds kPoll{50};  // how soon a parked worker sees the queue close

  void run(std::size_t index) {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        while (index >= target_) {
          park_changed_.wait_for(lock, kPoll);
          if (index >= target_ && queue_.closed_and_empty()) return leave(lock);
        }
      }
      std::optional<Item> item = queue_.pop_for(kPoll);
      if (!item) {
        if (queue_.closed_and_empty()) {
          std::unique_lock lock(mutex_);
          return leave(lock);
        }
        continue;
      }
      // Counted when taken: the handler may complete the request (post-process), and whoever
      // then holds its result must find it counted.
      ++items_;
      const auto start = std::chrono::steady_clock::now();
      handle_(index, std::move(*item));
      busy_ns_ += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }
  }

  // The last worker out runs after_last (outside the lock: it may close the next queue).
  void leave(std::unique_lock<std::mutex>& lock) {
    const bool last = --running_ == 0;
    if (last) finished_ = true;
    lock.unlock();
    if (last && after_last_) after_last_();
  }

  BoundedQueue<Item>& queue_;
  Handler handle_;
  Prepare prepare_;
  std::function<void()> after_last_;
  mutable std::mutex mutex_;
  std::condition_variable park_changed_;
  std::vector<std::thread> threads_;
  std::size_t target_ = 0;
  std::size_t running_ = 0;
  bool finished_ = false;
  std::atomic<std::uint64_t> items_{0}, busy_ns_{0};
};

}  // namespace loom::runtime
