// loom-bench: runs the built-in default workload (or the built-in models named, and/or ONNX files)
// closed-loop on one device, every model at the same time, and reports throughput and latency the
// way trtexec does, or as one JSON document.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_runner.hpp"
#include "bench_stats.hpp"
#include "cli_support.hpp"
#include "loom/loom.hpp"
#include "model_flags.hpp"

namespace cli = loom::cli;

namespace {

using loom::bench::LatencySummary;
using loom::bench::LoadConfig;
using loom::bench::LoadProgress;
using loom::bench::LoadResult;
using loom::bench::LoadTarget;

const std::vector<std::string> kDefaultModels = {"resnet", "bert", "lstm"};
// Always in the JSON report, whatever --percentile asks for, so scripts can rely on them.
const std::vector<double> kJsonPercentiles = {50, 90, 95, 99};

struct BenchOptions {
  std::vector<std::string> models;      // built-in models
  std::vector<std::string> onnx_files;  // one model each, after the built-in ones
  std::vector<std::string> shapes;      // NAME:DIMS, for the ONNX models' inputs
  std::vector<std::string> dims;        // NAME=N, symbolic dims of the ONNX models' inputs
  std::vector<std::string> input_ranges;  // NAME:LO,HI, integer inputs of the ONNX models
  std::size_t iterations = 10;
  double warmup_ms = 200;
  double duration_s = 0;
  std::vector<double> percentiles = {90, 95, 99};
  std::string device = "auto";
  std::int64_t batch = 1;
  std::string size = "auto";
  bool fp16 = false;
  std::string policy = "fifo";
  std::string profile = "auto";
  std::size_t concurrency = 1;
  std::string export_times;
  std::string export_trace;
  bool json = false;
  std::uint64_t seed = 1;
};

std::string format(const char* fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, value);
  return text;
}

// JSON figures to 0.1 microsecond (ms values) or 0.001 qps: more digits would only be noise.
double rounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

std::string percentile_label(double p) {
  char text[48];
  std::snprintf(text, sizeof text, "percentile(%g%%)", p);
  return text;
}

// A one-line bar on stderr, redrawn a few times a second; silent unless stderr is a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(std::vector<std::string> models) : models_(std::move(models)), enabled_(isatty(2) != 0) {}

  void update(const LoadProgress& progress, std::size_t iterations) {
    if (!enabled_) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(std::lround(progress.fraction * kWidth));
    std::string line = "\r[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
    line += format("%3.0f%% ", progress.fraction * 100);
    line += progress.warming_up ? "warming up" : "measuring";
    if (!progress.warming_up) {
      for (std::size_t i = 0; i < models_.size() && i < progress.completed.size(); ++i)
        line += "  " + models_[i] + " " + std::to_string(progress.completed[i]) + (progress.completed[i] < iterations ? "/" + std::to_string(iterations) : "");
    }
    std::fputs((line + "\033[K").c_str(), stderr);
    std::fflush(stderr);
    drawn_ = true;
  }

  void clear() {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  std::vector<std::string> models_;
  bool enabled_;
  bool drawn_ = false;
};

struct ModelReport {
  std::string name;
  loom::ModelInfo info;
  std::size_t requests = 0;
  double qps = 0;
  LatencySummary latency;
  std::vector<double> sorted_ms;  // measured latencies, ascending
};

std::string describe_values(const std::vector<loom::ValueInfo>& values) {
  std::string text;
  for (const auto& value : values) {
    if (!text.empty()) text += ", ";
    text += value.name + " " + value.shape.to_string() + " " + std::string(loom::dtype_name(value.dtype));
  }
  return text;
}

