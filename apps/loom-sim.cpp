// loom-sim: runs a workload (a workload file, or the built-in models with roofline or measured Step
// costs) through the accelerator simulator under one scheduling policy, and reports the schedule,
// makespan, bounds, idle time and latency as text or one JSON document.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "loom/loom.hpp"
#include "loom/sim.hpp"

namespace cli = loom::cli;

namespace {

struct SimOptions {
  std::string workload_file;
  std::string policy = "fifo";
  bool json = false;
  std::string export_trace;
  std::string export_workload;
  // Built-in models mode.
  std::vector<std::string> models;
  std::int64_t batch = 1;
  std::string size = "small";
  std::string dtype = "f32";
  std::size_t requests = 1;
  double interval_us = 0;
  std::string device_peaks = "h100";
  std::uint64_t onchip_bytes = 0;
  // Policy tuning (idle-time) and the simulated device's priorities and memory.
  loom::PolicyOptions policy_options;
  std::string preemption = "on";
  bool ignore_priorities = false;
  loom::sim::SimOptions sim;
  double host_link_gbps = 25;
  // The device model.
  std::string device_model = "accelerator";
  std::string gpu = "h100-sxm";
  std::string cuda_graphs = "on";
  bool compare = false;
};

// NVIDIA H100 SXM5 datasheet figures: dense FP32 (CUDA cores) and FP16 (tensor cores) FLOP/s,
// HBM3 bandwidth. The CUDA backend's own estimate for that GPU comes out within a few percent.
constexpr double kH100FlopsF32 = 67e12;
constexpr double kH100FlopsF16 = 989e12;
constexpr double kH100Bandwidth = 3.35e12;

using cli::format;

double parse_positive(const std::string& text, const std::string& what) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value) && value > 0) return value;
  } catch (const std::exception&) {
  }
  throw cli::UsageError("--device-peaks: " + what + " '" + text + "' is not a positive number");
}

// The built-in models with Step costs from --device-peaks.
std::vector<loom::sim::SimModel> builtin_models(const SimOptions& options, std::string& cost_note) {
  const auto size = loom::workloads::size_from_name(options.size);
  const auto dtype = options.dtype == "f16" ? loom::DType::f16 : loom::DType::f32;
  std::vector<loom::Model> models;
  for (const auto& name : options.models) {
    models.push_back(loom::workloads::default_model(name, options.batch, size));
    models.back().name = name;
  }
  const std::string& peaks = options.device_peaks;
  if (peaks == "cpu" || peaks == "cuda" || peaks == "auto") {
    // What an executor on that device compiles: its backend's roofline, or its profile's times.
    loom::ExecutorOptions executor_options;
    executor_options.device = peaks;
    executor_options.compute_dtype = dtype;
    // The executor chooses the cancellation points; sim_model() carries them.
    executor_options.preemption = options.sim.preemption;
    executor_options.cancellation_interval_us = options.sim.cancellation_interval_us;
    executor_options.cancellation_max_live_bytes = options.sim.cancellation_max_live_bytes;
    loom::Executor executor(executor_options);
    std::vector<loom::sim::SimModel> result;
    std::string sources;
    for (const auto& model : models) {
      executor.load(model, model.name);
      const loom::ModelInfo info = executor.model_info(model.name);
      result.push_back(loom::sim::sim_model(info));
      std::size_t measured = 0;
      for (const auto& step : info.steps) measured += step.measured_us > 0 ? 1 : 0;
      sources +=
          (sources.empty() ? "" : ", ") + model.name + ": " +
          (measured == 0 ? std::string("roofline")
                         : std::to_string(measured) + " of " + std::to_string(info.steps.size()) + " Steps measured" +
                               (info.cost_source.empty() ? "" : " (" + info.cost_source + ")"));
    }
    cost_note = "executor on " + executor.device_name() + " (" + sources + ")";
    return result;
  }
  double flops = 0, bandwidth = 0;
  if (peaks == "h100") {
    flops = dtype == loom::DType::f16 ? kH100FlopsF16 : kH100FlopsF32;
    bandwidth = kH100Bandwidth;
    cost_note = "roofline, H100 SXM peaks";
  } else {
    const auto comma = peaks.find(',');
    if (comma == std::string::npos)
      throw cli::UsageError("--device-peaks: expected h100, cpu, cuda, auto or FLOPS,BYTES_PER_S, got '" + peaks + "'");
    flops = parse_positive(peaks.substr(0, comma), "FLOP/s");
    bandwidth = parse_positive(peaks.substr(comma + 1), "bytes/s");
    cost_note = "roofline";
  }
  cost_note += format(", %.4g FLOP/s", flops) + format(", %.4g B/s", bandwidth);
  return loom::sim::sim_models(models, dtype, flops, bandwidth);
}

