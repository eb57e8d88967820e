// loom-gpu-calibrate's measurements on the GPU (calibrate_measure.hpp). Host code against the CUDA
// runtime, checked with the library's status macros and owned by its move-only handles; the
// kernels are behind calibrate_kernels.cuh.
#include "calibrate_measure.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "backend/cuda/cuda_handles.hpp"
#include "loom/error.hpp"

namespace loom::calibrate {
namespace {

using backend::cuda::create_event_handle;
using backend::cuda::create_stream_handle;
using backend::cuda::DeviceBuffer;
using backend::cuda::EventHandle;
using backend::cuda::GraphExecHandle;
using backend::cuda::GraphHandle;
using backend::cuda::StreamHandle;
using backend::cuda::UniqueHandle;
using Clock = std::chrono::steady_clock;

struct PinnedTraits {
  using handle_type = void*;
  static void destroy(void* h) noexcept { LOOM_CUDA_CHECK_NOTHROW(cudaFreeHost(h)); }
};
using PinnedBuffer = UniqueHandle<PinnedTraits>;

constexpr int kMaxLaunchesPerCase = 8;
// The gate gives up after 1 s of device time: the host releases it microseconds after queueing.
constexpr unsigned long long kGateLimitNs = 1'000'000'000;
constexpr unsigned long long kNoStart = std::numeric_limits<unsigned long long>::max();

// Ends the program: the GPU did not finish queued work in kWaitLimitSeconds. Destructors are skipped
// on purpose, since freeing device memory or destroying a stream would wait for the same GPU.
[[noreturn]] void give_up(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr,
               "loom-gpu-calibrate: error: %s did not finish within %.0f s; the GPU does not answer, exiting "
               "without cleaning up\n",
               what.c_str(), kWaitLimitSeconds);
  std::fflush(stderr);
  std::_Exit(3);
}

// True once the GPU has passed `event`. "Not ready" is an answer, not a failure: it is not left as
// this thread's last error (a later launch check would take it for its own).
bool reached(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) {
    if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
    return false;
  }
  backend::cuda::check_cuda(status, "cudaEventQuery(event)", __FILE__, __LINE__);
  return false;
}

// Waits for `event`, polling: every 20 us, or without pause where the wait times a launch.
void wait_for(cudaEvent_t event, const std::string& what, bool spin = false) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWaitLimitSeconds);
  while (!reached(event)) {
    if (Clock::now() > deadline) give_up(what);
    if (!spin) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

double elapsed_us(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  LOOM_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return static_cast<double>(ms) * 1e3;
}

int device_attribute(cudaDeviceAttr attribute, int ordinal) {
  int value = 0;
  LOOM_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, ordinal));
  return value;
}

DeviceBuffer device_alloc(std::size_t bytes) {
  void* pointer = nullptr;
  LOOM_CUDA_CHECK(cudaMalloc(&pointer, bytes));
  return DeviceBuffer(pointer);
}

PinnedBuffer pinned_alloc(std::size_t bytes, unsigned flags) {
  void* pointer = nullptr;
  LOOM_CUDA_CHECK(cudaHostAlloc(&pointer, bytes, flags));
  return PinnedBuffer(pointer);
}

}  // namespace

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: an answer, not an error to keep
    return 0;
  }
  return count;
}

// Declared in the order they are made; destroyed in reverse, buffers last, after ~GpuRunner has
// waited for every stream.
struct GpuRunner::State {
  DeviceInfo info;
  DeviceShape shape;
  std::map<KernelKind, int> cuda_blocks_per_sm;
  DeviceBuffer copy_buffers[2][2];  // [pair][a, b], copy_region_elements float4s each
  DeviceBuffer sink;                // one float
  DeviceBuffer stamps;              // 2 x kMaxLaunchesPerCase words: per launch {first start, last end}
  PinnedBuffer stamps_reset;        // the same, set to {kNoStart, 0}, copied over stamps before each run
  PinnedBuffer gate_words;          // mapped: [0] the release flag (host writes), [1] timed out (gate writes)
  unsigned* gate_words_device = nullptr;
  std::map<std::pair<int, bool>, StreamHandle> streams;  // (case stream, urgent)
  StreamHandle setup_stream;                             // stamps reset, gate, reference event
  StreamHandle capture_stream;
  EventHandle reference;
  EventHandle starts[kMaxLaunchesPerCase], ends[kMaxLaunchesPerCase];
  EventHandle overhead_end;
  std::map<int, GraphExecHandle> graphs;  // by kernels per graph