void print_header(const BenchOptions& options, const loom::Executor& executor, const std::string& size,
                  const std::vector<ModelReport>& reports) {
  std::printf("=== Loom benchmark (loom-bench %s) ===\n", loom::version());
  std::printf("Device:       %s (backend: %s)\n", executor.device_name().c_str(), executor.backend_name().c_str());
  std::printf("Policy:       %s\n", executor.policy_name().c_str());
  std::printf("Batch:        %lld\n", static_cast<long long>(options.batch));
  std::printf("Size:         %s%s\n", size.c_str(),
              options.size == "auto" ? " (auto: large on CUDA, small on the CPU)" : "");
  std::printf("Precision:    %s\n", options.fp16 ? "f16" : "f32");
  std::printf("Step costs:   %s\n", executor.profile_path() == "none"
                                       ? "roofline estimates (no device profile; see loom-profile)"
                                       : ("profile " + executor.profile_path()).c_str());
  std::printf("Load:         closed loop, %zu request(s) outstanding per model, all models at once\n",
              options.concurrency);
  std::printf("Warm-up:      %g ms\n", options.warmup_ms);
  std::printf("Measurement:  at least %zu requests per model and at least %g s\n", options.iterations,
              options.duration_s);
  std::printf("Models:\n");
  int name_width = 8;
  for (const auto& report : reports) name_width = std::max(name_width, static_cast<int>(report.name.size()));
  for (const auto& report : reports) {
    std::printf("  %-*s %4zu Steps, %9.2f MB weights, %8.2f MB activations per request; inputs: %s\n",
                name_width, report.name.c_str(), report.info.steps.size(), report.info.weight_bytes / 1e6,
                report.info.activation_bytes / 1e6, describe_values(report.info.inputs).c_str());
  }
  std::fflush(stdout);
}

// Busy fraction of each stream in pipeline order (upload, the models' streams as named, download),
// then any other device track.
std::vector<loom::TrackUtilization> stream_utilization(const loom::UtilizationSummary& summary,
                                                       const std::vector<std::string>& models) {
  std::vector<std::string> order = {"stream:upload"};
  for (const auto& model : models) order.push_back("stream:" + model);
  order.push_back("stream:download");
  std::vector<loom::TrackUtilization> tracks;
  for (const auto& name : order)
    for (const auto& track : summary.tracks)
      if (track.track == name) tracks.push_back(track);
  for (const auto& track : summary.tracks)
    if (track.track.rfind("stream:", 0) == 0 && std::find(order.begin(), order.end(), track.track) == order.end())
      tracks.push_back(track);
  return tracks;
}

void print_utilization(const loom::UtilizationSummary& summary, const std::vector<std::string>& models) {
  std::printf("Device utilisation over the measured phase (%.3f ms, from the trace):\n", summary.span_us / 1000.0);
  std::printf("  %-22s %5.1f%% busy\n", "any stream", summary.device_busy_fraction * 100);
  for (const auto& track : stream_utilization(summary, models))
    std::printf("  %-22s %5.1f%%\n", track.track.c_str(), track.busy_fraction * 100);
}

void print_summary(const std::vector<ModelReport>& reports, double total_qps,
                   std::size_t total_requests, double measured_s) {
  std::printf("\n=== Performance summary ===\n");
  for (const auto& report : reports) {
    const auto& l = report.latency;
    std::printf("%s: %zu requests, throughput %.2f qps\n", report.name.c_str(), report.requests, report.qps);
    std::printf("  Latency: min = %.3f ms, max = %.3f ms, mean = %.3f ms, median = %.3f ms\n", l.min, l.max, l.mean,
                l.median);
    std::string line;
    for (const auto& [p, value] : l.percentiles)
      line += (line.empty() ? "           " : ", ") + percentile_label(p) + " = " + format("%.3f", value) + " ms";
    if (!line.empty()) std::printf("%s\n", line.c_str());
  }
  std::printf("Total throughput: %.2f qps (%zu requests in %.3f s)\n", total_qps, total_requests, measured_s);
  std::printf("Latency is submit -> result ready; percentiles are nearest-rank over the sorted latencies.\n");
}

