// CudaProbe: a host thread relaunches short probe kernels back to back on the probe's own stream,
// keeping two queued, until stop(). Short blocks rather than persistent ones: a persistent block
// holds registers and shared memory for good, and a Step kernel whose block needs a whole SM
// (Hopper's warp-specialised GEMMs take the full register file) would then never start.
#include "backend/cuda/probe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <thread>

#include "backend/cuda/cuda_handles.hpp"
#include "loom/error.hpp"
#include "probe.cuh"

namespace loom::backend::cuda {
namespace {

// Two blocks per SM. Compute: 1024 rounds of 8 FMAs per thread, ~20 us per block on a Hopper SM.
// Memory: 8 rounds of four 16-byte loads and stores per thread, ~70 MB read per launch on a
// 132-SM device (~40 us at 3 TB/s).
constexpr int kBlocksPerSm = 2;
constexpr int kComputeThreads = 256;
constexpr int kComputeIterations = 1024;
constexpr int kMemoryThreads = 512;
constexpr int kMemoryIterations = 8;
constexpr std::size_t kMinMemoryProbeBytes = std::size_t{512} << 20;
constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr int kEventRing = 3;  // two launches in flight, one event being reused

class CudaProbe final : public Probe {
 public:
  CudaProbe(ProbeKind kind, const ProbeTarget& target)
      : device_(target.device), kind_(kind), blocks_(std::max(target.sm_count, 1) * kBlocksPerSm) {
    DeviceGuard guard(device_);
    stream_ = create_stream_handle(cudaStreamNonBlocking, target.stream_priority);
    for (auto& event : events_) event = create_event_handle(cudaEventDisableTiming);
    if (kind == ProbeKind::compute) {
      buffer_bytes_ = sizeof(float) * static_cast<std::size_t>(blocks_);
    } else {
      // Far beyond L2, so the probe's traffic goes to device memory.
      buffer_bytes_ = std::max(8 * target.l2_bytes, kMinMemoryProbeBytes);
    }
    buffer_ = allocate(buffer_bytes_);
    LOOM_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), 0, buffer_bytes_, stream_.get()));

    std::future<void> started = started_.get_future();
    thread_ = std::thread([this] { relaunch_until_stopped(); });
    // Return only once the device is loaded: the first launch has finished and the next is queued.
    if (started.wait_for(kStartTimeout) != std::future_status::ready) {
      stop_quietly();
      throw Error(ErrorCode::backend, "probe kernels did not run within 10 s (is the device busy?)");
    }
    try {
      started.get();
    } catch (...) {
      stop_quietly();
      throw;
    }
  }

  ~CudaProbe() override { stop_quietly(); }

  void stop() override {
    if (!thread_.joinable()) return;
    stop_requested_.store(true, std::memory_order_release);
    thread_.join();
    DeviceGuard guard(device_);
    LOOM_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  static DeviceBuffer allocate(std::size_t bytes) {
    void* ptr = nullptr;
    const cudaError_t result = cudaMalloc(&ptr, bytes);
    if (result == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw Error(ErrorCode::out_of_memory, "probe: cannot allocate " + std::to_string(bytes) + " bytes");
    }
    LOOM_CUDA_CHECK(result);
    return DeviceBuffer(ptr);
  }

  void launch(std::size_t round) {
    if (kind_ == ProbeKind::compute) {
      kernels::launch_compute_probe(static_cast<float*>(buffer_.get()), blocks_, kComputeThreads, kComputeIterations,
                                    stream_.get());
    } else {
      // Each launch continues where the last stopped, so the whole buffer streams through.
      const std::size_t per_launch = kernels::memory_probe_elements(blocks_, kMemoryThreads, kMemoryIterations);
      kernels::launch_memory_probe(buffer_.get(), buffer_bytes_, round * per_launch, blocks_, kMemoryThreads,
                                   kMemoryIterations, stream_.get());
    }
    LOOM_CUDA_CHECK(cudaGetLastError());
  }

  // The probe thread. Errors are kept for stop() to rethrow; the constructor hears of one at once.
  void relaunch_until_stopped() noexcept {
    bool announced = false;
    try {
      DeviceGuard guard(device_);
      for (std::size_t round = 0; !stop_requested_.load(std::memory_order_acquire); ++round) {
        launch(round);
        LOOM_CUDA_CHECK(cudaEventRecord(events_[round % kEventRing].get(), stream_.get()));
        if (round == 0) continue;
        // At most two launches queued: wait for the one before this.
        LOOM_CUDA_CHECK(cudaEventSynchronize(events_[(round - 1) % kEventRing].get()));
        if (!announced) {
          started_.set_value();
          announced = true;
        }
      }
    } catch (...) {
      error_ = std::current_exception();
      if (!announced) started_.set_exception(std::exchange(error_, nullptr));
    }
  }

  // For the destructor and failed construction: never throws; an error is logged by the checks.
  void stop_quietly() noexcept {
    stop_requested_.store(true, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
    DeviceGuard guard(device_, DeviceGuard::NoThrow{});
    if (stream_) LOOM_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream_.get()));
    // Released here, with the device current, rather than after the guard has gone.
    buffer_.reset();
    for (auto& event : events_) event.reset();
    stream_.reset();
  }

  int device_;
  ProbeKind kind_;
  int blocks_;
  std::size_t buffer_bytes_ = 0;
  StreamHandle stream_;
  EventHandle events_[kEventRing];
  DeviceBuffer buffer_;
  std::atomic<bool> stop_requested_{false};
  std::promise<void> started_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Probe> start_probe(ProbeKind kind, const ProbeTarget& target) {
  return std::make_unique<CudaProbe>(kind, target);
}

}  // namespace loom::backend::cuda
