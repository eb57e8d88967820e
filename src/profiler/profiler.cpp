// Measuring peaks and Step costs through the backend seam, and the public Profiler around it.
//
// A Step is timed with timed events recorded on its model's stream right before and after its
// kernels. Many runs are queued back to back and read after one synchronisation, so on an
// asynchronous device the host's launch time hides behind the device's work (the cache-flushing
// copy before each run gives the host a head start). The median of the runs is kept.
#include "profiler/profiler.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <sstream>

#include "backend/open_backend.hpp"
#include "core/random.hpp"
#include "profile/fingerprint.hpp"
#include "runtime/loaded_model.hpp"
#include "runtime/memory_pool.hpp"

namespace loom::profile {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
// Request arenas together never hold more than this (or two arenas, when one is larger).
constexpr std::uint64_t kArenaBudget = 2 * kGiB;

void report(const ProfilerOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string format_us(double us) {
  std::ostringstream text;
  text.precision(us < 10 ? 3 : 1);
  text << std::fixed << us << " us";
  return text.str();
}

// A rows x cols host tensor uniform in [-1, 1), stored as `dtype`.
Tensor random_matrix(std::int64_t rows, std::int64_t cols, DType dtype, std::uint64_t seed) {
  Tensor values(DType::f32, Shape{rows, cols});
  SplitMix64 rng(seed);
  for (float& v : values.values<float>()) v = rng.uniform(-1.f, 1.f);
  return dtype == DType::f32 ? values : values.to(dtype);
}

// FLOP/s of an n x n x n MatMul in `dtype`, through the backend's own MatMul kernel.
double measure_gemm(backend::Backend& device, runtime::MemoryPool& pool, backend::Stream& stream, std::int64_t n,
                    DType dtype, const ProfilerOptions& options) {
  const Node node{"MatMul", std::string("peak_gemm_") + std::string(dtype_name(dtype)), {"a", "b"}, {"c"}, {}};
  backend::KernelSpec spec;
  spec.node = &node;
  spec.inputs = {{dtype, Shape{n, n}, true}, {dtype, Shape{n, n}, true}};
  spec.outputs = {{dtype, Shape{n, n}, true}};
  spec.constants = {nullptr, nullptr};
  const auto kernel = device.create_kernel(spec);  // Error(unsupported) where the dtype is not computed

  const Tensor host = random_matrix(n, n, dtype, 7);
  runtime::PooledBuffer a = pool.acquire(host.bytes()), b = pool.acquire(host.bytes()), c = pool.acquire(host.bytes());
  runtime::PooledBuffer workspace;
  if (kernel->workspace_bytes() > 0) workspace = pool.acquire(kernel->workspace_bytes());
  stream.copy_to_device(a.get(), host.data(), host.bytes());
  stream.copy_on_device(b.get(), a.get(), host.bytes());
  stream.synchronize();

  const void* inputs[] = {a.get(), b.get()};
  void* outputs[] = {c.get()};
  report(options, "peaks: " + std::to_string(n) + "^3 MatMul in " + std::string(dtype_name(dtype)));
  const auto us = time_runs(stream, options.warmup, options.runs, nullptr,
                            [&](int) { kernel->run(inputs, outputs, workspace.get(), stream); });
  const double seconds = median(us) * 1e-6;
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return seconds > 0 ? flops / seconds : 0;
}

// Bytes per second of a device-to-device copy of `bytes`, counting each byte read and written.
double measure_copy(runtime::MemoryPool& pool, backend::Stream& stream, std::uint64_t bytes,
                    const ProfilerOptions& options) {
  runtime::PooledBuffer source = pool.acquire(bytes), target = pool.acquire(bytes);
  // Defined contents, and on the CPU the pages are touched before any timing.
  std::vector<std::byte> pattern(std::min<std::uint64_t>(bytes, 64 * kMiB), std::byte{0x5a});
  for (std::uint64_t offset = 0; offset < bytes; offset += pattern.size())
    stream.copy_to_device(static_cast<std::byte*>(source.get()) + offset, pattern.data(),
                          std::min<std::uint64_t>(pattern.size(), bytes - offset));
  stream.copy_on_device(target.get(), source.get(), bytes);
  stream.synchronize();

  report(options, "peaks: " + format_bytes(bytes) + " device copy");
  const auto us = time_runs(stream, options.warmup, options.runs, nullptr,
                            [&](int) { stream.copy_on_device(target.get(), source.get(), bytes); });
  const double seconds = median(us) * 1e-6;
  return seconds > 0 ? 2.0 * static_cast<double>(bytes) / seconds : 0;
}

// Per-Step median times of one pass over the model (see measure_model).
struct StepTimer {
  runtime::LoadedModel& model;
  const ProfilerOptions& options;
  std::vector<runtime::PooledBuffer> arenas;
  std::vector<std::vector<Tensor>> inputs;  // per arena, in the device dtypes
  runtime::PooledBuffer flush;              // scratch whose copy evicts the cache

  // Copies each arena's inputs in, so that the arenas hold what a request holds before Step 0.
  void reset_arenas() {
    const plan::CompiledModel& plan = model.plan();
    for (std::size_t a = 0; a < arenas.size(); ++a)
      for (std::size_t k = 0; k < plan.input_ids.size(); ++k)
        model.stream().copy_to_device(model.address(plan.input_ids[k], arenas[a].get()), inputs[a][k].data(),
                                      inputs[a][k].bytes());
    model.stream().synchronize();
  }

  std::vector<double> time_steps(const std::string& label) {
    reset_arenas();
    const auto& steps = model.plan().steps;
    backend::Stream& stream = model.stream();
    const auto arena_count = static_cast<int>(arenas.size());
    std::vector<double> medians(steps.size(), 0);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      // Running Step s on every arena brings each to the state after Step s, which the next Step
      // reads. A Step never writes a value it reads, so running it again is harmless.
      for (auto& arena : arenas) model.run_step(s, arena.get());
      const auto before = [&](int) {
        if (flush.get()) {
          const std::size_t half = flush.bytes() / 2;
          stream.copy_on_device(static_cast<std::byte*>(flush.get()) + half, flush.get(), half);
        }
      };
      const auto run = [&](int i) { model.run_step(s, arenas[static_cast<std::size_t>(i % arena_count)].get()); };
      const auto us = time_runs(stream, options.warmup, options.runs, before, run);
      medians[s] = median(us);
      report(options, model.name() + " " + label + ": Step " + std::to_string(s + 1) + "/" +
                          std::to_string(steps.size()) + " " + steps[s].name + " " + format_us(medians[s]));
    }
    return medians;
  }
};

}  // namespace