nlohmann::ordered_json json_report(const BenchOptions& options, const loom::Executor& executor,
                                   const std::string& size, const std::vector<ModelReport>& reports,
                                   double total_qps, double measured_s,
                                   const loom::UtilizationSummary* utilization) {
  nlohmann::ordered_json doc;
  doc["device"] = executor.device_name();
  doc["backend"] = executor.backend_name();
  doc["policy"] = executor.policy_name();
  doc["profile"] = executor.profile_path();
  doc["batch"] = options.batch;
  doc["size"] = size;
  doc["models"] = nlohmann::ordered_json::array();
  for (const auto& report : reports) {
    nlohmann::ordered_json latency;
    latency["min"] = rounded(report.latency.min, 4);
    latency["mean"] = rounded(report.latency.mean, 4);
    // The fixed keys first, then any extra percentile asked for, in the order asked.
    std::vector<double> keys = kJsonPercentiles;
    for (double p : options.percentiles)
      if (std::find(keys.begin(), keys.end(), p) == keys.end()) keys.push_back(p);
    for (double p : keys) latency[loom::bench::percentile_key(p)] = rounded(loom::bench::nearest_rank(report.sorted_ms, p), 4);
    latency["max"] = rounded(report.latency.max, 4);
    nlohmann::ordered_json model;
    model["name"] = report.name;
    model["requests"] = report.requests;
    model["qps"] = rounded(report.qps, 3);
    model["latency_ms"] = std::move(latency);
    doc["models"].push_back(std::move(model));
  }
  doc["throughput_qps"] = rounded(total_qps, 3);
  doc["duration_s"] = rounded(measured_s, 6);
  if (utilization) {
    nlohmann::ordered_json u;
    u["device_busy"] = rounded(utilization->device_busy_fraction, 4);
    u["span_ms"] = rounded(utilization->span_us / 1000.0, 4);
    u["tracks"] = nlohmann::ordered_json::array();
    for (const auto& track : stream_utilization(*utilization, options.models))
      u["tracks"].push_back({{"track", track.track}, {"busy", rounded(track.busy_fraction, 4)}});
    doc["utilization"] = std::move(u);
  }
  return doc;
}

void write_times(std::ofstream& out, const LoadResult& result) {
  struct Row {
    const std::string* model;
    loom::bench::RequestTiming timing;
  };
  std::vector<Row> rows;
  for (const auto& model : result.models)
    for (const auto& timing : model.requests) rows.push_back({&model.model, timing});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.timing.start_ms < b.timing.start_ms; });
  nlohmann::ordered_json times = nlohmann::ordered_json::array();
  for (const auto& row : rows) {
    nlohmann::ordered_json entry;
    entry["model"] = *row.model;
    entry["request"] = row.timing.index;
    entry["start_ms"] = rounded(row.timing.start_ms, 4);
    entry["end_ms"] = rounded(row.timing.end_ms, 4);
    entry["latency_ms"] = rounded(row.timing.latency_ms(), 4);
    times.push_back(std::move(entry));
  }
  out << times.dump(1) << '\n';
}

// What --shapes, --dims and --input-range say about the ONNX models' inputs.
struct OnnxBindings {
  std::map<std::string, loom::Shape> shapes;
  std::map<std::string, std::int64_t> dims;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges;
};

// A concrete shape for every input of an imported model: --shapes for the whole input, else each
// symbolic dim from --dims, else --batch for a dim named like a batch (batch, batch_size, N) or an
// unnamed first dim. Any other symbolic dim is a UsageError saying which flag would bind it.
loom::OptimizeOptions bind_onnx_inputs(const loom::Model& model, const std::string& file,
                                       const OnnxBindings& bindings, std::int64_t batch) {
  loom::OptimizeOptions optimize;
  optimize.dim_values = bindings.dims;
  optimize.default_dim_value = 0;  // every input dim is bound below; nothing may fall back silently
  for (const auto& input : model.inputs) {
    if (auto it = bindings.shapes.find(input.name); it != bindings.shapes.end()) {
      optimize.input_shapes[input.name] = it->second;
      continue;
    }
    std::vector<std::int64_t> dims = input.shape.dims();
    for (std::size_t axis = 0; axis < dims.size(); ++axis) {
      if (dims[axis] >= 0) continue;
      const std::string dim = axis < input.dim_params.size() ? input.dim_params[axis] : "";
      if (!dim.empty() && bindings.dims.count(dim))
        dims[axis] = bindings.dims.at(dim);
      else if (cli::is_batch_dim_name(dim) || (dim.empty() && axis == 0))
        dims[axis] = batch;
      else
        throw cli::UsageError(file + ": input " + cli::describe_declared_input(input) + ": " +
                              (dim.empty() ? "dim " + std::to_string(axis) + " is unknown"
                                           : "symbolic dim '" + dim + "' has no size") +
                              "; bind it with --shapes=" + input.name + ":DIMS" +
                              (dim.empty() ? "" : " or --dims=" + dim + "=N"));
    }
    optimize.input_shapes[input.name] = loom::Shape(std::move(dims));
  }
  return optimize;
}

