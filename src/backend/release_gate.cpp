// ReleaseGate: capture counting, the queue of deferred releases, one gate per device.
#include "backend/release_gate.hpp"

#include <map>
#include <memory>
#include <utility>

namespace loom::backend {

void ReleaseGate::begin_capture() {
  std::unique_lock lock(mutex_);
  no_releases_running_.wait(lock, [&] { return releasing_ == 0; });
  ++captures_;
}

void ReleaseGate::end_capture() noexcept {
  std::vector<std::function<void()>> due;
  {
    std::lock_guard lock(mutex_);
    if (captures_ > 0) --captures_;
    if (captures_ > 0 || queued_.empty()) return;
    due.swap(queued_);
    ++releasing_;
  }
  for (auto& release : due) run(release);
  finished_releasing();
}

void ReleaseGate::release(std::function<void()> release) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (captures_ > 0) {
      try {
        queued_.push_back(std::move(release));
        return;
      } catch (...) {
        // No room to queue it: it runs now (see the header).
      }
    }
    ++releasing_;
  }
  run(release);
  finished_releasing();
}

void ReleaseGate::run(std::function<void()>& release) noexcept {
  try {
    if (release) release();
  } catch (...) {
  }
}

void ReleaseGate::finished_releasing() noexcept {
  {
    std::lock_guard lock(mutex_);
    --releasing_;
  }
  no_releases_running_.notify_all();
}

std::size_t ReleaseGate::captures_in_flight() const {
  std::lock_guard lock(mutex_);
  return captures_;
}

std::size_t ReleaseGate::queued() const {
  std::lock_guard lock(mutex_);
  return queued_.size();
}

ReleaseGate& ReleaseGate::for_device(int device) {
  // Never destroyed: releases may run from static destructors of other objects at exit.
  static auto* mutex = new std::mutex();
  static auto* gates = new std::map<int, std::unique_ptr<ReleaseGate>>();
  std::lock_guard lock(*mutex);
  auto& gate = (*gates)[device];
  if (!gate) gate = std::make_unique<ReleaseGate>();
  return *gate;
}

}  // namespace loom::backend
