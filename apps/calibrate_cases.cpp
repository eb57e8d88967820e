// loom-gpu-calibrate's cases (calibrate_cases.hpp): the launches of each, their work sized on the
// model to whole units of kUnitUs, their simulation and their quantities.
#include "calibrate_cases.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <utility>

#include "loom/error.hpp"

namespace loom::calibrate {
namespace {

struct CatalogueEntry {
  const char* name;
  const char* law;
};

// The cases in the order they run and print.
constexpr CatalogueEntry kCatalogue[] = {
    {"compute-alone",
     "the roofline, compute side: the FMA-chain kernel alone on a full grid (sm_count x blocks_per_sm "
     "blocks), 1 unit; its FLOPs over its time is the device's FP32 peak, the model's is peak_flops_f32"},
    {"memory-alone",
     "the roofline, memory side: the copy kernel alone on a full grid, 1 unit; its bytes over its time "
     "against dram_bytes_per_s"},
    {"memory-narrow",
     "a narrow kernel's bandwidth: the copy kernel with 1024-thread blocks on sm_count / 8 SMs (one block "
     "each), 1 unit on the model, which lets each busy SM draw sm_bandwidth_share x dram_bytes_per_s / "
     "sm_count"},
    {"half-pair",
     "two kernels each under half the SMs (0.4 x sm_count blocks, one per SM) of 1 and 2 units on two "
     "streams released together: the model runs them side by side, both in the longer one's time alone"},
    {"full-pair",
     "two full grids of 1 unit on two streams released together: the second finds no room until the "
     "first's blocks leave, so they serialise (2 units; the second's first block after 1)"},
    {"co-run",
     "a compute-bound and a memory-bound kernel (each half a full grid, 1 unit alone) on two streams "
     "released together: the model overlaps them up to the roofline bound, 1 unit"},
    {"co-run-sequence",
     "the same two kernels one after the other on one stream, 2 units on the model: co-run against this "
     "is the gain from running them together"},
    {"memory-pair",
     "two memory-bound kernels (each half a full grid, 1 unit alone) on two streams released together: "
     "DRAM is their one bottleneck, 2 units either way"},
    {"priority",
     "a higher-priority stream's kernel overtakes queued blocks: low (two full waves of 1 unit) and queued "
     "(one full wave) launched in that order, then urgent (one block per SM, 0.2 units alone) 0.2 units "
     "after low on the greatest-priority stream; the model gives urgent's blocks the room low's first "
     "wave leaves"},
    {"priority-equal",
     "as priority, but urgent's stream has the same priority as the others: it waits behind low's second "
     "wave and queued (about 3 units after its launch on the model)"},
    {"cooperative",
     "a cooperative kernel waits for room for all its blocks: filler (half a full grid, 1 unit), a "
     "cooperative full grid (cudaLaunchCooperativeKernel, 1 unit) and after (10 small blocks) launched in "
     "that order on three streams; the model starts the cooperative grid when filler ends, and after "
     "behind it. Not measured where the device lacks cudaDevAttrCooperativeLaunch"},
    {"launch", "host time of one kernel launch, 200 empty kernels back to back on one stream: launch_us"},
    {"graph-launch",
     "host time of one cudaGraphLaunch of a captured one-kernel graph, 100 back to back: graph_launch_us"},
    {"graph-launch-10",
     "the same with a ten-kernel graph: the model takes a graph launch to cost graph_launch_us whatever "
     "the graph holds"},
};

std::string law_of(const std::string& name) {
  for (const CatalogueEntry& entry : kCatalogue)
    if (name == entry.name) return entry.law;
  throw Error(ErrorCode::internal, "calibrate: no law for case '" + name + "'");
}

// Sizes the launches of the cases on one description and shape.
class CaseBuilder {
 public:
  CaseBuilder(const sim::GpuDevice& description, const DeviceShape& shape) : description_(description), shape_(shape) {
    if (shape_.sm_count <= 0) throw Error(ErrorCode::invalid_argument, "calibrate: the SM count must be positive");
  }

  int sm_count() const { return shape_.sm_count; }