// Every name in --shapes, --dims and --input-range must belong to some --onnx model's inputs, so
// that a misspelt name fails instead of being ignored.
void check_bindings_used(const OnnxBindings& bindings, const std::vector<loom::Model>& models) {
  auto has_input = [&](const std::string& name) {
    for (const auto& model : models)
      for (const auto& input : model.inputs)
        if (input.name == name) return true;
    return false;
  };
  auto has_dim = [&](const std::string& name) {
    for (const auto& model : models)
      for (const auto& input : model.inputs)
        if (std::find(input.dim_params.begin(), input.dim_params.end(), name) != input.dim_params.end()) return true;
    return false;
  };
  for (const auto& [name, shape] : bindings.shapes)
    if (!has_input(name)) throw cli::UsageError("--shapes: no --onnx model has an input named '" + name + "'");
  for (const auto& [name, range] : bindings.ranges)
    if (!has_input(name)) throw cli::UsageError("--input-range: no --onnx model has an input named '" + name + "'");
  for (const auto& [name, size] : bindings.dims)
    if (!has_dim(name)) throw cli::UsageError("--dims: no --onnx model input has a symbolic dim named '" + name + "'");
}

// A model name for an ONNX file: its stem, made unique among `taken` with -2, -3, ...
std::string onnx_model_name(const std::string& file, const std::vector<std::string>& taken) {
  std::string stem = std::filesystem::path(file).stem().string();
  if (stem.empty()) stem = "onnx";
  std::string name = stem;
  for (int n = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++n) name = stem + "-" + std::to_string(n);
  return name;
}

