// Measuring a function library (loom-profile --library; docs/placement.md, "How it is measured"):
// each op kind as a one-node model at a ladder of sizes, timed as a device profile times a Step
// (profile::measure_model: the runtime's kernels, timed events, the median), on every processor;
// then each processor's launch, link and round-trip figures through the backend seam.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "backend/open_backend.hpp"
#include "graph/passes/passes.hpp"
#include "loom/placement.hpp"
#include "placement/figures.hpp"
#include "profiler/profiler.hpp"
#include "runtime/memory_pool.hpp"

namespace loom {
namespace {

constexpr std::size_t kLinkBytes = std::size_t{16} << 20;  // the bulk copy that gives a link's rate

// One rung of an op kind's ladder: a one-node model.
Model ladder_model(const std::string& kind, std::int64_t n) {
  ModelBuilder b(kind + "_" + std::to_string(n), 11);
  std::string out;
  if (kind == "matmul") {  // [n, n] x [n, n] weight: 2 n^3 FLOPs
    out = b.op("MatMul", {b.input("x", DType::f32, Shape{n, n}), b.random_weight("w", Shape{n, n}, 0.1f)});
  } else if (kind == "conv") {  // 16 -> 16 channels, 3x3, on n x n
    out = b.conv2d(b.input("x", DType::f32, Shape{1, 16, n, n}), 16, 16, 3, 1, 1);
  } else if (kind == "pointwise") {  // n + n
    out = b.add(b.input("a", DType::f32, Shape{n}), b.input("b", DType::f32, Shape{n}));
  } else if (kind == "reduce") {  // softmax over rows of 64
    out = b.op("Softmax", {b.input("x", DType::f32, Shape{n / 64, 64})}, {{"axis", std::int64_t{-1}}});
  } else if (kind == "pool") {  // 2x2 max pool of 16 channels, n x n
    out = b.op("MaxPool", {b.input("x", DType::f32, Shape{1, 16, n, n})},
               {{"kernel_shape", std::vector<std::int64_t>{2, 2}}, {"strides", std::vector<std::int64_t>{2, 2}}});
  } else if (kind == "layout") {  // transpose of [n / 64, 64]
    out = b.transpose(b.input("x", DType::f32, Shape{n / 64, 64}), {1, 0});
  } else if (kind == "scalar") {  // index math: i64 [n] + [n], n <= 64
    out = b.add(b.input("a", DType::i64, Shape{n}), b.input("b", DType::i64, Shape{n}));
  } else {
    throw Error(ErrorCode::invalid_argument, "function library: no ladder for op kind '" + kind + "'");
  }
  b.output(out);
  return b.build();
}

// Sizes spaced 16x in work or more, so that no two rungs share a size bucket.
std::vector<std::int64_t> ladder(const std::string& kind) {
  if (kind == "matmul") return {8, 16, 32, 64, 128, 256};
  if (kind == "conv") return {4, 8, 16, 32, 64};
  if (kind == "pointwise") return {16, 256, 4096, 65536, 1048576};
  if (kind == "reduce" || kind == "layout") return {64, 1024, 16384, 262144};
  if (kind == "pool") return {8, 32, 128};
  if (kind == "scalar") return {1, 4, 16, 64};
  return {};
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

void report(const LibraryMeasureOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

// The host time of one launch an asynchronous backend does not show in timed events: a tiny i64
// Add launched back to back, host clock per launch. 0 where launches run to completion.
double launch_us(backend::Backend& device, const LibraryMeasureOptions& options) {
  if (device.capabilities().synchronous_launches) return 0;
  const Node node{"Add", "launch_probe", {"a", "b"}, {"c"}, {}};
  backend::KernelSpec spec;
  spec.node = &node;
  spec.inputs = {{DType::i64, Shape{1}, true}, {DType::i64, Shape{1}, true}};
  spec.outputs = {{DType::i64, Shape{1}, true}};
  spec.constants = {nullptr, nullptr};
  const auto kernel = device.create_kernel(spec);
  runtime::MemoryPool pool(device);
  runtime::PooledBuffer a = pool.acquire(8), b = pool.acquire(8), c = pool.acquire(8);
  runtime::PooledBuffer workspace;
  if (kernel->workspace_bytes() > 0) workspace = pool.acquire(kernel->workspace_bytes());
  const auto stream = device.create_stream(0);
  const void* inputs[] = {a.get(), b.get()};
  void* outputs[] = {c.get()};
  const int launches = std::max(options.runs, 1) * 10;
  for (int i = 0; i < options.warmup; ++i) kernel->run(inputs, outputs, workspace.get(), *stream);
  stream->synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) kernel->run(inputs, outputs, workspace.get(), *stream);
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  stream->synchronize();
  return took.count() / launches;
}

// A processor off the host: the latency of a 4-byte copy to it, the rate of a 16 MiB one, and a
// scalar's round trip (to the host, synchronise, back, synchronise: host clock).
void measure_link(backend::Backend& device, LibraryProcessor& p, const LibraryMeasureOptions& options) {
  runtime::MemoryPool pool(device);
  runtime::PooledBuffer target = pool.acquire(kLinkBytes);
  runtime::HostBuffer source(device, kLinkBytes);
  std::fill(source.data(), source.data() + kLinkBytes, std::byte{0x5a});
  const auto stream = device.create_stream(0);
  const auto copy = [&](std::size_t bytes) {
    return profile::median(profile::time_runs(*stream, options.warmup, options.runs, nullptr, [&](int) {
      stream->copy_to_device(target.get(), source.data(), bytes);
    }));
  };
  // The clock's resolution bounds the smallest time a measurement can show.
  constexpr double kResolution_us = 1e-3;
  p.link_latency_us = std::max(copy(4), kResolution_us);
  const double bulk_us = copy(kLinkBytes);
  p.link_bytes_per_us = static_cast<double>(kLinkBytes) / std::max(bulk_us - p.link_latency_us, 1e-3);
  std::vector<double> trips;
  for (int i = 0; i < options.warmup + options.runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    stream->copy_to_host(source.data(), target.get(), 4);
    stream->synchronize();
    stream->copy_to_device(target.get(), source.data(), 4);
    stream->synchronize();
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    if (i >= options.warmup) trips.push_back(took.count());
  }
  p.round_trip_us = std::max(profile::median(trips), kResolution_us);
}

}  // namespace

FunctionLibrary measure_function_library(const LibraryMeasureOptions& options) {
  if (options.runs < 1 || options.warmup < 0)
    throw Error(ErrorCode::invalid_argument, "function library: runs must be >= 1 and warmup >= 0");
  std::vector<std::string> present;
  for (const backend::BackendEntry& entry : backend::registered_backends())
    if (entry.device_count() > 0) present.push_back(entry.name);
  // The host first: the other processors' figures are relative to it.
  std::stable_partition(present.begin(), present.end(), [](const std::string& n) { return n == "cpu"; });
  const std::vector<std::string> processors = options.processors.empty() ? present : options.processors;
  for (const auto& name : processors)
    if (std::find(present.begin(), present.end(), name) == present.end())
      throw Error(ErrorCode::invalid_argument,
                  "function library: processor '" + name +
                      "' is not one this build can open now (available: " + joined(present) + ")");
  const std::vector<std::string> kinds = options.op_kinds.empty() ? library_op_kinds() : options.op_kinds;
  for (const auto& kind : kinds)
    if (ladder(kind).empty())
      throw Error(ErrorCode::invalid_argument,
                  "function library: unknown op kind '" + kind + "' (measured: " + joined(library_op_kinds()) + ")");

  ProfilerOptions profiler;
  profiler.runs = options.runs;
  profiler.warmup = options.warmup;
  profiler.probes = false;
  // Warm, as an op runs inside a model right after the op that wrote its input.
  profiler.flush_cache = false;
  profiler.max_arenas = 2;

  FunctionLibrary library;
  library.method =
      "each op kind a one-node model at a ladder of sizes, timed as a Step alone (timed events, median of " +
      std::to_string(options.runs) + " runs after " + std::to_string(options.warmup) +
      " warm-up, cache warm); links: 4-byte and 16 MiB copies to the processor, a 4-byte round trip";
  for (const auto& name : processors) {
    const std::unique_ptr<backend::Backend> device = backend::open_backend(name);
    LibraryProcessor p;
    p.name = name;
    p.device_name = device->device_name();
    p.host = name == "cpu";  // the CPU backend's memory is the application's
    library.machine += (library.machine.empty() ? "" : "; ") + name + ": " + p.device_name;
    report(options, name + ": " + p.device_name);
    double largest_matmul = 0, largest_pointwise = 0, smallest = 0;
    for (const auto& kind : kinds) {
      for (const std::int64_t n : ladder(kind)) {
        const Model model = ladder_model(kind, n);
        const auto infos = infer_shapes(model);
        const WorkClass work_class = kind == "scalar" ? WorkClass::scalar : WorkClass::tensor;
        const placement::OpSize size = placement::node_size(model.nodes.front(), infos, work_class);
        if (options.max_work > 0 && size.work > options.max_work) continue;
        const ModelMeasurement measured = profile::measure_model(*device, model, DType::f32, {}, profiler);
        LibraryEntry e;
        e.op = kind;
        e.dtype = size.dtype;
        e.bucket = size_bucket(size.work);
        e.processor = name;
        e.work = size.work;
        e.bytes = size.bytes;
        // The clock's resolution bounds the smallest time a measurement can show.
        e.time_us = std::max(measured.steps.front().measured_us, 1e-3);
        report(options, name + " " + kind + " " + model.name + ": work " + std::to_string(size.work) + ", " +
                            std::to_string(e.time_us) + " us");
        if (kind == "matmul" && e.work > largest_matmul) {
          largest_matmul = e.work;
          p.flops_per_us = size.flops / e.time_us;
        }
        if (kind == "pointwise" && e.work > largest_pointwise) {
          largest_pointwise = e.work;
          p.bytes_per_us = e.bytes / e.time_us;
        }
        smallest = smallest == 0 ? e.time_us : std::min(smallest, e.time_us);
        library.entries.push_back(std::move(e));
      }
    }
    // Rates no ladder gave come from the backend's own peak figures.
    if (!(p.flops_per_us > 0)) p.flops_per_us = device->peak_flops(DType::f32) / 1e6;
    if (!(p.bytes_per_us > 0)) p.bytes_per_us = device->peak_bandwidth() / 1e6;
    p.fixed_us = smallest;
    p.launch_us = launch_us(*device, options);
    if (!p.host) measure_link(*device, p, options);
    report(options, name + ": launch " + std::to_string(p.launch_us) + " us, link " +
                        std::to_string(p.link_latency_us) + " us + " + std::to_string(p.link_bytes_per_us) +
                        " bytes/us, round trip " + std::to_string(p.round_trip_us) + " us");
    library.processors.push_back(std::move(p));
  }
  library.machine += " (" + std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
  placement::fill_entry_terms(library);
  return library;
}

}  // namespace loom