  // Blocks of `kind` one SM holds on the model; a full grid is sm_count times that.
  int blocks_per_sm(KernelKind kind) const {
    const int per_sm = sim::blocks_per_sm(description_, spec("probe", kind, 1));
    if (per_sm <= 0)
      throw Error(ErrorCode::invalid_argument, std::string("calibrate: a block of the ") + kernel_kind_name(kind) +
                                                   " kernel does not fit on one SM of " + description_.name);
    return per_sm;
  }
  int full_grid(KernelKind kind) const { return sm_count() * blocks_per_sm(kind); }
  int half_grid(KernelKind kind) const { return sm_count() * std::max(1, blocks_per_sm(kind) / 2); }

  // The FMA-chain kernel on `blocks` blocks, `units` x kUnitUs alone on the model.
  PlannedLaunch compute(const std::string& name, int blocks, double units, int stream) const {
    PlannedLaunch launch;
    launch.kind = KernelKind::compute;
    launch.stream = stream;
    launch.spec = spec(name, KernelKind::compute, blocks);
    // Compute-bound: the model's time is proportional to the FLOPs, so one probe sizes it.
    constexpr int kProbeIterations = 1024;
    launch.spec.flops = compute_flops(blocks, kProbeIterations);
    const double probe_us = sim::kernel_alone_us(description_, launch.spec);
    const double iterations = units * kUnitUs / probe_us * kProbeIterations;
    if (!(iterations >= 0.5) || iterations > INT_MAX)
      throw Error(ErrorCode::invalid_argument, "calibrate: kernel '" + name + "' cannot be sized to " +
                                                   std::to_string(units) + " units on " + description_.name);
    launch.iterations = static_cast<int>(std::llround(iterations));
    launch.spec.flops = compute_flops(blocks, launch.iterations);
    return launch;
  }

  // The copy kernel (`kind`) on `blocks` blocks, `units` x kUnitUs alone on the model, in passes over
  // at most copy_region_elements elements, each thread moving the same number.
  PlannedLaunch copy(const std::string& name, KernelKind kind, int blocks, double units, int stream, int buffer) const {
    PlannedLaunch launch;
    launch.kind = kind;
    launch.stream = stream;
    launch.buffer = buffer;
    launch.spec = spec(name, kind, blocks);
    constexpr std::uint64_t kProbeBytes = 1'000'000'000;
    launch.spec.bytes = kProbeBytes;
    const double probe_us = sim::kernel_alone_us(description_, launch.spec);
    const double target_bytes = units * kUnitUs / probe_us * static_cast<double>(kProbeBytes);
    if (!std::isfinite(target_bytes) || target_bytes > 1e15)
      throw Error(ErrorCode::invalid_argument, "calibrate: kernel '" + name + "' cannot be sized to " +
                                                   std::to_string(units) + " units on " + description_.name);
    const auto threads = static_cast<std::size_t>(blocks) * static_cast<std::size_t>(threads_per_block(kind));
    const std::size_t per_pass_max = shape_.copy_region_elements / threads;
    if (per_pass_max == 0)
      throw Error(ErrorCode::invalid_argument, "calibrate: kernel '" + name + "' has more threads (" +
                                                   std::to_string(threads) + ") than its buffer has elements");
    const auto per_thread = static_cast<std::size_t>(std::max<long long>(
        1, std::llround(target_bytes / static_cast<double>(kCopyBytesPerElement) / static_cast<double>(threads))));
    const std::size_t passes = (per_thread + per_pass_max - 1) / per_pass_max;
    const std::size_t per_pass = (per_thread + passes - 1) / passes;
    if (passes > INT_MAX)
      throw Error(ErrorCode::invalid_argument, "calibrate: kernel '" + name + "' needs too many passes");
    launch.passes = static_cast<int>(passes);
    launch.elements = per_pass * threads;
    launch.spec.bytes = static_cast<std::uint64_t>(passes) * launch.elements * kCopyBytesPerElement;
    return launch;
  }

 private:
  sim::KernelSpec spec(const std::string& name, KernelKind kind, int blocks) const {
    if (blocks <= 0) throw Error(ErrorCode::internal, "calibrate: kernel '" + name + "' has no blocks");
    const KernelResources& resources = shape_.resources(kind);
    sim::KernelSpec k;
    k.name = name;
    k.blocks = static_cast<std::uint32_t>(blocks);
    k.threads_per_block = static_cast<std::uint32_t>(threads_per_block(kind));
    k.registers_per_thread = resources.registers_per_thread;
    k.shared_bytes_per_block = resources.shared_bytes_per_block;
    return k;
  }

