// loom-profile: measures a device's peak figures and every Step of the built-in models into a
// device profile (profiles/<device>.json, read by the executor at start), and prints how far the
// planner's roofline estimates are from the measured times. With --library it measures the
// placement pass's function library instead (profiles/library/<device>.json, docs/placement.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "loom/loom.hpp"
#include "loom/placement.hpp"
#include "loom/profile.hpp"

namespace cli = loom::cli;

namespace {

const std::vector<std::string> kModels = {"resnet", "bert", "lstm"};

struct Options {
  std::string device = "auto";
  std::vector<std::string> models = kModels;
  std::vector<std::int64_t> batches = {1};
  std::string size = "auto";
  bool fp16 = false;
  int runs = 50;
  int warmup = 5;
  std::string output;
  std::string output_dir = "profiles";
  bool no_probes = false;
  // --library: the function library instead of a device profile.
  bool library = false;
  std::vector<std::string> library_processors;
  std::vector<std::string> library_ops;
  double library_max_work = 0;
  std::string library_defaults;  // --library-defaults FILE: write the built-in defaults and exit
};

void progress(const std::string& line) { std::fprintf(stderr, "loom-profile: %s\n", line.c_str()); }

using cli::format;

// The command line as a shell would need it typed again.
std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789-_=.,:/+@%") == std::string::npos;
    if (!plain) {
      std::string quoted = "'";
      for (const char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = quoted + "'";
    }
    line += (i ? " " : "") + arg;
  }
  return line;
}

std::string iso_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string join_ops(const std::vector<std::string>& ops) {
  std::string text;
  for (const auto& op : ops) text += (text.empty() ? "" : "+") + op;
  constexpr std::size_t kWidth = 34;
  if (text.size() > kWidth) text = text.substr(0, kWidth - 3) + "...";
  return text;
}

double roofline_us(const loom::StepInfo& step) { return std::max(step.compute_us, step.memory_us); }

// measured / roofline for every Step that has both.
struct Ratio {
  double value = 0;
  std::string where;
};

std::vector<Ratio> ratios_of(const std::string& model, const std::vector<loom::StepInfo>& steps) {
  std::vector<Ratio> ratios;
  for (const auto& step : steps)
    if (roofline_us(step) > 0 && step.measured_us > 0)
      ratios.push_back({step.measured_us / roofline_us(step), model + " / " + step.name});
  return ratios;
}

// The median ratio, and the ratio furthest from 1 in either direction (by |log ratio|).
void print_ratio_summary(const char* label, std::vector<Ratio> ratios) {
  if (ratios.empty()) return;
  std::sort(ratios.begin(), ratios.end(), [](const Ratio& a, const Ratio& b) { return a.value < b.value; });
  const std::size_t mid = ratios.size() / 2;
  const double median = ratios.size() % 2 ? ratios[mid].value : (ratios[mid - 1].value + ratios[mid].value) / 2;
  const Ratio& worst = *std::max_element(ratios.begin(), ratios.end(), [](const Ratio& a, const Ratio& b) {
    return std::abs(std::log(a.value)) < std::abs(std::log(b.value));
  });
  std::printf("%s measured/roofline over %zu Steps: median %.2f, worst %.2f (%s)\n", label, ratios.size(), median,
              worst.value, worst.where.c_str());
}

std::string slowdown_text(double slowdown) { return slowdown > 0 ? format("%.2f", slowdown) : std::string("-"); }