std::vector<double> time_runs(backend::Stream& stream, int warmup, int runs, const std::function<void(int)>& before,
                              const std::function<void(int)>& body) {
  std::vector<std::pair<std::unique_ptr<backend::Event>, std::unique_ptr<backend::Event>>> events;
  events.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < warmup + runs; ++i) {
    if (before) before(i);
    if (i < warmup) {
      body(i);
      continue;
    }
    auto start = stream.record_timed();
    body(i);
    auto end = stream.record_timed();
    events.emplace_back(std::move(start), std::move(end));
  }
  stream.synchronize();
  std::vector<double> us;
  us.reserve(events.size());
  for (auto& [start, end] : events) {
    end->synchronize();
    us.push_back(end->microseconds_since(*start));
  }
  return us;
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const std::size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid), samples.end());
  const double upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  const double lower = *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

PeakFigures measure_peaks(backend::Backend& device, const ProfilerOptions& options) {
  if (options.runs < 1 || options.warmup < 0)
    throw Error(ErrorCode::invalid_argument, "profiler: runs must be >= 1 and warmup >= 0");
  const bool gpu = device.capabilities().accelerator;
  const std::int64_t n = options.gemm_size > 0 ? options.gemm_size : (gpu ? 8192 : 512);
  const std::uint64_t copy_bytes = options.copy_bytes > 0 ? options.copy_bytes : (gpu ? kGiB : 64 * kMiB);

  runtime::MemoryPool pool(device);
  const auto stream = device.create_stream(0);
  PeakFigures peaks;
  std::string dtypes = "f32";
  peaks.flops_f32 = measure_gemm(device, pool, *stream, n, DType::f32, options);
  pool.trim();
  try {
    peaks.flops_f16 = measure_gemm(device, pool, *stream, n, DType::f16, options);
    dtypes += "/f16";
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported) throw;
    report(options, "peaks: no f16 MatMul on this backend (" + std::string(e.what()) + ")");
  }
  pool.trim();
  peaks.bandwidth = measure_copy(pool, *stream, copy_bytes, options);
  peaks.method = device.name() + " MatMul " + std::to_string(n) + "^3 " + dtypes + ", " + format_bytes(copy_bytes) +
                 " device copy (read + write bytes); median of " + std::to_string(options.runs) + " timed runs after " +
                 std::to_string(options.warmup) + " warm-up";
  return peaks;
}