int run_bench(BenchOptions options) {
  // No --model and no --onnx: the default workload. --onnx alone: only those files.
  if (options.models.empty() && options.onnx_files.empty()) options.models = kDefaultModels;
  for (std::size_t i = 0; i < options.models.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (options.models[i] == options.models[j]) throw cli::UsageError("model '" + options.models[i] + "' is named twice");
  OnnxBindings bindings;
  bindings.shapes = cli::parse_shape_bindings(options.shapes, "--shapes");
  bindings.dims = cli::parse_dim_bindings(options.dims, "--dims");
  bindings.ranges = cli::parse_input_ranges(options.input_ranges, "--input-range");
  if (options.onnx_files.empty() && (!options.shapes.empty() || !options.dims.empty() || !options.input_ranges.empty()))
    throw cli::UsageError("--shapes, --dims and --input-range apply to --onnx models, and none is given");
  for (double p : options.percentiles)
    if (!(p > 0 && p <= 100)) throw cli::UsageError("--percentile: " + format("%g", p) + " is not in (0, 100]");

  if (options.fp16) {
    const bool cpu = options.device == "cpu" || (options.device == "auto" && loom::cuda_device_count() == 0);
    if (cpu)
      throw cli::UsageError("--fp16 needs a CUDA device, but this run would use the CPU (--device=" + options.device +
                       ", " + std::to_string(loom::cuda_device_count()) + " CUDA devices usable)");
  }

  // Opened before the run so that a bad path does not cost a whole measurement.
  std::ofstream times_file;
  if (!options.export_times.empty()) {
    times_file.open(options.export_times);
    if (!times_file) throw cli::UsageError("--exportTimes: cannot write '" + options.export_times + "'");
  }
  std::ofstream trace_file;
  if (!options.export_trace.empty()) {
    trace_file.open(options.export_trace);
    if (!trace_file) throw cli::UsageError("--exportTrace: cannot write '" + options.export_trace + "'");
  }

  loom::ExecutorOptions executor_options;
  executor_options.device = options.device;
  executor_options.policy = options.policy;
  executor_options.profile = options.profile;
  executor_options.compute_dtype = options.fp16 ? loom::DType::f16 : loom::DType::f32;
  executor_options.record_timeline = trace_file.is_open();
  loom::Executor executor(executor_options);
  if (options.fp16 && executor.backend_name() != "cuda")
    throw cli::UsageError("--fp16 needs a CUDA device, but the executor runs on " + executor.device_name());

  const std::string size_text =
      options.size == "auto" ? (executor.backend_name() == "cuda" ? "large" : "small") : options.size;
  const auto size = loom::workloads::size_from_name(size_text);

  // Built-in models first, then the ONNX files in the order given; model i draws its random
  // inputs with seed + i. ONNX models are optimized here (shapes bound) so that random_inputs()
  // sees their static input shapes.
  std::vector<std::pair<std::string, loom::Model>> models;
  for (const auto& name : options.models) models.emplace_back(name, loom::workloads::default_model(name, options.batch, size));
  std::vector<loom::Model> imported;
  for (const auto& file : options.onnx_files) imported.push_back(loom::load_onnx(file));
  check_bindings_used(bindings, imported);
  for (std::size_t k = 0; k < imported.size(); ++k) {
    const std::string name = onnx_model_name(options.onnx_files[k], options.models);
    loom::Model model = loom::optimize(imported[k], bind_onnx_inputs(imported[k], options.onnx_files[k], bindings, options.batch));
    cli::apply_input_ranges(model, bindings.ranges);
    options.models.push_back(name);
    models.emplace_back(name, std::move(model));
  }

  std::vector<LoadTarget> targets;
  std::vector<ModelReport> reports;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const auto& [name, model] = models[i];
    targets.push_back({name, loom::random_inputs(model, options.seed + i)});
    executor.load(model, name);
    ModelReport report;
    report.name = name;
    report.info = executor.model_info(name);
    reports.push_back(std::move(report));
  }
  if (!options.json) print_header(options, executor, size_text, reports);

  LoadConfig config;
  config.min_requests = options.iterations;
  config.warmup_ms = options.warmup_ms;
  config.min_duration_s = options.duration_s;
  config.concurrency = options.concurrency;
  ProgressBar bar(options.models);
  LoadResult result;
  try {
    result = loom::bench::run_closed_loop(executor, targets, config,
                                          [&](const LoadProgress& p) { bar.update(p, options.iterations); });
  } catch (...) {
    bar.clear();
    throw;
  }
  bar.clear();
  executor.shutdown();

  std::size_t total_requests = 0;
  const double measured_s = result.measured_s;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    auto& report = reports[i];
    const auto& timings = result.models[i].requests;
    std::vector<double> latencies;
    for (const auto& t : timings) latencies.push_back(t.latency_ms());
    report.requests = timings.size();
    report.qps = measured_s > 0 ? static_cast<double>(timings.size()) / measured_s : 0;
    std::sort(latencies.begin(), latencies.end());
    report.latency = loom::bench::summarize(latencies, options.percentiles);
    report.sorted_ms = std::move(latencies);
    total_requests += timings.size();
  }
  const double total_qps = measured_s > 0 ? static_cast<double>(total_requests) / measured_s : 0;

  loom::Timeline trace;
  loom::UtilizationSummary utilization;
  if (trace_file.is_open()) {
    std::size_t warmup_requests = 0;
    for (const auto& model : result.models) warmup_requests += model.warmup_requests;
    trace = loom::bench::measured_phase(executor.timeline(), warmup_requests);
    utilization = trace.utilization();
  }
  const loom::UtilizationSummary* recorded = trace_file.is_open() ? &utilization : nullptr;

  if (options.json) {
    std::cout << json_report(options, executor, size_text, reports, total_qps, measured_s, recorded).dump(2)
              << std::endl;
  } else {
    print_summary(reports, total_qps, total_requests, measured_s);
    if (recorded) print_utilization(utilization, options.models);
  }
  if (trace_file.is_open()) {
    trace.write_chrome_trace(trace_file);
    trace_file.flush();
    if (!trace_file) throw cli::UsageError("--exportTrace: writing '" + options.export_trace + "' failed");
    if (!options.json)
      std::printf("Trace: %s (measured phase; open in https://ui.perfetto.dev or chrome://tracing)\n",
                  options.export_trace.c_str());
  }
  if (times_file.is_open()) {
    write_times(times_file, result);
    if (!times_file) throw cli::UsageError("--exportTimes: writing '" + options.export_times + "' failed");
  }
  return 0;
}

