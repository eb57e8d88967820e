// A bounded, locked FIFO between pipeline stages: push blocks while full, pop blocks while empty,
// and close() lets the consumers drain what is left and then see the end. It also measures itself:
// how long items waited in it and how deep it got (a stage's queue wait and depth, ExecutorStats).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

namespace loom::runtime {

// What a queue has seen so far.
struct QueueFigures {
  std::uint64_t popped = 0;
  double wait_us = 0;  // summed time from push to pop of the popped items
  std::size_t depth = 0;
  std::size_t max_depth = 0;
};

template <class T>
class BoundedQueue {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // False (and `item` untouched) when the queue is closed.
  bool push(T& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.emplace_back(std::move(item), Clock::now());
    max_depth_ = std::max(max_depth_, items_.size());
    not_empty_.notify_one();
    return true;
  }
  // Blocks until an item arrives; nullopt once the queue is closed and empty.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    return take(lock);
  }
  // As pop(), but gives up after `timeout`: nullopt then too (closed_and_empty() tells which).
  template <class Rep, class Period>
  std::optional<T> pop_for(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); });
    return take(lock);
  }
  // Returns at once: an item if one is waiting.
  std::optional<T> try_pop() {
    std::unique_lock lock(mutex_);
    return take(lock);
  }
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }
  bool closed_and_empty() const {
    std::lock_guard lock(mutex_);
    return closed_ && items_.empty();
  }
  QueueFigures figures() const {
    std::lock_guard lock(mutex_);
    return {popped_, static_cast<double>(wait_ns_) / 1000.0, items_.size(), max_depth_};
  }

 private:
  std::optional<T> take(std::unique_lock<std::mutex>&) {
    if (items_.empty()) return std::nullopt;
    auto& [value, pushed_at] = items_.front();
    wait_ns_ += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - pushed_at).count());
    ++popped_;
    std::optional<T> item(std::move(value));
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::pair<T, Clock::time_point>> items_;
  bool closed_ = false;
  std::uint64_t popped_ = 0, wait_ns_ = 0;
  std::size_t max_depth_ = 0;
};

}  // namespace loom::runtime