void print_model_table(const std::string& label, const loom::ModelMeasurement& m) {
  std::printf("\n%s  [%s, fingerprint %s, %zu Steps]\n", label.c_str(),
              std::string(loom::dtype_name(m.profile.compute_dtype)).c_str(), m.profile.fingerprint.c_str(),
              m.steps.size());
  std::printf("  %3s  %-24s %-34s %11s %11s %12s %12s %7s %7s %7s\n", "#", "Step", "ops", "compute_us", "memory_us",
              "roofline_us", "measured_us", "ratio", "comp_x", "mem_x");
  for (std::size_t s = 0; s < m.steps.size(); ++s) {
    const loom::StepInfo& step = m.steps[s];
    const double roofline = roofline_us(step);
    std::printf("  %3zu  %-24s %-34s %11.2f %11.2f %12.2f %12.2f %7s %7s %7s\n", s + 1, step.name.substr(0, 24).c_str(),
                join_ops(step.ops).c_str(), step.compute_us, step.memory_us, roofline, step.measured_us,
                roofline > 0 ? format("%.2f", step.measured_us / roofline).c_str() : "-",
                slowdown_text(step.compute_probe_slowdown).c_str(), slowdown_text(step.memory_probe_slowdown).c_str());
  }
  print_ratio_summary("  ", ratios_of(label, m.steps));
}

// The profile to add to: the one already at `path` (which must be of this device), else a new one.
loom::DeviceProfile existing_or_new(const std::string& path, const std::string& device_name) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    loom::DeviceProfile fresh;
    fresh.device_name = device_name;
    return fresh;
  }
  loom::DeviceProfile existing = loom::read_profile(path);
  if (existing.device_name != device_name)
    throw cli::UsageError("'" + path + "' is a profile of '" + existing.device_name + "', not of this device ('" +
                          device_name + "'); pass another --output");
  progress("adding to the " + std::to_string(existing.models.size()) + " model entries of " + path);
  return existing;
}

void merge(loom::DeviceProfile& profile, loom::ModelProfile entry) {
  for (auto& model : profile.models)
    if (model.fingerprint == entry.fingerprint) {
      model = std::move(entry);
      return;
    }
  profile.models.push_back(std::move(entry));
}

// --library: every op kind at its ladder of sizes on every processor, and each processor's link.
int run_library(const Options& options, const std::string& command) {
  loom::FunctionLibrary library;
  std::string path = options.output;
  if (!options.library_defaults.empty()) {
    library = loom::default_function_library();
    path = options.library_defaults;
  } else {
    loom::ProfilerOptions opened;
    opened.device = options.device;
    const std::string device_name = loom::Profiler(opened).device_name();
    if (path.empty()) {
      path = (std::filesystem::path(options.output_dir) / loom::function_library_file_name(device_name)).string();
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    }
    progress("function library for " + device_name + ", writing " + path);
    loom::LibraryMeasureOptions measure;
    measure.processors = options.library_processors;
    measure.op_kinds = options.library_ops;
    measure.max_work = options.library_max_work;
    measure.runs = options.runs;
    measure.warmup = options.warmup;
    measure.progress = progress;
    library = loom::measure_function_library(measure);
    library.created = iso_now();
    library.loom_version = loom::version();
    library.command = command;
  }
  std::printf("Machine:   %s\n", library.machine.c_str());
  std::printf("Method:    %s\n", library.method.c_str());
  std::printf("\n  %-10s %4s %9s %9s %12s %12s %12s %14s\n", "processor", "host", "launch_us", "fixed_us", "flops/us",
              "bytes/us", "link_lat_us", "link_bytes/us");
  for (const auto& p : library.processors)
    std::printf("  %-10s %4s %9.3f %9.3f %12.4g %12.4g %12.3f %14.4g   round trip %.3f us\n", p.name.c_str(),
                p.host ? "yes" : "no", p.launch_us, p.fixed_us, p.flops_per_us, p.bytes_per_us, p.link_latency_us,
                p.link_bytes_per_us, p.round_trip_us);
  if (!library.entries.empty())
    std::printf("\n  %-10s %-10s %-5s %6s %12s %12s %10s %10s %10s %10s\n", "processor", "op", "dtype", "bucket",
                "work", "time_us", "t_us", "a_us", "s_us", "o_us");
  for (const auto& e : library.entries)
    std::printf("  %-10s %-10s %-5s %6d %12.4g %12.3f %10.3f %10.3f %10.3f %10.3f\n", e.processor.c_str(), e.op.c_str(),
                std::string(loom::dtype_name(e.dtype)).c_str(), e.bucket, e.work, e.time_us, e.terms.transfer_us,
                e.terms.accumulated_us, e.terms.speed_us, e.terms.complexity_us);
  loom::write_function_library(library, path);
  std::printf("\nLibrary:   %s (%zu processors, %zu entries)\n", path.c_str(), library.processors.size(),
              library.entries.size());
  return 0;
}