ModelMeasurement measure_model(backend::Backend& device, const Model& model, DType compute_dtype,
                               const PeakFigures& peaks, const ProfilerOptions& options) {
  if (options.runs < 1 || options.warmup < 0 || options.max_arenas < 1)
    throw Error(ErrorCode::invalid_argument, "profiler: runs and max_arenas must be >= 1 and warmup >= 0");
  if (compute_dtype == DType::f16 && !device.capabilities().f16_compute)
    throw Error(ErrorCode::unsupported,
                "profiler: f16 compute needs a backend that computes in f16 (CUDA), not " + device.name());

  runtime::MemoryPool pool(device);
  runtime::LoadedModel loaded(model, model.name, 0, compute_dtype, device, pool,
                              roofline_peaks(peaks, device, compute_dtype));
  const plan::CompiledModel& plan = loaded.plan();
  StepTimer timer{loaded, options, {}, {}, {}};

  // Enough arenas that rotating through them touches more than twice the on-chip cache, within
  // options.max_arenas and the memory budget; at least two, so no run follows itself.
  const std::uint64_t arena_bytes = std::max<std::uint64_t>(plan.arena_bytes, 1);
  const std::uint64_t onchip = device.onchip_bytes();
  std::uint64_t count = (2 * onchip + arena_bytes - 1) / arena_bytes;
  count = std::min<std::uint64_t>(count, static_cast<std::uint64_t>(options.max_arenas));
  count = std::min<std::uint64_t>(count, kArenaBudget / arena_bytes);
  count = std::max<std::uint64_t>(count, 2);
  for (std::uint64_t a = 0; a < count; ++a) {
    timer.arenas.push_back(pool.acquire(arena_bytes));
    std::vector<Tensor> request = random_inputs(model, 1000 + a);
    for (std::size_t k = 0; k < request.size(); ++k) {
      const DType on_device = plan.values[static_cast<std::size_t>(plan.input_ids[k])].dtype;
      if (request[k].dtype() != on_device) request[k] = request[k].to(on_device);
    }
    timer.inputs.push_back(std::move(request));
  }
  if (options.flush_cache && onchip > 0) timer.flush = pool.acquire(4 * onchip);
  report(options, model.name + ": " + std::to_string(plan.steps.size()) + " Steps, " + std::to_string(count) +
                      " arenas of " + std::to_string(plan.arena_bytes) + " bytes, " + std::to_string(options.runs) +
                      " runs per Step");

  const std::vector<double> alone = timer.time_steps("alone");
  std::vector<double> with_compute, with_memory;
  if (options.probes) {
    // Each probe runs through a whole pass; a backend without probes returns nullptr at once.
    if (auto probe = device.start_probe(backend::ProbeKind::compute)) {
      with_compute = timer.time_steps("with compute probe");
      probe->stop();
    }
    if (auto probe = device.start_probe(backend::ProbeKind::memory)) {
      with_memory = timer.time_steps("with memory probe");
      probe->stop();
    }
  }
  loaded.stream().synchronize();

  ModelMeasurement result;
  result.profile.model = model.name;
  result.profile.fingerprint = plan_fingerprint(plan);
  result.profile.compute_dtype = compute_dtype;
  const auto slowdown = [&](const std::vector<double>& with, std::size_t s) {
    return with.empty() || alone[s] <= 0 ? 0.0 : with[s] / alone[s];
  };
  for (std::size_t s = 0; s < plan.steps.size(); ++s) {
    StepInfo info{plan.steps[s].info};
    info.measured_us = alone[s];
    info.compute_probe_slowdown = slowdown(with_compute, s);
    info.memory_probe_slowdown = slowdown(with_memory, s);
    result.profile.steps.push_back(
        StepProfile{info.name, info.measured_us, info.compute_probe_slowdown, info.memory_probe_slowdown});
    result.steps.push_back(std::move(info));
  }
  return result;
}

}  // namespace loom::profile

namespace loom {

struct Profiler::Impl {
  ProfilerOptions options;
  std::unique_ptr<backend::Backend> device;
};

Profiler::Profiler(ProfilerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->device = backend::open_backend(options.device);
  impl_->options = std::move(options);
}

Profiler::~Profiler() = default;

std::string Profiler::device_name() const { return impl_->device->device_name(); }
std::string Profiler::backend_name() const { return impl_->device->name(); }

PeakFigures Profiler::measure_peaks() { return profile::measure_peaks(*impl_->device, impl_->options); }

ModelMeasurement Profiler::measure_model(const Model& model, DType compute_dtype, const PeakFigures& peaks) {
  return profile::measure_model(*impl_->device, model, compute_dtype, peaks, impl_->options);
}

}  // namespace loom