const char* kFooter = R"(Which models run:
  No --model and no --onnx: the default workload (resnet, bert, lstm). --model picks built-in models,
  --onnx adds ONNX files (trtexec style, repeatable); given together, all of them run at once, the
  built-in ones first. An ONNX model is named after its file (yolov8n.onnx -> yolov8n; -2, -3 ...
  when a name repeats). Its symbolic input dims are bound by, in order: --shapes for the whole input,
  --dims for that dim's name, --batch for a dim named batch, batch_size or N (or an unnamed first
  dim); any other unbound dim is an error naming the flag to add. Random request inputs: floats in
  [-1, 1), integers in --input-range (default [0, 2)). --batch and --size shape the built-in models;
  --batch reaches an ONNX model only through its batch dims.

How it measures:
  Every chosen model is loaded into one Executor and driven by its own client thread, all at the
  same time, so the models share the device. Each client keeps --concurrency requests outstanding
  (closed loop): a new request is submitted as soon as one completes. After --warmUp, every model
  drains its warm-up requests and measurement starts for all models at the same instant. Each model
  keeps submitting until every model has completed --iterations requests and --duration has passed.
  Latency = submit() -> result ready (ms). Percentiles are nearest-rank: the value at rank ceil(P/100 * n)
  of the n sorted latencies. Throughput = completed requests / wall time of the measured phase
  (total, and per model over the same wall time).
  --exportTrace records a timeline (timed events around every Step and copy, the dispatcher's
  decisions, each request's life) and writes the measured phase: the requests submitted after the
  warm-up, time 0 = the first of them. Busy % per stream = the union of its events over that span;
  "any stream" = the union over all streams. Recording costs a little time per Step.

Defaults are shown after '='.

Examples:
  loom-bench                                  all three models, device auto
  loom-bench --device=cpu --iterations=3      quick CPU run
  loom-bench --models=resnet,lstm --batch=8 --concurrency=2 --json
  loom-bench --exportTrace=trace.json         timeline of the measured phase, busy % per stream
  loom-bench --onnx=yolov8n.onnx --shapes=images:1x3x640x640
  loom-bench --onnx=minilm.onnx --dims=sequence_length=128 --input-range=input_ids:0,30522 --batch=8
  loom-bench --models=resnet --onnx=a.onnx --onnx=b.onnx      three models at once)";

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{"Runs Loom's built-in models (resnet, bert, lstm) and/or ONNX files at the same time on one\n"
               "device and reports throughput and latency, like trtexec.",
               "loom-bench"};
  app.footer(kFooter);
  app.get_formatter()->column_width(36);
  // As in trtexec, a flag given twice takes its last value (scripts append overrides).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  try {
    app.set_version_flag("--version", std::string("loom-bench ") + loom::version(), "Print the version and exit");
    app.add_option("--model,--models", options.models,
                   "Built-in model to run: resnet, bert or lstm; repeat the flag or give a comma list "
                   "(default: all three, unless --onnx is given)")
        ->delimiter(',')
        ->type_name("NAME");
    app.add_option("--onnx", options.onnx_files,
                   "ONNX model to run, one model per flag (repeatable); alone it replaces the default "
                   "workload, with --model both run")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("FILE");
    app.add_option("--shapes", options.shapes,
                   "Input shapes for the --onnx models, e.g. images:1x3x224x224,ids:8x128; applies to every "
                   "--onnx model with an input of that name")
        ->delimiter(',')
        ->type_name("NAME:DIMS[,...]");
    app.add_option("--dims", options.dims,
                   "Sizes of symbolic input dims of the --onnx models by dim name, e.g. sequence_length=128 "
                   "(batch-named dims default to --batch)")
        ->delimiter(',')
        ->type_name("NAME=N[,...]");
    app.add_option("--input-range", options.input_ranges,
                   "Range [LO, HI) of the random values of an integer input of the --onnx models, e.g. "
                   "input_ids:0,30522 (default 0,2); repeat the flag for more inputs")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("NAME:LO,HI");
    app.add_option("--iterations", options.iterations, "Minimum measured requests per model")
        ->check(cli::positive_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--warmUp", options.warmup_ms,
                   "Warm-up time per model in milliseconds before measuring (requests run, results discarded)")
        ->check(cli::non_negative_number())
        ->type_name("MS")
        ->capture_default_str();
    app.add_option("--duration", options.duration_s,
                   "Minimum measured time in seconds (0: only --iterations counts)")
        ->check(cli::non_negative_number())
        ->type_name("S")
        ->capture_default_str();
    app.add_option("--percentile", options.percentiles,
                   "Latency percentiles to report, comma list in (0, 100]; the JSON always also has "
                   "p50, p90, p95, p99")
        ->delimiter(',')
        ->type_name("P[,P...]")
        ->capture_default_str();
    app.add_option("--device", options.device, "auto (CUDA when a GPU is present, else CPU), cpu, cuda or cuda:N")
        ->type_name("auto|cpu|cuda|cuda:N")
        ->check(cli::device_name())
        ->capture_default_str();
    app.add_option("--batch", options.batch,
                   "Batch size of the built-in models, and of the --onnx models' batch dims not bound otherwise")
        ->check(cli::positive_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--size", options.size,
                   "Workload size: small (milliseconds per request on a CPU), large (loads a GPU), or auto "
                   "(large on CUDA, small on the CPU)")
        ->check(CLI::IsMember({"auto", "small", "large"}).description(""))
        ->type_name("auto|small|large")
        ->capture_default_str();
    app.add_flag("--fp16", options.fp16, "Compute in f16 on the device (CUDA only; requests keep the model's own dtypes)");
    std::string policy_choices;
    for (const auto& name : loom::policy_names()) policy_choices += (policy_choices.empty() ? "" : "|") + name;
    app.add_option("--policy", options.policy, "Scheduling policy: which model's next Step runs next")
        ->check(CLI::IsMember(loom::policy_names()).description(""))
        ->type_name(policy_choices)
        ->capture_default_str();
    app.add_option("--profile", options.profile,
                   "Device profile with measured Step costs (written by loom-profile): auto = "
                   "profiles/<device>.json found via $LOOM_PROFILE_DIR, ./profiles or the install; none = "
                   "roofline estimates; or a file path")
        ->type_name("auto|none|FILE")
        ->capture_default_str();
    app.add_option("--concurrency", options.concurrency, "Requests outstanding per model (closed loop)")
        ->check(cli::positive_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--exportTimes", options.export_times,
                   "Write every measured request to FILE as a JSON array: model, request, start_ms, end_ms, "
                   "latency_ms (ms from the start of measurement)")
        ->type_name("FILE");
    app.add_option("--exportTrace", options.export_trace,
                   "Record a timeline and write its measured phase to FILE as Chrome trace JSON (Perfetto, "
                   "chrome://tracing; scripts/render-timeline draws it); also reports busy % per stream")
        ->type_name("FILE");
    app.add_flag("--json", options.json, "Print one JSON document on stdout instead of the text summary");
    app.add_option("--seed", options.seed, "Seed of the random request inputs (model i uses seed + i)")
        ->type_name("N")
        ->capture_default_str();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-bench: error: %s\n", e.what());
    return 1;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  return cli::run_guarded("loom-bench", [&] { return run_bench(options); });
}
