// loom-bench's host-stage flags and the stage report.
#include "bench_stages.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "cli_support.hpp"

namespace loom::bench {
namespace {

std::size_t parse_count(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 6)
    throw cli::UsageError("--stage-threads: " + what + " takes a whole number of threads, got '" + text + "'");
  const std::size_t n = std::stoul(text);
  if (n == 0) throw cli::UsageError("--stage-threads: " + what + "=0: a host stage needs at least one thread");
  return n;
}

}  // namespace

void add_stage_flags(CLI::App& app, StageFlags& flags) {
  app.add_option("--stage-threads", flags.threads,
                 "Threads of the host stages, pre-process=N,post-process=M, or auto: start at one each and let "
                 "the executor move threads to the slower stage (within --thread-budget) while it runs")
      ->type_name("SPEC|auto")
      ->capture_default_str();
  app.add_option("--thread-budget", flags.thread_budget,
                 "--stage-threads=auto: pre-process + post-process threads at most (>= 2)")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--rebalance-interval", flags.rebalance_interval_ms,
                 "--stage-threads=auto: how often the stage times are measured and a thread may move (ms)")
      ->check(cli::non_negative_number())
      ->type_name("MS")
      ->capture_default_str();
  app.add_option("--pre-process-cost", flags.pre_process_cost,
                 "Add a conversion cost to every request's pre-process: US microseconds spinning the CPU "
                 "(US:spin) or waiting (US:sleep, as a decoder blocked on I/O), to see the stages re-balance")
      ->type_name("US[:spin|sleep]");
  app.add_option("--stage-timing", flags.stage_timing,
                 "Time every Step and copy on the device (two timed events each) for the stage figures and "
                 "each request's latency breakdown")
      ->check(CLI::IsMember({"on", "off"}).description(""))
      ->type_name("on|off")
      ->capture_default_str();
  app.add_flag("--nvtx-ops", flags.nvtx_ops,
               "NVTX range per op inside each Step (Nsight), besides those per request and per Step; with CUDA "
               "graphs a replayed Step shows only its Step range");
  app.add_flag("--stages", flags.print_stages,
               "After the summary, print every pipeline stage's figures (threads, items, busy, queue wait, "
               "depth, bytes) and the re-balancing decisions");
}

void apply_stage_flags(const StageFlags& flags, ExecutorOptions& options) {
  StageThreadOptions& t = options.stage_threads;
  if (flags.threads == "auto") {
    t.automatic = true;
  } else {
    bool pre = false, post = false;
    std::size_t start = 0;
    while (start <= flags.threads.size()) {
      const std::size_t comma = std::min(flags.threads.find(',', start), flags.threads.size());
      const std::string item = flags.threads.substr(start, comma - start);
      start = comma + 1;
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos)
        throw cli::UsageError("--stage-threads: expected STAGE=N or auto, got '" + item + "'");
      const std::string stage = item.substr(0, eq);
      if (stage == "pre-process") {
        t.pre_process = parse_count(item.substr(eq + 1), stage);
        pre = true;
      } else if (stage == "post-process") {
        t.post_process = parse_count(item.substr(eq + 1), stage);
        post = true;
      } else if (stage == "dispatcher") {
        throw cli::UsageError(
            "--stage-threads: the dispatcher is one thread by design (it alone orders the Steps); stages with "
            "threads to set: pre-process, post-process");
      } else {
        throw cli::UsageError("--stage-threads: unknown stage '" + stage +
                              "' (stages with threads to set: pre-process, post-process)");
      }
    }
    if (!pre && !post) throw cli::UsageError("--stage-threads: name at least one stage");
  }
  if (t.automatic && flags.thread_budget < 2)
    throw cli::UsageError("--thread-budget=" + std::to_string(flags.thread_budget) +
                          ": the automatic re-balancing needs at least 2 threads (one per host stage)");
  t.thread_budget = flags.thread_budget;
  if (!(flags.rebalance_interval_ms > 0)) throw cli::UsageError("--rebalance-interval: must be more than 0 ms");
  t.rebalance_interval_ms = flags.rebalance_interval_ms;
  options.stage_timing = flags.stage_timing == "on";
  options.nvtx_op_ranges = flags.nvtx_ops;
  (void)pre_process_cost(flags);  // a bad spelling fails before anything runs
}