std::string priority_text(int priority) {
  if (priority >= -1 && priority <= 1) return std::string(loom::priority_name(static_cast<loom::Priority>(priority)));
  return std::to_string(priority);
}

void print_latency_row(const std::string& name, const loom::sim::LatencySummary& l, const std::string& alone) {
  std::printf("  %-16s %8zu %12.3f %12.3f %12.3f %12.3f %12s\n", name.c_str(), l.requests, l.mean_us, l.p50_us,
              l.p99_us, l.max_us, alone.c_str());
}

void print_summary(const loom::sim::SimResult& r, const loom::sim::Workload& w, const std::string& source,
                   const std::string& policy) {
  std::size_t steps = 0;
  for (const auto& request : w.requests)
    for (const auto& model : w.models)
      if (model.name == request.model) steps += model.steps.size();
  std::printf("=== Loom simulator (loom-sim %s) ===\n", loom::version());
  std::printf("Workload:      %s\n", source.c_str());
  std::printf("               %zu models, %zu requests, %zu Steps\n", w.models.size(), w.requests.size(), steps);
  std::printf("Policy:        %s\n", policy.c_str());
  if (r.options.gpu) {
    const loom::sim::GpuDevice& g = *r.options.gpu;
    std::printf(
        "Device model:  GPU %s: %d SMs, %.4g FLOP/s f32, %.4g B/s DRAM; launch %g us (graph %g us), "
        "%zu Steps in flight, %s\n",
        g.name.c_str(), g.sm_count, g.peak_flops_f32, g.dram_bytes_per_s, g.launch_us, g.graph_launch_us,
        r.options.max_inflight_steps, r.options.cuda_graphs ? "CUDA graphs" : "kernel by kernel");
  } else {
    std::printf("Device model:  accelerator (a compute resource, a memory resource, on-chip capacity)\n");
  }
  if (r.options.gpu)
    std::printf("On-chip:       not modelled on the GPU (SM occupancy limits co-residence)\n");
  else if (w.onchip_capacity_bytes > 0) {
    std::size_t tiled = 0, tiles = 0;
    for (const auto& s : r.schedule) {
      tiled += s.tiles.empty() ? 0 : 1;
      tiles += s.tiles.size();
    }
    std::printf("On-chip:       %llu bytes; %zu dispatched Steps larger than that ran as %zu tiles (%llu buffers)\n",
                static_cast<unsigned long long>(w.onchip_capacity_bytes), tiled, tiles,
                static_cast<unsigned long long>(r.options.tile_buffers));
  } else
    std::printf("On-chip:       unlimited\n");
  std::printf("\nMakespan:      %12.3f us (first arrival to last compute end)\n", r.makespan_us);
  std::printf("Lower bound:   %12.3f us = max(resource %.3f, chain %.3f)\n", r.lower_bound_us, r.resource_bound_us,
              r.chain_bound_us);
  std::printf("Makespan / lower bound: %.3f\n", r.lower_bound_us > 0 ? r.makespan_us / r.lower_bound_us : 0.0);
  const auto share = [&](double busy) { return r.makespan_us > 0 ? 100.0 * busy / r.makespan_us : 0.0; };
  std::printf("Compute:       busy %12.3f us (%5.1f%%), idle %12.3f us\n", r.compute_busy_us, share(r.compute_busy_us),
              r.compute_idle_us);
  std::printf("Memory:        busy %12.3f us (%5.1f%%), idle %12.3f us\n", r.memory_busy_us, share(r.memory_busy_us),
              r.memory_idle_us);

  const auto& o = r.options;
  std::printf(
      "Preemption:    %s; cancellation interval %g us, max live bytes %llu%s; host link %g GB/s; "
      "device memory %s\n",
      o.preemption ? "on" : "off", o.cancellation_interval_us,
      static_cast<unsigned long long>(o.cancellation_max_live_bytes),
      o.cancellation_max_live_bytes == 0 ? " (any)" : "", o.host_link_bytes_per_us / 1e3,
      o.device_memory_bytes == 0 ? "unlimited" : (std::to_string(o.device_memory_bytes) + " bytes").c_str());
  std::uint64_t dumped = 0;
  for (const auto& p : r.preemptions) dumped += p.bytes_dumped;
  std::printf("Pauses:        %zu, %llu bytes dumped and restored, host link busy %.3f us\n", r.preemptions.size(),
              static_cast<unsigned long long>(dumped), r.host_link_busy_us);
  if (r.host_cpu_busy_us > 0) {
    std::size_t stages = 0;
    for (const auto& request : w.requests) stages += request.host_us > 0 ? 1 : 0;
    std::printf("Host CPU:      busy %12.3f us, %zu host stage(s) (requests' host_us, one at a time)\n",
                r.host_cpu_busy_us, stages);
  }

  // Per model, in the order models are listed; "alone" = one request of the model on the empty device.
  std::printf("\nLatency per model (us, arrival to last compute end; nearest-rank percentiles):\n");
  std::printf("  %-16s %8s %12s %12s %12s %12s %12s\n", "model", "requests", "mean", "p50", "p99", "max", "alone");
  for (std::size_t m = 0; m < w.models.size(); ++m) {
    std::vector<double> latencies;
    for (const auto& request : r.requests)
      if (request.model == w.models[m].name) latencies.push_back(request.latency_us);
    if (latencies.empty()) continue;
    print_latency_row(w.models[m].name, loom::sim::summarize_latencies(std::move(latencies)),
                      format("%.3f", r.model_alone_us[m]));
  }
  std::map<int, std::vector<double>, std::greater<>> by_priority;
  for (const auto& request : r.requests) by_priority[request.priority].push_back(request.latency_us);
  if (by_priority.size() > 1) {
    std::printf("\nLatency per priority class (us):\n");
    std::printf("  %-16s %8s %12s %12s %12s %12s\n", "priority", "requests", "mean", "p50", "p99", "max");
    for (auto& [priority, latencies] : by_priority)
      print_latency_row(priority_text(priority), loom::sim::summarize_latencies(std::move(latencies)), "");
  }
}

