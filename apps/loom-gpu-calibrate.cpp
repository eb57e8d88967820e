// loom-gpu-calibrate: runs the GPU model's micro-cases (its laws, tests/unit/test_sim_gpu_laws.cpp)
// on the GPU and on the model side by side, and prints what the description in profiles/gpu/ should
// say instead where they differ: a Markdown table on stdout, the same as JSON with --json.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "calibrate_cases.hpp"
#include "calibrate_measure.hpp"
#include "cli_support.hpp"
#include "loom/loom.hpp"
#include "loom/sim.hpp"

namespace cli = loom::cli;
namespace calibrate = loom::calibrate;
using nlohmann::ordered_json;

namespace {

struct Options {
  std::string gpu;  // empty: from the device's name (h100-sxm with --simulate-only)
  bool simulate_only = false;
  int repeat = 20;
  std::string json_file;
};

constexpr const char* kFallbackDescription = "h100-sxm";
// A case whose simulated / measured ratio is outside [1 - this, 1 + this] is listed as missed.
constexpr double kMissedBy = 0.10;
// A peak within this fraction of the description's needs no correction.
constexpr double kAgreesWithin = 0.03;

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// A figure as a description states it: 5.347e+13.
std::string figure(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// 5.12e13 -> "51.20 T" (then "FLOP/s" or "B/s"); 0 -> "0".
std::string scaled(double value) {
  if (value == 0) return "0";
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (std::abs(value) >= 1000 && i < 5) {
    value /= 1000;
    ++i;
  }
  return fixed(value, value >= 100 ? 1 : 2) + " " + prefixes[i];
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// The shipped description for a device name as the CUDA runtime reports it ("NVIDIA H100 80GB
// HBM3", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA L4"); `note` says
// when the match is only approximate or there is none (then h100-sxm).
std::string description_for_device(const std::string& device_name, std::string& note) {
  const std::string name = upper(device_name);
  if (name.find("H200") != std::string::npos) {
    if (name.find("GH200") != std::string::npos) note = "no GH200 description ships: using h200";
    return "h200";
  }
  if (name.find("H100") != std::string::npos) {
    if (name.find("PCIE") != std::string::npos) return "h100-pcie";
    if (name.find("HBM3") == std::string::npos && name.find("SXM") == std::string::npos)
      note = "'" + device_name + "' is matched to h100-sxm by its name 'H100' alone";
    return "h100-sxm";
  }
  if (name.find("A100") != std::string::npos) {
    if (name.find("PCIE") != std::string::npos) note = "no A100 PCIe description ships: using a100-sxm";
    return "a100-sxm";
  }
  if (std::regex_search(name, std::regex("(^|[^A-Z0-9])L4($|[^A-Z0-9])"))) return "l4";
  note = "no shipped description matches '" + device_name + "': simulating with " + kFallbackDescription +
         " (pass --gpu NAME|FILE)";
  return kFallbackDescription;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

struct QuantityResult {
  std::string name;
  double simulated_us = 0;
  std::vector<double> samples_us;  // empty: not measured
  std::optional<double> measured_us() const {
    if (samples_us.empty()) return std::nullopt;
    return median(samples_us);
  }
};

struct CaseResult {
  std::string name;
  std::string law;
  const calibrate::CalibrationCase* kernels = nullptr;      // a kernel case, or
  const calibrate::LaunchOverheadCase* overhead = nullptr;  // a launch-overhead case
  std::string not_measured;                                 // why, when measuring and it was not
  std::vector<QuantityResult> quantities;
};

struct Report {
  bool measured = false;
  int repeat = 0;
  std::optional<calibrate::DeviceInfo> device;
  std::string requested_description;
  loom::sim::GpuDevice description;
  calibrate::DeviceShape shape;
  std::vector<calibrate::CalibrationCase> kernel_cases;
  std::vector<calibrate::LaunchOverheadCase> overhead_cases;
  std::vector<CaseResult> results;
  // blocks_per_sm of each kernel kind: the model's and, when measured, CUDA's.
  std::vector<std::pair<calibrate::KernelKind, std::pair<int, std::optional<int>>>> occupancy;
  std::vector<std::string> suggestions;

  const CaseResult& result(const std::string& name) const {
    for (const CaseResult& r : results)
      if (r.name == name) return r;
    throw loom::Error(loom::ErrorCode::internal, "calibrate: no case '" + name + "'");
  }
};

// Why the device cannot run `c` as planned; empty when it can.
std::string cannot_run(const calibrate::CalibrationCase& c, const calibrate::GpuRunner& runner) {
  if (!c.needs_cooperative_launch()) return {};
  if (!runner.info().cooperative_launch) return "the device lacks cudaDevAttrCooperativeLaunch";
  for (const calibrate::PlannedLaunch& l : c.launches) {
    const long long resident =
        static_cast<long long>(runner.cuda_blocks_per_sm(l.kind)) * static_cast<long long>(runner.info().sm_count);
    if (l.cooperative && static_cast<long long>(l.spec.blocks) > resident)
      return "the cooperative grid of " + std::to_string(l.spec.blocks) + " blocks exceeds the " +
             std::to_string(resident) + " CUDA can hold at once (the model's occupancy is higher than CUDA's)";
  }
  return {};
}

void measure(Report& report, calibrate::GpuRunner& runner) {
  for (CaseResult& r : report.results) {
    if (r.kernels) {
      r.not_measured = cannot_run(*r.kernels, runner);
      if (!r.not_measured.empty()) continue;
      runner.run(*r.kernels);  // warm-up: module load, first-touch of the buffers, clocks ramping
      for (int i = 0; i < report.repeat; ++i) {
        const std::vector<double> values = calibrate::case_quantities(*r.kernels, runner.run(*r.kernels));
        for (std::size_t q = 0; q < values.size(); ++q) r.quantities[q].samples_us.push_back(values[q]);
      }
    } else {
      runner.host_launch_us(*r.overhead);  // warm-up: the graph's instantiation and upload
      for (int i = 0; i < report.repeat; ++i) r.quantities[0].samples_us.push_back(runner.host_launch_us(*r.overhead));
    }
  }
}

// The measured kernel time of a one-kernel case, or nothing.
std::optional<double> alone_us(const Report& report, const std::string& name) {
  return report.result(name).quantities.front().measured_us();
}

const calibrate::PlannedLaunch& only_launch(const Report& report, const std::string& name) {
  return report.result(name).kernels->launches.front();
}

void suggest(Report& report) {
  if (!report.measured) return;
  const loom::sim::GpuDevice& d = report.description;
  auto& out = report.suggestions;
  auto peak_line = [&](const std::string& field, double measured, double described, const std::string& unit,
                       const std::string& how) {
    const double ratio = measured / described;
    if (std::abs(ratio - 1) <= kAgreesWithin)
      out.push_back(field + ": " + scaled(described) + unit + " agrees with the measured " + scaled(measured) + unit +
                    " (" + how + ")");
    else
      out.push_back(field + ": measured " + scaled(measured) + unit + " (" + how + ") implies " + figure(measured) +
                    "; the description says " + scaled(described) + unit + " (measured / described " + fixed(ratio, 3) +
                    ")");
  };
  double dram = d.dram_bytes_per_s;
  if (const auto t = alone_us(report, "compute-alone"))
    peak_line("peak_flops_f32", only_launch(report, "compute-alone").spec.flops / (*t * 1e-6), d.peak_flops_f32,
              "FLOP/s", "the FMA-chain kernel alone");
  if (const auto t = alone_us(report, "memory-alone")) {
    dram = static_cast<double>(only_launch(report, "memory-alone").spec.bytes) / (*t * 1e-6);
    peak_line("dram_bytes_per_s", dram, d.dram_bytes_per_s, "B/s", "the copy kernel alone");
  }
  if (const auto t = alone_us(report, "memory-narrow")) {
    const calibrate::PlannedLaunch& narrow = only_launch(report, "memory-narrow");
    const double narrow_bw = static_cast<double>(narrow.spec.bytes) / (*t * 1e-6);
    const double even_share = dram / d.sm_count;
    const double implied = narrow_bw / (narrow.spec.blocks * even_share);
    const std::string what = "measured narrow-kernel bandwidth " + scaled(narrow_bw) + "B/s on " +
                             std::to_string(narrow.spec.blocks) + " SMs, with dram_bytes_per_s " + scaled(dram) +
                             "B/s over " + std::to_string(d.sm_count) + " SMs";
    if (narrow_bw >= 0.9 * dram)
      out.push_back("sm_bandwidth_share: " + what + ", implies at least " + fixed(implied, 2) +
                    " (the narrow kernel nearly saturates DRAM); the description says " +
                    fixed(d.sm_bandwidth_share, 2));
    else
      out.push_back("sm_bandwidth_share: " + what + ", implies " + fixed(implied, 2) + "; the description says " +
                    fixed(d.sm_bandwidth_share, 2));
  }
  if (const auto t = report.result("launch").quantities.front().measured_us())
    out.push_back("launch_us: measured " + fixed(*t, 2) + " (host time per kernel launch); the description says " +
                  fixed(d.launch_us, 2));
  const auto graph1 = report.result("graph-launch").quantities.front().measured_us();
  const auto graph10 = report.result("graph-launch-10").quantities.front().measured_us();
  if (graph1 && graph10)
    out.push_back("graph_launch_us: measured " + fixed(*graph1, 2) + " for a one-kernel graph, " + fixed(*graph10, 2) +
                  " for ten kernels (take the one nearer a Step's kernel count); the description says " +
                  fixed(d.graph_launch_us, 2));
  out.push_back("launch_latency_us: not measured by these cases; the description's " + fixed(d.launch_latency_us, 2) +
                " stays an estimate");
  for (const auto& [kind, blocks] : report.occupancy)
    if (blocks.second && *blocks.second != blocks.first)
      out.push_back(std::string("blocks_per_sm: the model holds ") + std::to_string(blocks.first) + " blocks of the " +
                    calibrate::kernel_kind_name(kind) + " kernel per SM, CUDA's occupancy calculator " +
                    std::to_string(*blocks.second) + ": check the description's per-SM limits");
  std::string missed;
  for (const CaseResult& r : report.results) {
    if (!r.kernels) continue;
    for (const QuantityResult& q : r.quantities) {
      const auto m = q.measured_us();
      if (!m || *m <= 0) continue;
      const double ratio = q.simulated_us / *m;
      if (std::abs(ratio - 1) > kMissedBy)
        missed += (missed.empty() ? "" : "; ") + r.name + " (" + q.name + ") " + fixed(ratio, 3);
    }
  }
  if (!missed.empty())
    out.push_back("the model misses these by more than " + fixed(kMissedBy * 100, 0) +
                  "% (simulated / measured): " + missed + ". Correct the peaks above first, then run again");
}

std::string device_line(const calibrate::DeviceInfo& i) {
  return i.name + ": " + std::to_string(i.sm_count) + " SMs, compute capability " +
         std::to_string(i.compute_capability_major) + "." + std::to_string(i.compute_capability_minor) + ", SM clock " +
         fixed(i.clock_khz / 1e3, 0) + " MHz, memory clock " + fixed(i.memory_clock_khz / 1e3, 0) + " MHz x " +
         std::to_string(i.memory_bus_bits) + " bits, L2 " + std::to_string(i.l2_bytes >> 20) +
         " MiB, cooperative launch " + (i.cooperative_launch ? "yes" : "no") + ", stream priorities " +
         std::to_string(i.least_stream_priority) + " (least) to " + std::to_string(i.greatest_stream_priority) +
         " (greatest)";
}

// DRAM bandwidth the memory clock and bus imply: two transfers per clock.
double dram_from_clocks(const calibrate::DeviceInfo& i) {
  return 2.0 * i.memory_clock_khz * 1e3 * i.memory_bus_bits / 8;
}

std::string description_line(const loom::sim::GpuDevice& d) {
  return d.name + ": " + std::to_string(d.sm_count) + " SMs, peak_flops_f32 " + scaled(d.peak_flops_f32) +
         "FLOP/s, dram_bytes_per_s " + scaled(d.dram_bytes_per_s) + "B/s, sm_bandwidth_share " +
         fixed(d.sm_bandwidth_share, 2) + ", launch_us " + fixed(d.launch_us, 2) + ", graph_launch_us " +
         fixed(d.graph_launch_us, 2) + ", launch_latency_us " + fixed(d.launch_latency_us, 2);
}

void print_markdown(const Report& report, std::ostream& out) {
  const loom::sim::GpuDevice& d = report.description;
  out << "# loom-gpu-calibrate: " << (report.device ? report.device->name : std::string("simulate only")) << " against "
      << d.name << "\n\n| | |\n|---|---|\n";
  out << "| device | "
      << (report.device ? device_line(*report.device)
                        : std::string("none: --simulate-only, the nominal launch configuration, no CUDA call"))
      << " |\n";
  out << "| description | " << description_line(d) << " |\n";
  out << "| measured | "
      << (report.measured ? "median of " + std::to_string(report.repeat) + " runs per case after one warm-up run"
                          : std::string("no (--simulate-only)"))
      << " |\n";
  out << "| unit | " << fixed(calibrate::kUnitUs, 0)
      << " us: each kernel alone (each wave of a larger grid) lasts whole units, or the stated fraction, on the "
         "model |\n\n";

  out << "## Cases\n\n| case | quantity | measured us | simulated us | simulated / measured |\n|---|---|---|---|---|\n";
  for (const CaseResult& r : report.results)
    for (const QuantityResult& q : r.quantities) {
      const auto m = q.measured_us();
      const int digits = r.overhead ? 2 : 1;
      out << "| " << r.name << " | " << q.name << " | "
          << (m ? fixed(*m, digits) : (r.not_measured.empty() ? "-" : "not run: " + r.not_measured)) << " | "
          << fixed(q.simulated_us, digits) << " | " << (m && *m > 0 ? fixed(q.simulated_us / *m, 3) : "-") << " |\n";
    }

  out << "\n## Kernels\n\n| case | kernel | blocks x threads | registers | shared bytes | FLOPs | bytes | stream | "
         "priority | launched at us |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const CaseResult& r : report.results) {
    if (!r.kernels) continue;
    for (const calibrate::PlannedLaunch& l : r.kernels->launches)
      out << "| " << r.name << " | " << l.spec.name << (l.cooperative ? " (cooperative)" : "") << " | " << l.spec.blocks
          << " x " << l.spec.threads_per_block << " | " << l.spec.registers_per_thread << " | "
          << l.spec.shared_bytes_per_block << " | " << scaled(l.spec.flops) << " | "
          << scaled(static_cast<double>(l.spec.bytes)) << " | " << l.stream << " | "
          << (l.urgent ? "greatest" : "least") << " | " << fixed(l.at_us, 0) << " |\n";
  }
  out << "\nBlocks per SM (the model's occupancy calculator";
  out << (report.measured ? "; CUDA's in parentheses" : "") << "):";
  for (const auto& [kind, blocks] : report.occupancy)
    out << " " << calibrate::kernel_kind_name(kind) << " " << blocks.first
        << (blocks.second ? " (" + std::to_string(*blocks.second) + ")" : "") << ";";
  out << " a full grid is sm_count times that.\n";

  out << "\n## Peaks\n\n| peak | measured | description | measured / description |\n|---|---|---|---|\n";
  auto peak_row = [&](const std::string& peak, std::optional<double> measured, double described,
                      const std::string& note) {
    out << "| " << peak << " | " << (measured ? scaled(*measured) : "-") << " | " << scaled(described) << note << " | "
        << (measured ? fixed(*measured / described, 3) : "-") << " |\n";
  };
  // Work over the measured time of a one-kernel case.
  auto rate = [&](const std::string& name, double work) -> std::optional<double> {
    const auto t = alone_us(report, name);
    if (!t || *t <= 0) return std::nullopt;
    return work / (*t * 1e-6);
  };
  const calibrate::PlannedLaunch& narrow = only_launch(report, "memory-narrow");
  // What the model lets the narrow kernel draw: its busy SMs' share of DRAM.
  const double narrow_model =
      std::min(d.dram_bytes_per_s, narrow.spec.blocks * d.sm_bandwidth_share * d.dram_bytes_per_s / d.sm_count);
  peak_row("FP32 FLOP/s (compute-alone)", rate("compute-alone", only_launch(report, "compute-alone").spec.flops),
           d.peak_flops_f32, "");
  peak_row("DRAM B/s (memory-alone)",
           rate("memory-alone", static_cast<double>(only_launch(report, "memory-alone").spec.bytes)),
           d.dram_bytes_per_s, "");
  peak_row("narrow-kernel B/s (memory-narrow, " + std::to_string(narrow.spec.blocks) + " SMs)",
           rate("memory-narrow", static_cast<double>(narrow.spec.bytes)), narrow_model,
           " (sm_bandwidth_share " + fixed(d.sm_bandwidth_share, 2) + ")");
  if (report.device)
    peak_row("DRAM B/s from the clocks (2 x memory clock x bus width)", dram_from_clocks(*report.device),
             d.dram_bytes_per_s, "");

  out << "\n## Suggested corrections to " << d.name << "\n\n";
  if (report.suggestions.empty()) out << "None without a measurement (--simulate-only).\n";
  for (const std::string& s : report.suggestions) out << "- " << s << "\n";
}

ordered_json description_json(const loom::sim::GpuDevice& d) {
  return {{"name", d.name},
          {"source", d.source},
          {"sm_count", d.sm_count},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"registers_per_sm", d.registers_per_sm},
          {"register_allocation_unit", d.register_allocation_unit},
          {"max_registers_per_thread", d.max_registers_per_thread},
          {"shared_bytes_per_sm", d.shared_bytes_per_sm},
          {"shared_bytes_per_block_max", d.shared_bytes_per_block_max},
          {"shared_bytes_reserved_per_block", d.shared_bytes_reserved_per_block},
          {"max_threads_per_block", d.max_threads_per_block},
          {"warp_size", d.warp_size},
          {"peak_flops_f32", d.peak_flops_f32},
          {"peak_flops_f16", d.peak_flops_f16},
          {"dram_bytes_per_s", d.dram_bytes_per_s},
          {"sm_bandwidth_share", d.sm_bandwidth_share},
          {"launch_us", d.launch_us},
          {"graph_launch_us", d.graph_launch_us},
          {"launch_latency_us", d.launch_latency_us}};
}

ordered_json optional_json(const std::optional<double>& value) { return value ? ordered_json(*value) : ordered_json(); }

ordered_json report_json(const Report& report) {
  ordered_json doc;
  doc["tool"] = "loom-gpu-calibrate";
  doc["version"] = loom::version();
  doc["mode"] = report.measured ? "measured" : "simulate-only";
  doc["unit_us"] = calibrate::kUnitUs;
  doc["repeat"] = report.measured ? report.repeat : 0;
  if (report.device) {
    const calibrate::DeviceInfo& i = *report.device;
    doc["device"] = {
        {"name", i.name},
        {"ordinal", i.ordinal},
        {"sm_count", i.sm_count},
        {"compute_capability",
         std::to_string(i.compute_capability_major) + "." + std::to_string(i.compute_capability_minor)},
        {"clock_khz", i.clock_khz},
        {"memory_clock_khz", i.memory_clock_khz},
        {"memory_bus_bits", i.memory_bus_bits},
        {"dram_bytes_per_s_from_clocks", dram_from_clocks(i)},
        {"l2_bytes", i.l2_bytes},
        {"global_memory_bytes", i.global_memory_bytes},
        {"cooperative_launch", i.cooperative_launch},
        {"stream_priorities", {{"least", i.least_stream_priority}, {"greatest", i.greatest_stream_priority}}}};
  } else {
    doc["device"] = nullptr;
  }
  doc["description_requested"] = report.requested_description;
  doc["description"] = description_json(report.description);
  ordered_json occupancy = ordered_json::object();
  for (const auto& [kind, blocks] : report.occupancy)
    occupancy[calibrate::kernel_kind_name(kind)] = {
        {"threads_per_block", calibrate::threads_per_block(kind)},
        {"registers_per_thread", report.shape.resources(kind).registers_per_thread},
        {"shared_bytes_per_block", report.shape.resources(kind).shared_bytes_per_block},
        {"blocks_per_sm_model", blocks.first},
        {"blocks_per_sm_cuda", blocks.second ? ordered_json(*blocks.second) : ordered_json()}};
  doc["kernels"] = occupancy;
  doc["copy_region_elements"] = report.shape.copy_region_elements;

  ordered_json cases = ordered_json::array();
  for (const CaseResult& r : report.results) {
    ordered_json c;
    c["name"] = r.name;
    c["kind"] = r.kernels ? "kernels" : "host launches";
    c["law"] = r.law;
    c["not_measured"] = r.not_measured.empty() ? ordered_json() : ordered_json(r.not_measured);
    if (r.kernels) {
      c["gated"] = r.kernels->gated;
      ordered_json kernels = ordered_json::array();
      for (const calibrate::PlannedLaunch& l : r.kernels->launches)
        kernels.push_back({{"name", l.spec.name},
                           {"kernel", calibrate::kernel_kind_name(l.kind)},
                           {"blocks", l.spec.blocks},
                           {"threads_per_block", l.spec.threads_per_block},
                           {"registers_per_thread", l.spec.registers_per_thread},
                           {"shared_bytes_per_block", l.spec.shared_bytes_per_block},
                           {"flops", l.spec.flops},
                           {"bytes", l.spec.bytes},
                           {"cooperative", l.cooperative},
                           {"stream", l.stream},
                           {"priority", l.urgent ? 1 : 0},
                           {"at_us", l.at_us},
                           {"iterations", l.iterations},
                           {"passes", l.passes},
                           {"elements", l.elements}});
      c["kernels"] = kernels;
    } else {
      c["kernels_per_graph"] = r.overhead->kernels_per_graph;
      c["launches_per_sample"] = r.overhead->launches;
    }
    ordered_json quantities = ordered_json::array();
    for (const QuantityResult& q : r.quantities) {
      const auto m = q.measured_us();
      quantities.push_back(
          {{"name", q.name},
           {"simulated_us", q.simulated_us},
           {"measured_us", optional_json(m)},
           {"simulated_over_measured", m && *m > 0 ? ordered_json(q.simulated_us / *m) : ordered_json()},
           {"samples_us", q.samples_us}});
    }
    c["quantities"] = quantities;
    cases.push_back(c);
  }
  doc["cases"] = cases;
  doc["suggestions"] = report.suggestions;
  return doc;
}

int run_calibration(const Options& options) {
  Report report;
  report.repeat = options.repeat;
  std::unique_ptr<calibrate::GpuRunner> runner;
  if (options.simulate_only) {
    report.requested_description = options.gpu.empty() ? kFallbackDescription : options.gpu;
    report.description = loom::sim::gpu_device(report.requested_description);
    report.shape = calibrate::nominal_shape(report.description);
  } else {
    if (calibrate::cuda_device_count() == 0)
      throw cli::UsageError("no CUDA device: run with --simulate-only to print the model's side alone");
    runner = std::make_unique<calibrate::GpuRunner>(0);
    report.measured = true;
    report.device = runner->info();
    std::string note;
    report.requested_description =
        options.gpu.empty() ? description_for_device(runner->info().name, note) : options.gpu;
    if (!note.empty()) std::fprintf(stderr, "loom-gpu-calibrate: warning: %s\n", note.c_str());
    report.description = loom::sim::gpu_device(report.requested_description);
    report.shape = runner->shape();
    if (report.description.sm_count != runner->info().sm_count)
      std::fprintf(stderr,
                   "loom-gpu-calibrate: warning: the description %s has %d SMs, the device %d: the grids follow the "
                   "device, the model the description\n",
                   report.description.name.c_str(), report.description.sm_count, runner->info().sm_count);
  }
  for (const calibrate::KernelKind kind :
       {calibrate::KernelKind::compute, calibrate::KernelKind::copy, calibrate::KernelKind::wide_copy}) {
    loom::sim::KernelSpec probe;
    probe.blocks = 1;
    probe.threads_per_block = static_cast<std::uint32_t>(calibrate::threads_per_block(kind));
    probe.registers_per_thread = report.shape.resources(kind).registers_per_thread;
    probe.shared_bytes_per_block = report.shape.resources(kind).shared_bytes_per_block;
    report.occupancy.push_back({kind,
                                {loom::sim::blocks_per_sm(report.description, probe),
                                 runner ? std::optional<int>(runner->cuda_blocks_per_sm(kind)) : std::nullopt}});
  }

  report.kernel_cases = calibrate::calibration_cases(report.description, report.shape);
  report.overhead_cases = calibrate::launch_overhead_cases(report.description);
  for (const calibrate::CalibrationCase& c : report.kernel_cases) {
    CaseResult r{c.name, c.law, &c, nullptr, {}, {}};
    const std::vector<double> simulated =
        calibrate::case_quantities(c, calibrate::simulate_case(report.description, c));
    for (std::size_t q = 0; q < c.quantities.size(); ++q)
      r.quantities.push_back({c.quantities[q].name, simulated[q], {}});
    report.results.push_back(std::move(r));
  }
  for (const calibrate::LaunchOverheadCase& c : report.overhead_cases)
    report.results.push_back({c.name, c.law, nullptr, &c, {}, {{c.quantity, c.simulated_us, {}}}});

  if (runner) measure(report, *runner);
  runner.reset();  // waits for the GPU, then frees its buffers
  suggest(report);

  print_markdown(report, std::cout);
  std::cout << std::flush;
  if (!options.json_file.empty()) {
    std::ofstream out(options.json_file);
    out << report_json(report).dump(1) << "\n";
    if (!out) throw cli::UsageError("--json: cannot write '" + options.json_file + "'");
  }
  return 0;
}

std::string help_footer() {
  std::string text =
      "Each case runs its kernels on the GPU (CUDA events around each kernel, the device clock at each\n"
      "kernel's first and last block; co-running cases released together by a gate kernel) and the same\n"
      "launches on the GPU model (loom::sim::simulate_kernels with the description). Grids follow the\n"
      "device's SM count and the model's occupancy; registers and shared memory come from\n"
      "cudaFuncGetAttributes (with --simulate-only: 32 registers, the bound the kernels are compiled\n"
      "under, and none). Every wait on the GPU gives up after 10 s (exit status 3).\n\nCases:\n";
  for (const auto& [name, law] : calibrate::case_catalogue()) text += "  " + name + ": " + law + "\n";
  text +=
      "\nOutput: a Markdown table on stdout (case, quantity, measured us, simulated us, simulated /\n"
      "measured), the kernels of each case, the measured peaks beside the description's and the\n"
      "corrections they suggest to profiles/gpu/<name>.json (docs/gpu-check.md, \"Calibration: correcting\n"
      "the GPU descriptions\").\n\n"
      "Examples:\n"
      "  loom-gpu-calibrate --json calibration.json > calibration.md\n"
      "  loom-gpu-calibrate --simulate-only --gpu l4";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "Measures the GPU model's micro-cases on this machine's GPU and simulates them on the model,\n"
      "side by side, so that a GPU description (profiles/gpu/*.json) can be corrected. Times are\n"
      "microseconds.",
      "loom-gpu-calibrate"};
  app.footer(help_footer());
  app.get_formatter()->column_width(30);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    app.set_version_flag("--version", std::string("loom-gpu-calibrate ") + loom::version(),
                         "Print the version and exit");
    app.add_option("--gpu", options.gpu,
                   "GPU description to simulate with: a name in profiles/gpu/ or a .json path (default: matched "
                   "to the device's name, H100 SXM/PCIe, H200, A100, L4; otherwise h100-sxm with a warning; "
                   "h100-sxm with --simulate-only)")
        ->type_name("NAME|FILE");
    app.add_flag("--simulate-only", options.simulate_only,
                 "No CUDA call at all: the simulated column only, for the nominal launch configuration on the "
                 "description's SM count");
    app.add_option("--repeat", options.repeat, "Runs per case after one warm-up; the median is reported")
        ->type_name("N")
        ->check(cli::positive_integer())
        ->capture_default_str();
    app.add_option("--json", options.json_file,
                   "Also write the report as JSON: device, description, per case its kernels, measured and "
                   "simulated figures, and the suggestions")
        ->type_name("FILE");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-gpu-calibrate: error: %s\n", e.what());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return cli::run_guarded("loom-gpu-calibrate", [&] { return run_calibration(options); });
}