int run(const Options& options, const std::string& command) {
  if (options.library || !options.library_defaults.empty()) return run_library(options, command);
  loom::ProfilerOptions profiler_options;
  profiler_options.device = options.device;
  profiler_options.runs = options.runs;
  profiler_options.warmup = options.warmup;
  profiler_options.probes = !options.no_probes;
  profiler_options.progress = progress;
  loom::Profiler profiler(profiler_options);
  const std::string device_name = profiler.device_name();
  const bool cuda = profiler.backend_name() == "cuda";
  if (options.fp16 && !cuda)
    throw cli::UsageError("--fp16 needs a CUDA device; --device " + options.device + " opened the CPU");
  const loom::DType dtype = options.fp16 ? loom::DType::f16 : loom::DType::f32;
  const std::string size_text = options.size == "auto" ? (cuda ? "large" : "small") : options.size;
  const auto size = loom::workloads::size_from_name(size_text);

  std::string path = options.output;
  if (path.empty()) {
    std::filesystem::create_directories(options.output_dir);
    path = (std::filesystem::path(options.output_dir) / loom::profile_file_name(device_name)).string();
  }
  loom::DeviceProfile profile = existing_or_new(path, device_name);
  progress("device " + device_name + " (" + profiler.backend_name() + "), writing " + path);

  const loom::PeakFigures peaks = profiler.measure_peaks();
  profile.device_name = device_name;
  profile.created = iso_now();
  profile.loom_version = loom::version();
  profile.command = command;
  profile.peaks = peaks;

  std::printf("Device:    %s (%s)\n", device_name.c_str(), profiler.backend_name().c_str());
  std::printf("Peaks:     f32 %.3f TFLOP/s, f16 %s, bandwidth %.1f GB/s\n", peaks.flops_f32 / 1e12,
              peaks.flops_f16 > 0 ? format("%.3f TFLOP/s", peaks.flops_f16 / 1e12).c_str() : "not measured",
              peaks.bandwidth / 1e9);
  std::printf("Method:    %s\n", peaks.method.c_str());
  std::printf(
      "Steps:     median of %d runs after %d warm-up, %s\n", options.runs, options.warmup,
      options.no_probes ? "no probes" : (cuda ? "with compute and memory probes" : "no probes on this backend"));
  std::fflush(stdout);

  std::vector<Ratio> all_ratios;
  for (const auto& name : options.models) {
    for (const std::int64_t batch : options.batches) {
      const loom::Model model = loom::workloads::default_model(name, batch, size);
      const std::string label = name + " (" + size_text + ", batch " + std::to_string(batch) + ")";
      progress("measuring " + label);
      loom::ModelMeasurement measured = profiler.measure_model(model, dtype, peaks);
      measured.profile.model = label;
      print_model_table(label, measured);
      std::fflush(stdout);
      const auto ratios = ratios_of(label, measured.steps);
      all_ratios.insert(all_ratios.end(), ratios.begin(), ratios.end());
      merge(profile, measured.profile);
      loom::write_profile(profile, path);  // after every model, so an interrupted run keeps what it measured
    }
  }
  std::printf("\n");
  print_ratio_summary("All models:", all_ratios);
  std::printf("Profile:   %s (%zu model entries)\n", path.c_str(), profile.models.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{R"(loom-profile: measures Step costs into a device profile.

First the device's peak figures, once: a large GEMM through the backend's own MatMul kernel per
dtype (FLOP/s) and a large device-to-device copy (bandwidth, bytes read + written), each the median
of --runs timed runs. Then every Step of every model at every batch size, alone: the model is
loaded as the executor loads it, request arenas are filled with random inputs and rotated between
runs, a copy over twice the on-chip cache evicts it before every run, and timed events on the
model's stream bracket the Step; --warmup runs first, then the median of --runs. On CUDA each Step
is timed again while a compute-saturating and then a bandwidth-saturating probe kernel runs beside
it; the ratios to the time alone are its probe slowdowns.

The profile (docs/profile-format.md) goes to --output, or to --output-dir/<device>.json. When that
file exists, its other models' entries are kept and entries with the same fingerprint (same graph,
shapes, batch and compute dtype) are replaced. The executor finds it by the device's name.

Per model a table shows each Step's roofline estimate (max of compute_us and memory_us, from the
planner with the measured peaks), the measured time, their ratio and the probe slowdowns; then the
median and worst measured/roofline ratio. Progress goes to stderr.

Examples:
  loom-profile                                    # the default workload, batch 1, on this device
  loom-profile --models resnet,lstm --batch 1,8 --fp16
  loom-profile --device cpu --models lstm --size small --runs 5 --output /tmp/cpu.json
  loom-profile --library --runs 20               # the function library of this machine's processors)"};
  app.get_formatter()->column_width(34);

  app.add_option("--device", options.device, "auto (CUDA when a GPU is present, else CPU), cpu, cuda or cuda:N")
      ->type_name("auto|cpu|cuda|cuda:N")
      ->check(cli::device_name())
      ->capture_default_str();
  app.add_option("--models", options.models, "Built-in models to profile, comma list")
      ->delimiter(',')
      ->check(CLI::IsMember(kModels).description(""))
      ->type_name("resnet,bert,lstm")
      ->capture_default_str();
  app.add_option("--batch", options.batches, "Batch sizes, comma list: each is its own profile entry")
      ->delimiter(',')
      ->check(cli::positive_integer())
      ->type_name("N[,N...]")
      ->capture_default_str();
  app.add_option("--size", options.size,
                 "Model size: small, large, or auto (large on CUDA, small on the CPU), as in loom-bench")
      ->check(CLI::IsMember({"auto", "small", "large"}).description(""))
      ->type_name("auto|small|large")
      ->capture_default_str();
  app.add_flag("--fp16", options.fp16, "Profile the models computing in f16 (CUDA only); peaks are measured for both");
  app.add_option("--runs", options.runs, "Timed runs per Step and per peak figure; the median is kept")
      ->check(CLI::Range(1, 1000000).description(""))
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--warmup", options.warmup, "Untimed runs before the timed ones")
      ->check(CLI::Range(0, 1000000).description(""))
      ->type_name("N")
      ->capture_default_str();
  auto* output = app.add_option("--output", options.output, "Profile file to write (merged into when it exists)")
                     ->type_name("FILE");
  app.add_option("--output-dir", options.output_dir, "Directory for <device>.json when --output is not given")
      ->type_name("DIR")
      ->capture_default_str()
      ->excludes(output);
  app.add_flag("--no-probes", options.no_probes, "Skip the co-run measurements (slowdowns are written as 0)");
  app.add_flag("--library", options.library,
               "Measure the placement pass's function library instead: each op kind at a ladder of sizes on every "
               "processor this build can open (cpu, cpu:accel, cuda where present) and the link to each, into "
               "--output or --output-dir/library/<device>.json (docs/placement.md)");
  app.add_option("--library-processors", options.library_processors,
                 "With --library: only these processors, comma list (default: every one present)")
      ->delimiter(',')
      ->type_name("NAME[,NAME...]");
  app.add_option("--library-ops", options.library_ops,
                 "With --library: only these op kinds (matmul, conv, pointwise, reduce, pool, layout, scalar)")
      ->delimiter(',')
      ->type_name("KIND[,KIND...]");
  app.add_option("--library-max-work", options.library_max_work,
                 "With --library: skip ladder sizes above this many work units (max(FLOPs, output elements))")
      ->check(cli::non_negative_number())
      ->type_name("N");
  app.add_option("--library-defaults", options.library_defaults,
                 "Write the built-in default function library (no measurement) to FILE and exit")
      ->type_name("FILE");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  return cli::run_guarded("loom-profile", [&] { return run(options, command_line(argc, argv)); });
}