  static double compute_flops(int blocks, int iterations) {
    return static_cast<double>(blocks) * kComputeThreads * static_cast<double>(iterations) * kFlopsPerThreadIteration;
  }

  const sim::GpuDevice& description_;
  const DeviceShape& shape_;
};

CalibrationCase make_case(const std::string& name, bool gated, std::vector<PlannedLaunch> launches,
                          std::vector<CaseQuantity> quantities) {
  CalibrationCase c;
  c.name = name;
  c.law = law_of(name);
  c.gated = gated;
  c.launches = std::move(launches);
  c.quantities = std::move(quantities);
  return c;
}

}  // namespace

const KernelResources& DeviceShape::resources(KernelKind kind) const {
  switch (kind) {
    case KernelKind::compute:
      return compute;
    case KernelKind::copy:
      return copy;
    case KernelKind::wide_copy:
      return wide_copy;
  }
  throw Error(ErrorCode::internal, "calibrate: unknown kernel kind");
}

std::size_t copy_region_elements(std::uint64_t l2_bytes) {
  constexpr std::uint64_t kMinRegionBytes = std::uint64_t{256} << 20;
  return static_cast<std::size_t>(std::max(kMinRegionBytes, 4 * l2_bytes) / 16);
}

DeviceShape nominal_shape(const sim::GpuDevice& description) {
  DeviceShape shape;
  shape.sm_count = description.sm_count;
  shape.copy_region_elements = copy_region_elements(description.l2_bytes);
  return shape;  // KernelResources default to kRegisterCap registers and no shared memory
}

bool CalibrationCase::needs_cooperative_launch() const {
  return std::any_of(launches.begin(), launches.end(), [](const PlannedLaunch& l) { return l.cooperative; });
}

std::vector<CalibrationCase> calibration_cases(const sim::GpuDevice& description, const DeviceShape& shape) {
  const CaseBuilder b(description, shape);
  using K = KernelKind;
  const int sms = b.sm_count();
  std::vector<CalibrationCase> cases;

  cases.push_back(make_case("compute-alone", false, {b.compute("fma", b.full_grid(K::compute), 1, 0)},
                            {{"kernel: launch to end", Quantity::launch_to_end, 0}}));
  cases.push_back(make_case("memory-alone", false, {b.copy("copy", K::copy, b.full_grid(K::copy), 1, 0, 0)},
                            {{"kernel: launch to end", Quantity::launch_to_end, 0}}));
  cases.push_back(make_case("memory-narrow", false,
                            {b.copy("narrow copy", K::wide_copy, std::max(1, sms / 8), 1, 0, 0)},
                            {{"kernel: launch to end", Quantity::launch_to_end, 0}}));

  const int under_half = std::max(1, sms * 2 / 5);
  cases.push_back(make_case(
      "half-pair", true, {b.compute("a (1 unit)", under_half, 1, 0), b.compute("b (2 units)", under_half, 2, 1)},
      {{"a: launch to end", Quantity::launch_to_end, 0}, {"both: launch to last end", Quantity::makespan, 0}}));
  cases.push_back(make_case(
      "full-pair", true,
      {b.compute("grid 1", b.full_grid(K::compute), 1, 0), b.compute("grid 2", b.full_grid(K::compute), 1, 1)},
      {{"both: launch to last end", Quantity::makespan, 0},
       {"later grid's first block after the earlier's", Quantity::last_first_block, 0}}));

  const PlannedLaunch compute_half = b.compute("compute-bound", b.half_grid(K::compute), 1, 0);
  PlannedLaunch memory_half = b.copy("memory-bound", K::copy, b.half_grid(K::copy), 1, 1, 0);
  cases.push_back(
      make_case("co-run", true, {compute_half, memory_half}, {{"both: launch to last end", Quantity::makespan, 0}}));
  memory_half.stream = 0;
  cases.push_back(make_case("co-run-sequence", false, {compute_half, memory_half},
                            {{"both: launch to last end", Quantity::makespan, 0}}));
  cases.push_back(make_case("memory-pair", true,
                            {b.copy("copy 1", K::copy, b.half_grid(K::copy), 1, 0, 0),
                             b.copy("copy 2", K::copy, b.half_grid(K::copy), 1, 1, 1)},
                            {{"both: launch to last end", Quantity::makespan, 0}}));

  for (const bool urgent_priority : {true, false}) {
    PlannedLaunch urgent = b.compute("urgent", sms, 0.2, 2);
    urgent.urgent = urgent_priority;
    urgent.at_us = 0.2 * kUnitUs;
    cases.push_back(make_case(urgent_priority ? "priority" : "priority-equal", false,
                              {b.compute("low (2 waves)", 2 * b.full_grid(K::compute), 2, 0),
                               b.compute("queued", b.full_grid(K::compute), 1, 1), urgent},
                              {{"urgent: launch to end", Quantity::launch_to_end, 2},
                               {"all: first launch to last end", Quantity::makespan, 0}}));
  }

  PlannedLaunch loop = b.compute("loop", b.full_grid(K::compute), 1, 1);
  loop.spec.cooperative = true;
  loop.cooperative = true;
  cases.push_back(make_case(
      "cooperative", false,
      {b.compute("filler", b.half_grid(K::compute), 1, 0), loop, b.compute("after", std::min(10, sms), 0.01, 2)},
      {{"all: first launch to last end", Quantity::makespan, 0},
       {"loop's first block after filler's", Quantity::first_block_after, 1},
       {"after's first block after filler's", Quantity::first_block_after, 2}}));
  return cases;
}

std::vector<LaunchTimes> simulate_case(const sim::GpuDevice& description, const CalibrationCase& calibration_case) {
  std::vector<sim::GpuLaunch> launches;
  for (const PlannedLaunch& l : calibration_case.launches)
    launches.push_back({l.spec, l.stream, l.urgent ? 1 : 0, l.at_us});
  const std::vector<sim::GpuKernelRun> runs = sim::simulate_kernels(description, launches);
  double first_block = runs.empty() ? 0 : runs.front().start_us;
  for (const sim::GpuKernelRun& run : runs) first_block = std::min(first_block, run.start_us);
  std::vector<LaunchTimes> times;
  for (std::size_t i = 0; i < runs.size(); ++i)
    times.push_back({launches[i].at_us, runs[i].end_us, runs[i].start_us - first_block, runs[i].end_us - first_block});
  return times;
}

std::vector<double> case_quantities(const CalibrationCase& calibration_case, const std::vector<LaunchTimes>& times) {
  if (times.size() != calibration_case.launches.size() || times.empty())
    throw Error(ErrorCode::internal, "calibrate: case '" + calibration_case.name + "' has " +
                                         std::to_string(calibration_case.launches.size()) + " launches but " +
                                         std::to_string(times.size()) + " times");
  double first_launch = times.front().launched_us, last_end = times.front().ended_us;
  double first_block = times.front().first_block_us, last_first_block = times.front().first_block_us;
  for (const LaunchTimes& t : times) {
    first_launch = std::min(first_launch, t.launched_us);
    last_end = std::max(last_end, t.ended_us);
    first_block = std::min(first_block, t.first_block_us);
    last_first_block = std::max(last_first_block, t.first_block_us);
  }
  std::vector<double> values;
  for (const CaseQuantity& q : calibration_case.quantities) {
    const LaunchTimes& t = times.at(static_cast<std::size_t>(q.launch));
    switch (q.kind) {
      case Quantity::launch_to_end:
        values.push_back(t.ended_us - t.launched_us);
        break;
      case Quantity::makespan:
        values.push_back(last_end - first_launch);
        break;
      case Quantity::first_block_after:
        values.push_back(t.first_block_us - first_block);
        break;
      case Quantity::last_first_block:
        values.push_back(last_first_block - first_block);
        break;
    }
  }
  return values;
}

std::vector<LaunchOverheadCase> launch_overhead_cases(const sim::GpuDevice& description) {
  return {
      {"launch", law_of("launch"), "host us per kernel launch", 0, 200, description.launch_us},
      {"graph-launch", law_of("graph-launch"), "host us per graph launch (1 kernel)", 1, 100,
       description.graph_launch_us},
      {"graph-launch-10", law_of("graph-launch-10"), "host us per graph launch (10 kernels)", 10, 100,
       description.graph_launch_us},
  };
}

std::vector<std::pair<std::string, std::string>> case_catalogue() {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const CatalogueEntry& entry : kCatalogue) entries.emplace_back(entry.name, entry.law);
  return entries;
}

}  // namespace loom::calibrate