  cudaStream_t stream_for(int index, bool urgent) {
    auto& handle = streams[{index, urgent}];
    if (!handle)
      handle = create_stream_handle(cudaStreamNonBlocking,
                                    urgent ? info.greatest_stream_priority : info.least_stream_priority);
    return handle.get();
  }

  volatile unsigned* gate_flag() { return static_cast<volatile unsigned*>(gate_words.get()); }
  void release_gate() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    gate_flag()[0] = 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  // Waits for every stream to finish; called before anything is freed.
  void drain() noexcept {
    if (gate_words) gate_flag()[0] = 1;  // a gate still waiting lets its stream go
    std::vector<std::pair<cudaStream_t, std::string>> all;
    for (auto& [key, handle] : streams)
      if (handle) all.emplace_back(handle.get(), "stream " + std::to_string(key.first));
    if (setup_stream) all.emplace_back(setup_stream.get(), "the setup stream");
    if (capture_stream) all.emplace_back(capture_stream.get(), "the capture stream");
    for (const auto& [stream, name] : all) {
      const auto deadline = Clock::now() + std::chrono::duration<double>(kWaitLimitSeconds);
      for (;;) {
        const cudaError_t status = cudaStreamQuery(stream);
        if (status == cudaSuccess) break;
        if (status != cudaErrorNotReady) {  // a broken context: nothing left to wait for
          LOOM_CUDA_CHECK_NOTHROW(status);
          break;
        }
        if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
        if (Clock::now() > deadline) give_up("the work queued on " + name);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
  }

  void launch(const PlannedLaunch& l, cudaStream_t stream, unsigned long long* launch_stamps) {
    const int blocks = static_cast<int>(l.spec.blocks);
    if (l.kind == KernelKind::compute) {
      launch_compute(blocks, l.iterations, l.cooperative, static_cast<float*>(sink.get()), launch_stamps, stream);
      return;
    }
    if (l.buffer < 0 || l.buffer > 1 || l.elements > shape.copy_region_elements)
      throw Error(ErrorCode::internal, "calibrate: copy '" + l.spec.name + "' does not fit its buffers");
    launch_copy(l.kind, blocks, copy_buffers[l.buffer][0].get(), copy_buffers[l.buffer][1].get(), l.elements, l.passes,
                launch_stamps, stream);
  }

  cudaGraphExec_t graph_of(int kernels) {
    auto& exec = graphs[kernels];
    if (exec) return exec.get();
    const cudaStream_t stream = capture_stream.get();
    // One launch outside the capture first: with lazy module loading the kernel is loaded then, not
    // while the stream is capturing.
    launch_empty(stream);
    LOOM_CUDA_CHECK(cudaGetLastError());
    LOOM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < kernels; ++k) launch_empty(stream);
    const cudaError_t launched = cudaGetLastError();
    cudaGraph_t raw_graph = nullptr;
    LOOM_CUDA_CHECK(cudaStreamEndCapture(stream, &raw_graph));  // ends the capture before any throw below
    const GraphHandle graph(raw_graph);
    backend::cuda::check_cuda(launched, "launch_empty (captured)", __FILE__, __LINE__);
    cudaGraphExec_t raw_exec = nullptr;
    LOOM_CUDA_CHECK(cudaGraphInstantiate(&raw_exec, graph.get(), 0));
    exec = GraphExecHandle(raw_exec);
    return exec.get();
  }
};

GpuRunner::GpuRunner(int ordinal) : state_(std::make_unique<State>()) {
  State& s = *state_;
  const int count = cuda_device_count();
  if (ordinal < 0 || ordinal >= count)
    throw Error(ErrorCode::backend, "no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(count) +
                                        " found); --simulate-only needs none");
  LOOM_CUDA_CHECK(cudaSetDevice(ordinal));
  cudaDeviceProp properties{};
  LOOM_CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal));
  DeviceInfo& info = s.info;
  info.ordinal = ordinal;
  info.name = properties.name;
  info.sm_count = properties.multiProcessorCount;
  info.compute_capability_major = properties.major;
  info.compute_capability_minor = properties.minor;
  info.l2_bytes = static_cast<std::uint64_t>(properties.l2CacheSize);
  info.global_memory_bytes = properties.totalGlobalMem;
  info.clock_khz = device_attribute(cudaDevAttrClockRate, ordinal);
  info.memory_clock_khz = device_attribute(cudaDevAttrMemoryClockRate, ordinal);
  info.memory_bus_bits = device_attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal);
  info.cooperative_launch = device_attribute(cudaDevAttrCooperativeLaunch, ordinal) != 0;
  LOOM_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&info.least_stream_priority, &info.greatest_stream_priority));
  if (!properties.canMapHostMemory)
    throw Error(ErrorCode::unsupported, info.name + " cannot map host memory, which the gate kernel needs");

  s.shape.sm_count = info.sm_count;
  s.shape.copy_region_elements = copy_region_elements(info.l2_bytes);
  for (const KernelKind kind : {KernelKind::compute, KernelKind::copy, KernelKind::wide_copy}) {
    const KernelAttributes attributes = kernel_attributes(kind);
    KernelResources& resources = kind == KernelKind::compute ? s.shape.compute
                                 : kind == KernelKind::copy  ? s.shape.copy
                                                             : s.shape.wide_copy;
    resources.registers_per_thread = static_cast<std::uint32_t>(attributes.registers_per_thread);
    resources.shared_bytes_per_block = attributes.static_shared_bytes;
    s.cuda_blocks_per_sm[kind] = attributes.resident_blocks_per_sm;
  }

  const std::size_t region_bytes = s.shape.copy_region_elements * 16;
  std::size_t free_bytes = 0, total_bytes = 0;
  LOOM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < 4 * region_bytes + (std::size_t{64} << 20))
    throw Error(ErrorCode::out_of_memory, "the copy buffers need " + std::to_string(4 * region_bytes) +
                                              " bytes of device memory; " + std::to_string(free_bytes) + " are free");
  s.setup_stream = create_stream_handle(cudaStreamNonBlocking, info.least_stream_priority);
  s.capture_stream = create_stream_handle(cudaStreamNonBlocking, info.least_stream_priority);
  for (auto& pair : s.copy_buffers)
    for (auto& buffer : pair) {
      buffer = device_alloc(region_bytes);
      LOOM_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0, region_bytes, s.setup_stream.get()));
    }
  s.sink = device_alloc(sizeof(float));
  constexpr std::size_t kStampBytes = 2 * kMaxLaunchesPerCase * sizeof(unsigned long long);
  s.stamps = device_alloc(kStampBytes);
  s.stamps_reset = pinned_alloc(kStampBytes, cudaHostAllocDefault);
  auto* reset = static_cast<unsigned long long*>(s.stamps_reset.get());
  for (int i = 0; i < kMaxLaunchesPerCase; ++i) {
    reset[2 * i] = kNoStart;
    reset[2 * i + 1] = 0;
  }
  s.gate_words = pinned_alloc(2 * sizeof(unsigned), cudaHostAllocMapped);
  s.gate_flag()[0] = 1;
  s.gate_flag()[1] = 0;
  void* gate_device = nullptr;
  LOOM_CUDA_CHECK(cudaHostGetDevicePointer(&gate_device, s.gate_words.get(), 0));
  s.gate_words_device = static_cast<unsigned*>(gate_device);
  s.reference = create_event_handle(cudaEventDefault);
  for (int i = 0; i < kMaxLaunchesPerCase; ++i) {
    s.starts[i] = create_event_handle(cudaEventDefault);
    s.ends[i] = create_event_handle(cudaEventDefault);
  }
  s.overhead_end = create_event_handle(cudaEventDisableTiming);
  LOOM_CUDA_CHECK(cudaEventRecord(s.overhead_end.get(), s.setup_stream.get()));
  wait_for(s.overhead_end.get(), "clearing the copy buffers");
}