// Preemption on, yet a lower-priority request ran on through a higher one's arrival without a
// single pause in the run: every Step it had left was already dispatched when the higher one
// arrived (dispatch ran ahead of compute: nothing bounds it with unlimited on-chip capacity and
// Steps of little memory time), so there was nothing left to pause. Returns the first such pair
// as "<higher> arrived at T while <lower> ...", or "" when there is none or the run paused.
std::string preemption_without_pauses(const loom::sim::SimResult& r) {
  if (!r.options.preemption || !r.preemptions.empty()) return "";
  std::vector<double> last_decided(r.requests.size(), 0.0);
  for (const auto& s : r.schedule) last_decided[s.request] = std::max(last_decided[s.request], s.decided_us);
  for (const auto& high : r.requests)
    for (const auto& low : r.requests) {
      if (low.priority >= high.priority) continue;
      const bool running = low.start_us < high.arrival_us && high.arrival_us < low.finish_us;
      if (!running || last_decided[low.request] >= high.arrival_us) continue;
      char text[512];
      std::snprintf(text, sizeof text,
                    "%s#%zu (priority %d) arrived at %.3f us while %s#%zu (priority %d) was running until %.3f us "
                    "with all its Steps dispatched since %.3f us",
                    high.model.c_str(), high.request, high.priority, high.arrival_us, low.model.c_str(), low.request,
                    low.priority, low.finish_us, last_decided[low.request]);
      return text;
    }
  return "";
}

