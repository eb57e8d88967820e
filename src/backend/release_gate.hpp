// Releases that synchronise the whole device (cudaFree, cudaFreeHost, destroying a cuBLAS or cuDNN
// handle) kept away from graph captures in flight on the same device.
//
// Such a call waits for every stream of the device, and made while any stream of that device is
// being captured it invalidates the capture, from whichever host thread it comes: capture mode
// ThreadLocal only restricts the capturing thread's own calls. A ReleaseGate counts the captures
// in flight on one device. A release asked for while one is in flight is queued and runs when the
// last capture ends; while releases run, no capture begins. The gate is plain C++ (no CUDA), so
// its rules are tested on any machine.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace loom::backend {

class ReleaseGate {
 public:
  ReleaseGate() = default;
  ReleaseGate(const ReleaseGate&) = delete;
  ReleaseGate& operator=(const ReleaseGate&) = delete;

  // A capture is about to begin; waits while releases are running.
  void begin_capture();
  // A capture has ended (successfully or not). When it was the last one in flight, runs the
  // queued releases, in the order they were asked for, on the calling thread before returning.
  void end_capture() noexcept;
  // Runs `release` now when no capture is in flight, else queues it for the end of the last one.
  // A release may itself release (it then runs at once: no capture begins while releases run).
  // Exceptions from `release` are swallowed: releases run from destructors. Should the queue
  // itself fail to grow (out of host memory), the release runs at once: the capture in flight may
  // then fail, which costs it only its graph (its work runs with plain launches).
  void release(std::function<void()> release) noexcept;

  std::size_t captures_in_flight() const;
  std::size_t queued() const;

  // The gate of CUDA device `device`, one per device for the whole process, since a capture is
  // invalidated by synchronising calls from any thread and any library object on its device.
  static ReleaseGate& for_device(int device);

 private:
  void run(std::function<void()>& release) noexcept;
  void finished_releasing() noexcept;

  mutable std::mutex mutex_;
  std::condition_variable no_releases_running_;
  std::size_t captures_ = 0;
  std::size_t releasing_ = 0;  // threads running releases now
  std::vector<std::function<void()>> queued_;
};

}  // namespace loom::backend