GpuRunner::~GpuRunner() {
  if (state_) state_->drain();
}

const DeviceInfo& GpuRunner::info() const { return state_->info; }
const DeviceShape& GpuRunner::shape() const { return state_->shape; }
int GpuRunner::cuda_blocks_per_sm(KernelKind kind) const { return state_->cuda_blocks_per_sm.at(kind); }

std::vector<LaunchTimes> GpuRunner::run(const CalibrationCase& calibration_case) {
  State& s = *state_;
  const std::vector<PlannedLaunch>& launches = calibration_case.launches;
  if (launches.empty() || launches.size() > static_cast<std::size_t>(kMaxLaunchesPerCase))
    throw Error(ErrorCode::internal, "calibrate: case '" + calibration_case.name + "' has " +
                                         std::to_string(launches.size()) + " launches (1 to " +
                                         std::to_string(kMaxLaunchesPerCase) + " run)");
  const cudaStream_t setup = s.setup_stream.get();
  auto* stamps = static_cast<unsigned long long*>(s.stamps.get());
  constexpr std::size_t kStampBytes = 2 * kMaxLaunchesPerCase * sizeof(unsigned long long);

  // The previous run has finished (its end events were waited for), so no gate reads these words.
  s.gate_flag()[0] = calibration_case.gated ? 0 : 1;
  s.gate_flag()[1] = 0;
  LOOM_CUDA_CHECK(cudaMemcpyAsync(stamps, s.stamps_reset.get(), kStampBytes, cudaMemcpyHostToDevice, setup));
  if (calibration_case.gated) launch_gate(s.gate_words_device, s.gate_words_device + 1, kGateLimitNs, setup);
  LOOM_CUDA_CHECK(cudaEventRecord(s.reference.get(), setup));

  bool released = !calibration_case.gated;
  std::set<cudaStream_t> joined;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const PlannedLaunch& l = launches[i];
    const cudaStream_t stream = s.stream_for(l.stream, l.urgent);
    if (l.at_us > 0) {
      // Launched at_us after the case's first launch reached the GPU.
      if (!released) {
        s.release_gate();
        released = true;
      }
      wait_for(s.starts[0].get(), "the first launch of case " + calibration_case.name, true);
      const auto due = Clock::now() + std::chrono::duration<double, std::micro>(l.at_us);
      while (Clock::now() < due) {
      }
    }
    if (joined.insert(stream).second) LOOM_CUDA_CHECK(cudaStreamWaitEvent(stream, s.reference.get(), 0));
    LOOM_CUDA_CHECK(cudaEventRecord(s.starts[i].get(), stream));
    s.launch(l, stream, stamps + 2 * i);
    LOOM_CUDA_CHECK(cudaEventRecord(s.ends[i].get(), stream));
  }
  if (!released) s.release_gate();
  for (std::size_t i = 0; i < launches.size(); ++i)
    wait_for(s.ends[i].get(), "kernel '" + launches[i].spec.name + "' of case " + calibration_case.name);
  if (s.gate_flag()[1] != 0)
    throw Error(ErrorCode::internal,
                "calibrate: case " + calibration_case.name + ": the gate kernel gave up before the host released it");

  std::vector<unsigned long long> device_clock(2 * kMaxLaunchesPerCase);
  LOOM_CUDA_CHECK(cudaMemcpy(device_clock.data(), stamps, kStampBytes, cudaMemcpyDeviceToHost));
  unsigned long long first_block = kNoStart;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    if (device_clock[2 * i] == kNoStart || device_clock[2 * i + 1] < device_clock[2 * i])
      throw Error(ErrorCode::internal, "calibrate: kernel '" + launches[i].spec.name + "' of case " +
                                           calibration_case.name + " left no device-clock stamps");
    first_block = std::min(first_block, device_clock[2 * i]);
  }
  std::vector<LaunchTimes> times;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    LaunchTimes t;
    t.launched_us = elapsed_us(s.reference.get(), s.starts[i].get());
    t.ended_us = elapsed_us(s.reference.get(), s.ends[i].get());
    t.first_block_us = static_cast<double>(device_clock[2 * i] - first_block) * 1e-3;
    t.last_block_us = static_cast<double>(device_clock[2 * i + 1] - first_block) * 1e-3;
    times.push_back(t);
  }
  return times;
}

double GpuRunner::host_launch_us(const LaunchOverheadCase& overhead) {
  State& s = *state_;
  if (overhead.launches <= 0) throw Error(ErrorCode::internal, "calibrate: " + overhead.name + " has no launches");
  const cudaStream_t stream = s.stream_for(0, false);
  Clock::time_point start, end;
  if (overhead.kernels_per_graph == 0) {
    start = Clock::now();
    for (int i = 0; i < overhead.launches; ++i) launch_empty(stream);
    end = Clock::now();
    LOOM_CUDA_CHECK(cudaGetLastError());
  } else {
    const cudaGraphExec_t graph = s.graph_of(overhead.kernels_per_graph);
    start = Clock::now();
    for (int i = 0; i < overhead.launches; ++i) LOOM_CUDA_CHECK(cudaGraphLaunch(graph, stream));
    end = Clock::now();
  }
  LOOM_CUDA_CHECK(cudaEventRecord(s.overhead_end.get(), stream));
  wait_for(s.overhead_end.get(), "the launches of case " + overhead.name);
  return std::chrono::duration<double, std::micro>(end - start).count() / overhead.launches;
}

}  // namespace loom::calibrate