std::function<void(std::vector<Tensor>&)> pre_process_cost(const StageFlags& flags) {
  if (flags.pre_process_cost.empty()) return {};
  const std::string& text = flags.pre_process_cost;
  const std::size_t colon = text.find(':');
  const std::string number = text.substr(0, colon);
  const std::string mode = colon == std::string::npos ? "spin" : text.substr(colon + 1);
  double us = -1;
  try {
    std::size_t used = 0;
    us = std::stod(number, &used);
    if (used != number.size()) us = -1;
  } catch (const std::exception&) {
  }
  if (!(us >= 0) || !std::isfinite(us) || us > 10e6)
    throw cli::UsageError("--pre-process-cost: expected microseconds in [0, 1e7], got '" + number + "'");
  if (mode != "spin" && mode != "sleep")
    throw cli::UsageError("--pre-process-cost: expected US, US:spin or US:sleep, got '" + text + "'");
  const auto cost = std::chrono::duration<double, std::micro>(us);
  if (mode == "sleep")
    return [cost](std::vector<Tensor>&) {
      std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::nanoseconds>(cost));
    };
  return [cost](std::vector<Tensor>&) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(cost);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
}

void print_stages(const ExecutorStats& stats) {
  std::printf("\nPipeline stages (since the executor started, %.3f s; busy per thread):\n", stats.uptime_us / 1e6);
  std::printf("  %-22s %-6s %7s %9s %7s %12s %9s %12s\n", "stage", "kind", "threads", "items", "busy", "queue wait",
              "max queue", "bytes");
  for (const auto& s : stats.stages) {
    const bool host = s.kind == StageKind::host;
    const double threads = static_cast<double>(std::max<std::size_t>(s.threads, 1));
    const double busy = stats.uptime_us > 0 ? s.busy_us / (stats.uptime_us * threads) : 0;
    const std::string wait =
        host ? cli::format("%.1f us", s.queued > 0 ? s.queue_wait_us / static_cast<double>(s.queued) : 0) : "-";
    std::printf("  %-22s %-6s %7s %9llu %6.1f%% %12s %9s %12s\n", s.name.c_str(),
                std::string(stage_kind_name(s.kind)).c_str(), host ? std::to_string(s.threads).c_str() : "-",
                static_cast<unsigned long long>(s.items), busy * 100, wait.c_str(),
                s.kind == StageKind::copy ? "-" : std::to_string(s.max_queue_depth).c_str(),
                s.kind == StageKind::copy ? std::to_string(s.bytes).c_str() : "-");
  }
  std::printf(
      "  (queue wait: mean time a request waited for the stage; max queue: most waiting at once, on a device\n"
      "   stream its Steps launched and not yet finished)\n");
  if (stats.rebalances.empty()) return;
  std::printf("Re-balancing decisions:\n");
  for (const auto& d : stats.rebalances)
    std::printf("  %9.3f s  pre %zu, post %zu  (pre %.1f us/request, post %.1f us/request)  %s\n", d.at_us / 1e6,
                d.pre_threads, d.post_threads, d.pre_us_per_request, d.post_us_per_request, d.reason.c_str());
}

nlohmann::ordered_json stages_json(const ExecutorStats& stats) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const auto& s : stats.stages) {
    nlohmann::ordered_json entry;
    entry["name"] = s.name;
    entry["kind"] = std::string(stage_kind_name(s.kind));
    entry["threads"] = s.threads;
    entry["items"] = s.items;
    entry["busy_us"] = std::round(s.busy_us * 10) / 10;
    entry["queued"] = s.queued;
    entry["queue_wait_us"] = std::round(s.queue_wait_us * 10) / 10;
    entry["queue_depth"] = s.queue_depth;
    entry["max_queue_depth"] = s.max_queue_depth;
    entry["bytes"] = s.bytes;
    stages.push_back(std::move(entry));
  }
  nlohmann::ordered_json rebalances = nlohmann::ordered_json::array();
  for (const auto& d : stats.rebalances)
    rebalances.push_back({{"at_s", d.at_us / 1e6},
                          {"from", d.from},
                          {"to", d.to},
                          {"pre_threads", d.pre_threads},
                          {"post_threads", d.post_threads},
                          {"pre_us_per_request", d.pre_us_per_request},
                          {"post_us_per_request", d.post_us_per_request},
                          {"reason", d.reason}});
  return {{"uptime_s", stats.uptime_us / 1e6}, {"stages", std::move(stages)}, {"rebalances", std::move(rebalances)}};
}

}  // namespace loom::bench
