// loom_preempt_bench: MISSION.md §3's example with real models. A long "perception" model (the
// built-in ResNet at batch 8) runs back to back while a short "planning" model (the built-in
// LSTM or a small MLP at batch 1) arrives periodically. The planning model's latency and the
// perception model's throughput are measured with the planning model alone, under fifo, under
// the streams policy with a higher CUDA stream priority for planning, with priorities but no
// preemption, and with preemption at cancellation points.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <future>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_stats.hpp"
#include "cli_support.hpp"
#include "loom/executor.hpp"
#include "loom/workloads.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string device = "auto";
  double duration_s = 3;
  double period_ms = 20;
  double cancel_interval_us = 1000;
  std::int64_t perception_batch = 8;
  std::size_t outstanding = 2;
  std::string planning = "lstm";
  std::string size = "auto";  // of the ResNet: large on CUDA, small on the CPU
  std::size_t warmup = 3;
  bool json = false;
  std::string command;
};

// One way of running the two models together (or one alone).
struct Mode {
  std::string name;
  std::string policy;
  bool perception = true;
  bool planning = true;
  loom::Priority planning_priority = loom::Priority::normal;
  bool preemption = false;
  int planning_stream_priority = 0;
  std::string note;
};

struct ModeResult {
  Mode mode;
  std::vector<double> planning_ms;
  double perception_rps = 0;  // requests completed per second while measuring
  loom::ExecutorStats stats;
};

// A small MLP: 256 -> 512 -> 512 -> 256 -> 64 with ReLUs, batch 1.
loom::Model planning_mlp() {
  loom::ModelBuilder b("planning-mlp", 5);
  auto x = b.input("state", loom::DType::f32, loom::Shape{1, 256});
  const std::int64_t widths[] = {256, 512, 512, 256, 64};
  for (std::size_t i = 0; i + 1 < std::size(widths); ++i) {
    x = b.linear(x, widths[i], widths[i + 1]);
    if (i + 2 < std::size(widths)) x = b.relu(x);
  }
  b.output(x);
  return b.build();
}

ModeResult run_mode(const BenchOptions& options, const Mode& mode, const loom::Model& perception,
                    const loom::Model& planning) {
  loom::ExecutorOptions eo;
  eo.device = options.device;
  eo.policy = mode.policy;
  eo.preemption = mode.preemption;
  eo.cancellation_interval_us = options.cancel_interval_us;
  loom::Executor ex(eo);
  ex.load(perception, "perception");
  loom::LoadOptions planning_load;
  planning_load.name = "planning";
  planning_load.stream_priority = mode.planning_stream_priority;
  ex.load(planning, planning_load);
  const auto perception_inputs = loom::random_inputs(perception, 1);
  const auto planning_inputs = loom::random_inputs(planning, 2);
  for (std::size_t i = 0; i < options.warmup; ++i) {
    if (mode.perception) ex.submit("perception", perception_inputs).get();
    if (mode.planning) ex.submit("planning", planning_inputs).get();
  }
  const auto stats_before = ex.stats();

  ModeResult result;
  result.mode = mode;
  std::mutex mutex;
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration_s));
  std::atomic<std::size_t> perception_done{0};

  // Perception: closed loop, `outstanding` requests in flight, back to back.
  std::thread perception_client([&] {
    if (!mode.perception) return;
    std::deque<std::future<loom::Outputs>> inflight;
    while (Clock::now() < end) {
      while (inflight.size() < options.outstanding) inflight.push_back(ex.submit("perception", perception_inputs));
      inflight.front().get();
      inflight.pop_front();
      if (Clock::now() <= end) ++perception_done;
    }
    for (auto& f : inflight) f.get();
  });
  // Planning: open loop, one request per period, latency from submit to completion.
  std::thread planning_client([&] {
    if (!mode.planning) return;
    loom::RequestOptions ro;
    ro.priority = mode.planning_priority;
    std::vector<std::future<void>> pending;
    auto next = start;
    const auto period =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(options.period_ms));
    while (next < end) {
      std::this_thread::sleep_until(next);
      auto done = std::make_shared<std::promise<void>>();
      pending.push_back(done->get_future());
      const auto submitted = Clock::now();
      ex.submit(
          "planning", planning_inputs,
          [&, submitted, done](std::exception_ptr error, loom::Outputs) {
            const double ms = std::chrono::duration<double, std::milli>(Clock::now() - submitted).count();
            if (!error) {
              std::lock_guard lock(mutex);
              result.planning_ms.push_back(ms);
            }
            done->set_value();
          },
          ro);
      next += period;
    }
    for (auto& f : pending) f.get();
  });
  perception_client.join();
  planning_client.join();
  result.perception_rps = static_cast<double>(perception_done.load()) / options.duration_s;
  const auto stats_after = ex.stats();
  result.stats = stats_after;
  result.stats.preemptions -= stats_before.preemptions;
  result.stats.bytes_dumped -= stats_before.bytes_dumped;
  result.stats.steps_dispatched -= stats_before.steps_dispatched;
  result.stats.dispatch_host_us -= stats_before.dispatch_host_us;
  result.stats.cuda_graph_steps -= stats_before.cuda_graph_steps;
  return result;
}