// Every policy on the same workload and device, in one run: makespan, its ratio to the best of
// the baselines (fifo, round-robin, streams) and each model's p99.
int run_compare(const loom::sim::Workload& workload, const SimOptions& options, const std::string& source) {
  struct Row {
    std::string policy;
    loom::sim::SimResult result;
  };
  std::vector<Row> rows;
  for (const std::string& name : loom::policy_names()) {
    auto policy = loom::make_policy(name, options.policy_options);
    rows.push_back({name, loom::sim::simulate(workload, *policy, options.sim)});
  }
  double best_baseline = std::numeric_limits<double>::infinity();
  for (const Row& row : rows)
    if (row.policy != "idle-time") best_baseline = std::min(best_baseline, row.result.makespan_us);
  const auto p99 = [&](const loom::sim::SimResult& r, const std::string& model) {
    std::vector<double> latencies;
    for (const auto& request : r.requests)
      if (request.model == model) latencies.push_back(request.latency_us);
    return loom::sim::summarize_latencies(std::move(latencies)).p99_us;
  };
  if (options.json) {
    nlohmann::ordered_json doc;
    doc["workload"] = source;
    doc["device_model"] = options.sim.gpu ? "gpu:" + options.sim.gpu->name : std::string("accelerator");
    doc["best_baseline_makespan_us"] = best_baseline;
    doc["policies"] = nlohmann::ordered_json::array();
    for (const Row& row : rows) {
      nlohmann::ordered_json p;
      p["policy"] = row.policy;
      p["makespan_us"] = row.result.makespan_us;
      p["lower_bound_us"] = row.result.lower_bound_us;
      p["vs_best_baseline"] = row.result.makespan_us / best_baseline;
      for (const auto& model : workload.models) p["p99_us"][model.name] = p99(row.result, model.name);
      doc["policies"].push_back(std::move(p));
    }
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::printf("=== Loom simulator (loom-sim %s): every policy ===\n", loom::version());
  std::printf("Workload:      %s\n", source.c_str());
  std::printf("Device model:  %s\n", options.sim.gpu ? ("GPU " + options.sim.gpu->name).c_str() : "accelerator");
  std::printf("Lower bound:   %.3f us\n\n", rows.front().result.lower_bound_us);
  std::printf("  %-12s %14s %12s %12s", "policy", "makespan us", "/ best base", "/ bound");
  for (const auto& model : workload.models) std::printf(" %14s", ("p99 " + model.name).substr(0, 14).c_str());
  std::printf("\n");
  for (const Row& row : rows) {
    std::printf("  %-12s %14.3f %12.3f %12.3f", row.policy.c_str(), row.result.makespan_us,
                row.result.makespan_us / best_baseline,
                row.result.lower_bound_us > 0 ? row.result.makespan_us / row.result.lower_bound_us : 0.0);
    for (const auto& model : workload.models) std::printf(" %14.3f", p99(row.result, model.name));
    std::printf("\n");
  }
  std::printf(
      "\n/ best base: makespan over the best of fifo, round-robin and streams in this run (lower is better).\n");
  return 0;
}

int run_sim(SimOptions options) {
  loom::sim::Workload workload;
  std::string source;
  if (!options.workload_file.empty()) {
    workload = loom::sim::read_workload(options.workload_file);
    source = options.workload_file;
  } else {
    if (options.models.empty()) options.models = {"resnet", "bert", "lstm"};
    for (std::size_t i = 0; i < options.models.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (options.models[i] == options.models[j])
          throw cli::UsageError("model '" + options.models[i] + "' is named twice");
    std::string cost_note;
    workload.models = builtin_models(options, cost_note);
    workload.requests = loom::sim::periodic_requests(workload.models, options.requests, options.interval_us);
    workload.onchip_capacity_bytes = options.onchip_bytes;
    std::string names;
    for (const auto& name : options.models) names += (names.empty() ? "" : ",") + name;
    source = "built-in models " + names + ", batch " + std::to_string(options.batch) + ", " + options.size + ", " +
             options.dtype + ", " + std::to_string(options.requests) + " request(s) per model every " +
             format("%g", options.interval_us) + " us; Step costs: " + cost_note;
  }
  // Without priorities every request is normal: the baseline the priority runs are compared with.
  if (options.ignore_priorities)
    for (auto& request : workload.requests) request.priority = 0;
  if (!options.export_workload.empty()) {
    std::ofstream out(options.export_workload);
    out << loom::sim::workload_json(workload);
    if (!out) throw cli::UsageError("--exportWorkload: cannot write '" + options.export_workload + "'");
  }
  if (options.compare) return run_compare(workload, options, source);
  auto policy = loom::make_policy(options.policy, options.policy_options);
  const loom::sim::SimResult result = loom::sim::simulate(workload, *policy, options.sim);

  if (const std::string example = preemption_without_pauses(result); !example.empty())
    std::fprintf(stderr,
                 "loom-sim: warning: preemption is on but the run made 0 pauses: %s, so there was nothing "
                 "left to pause. Dispatch runs ahead of compute when nothing bounds it; give the workload an "
                 "onchip_capacity_bytes (a Step holds its onchip_bytes from its load to its compute end) "
                 "(docs/simulator.md, \"Priorities and preemption\").\n",
                 example.c_str());

  if (!options.export_trace.empty()) result.timeline.write_chrome_trace(options.export_trace);

  if (options.json)
    std::cout << loom::sim::result_json(result, workload, std::string(policy->name())) << std::flush;
  else
    print_summary(result, workload, source, std::string(policy->name()));
  return 0;
}

const char* kFooter = R"(The model (docs/simulator.md):
  Each Step has a memory phase (memory_us on the memory-access resource: bringing its data on
  chip) then a compute phase (compute_us on the compute resource). Each time the memory resource
  can take another Step (a scheduling point), the policy picks one of the candidates: the next
  Step of every request that has arrived. Its memory phase waits until its onchip_bytes fit beside
  the Steps still holding theirs (held from memory start to compute end); its compute phase waits
  for its memory phase, the compute resource and the request's previous Step. When no request is
  live, time jumps to the next arrival. Same input, same schedule.

  Lower bound = max(resource bound: total compute or total memory work, whichever is larger;
  chain bound: the longest request simulated alone on the device from time 0).

The GPU model (--device-model gpu; docs/simulator.md, "The GPU model"):
  Each Step becomes its kernels (workload "kernels", or one kernel of a block per SM doing its
  compute_us of FLOPs at the f32 peak and its memory_us of DRAM bytes), launched by the one
  dispatcher thread (launch_us per kernel, or graph_launch_us per Step) onto its model's stream,
  at most --max-inflight-steps unfinished. A kernel starts after the one before it on its stream;
  the block scheduler places pending blocks by SM occupancy (threads, registers, shared memory,
  block slots), higher stream priority first, then launch order; resident blocks share the SMs'
  compute and the DRAM bandwidth. On-chip capacity and device memory are not modelled there.

Priorities and preemption (docs/simulator.md, "Priorities and preemption"):
  Requests carry a priority (workload file: background, normal, urgent or an int). At each
  scheduling point only the highest class among the live requests may run; the policy orders
  them. With --preemption on, a started lower-priority request that is between cancellation
  points runs on, first, to its next point, and pauses there until no higher class is live.
  Cancellation points: at least one per --cancel-interval-us of estimated time (each Step
  counting max(compute_us, memory_us)), only at boundaries whose live_bytes_after are at most
  --cancel-max-live-bytes; a model may give its own. If an arriving request's arena (its model's
  largest live_bytes_after) does not fit in --device-memory-bytes, paused requests are dumped
  over the host link (bytes / --host-link-gbps) and restored before they resume. With
  --preemption off a started request runs to its end; priority only orders the waiting ones.

Step costs in built-in models mode (--device-peaks):
  h100          roofline from the H100 SXM datasheet: 67 TFLOP/s f32, 989 TFLOP/s f16, 3.35 TB/s
  FLOPS,BW      roofline from these peaks, e.g. 50e12,2e12 (FLOP/s, bytes/s)
  cpu|cuda|auto the Steps an Executor on that device compiles: its backend's roofline, or, where
                the device's profile measured a Step, that time split in the roofline's proportion
  onchip_bytes of every Step = its working set (weights and activations it touches).

Examples:
  loom-sim --workload bench/workloads/mission-example.json --policy fifo
  loom-sim --workload bench/workloads/mission-example.json --json --exportTrace mission.trace.json
  loom-sim --models resnet,lstm --requests 8 --interval-us 500 --size large --dtype f16
  loom-sim --device-peaks cpu --exportWorkload default.workload.json
  loom-sim --workload bench/workloads/preempt-perception-planning.json --preemption off
  loom-sim --workload bench/workloads/preempt-perception-planning.json --ignore-priorities
  loom-sim --workload bench/workloads/synthetic-pair.json --device-model gpu --gpu h100-sxm --compare)";

}  // namespace