double round_to(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

int run(const BenchOptions& options) {
  const bool cuda = loom::cuda_device_count() > 0 && options.device != "cpu";
  const std::string size_name = options.size == "auto" ? (cuda ? "large" : "small") : options.size;
  const auto size = loom::workloads::size_from_name(size_name);
  const loom::Model perception = loom::workloads::resnet_cnn(options.perception_batch, size, 1);
  const loom::Model planning =
      options.planning == "mlp" ? planning_mlp() : loom::workloads::lstm_seq(1, loom::workloads::Size::small, 3);

  std::string device_name, backend;
  loom::ModelInfo perception_info, planning_info;
  {
    loom::ExecutorOptions eo;
    eo.device = options.device;
    eo.cancellation_interval_us = options.cancel_interval_us;
    loom::Executor probe(eo);
    probe.load(perception, "perception");
    probe.load(planning, "planning");
    device_name = probe.device_name();
    backend = probe.backend_name();
    perception_info = probe.model_info("perception");
    planning_info = probe.model_info("planning");
  }
  const bool on_cpu = backend == "cpu";
  const std::vector<Mode> modes = {
      {"planning alone", "fifo", false, true, loom::Priority::normal, false, 0, "the reference latency"},
      {"perception alone", "fifo", true, false, loom::Priority::normal, false, 0, "the reference throughput"},
      {"fifo", "fifo", true, true, loom::Priority::normal, false, 0, "arrival order, no priorities"},
      {"streams", "streams", true, true, loom::Priority::normal, false, 1,
       on_cpu ? "CPU: stream priorities are ignored; Steps interleave round-robin on one thread"
              : "every request launched at once; planning's stream at a higher CUDA priority"},
      {"priority", "fifo", true, true, loom::Priority::urgent, false, 0,
       "planning urgent, no preemption: waits for the running perception request"},
      {"preemption", "fifo", true, true, loom::Priority::urgent, true, 0,
       "planning urgent, perception pauses at its next cancellation point"},
  };

  std::vector<ModeResult> results;
  for (const auto& mode : modes) {
    if (!options.json) std::fprintf(stderr, "measuring %s ...\n", mode.name.c_str());
    results.push_back(run_mode(options, mode, perception, planning));
  }
  double alone_rps = 0;
  for (const auto& r : results)
    if (r.mode.name == "perception alone") alone_rps = r.perception_rps;
  std::size_t points = 0;
  double perception_est_us = 0;
  for (const auto& s : perception_info.steps) {
    points += s.cancellation_point ? 1 : 0;
    perception_est_us += s.measured_us > 0 ? s.measured_us : std::max(s.compute_us, s.memory_us);
  }

  nlohmann::ordered_json doc;
  doc["tool"] = "loom_preempt_bench";
  doc["command"] = options.command;
  doc["device"] = device_name;
  doc["backend"] = backend;
  doc["config"] = {{"duration_s", options.duration_s},
                   {"period_ms", options.period_ms},
                   {"cancel_interval_us", options.cancel_interval_us},
                   {"perception_batch", options.perception_batch},
                   {"outstanding", options.outstanding}};
  doc["perception"] = {{"model", "resnet " + size_name},
                       {"batch", options.perception_batch},
                       {"steps", perception_info.steps.size()},
                       {"cancellation_points", points},
                       {"estimated_us", round_to(perception_est_us, 1)},
                       {"cost_source", perception_info.cost_source}};
  doc["planning"] = {
      {"model", options.planning == "mlp" ? "mlp" : "lstm small"}, {"batch", 1}, {"steps", planning_info.steps.size()}};
  doc["modes"] = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    nlohmann::ordered_json m;
    m["mode"] = r.mode.name;
    m["policy"] = r.mode.policy;
    m["note"] = r.mode.note;
    if (r.mode.planning && !r.planning_ms.empty()) {
      const auto s = loom::bench::summarize(r.planning_ms, {50, 99});
      m["planning_latency_ms"] = {{"count", r.planning_ms.size()},
                                  {"p50", round_to(s.percentiles[0].second, 3)},
                                  {"p99", round_to(s.percentiles[1].second, 3)},
                                  {"mean", round_to(s.mean, 3)},
                                  {"max", round_to(s.max, 3)}};
    }
    if (r.mode.perception) {
      m["perception_throughput_rps"] = round_to(r.perception_rps, 3);
      m["perception_images_per_s"] = round_to(r.perception_rps * static_cast<double>(options.perception_batch), 2);
      if (alone_rps > 0) m["perception_loss_pct"] = round_to(100.0 * (1.0 - r.perception_rps / alone_rps), 2);
    }
    m["preemptions"] = r.stats.preemptions;
    m["bytes_dumped"] = r.stats.bytes_dumped;
    m["dispatch_host_us_per_step"] =
        r.stats.steps_dispatched ? round_to(r.stats.dispatch_host_us / static_cast<double>(r.stats.steps_dispatched), 3)
                                 : 0.0;
    doc["modes"].push_back(m);
  }
  if (options.json) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }

  std::printf("loom_preempt_bench on %s (%s)\n", device_name.c_str(), backend.c_str());
  std::printf(
      "perception: resnet %s, batch %lld, %zu Steps, %zu cancellation points (interval %.0f us), est. %.1f ms (%s)\n",
      size_name.c_str(), static_cast<long long>(options.perception_batch), perception_info.steps.size(), points,
      options.cancel_interval_us, perception_est_us / 1000, perception_info.cost_source.c_str());
  std::printf("planning: %s, batch 1, every %.1f ms; %.1f s per mode, %zu perception requests outstanding\n\n",
              options.planning == "mlp" ? "mlp" : "lstm small", options.period_ms, options.duration_s,
              options.outstanding);
  std::printf("%-17s %-9s %10s %10s %8s %12s %9s %8s\n", "mode", "policy", "plan p50", "plan p99", "plans",
              "percep req/s", "loss", "pauses");
  for (const auto& r : results) {
    std::string p50 = "-", p99 = "-", count = "-", rps = "-", loss = "-";
    char text[64];
    if (r.mode.planning && !r.planning_ms.empty()) {
      const auto s = loom::bench::summarize(r.planning_ms, {50, 99});
      std::snprintf(text, sizeof text, "%.2f ms", s.percentiles[0].second);
      p50 = text;
      std::snprintf(text, sizeof text, "%.2f ms", s.percentiles[1].second);
      p99 = text;
      count = std::to_string(r.planning_ms.size());
    }
    if (r.mode.perception) {
      std::snprintf(text, sizeof text, "%.2f", r.perception_rps);
      rps = text;
      if (alone_rps > 0 && r.mode.name != "perception alone") {
        std::snprintf(text, sizeof text, "%.1f%%", 100.0 * (1.0 - r.perception_rps / alone_rps));
        loss = text;
      }
    }
    std::printf("%-17s %-9s %10s %10s %8s %12s %9s %8llu\n", r.mode.name.c_str(), r.mode.policy.c_str(), p50.c_str(),
                p99.c_str(), count.c_str(), rps.c_str(), loss.c_str(),
                static_cast<unsigned long long>(r.stats.preemptions));
  }
  std::printf("\n");
  for (const auto& r : results) std::printf("%-17s %s\n", r.mode.name.c_str(), r.mode.note.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{
      "MISSION.md §3 with real models: a long perception model (ResNet, batch 8) back to back and a short planning "
      "model (LSTM or MLP, batch 1) arriving every --period-ms. Each mode runs on a fresh executor for --duration "
      "seconds: planning alone, perception alone, fifo (no priorities), streams (planning on a higher-priority CUDA "
      "stream; on the CPU stream priorities do nothing), priority (planning urgent, no preemption) and preemption "
      "(planning urgent; perception pauses at its next cancellation point). Prints planning p50/p99 latency and "
      "perception throughput with its loss against perception alone; --json prints the same as JSON.",
      "loom_preempt_bench"};
  app.add_option("--device", options.device, "auto, cpu, cuda or cuda:N")->check(loom::cli::device_name());
  app.add_option("--duration", options.duration_s, "seconds measured per mode")->check(CLI::PositiveNumber);
  app.add_option("--period-ms", options.period_ms, "time between planning requests")->check(CLI::PositiveNumber);
  app.add_option("--cancel-interval-us", options.cancel_interval_us,
                 "ExecutorOptions::cancellation_interval_us: at least one cancellation point per this much estimated "
                 "time")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--perception-batch", options.perception_batch, "batch of the perception ResNet")
      ->check(CLI::PositiveNumber);
  app.add_option("--outstanding", options.outstanding, "perception requests kept in flight (closed loop)")
      ->check(CLI::Range(1, 8));
  app.add_option("--planning", options.planning, "planning model: lstm (built-in, small) or mlp")
      ->check(CLI::IsMember({"lstm", "mlp"}));
  app.add_option("--size", options.size, "perception ResNet size: auto (large on CUDA, small on the CPU), small, large")
      ->check(CLI::IsMember({"auto", "small", "large"}));
  app.add_option("--warmup", options.warmup, "requests of each model run before measuring");
  app.add_flag("--json", options.json, "print a JSON document instead of the table");
  CLI11_PARSE(app, argc, argv);
  for (int i = 0; i < argc; ++i) options.command += (i ? " " : "") + std::string(argv[i]);
  return loom::cli::run_guarded("loom_preempt_bench", [&] { return run(options); });
}