int main(int argc, char** argv) {
  SimOptions options;
  CLI::App app{
      "Simulates an accelerator with a compute resource, a memory-access resource and limited\n"
      "on-chip memory, scheduling the Steps of several models with one of Loom's policies.\n"
      "Input: a workload file (docs/workload-format.md), or the built-in models (resnet, bert,\n"
      "lstm) with costs from device peak figures. Times are microseconds.",
      "loom-sim"};
  app.footer(kFooter);
  app.get_formatter()->column_width(36);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  try {
    app.set_version_flag("--version", std::string("loom-sim ") + loom::version(), "Print the version and exit");
    auto* workload = app.add_option("--workload", options.workload_file,
                                    "Workload file (JSON: models with Step costs, requests with arrival times); "
                                    "without it, the built-in models below")
                         ->type_name("FILE");
    std::string policy_choices;
    for (const auto& name : loom::policy_names()) policy_choices += (policy_choices.empty() ? "" : "|") + name;
    app.add_option("--policy", options.policy, "Scheduling policy: which candidate Step goes next")
        ->type_name(policy_choices)
        ->capture_default_str();
    app.add_flag("--json", options.json,
                 "Print one JSON document (makespan, bounds, busy and idle time, latency per model and per "
                 "priority class, preemptions, requests, schedule) instead of the text summary");
    app.add_option("--exportTrace", options.export_trace,
                   "Write the simulated timeline to FILE as Chrome trace JSON (Perfetto, chrome://tracing): "
                   "tracks sim:memory, sim:compute, sim:host-link, host:scheduler, request:<model> (with pause, "
                   "dump, restore, resume)")
        ->type_name("FILE");
    app.add_option("--exportWorkload", options.export_workload,
                   "Write the simulated workload to FILE in the workload file format (e.g. the built-in models' "
                   "Step costs, to edit and rerun with --workload)")
        ->type_name("FILE");

    app.add_flag("--compare", options.compare,
                 "Run every policy on the workload and print one table: makespan, its ratio to the best of "
                 "fifo, round-robin and streams, each model's p99 (with --json: one JSON document)");

    const std::string model_group = "Device model";
    app.add_option("--device-model", options.device_model,
                   "accelerator: the source text's device (a compute resource, a memory resource, on-chip "
                   "capacity); gpu: a GPU (SMs, occupancy, DRAM bandwidth, launches, streams; see below)")
        ->check(CLI::IsMember({"accelerator", "gpu"}).description(""))
        ->type_name("accelerator|gpu")
        ->capture_default_str()
        ->group(model_group);
    app.add_option("--gpu", options.gpu,
                   "GPU description for --device-model gpu: a name from profiles/gpu (h100-sxm, h100-pcie, h200, "
                   "a100-sxm, l4) or a JSON file in that format")
        ->type_name("NAME|FILE")
        ->capture_default_str()
        ->group(model_group);
    app.add_option("--max-inflight-steps", options.sim.max_inflight_steps,
                   "GPU model: Steps launched and unfinished before the dispatcher waits for the oldest (the "
                   "executor's max_inflight_steps; the streams policy is not bounded)")
        ->check(CLI::PositiveNumber.description(""))
        ->type_name("N")
        ->capture_default_str()
        ->group(model_group);
    app.add_option("--cuda-graphs", options.cuda_graphs,
                   "GPU model: launch each Step as one CUDA graph (on) or kernel by kernel (off)")
        ->check(CLI::IsMember({"on", "off"}).description(""))
        ->type_name("on|off")
        ->capture_default_str()
        ->group(model_group);

    const std::string tuning = "Policy tuning (idle-time)";
    app.add_option("--window", options.policy_options.window,
                   "Steps of each request the idle-time estimate looks at: its next Step and up to N-1 more (1 to 8)")
        ->type_name("N")
        ->capture_default_str()
        ->group(tuning);
    app.add_option("--starvation-limit", options.policy_options.starvation_limit,
                   "A candidate passed over N times goes next (at least 1)")
        ->type_name("N")
        ->capture_default_str()
        ->group(tuning);
    app.add_option("--block-us", options.policy_options.block_us,
                   "Schedule runs of small Steps (compute + memory < US) of one request as one unit while they "
                   "add up to less than US; 0: off")
        ->type_name("US")
        ->capture_default_str()
        ->group(tuning);

    const std::string device = "Priorities, preemption and device memory";
    app.add_option("--preemption", options.preemption,
                   "on: a started lower-priority request pauses at its next cancellation point while higher "
                   "priority work is live; off: it runs to its end (priority only orders waiting requests)")
        ->check(CLI::IsMember({"on", "off"}).description(""))
        ->type_name("on|off")
        ->capture_default_str()
        ->group(device);
    app.add_flag("--ignore-priorities", options.ignore_priorities,
                 "Treat every request as normal priority (the baseline without priorities)")
        ->group(device);
    app.add_option("--cancel-interval-us", options.sim.cancellation_interval_us,
                   "Cancellation points: at least one per US of estimated time where the model allows (0: every "
                   "allowed boundary); models that give their own points keep them")
        ->check(CLI::NonNegativeNumber.description(""))
        ->type_name("US")
        ->capture_default_str()
        ->group(device);
    app.add_option("--cancel-max-live-bytes", options.sim.cancellation_max_live_bytes,
                   "Cancellation points only at boundaries whose live bytes are at most N (0: any)")
        ->type_name("N")
        ->capture_default_str()
        ->group(device);
    app.add_option("--device-memory-bytes", options.sim.device_memory_bytes,
                   "Device memory the request arenas share (each: its model's largest live_bytes_after); when "
                   "short, paused requests are dumped to the host. 0: unlimited")
        ->type_name("N")
        ->capture_default_str()
        ->group(device);
    app.add_option("--host-link-gbps", options.host_link_gbps, "Dump and restore speed of the host link, GB/s")
        ->check(CLI::PositiveNumber.description(""))
        ->type_name("GB/S")
        ->capture_default_str()
        ->group(device);
    app.add_option("--tile-buffers", options.sim.tile_buffers,
                   "Accelerator: a Step larger than the on-chip capacity runs as tiles of at most capacity / N "
                   "bytes (2: the next tile loads while this one computes; 1: whole-capacity tiles, one at a time)")
        ->check(CLI::Range(1, 64).description(""))
        ->type_name("N")
        ->capture_default_str()
        ->group(device);

    const std::string group = "Built-in models (instead of --workload)";
    const std::vector<CLI::Option*> builtin = {
        app.add_option("--models,--model", options.models,
                       "Models to simulate: resnet, bert, lstm; comma list (default: all three)")
            ->delimiter(',')
            ->type_name("NAME[,NAME...]")
            ->group(group),
        app.add_option("--batch", options.batch, "Batch size of every model's input")
            ->check(CLI::PositiveNumber.description(""))
            ->type_name("N")
            ->capture_default_str()
            ->group(group),
        app.add_option("--size", options.size, "Model size: small (CPU-sized) or large (GPU-sized)")
            ->check(CLI::IsMember({"small", "large"}).description(""))
            ->type_name("small|large")
            ->capture_default_str()
            ->group(group),
        app.add_option("--dtype", options.dtype, "Compute dtype the Steps are costed in")
            ->check(CLI::IsMember({"f32", "f16"}).description(""))
            ->type_name("f32|f16")
            ->capture_default_str()
            ->group(group),
        app.add_option("--requests", options.requests, "Requests per model")
            ->check(CLI::PositiveNumber.description(""))
            ->type_name("N")
            ->capture_default_str()
            ->group(group),
        app.add_option("--interval-us", options.interval_us,
                       "Microseconds between a model's successive arrivals (every model's i-th request arrives "
                       "at i * interval; 0: all at once)")
            ->check(CLI::NonNegativeNumber.description(""))
            ->type_name("US")
            ->capture_default_str()
            ->group(group),
        app.add_option("--device-peaks", options.device_peaks,
                       "Where Step costs come from: h100, cpu, cuda, auto, or FLOPS,BYTES_PER_S (see below)")
            ->type_name("h100|cpu|cuda|auto|F,B")
            ->capture_default_str()
            ->group(group),
        app.add_option("--onchip-bytes", options.onchip_bytes, "On-chip capacity in bytes (0: unlimited)")
            ->type_name("N")
            ->capture_default_str()
            ->group(group),
    };
    // Checked after parsing rather than with excludes(), which would clutter every line of --help.
    app.callback([workload, builtin] {
      if (workload->count() == 0) return;
      for (const CLI::Option* option : builtin)
        if (option->count() > 0)
          throw CLI::ValidationError(option->get_name(), "a built-in models option; it cannot be used with --workload");
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-sim: error: %s\n", e.what());
    return 1;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  options.sim.preemption = options.preemption == "on";
  options.sim.host_link_bytes_per_us = options.host_link_gbps * 1e3;  // 1 GB/s = 1e3 bytes per us
  options.sim.cuda_graphs = options.cuda_graphs == "on";
  return cli::run_guarded("loom-sim", [&] {
    if (options.device_model == "gpu") options.sim.gpu = loom::sim::gpu_device(options.gpu);
    return run_sim(options);
  });
}
