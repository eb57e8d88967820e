// The load generator behind loom-bench: closed loop or Poisson open loop.
#include "bench_runner.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

namespace loom::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// State every client thread reads; the first failure stops the whole run.
struct Shared {
  LoadConfig config;
  std::size_t clients = 0;
  Clock::time_point run_start;
  Clock::time_point measure_start;  // written once by the barrier, before anyone measures
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};  // the measured phase has met its minimums (or failed): submit no more
  std::atomic<bool> failed{false};
  std::atomic<std::size_t> satisfied{0};  // clients that completed min_requests
  std::atomic<std::size_t> finished{0};   // client threads that returned

  std::mutex error_mutex;
  std::exception_ptr error;

  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::move(e);
    }
    failed = true;
    stop = true;
  }
};

bool open_loop(const LoadConfig& config) { return config.arrival_rate_per_s > 0; }
bool windowed(const LoadConfig& config) { return config.window_ms > 0; }

// One model's load. Completions arrive on the executor's post-process thread.
class Client {
 public:
  // `arrivals_ms`: the open loop's schedule (empty in a closed loop).
  Client(Executor& executor, const LoadTarget& target, Shared& shared, std::vector<double> arrivals_ms)
      : executor_(executor), target_(target), shared_(shared), arrivals_ms_(std::move(arrivals_ms)) {}

  // `arrive_and_wait` is the barrier every client passes between warm-up and measurement.
  void run(const std::function<void()>& arrive_and_wait) {
    bool arrived = false;
    try {
      warm_up();
      drain();
      arrived = true;
      arrive_and_wait();
      if (!shared_.failed) {
        if (open_loop(shared_.config))
          measure_open_loop();
        else
          measure();
      }
    } catch (...) {
      shared_.fail(std::current_exception());
    }
    drain();
    // Every client must reach the barrier once, or the others would wait for ever.
    if (!arrived) arrive_and_wait();
    ++shared_.finished;
  }

  std::size_t measured_done() const { return measured_done_.load(); }
  // Requests the open loop will submit; 0 in a closed loop.
  std::size_t planned() const { return arrivals_ms_.size(); }
  std::size_t warmup_done() const {
    std::lock_guard lock(mutex_);
    return warmup_done_;
  }
  // Latencies of the measured requests completed since the last call.
  std::vector<double> take_new_latencies() {
    std::lock_guard lock(mutex_);
    std::vector<double> latencies;
    for (std::size_t i = reported_; i < timings_.size(); ++i) latencies.push_back(timings_[i].latency_ms());
    reported_ = timings_.size();
    return latencies;
  }
  std::vector<RequestTiming> take_timings() {
    std::lock_guard lock(mutex_);
    sort_by_index(timings_);
    return std::move(timings_);
  }
  // The measured requests completed before `end_ms`, while the load goes on. Exact: complete()
  // reads the clock under the lock, so one that ended before the caller read its clock is in.
  std::vector<RequestTiming> completed_before(double end_ms) const {
    std::vector<RequestTiming> done;
    {
      std::lock_guard lock(mutex_);
      for (const auto& timing : timings_)
        if (timing.end_ms < end_ms) done.push_back(timing);
    }
    sort_by_index(done);
    return done;
  }

 private:
  void warm_up() {
    const auto& config = shared_.config;
    if (config.warmup_ms <= 0) return;
    const auto deadline = shared_.run_start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double, std::milli>(config.warmup_ms));
    while (!shared_.failed && Clock::now() < deadline) {
      while (!shared_.failed && outstanding() < config.concurrency) submit(false, target_.inputs);
      wait_for_free_slot();
    }
  }

  void measure() {
    const auto& config = shared_.config;
    bool satisfied = false;
    while (!shared_.stop) {
      while (!shared_.stop && outstanding() < config.concurrency) submit(true, target_.inputs);
      wait_for_free_slot();
      if (windowed(config)) continue;  // run_load()'s thread decides at the end of each window
      if (!satisfied && measured_done() >= config.min_requests) {
        satisfied = true;
        ++shared_.satisfied;
      }
      if (shared_.satisfied == shared_.clients &&
          ms_between(shared_.measure_start, Clock::now()) >= config.min_duration_s * 1000.0)
        shared_.stop = true;
    }
  }

  // Each request is submitted at its scheduled arrival; a late one (after a submit that blocked)
  // goes at once, its latency still counted from the schedule.
  void measure_open_loop() {
    for (double at_ms : arrivals_ms_) {
      std::vector<Tensor> inputs = target_.inputs;  // copied before it is due
      const auto due = shared_.measure_start +
                       std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(at_ms));
      // In slices, so that another model's failure ends a slow schedule promptly.
      while (!shared_.stop && Clock::now() < due)
        std::this_thread::sleep_until(std::min(due, Clock::now() + std::chrono::milliseconds(50)));
      if (shared_.stop) return;
      submit(true, std::move(inputs), due);
    }
  }

  // `inputs` is a copy made before the clock starts. `scheduled`: the open loop's arrival time,
  // from which latency counts; otherwise latency counts from now.
  void submit(bool measured, std::vector<Tensor> inputs, std::optional<Clock::time_point> scheduled = std::nullopt) {
    const std::size_t index = measured ? next_index_++ : 0;
    {
      std::lock_guard lock(mutex_);
      ++outstanding_;  // before submit(): the callback may run before submit() returns
    }
    const auto start = scheduled ? *scheduled : Clock::now();
    try {
      executor_.submit(
          target_.model, std::move(inputs),
          [this, measured, index, start](std::exception_ptr error, Outputs, const RequestTimes& times) {
            complete(measured, index, start, std::move(error), times);
          },
          target_.options);
    } catch (...) {
      {
        std::lock_guard lock(mutex_);
        --outstanding_;
      }
      throw;
    }
  }

  // Everything, the notify included, happens under the lock: once drain() sees no request
  // outstanding the Client may be destroyed, so nothing may touch it after the unlock. The end
  // time too, so that completed_before() misses no request that ended before its cut.
  void complete(bool measured, std::size_t index, Clock::time_point start, std::exception_ptr error,
                const RequestTimes& times) {
    std::lock_guard lock(mutex_);
    const auto end = Clock::now();
    if (error) {
      shared_.fail(std::move(error));
    } else if (measured) {
      timings_.push_back(
          {index, ms_between(shared_.measure_start, start), ms_between(shared_.measure_start, end), times});
      ++measured_done_;
    } else {
      ++warmup_done_;
    }
    --outstanding_;
    cv_.notify_all();
  }

  std::size_t outstanding() const {
    std::lock_guard lock(mutex_);
    return outstanding_;
  }

  static void sort_by_index(std::vector<RequestTiming>& timings) {
    std::sort(timings.begin(), timings.end(),
              [](const RequestTiming& a, const RequestTiming& b) { return a.index < b.index; });
  }

  // Wakes on a completion; the timeout lets a client notice the shared stop and the end of the
  // minimum duration even when its own requests are slow.
  void wait_for_free_slot() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::milliseconds(50),
                 [&] { return outstanding_ < shared_.config.concurrency || shared_.stop.load(); });
  }

  void drain() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return outstanding_ == 0; });
  }

  Executor& executor_;
  const LoadTarget& target_;
  Shared& shared_;
  const std::vector<double> arrivals_ms_;
  std::size_t next_index_ = 0;  // client thread only
  std::atomic<std::size_t> measured_done_{0};

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::size_t outstanding_ = 0;
  std::size_t warmup_done_ = 0;
  std::vector<RequestTiming> timings_;  // in completion order until take_timings()
  std::size_t reported_ = 0;            // timings_ already handed to take_new_latencies()
};

LoadProgress progress_of(const Shared& shared, const std::vector<std::unique_ptr<Client>>& clients) {
  LoadProgress progress;
  const auto now = Clock::now();
  const auto& config = shared.config;
  progress.warming_up = !shared.measuring;
  for (const auto& client : clients) {
    progress.new_latencies_ms.push_back(client->take_new_latencies());
    progress.completed.push_back(client->measured_done());
  }
  if (!progress.warming_up) progress.measured_s = ms_between(shared.measure_start, now) / 1000.0;
  if (progress.warming_up) {
    progress.fraction = config.warmup_ms > 0 ? ms_between(shared.run_start, now) / config.warmup_ms : 1;
  } else if (windowed(config)) {
    // Until stop_after_window says so, at most until the arrivals' horizon (min_duration_s).
    progress.fraction =
        config.min_duration_s > 0 ? ms_between(shared.measure_start, now) / (config.min_duration_s * 1000.0) : 0;
  } else if (open_loop(config)) {
    double fraction = 1;
    for (std::size_t i = 0; i < clients.size(); ++i)
      fraction = std::min(fraction, static_cast<double>(progress.completed[i]) /
                                        static_cast<double>(std::max<std::size_t>(clients[i]->planned(), 1)));
    progress.fraction = fraction;
  } else {
    double fraction = 1;
    for (std::size_t done : progress.completed)
      fraction = std::min(fraction, static_cast<double>(done) / static_cast<double>(config.min_requests));
    if (config.min_duration_s > 0)
      fraction = std::min(fraction, ms_between(shared.measure_start, now) / (config.min_duration_s * 1000.0));
    progress.fraction = fraction;
  }
  progress.fraction = std::clamp(progress.fraction, 0.0, 1.0);
  return progress;
}

// What the windows so far hold: each model's measured requests that ended before the last window's end.
LoadResult completed_windows(const std::vector<std::unique_ptr<Client>>& clients,
                             const std::vector<LoadTarget>& targets, std::size_t windows, double window_ms) {
  LoadResult so_far;
  so_far.windows = windows;
  so_far.measured_s = static_cast<double>(windows) * window_ms / 1000.0;
  for (std::size_t i = 0; i < clients.size(); ++i)
    so_far.models.push_back({targets[i].model, clients[i]->warmup_done(),
                             clients[i]->completed_before(static_cast<double>(windows) * window_ms)});
  return so_far;
}

}  // namespace

LoadResult run_load(Executor& executor, const std::vector<LoadTarget>& targets, const LoadConfig& config,
                    const std::function<void(const LoadProgress&)>& on_tick) {
  if (targets.empty()) throw std::invalid_argument("run_load: no models to run");
  if (windowed(config) && !config.stop_after_window)
    throw std::invalid_argument("run_load: window_ms needs stop_after_window");
  Shared shared;
  shared.config = config;
  shared.config.min_requests = std::max<std::size_t>(config.min_requests, 1);
  shared.config.concurrency = std::max<std::size_t>(config.concurrency, 1);
  shared.clients = targets.size();

  std::vector<std::unique_ptr<Client>> clients;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    std::vector<double> arrivals;
    if (open_loop(config))
      arrivals = poisson_arrivals_ms(config.arrival_rate_per_s, shared.config.min_requests, config.min_duration_s,
                                     config.arrival_seed + i);
    clients.push_back(std::make_unique<Client>(executor, targets[i], shared, std::move(arrivals)));
  }

  // All models start measuring at the same instant, after each has drained its warm-up.
  auto start_measuring = [&shared]() noexcept {
    shared.measure_start = Clock::now();
    shared.measuring = true;
  };
  std::barrier measure_barrier(static_cast<std::ptrdiff_t>(clients.size()), start_measuring);
  const std::function<void()> arrive_and_wait = [&measure_barrier] { measure_barrier.arrive_and_wait(); };

  shared.run_start = Clock::now();
  std::vector<std::thread> threads;
  for (auto& client : clients) threads.emplace_back([&client, &arrive_and_wait] { client->run(arrive_and_wait); });
  std::size_t windows = 0;  // windows ended while the load went on
  const auto tick = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(std::max(config.tick_interval_ms, 1.0)));
  auto next_tick = Clock::now() + tick;
  while (shared.finished < clients.size()) {
    // measure_start is read only once `measuring` says the barrier has written it.
    const bool watching_windows = windowed(config) && shared.measuring && !shared.stop;
    Clock::time_point window_end = next_tick;
    if (watching_windows)
      window_end = shared.measure_start +
                   std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double, std::milli>(config.window_ms * static_cast<double>(windows + 1)));
    std::this_thread::sleep_until(std::min(next_tick, window_end));
    if (watching_windows && Clock::now() >= window_end) {
      ++windows;
      try {
        if (config.stop_after_window(completed_windows(clients, targets, windows, config.window_ms)))
          shared.stop = true;
      } catch (...) {
        shared.fail(std::current_exception());  // rethrown below, once every client has drained
      }
    }
    if (Clock::now() >= next_tick) {
      next_tick += tick;
      if (on_tick && shared.finished < clients.size()) on_tick(progress_of(shared, clients));
    }
  }
  for (auto& thread : threads) thread.join();
  if (shared.error) std::rethrow_exception(shared.error);

  LoadResult result;
  result.windows = windows;
  double last_end_ms = 0;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    ModelTimings timings;
    timings.model = targets[i].model;
    timings.warmup_requests = clients[i]->warmup_done();
    timings.requests = clients[i]->take_timings();
    for (const auto& request : timings.requests) last_end_ms = std::max(last_end_ms, request.end_ms);
    result.models.push_back(std::move(timings));
  }
  result.measured_s = last_end_ms / 1000.0;
  return result;
}

std::vector<double> poisson_arrivals_ms(double rate_per_s, std::size_t min_count, double min_duration_s,
                                        std::uint64_t seed) {
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s))
    throw std::invalid_argument("poisson_arrivals_ms: the rate must be a positive number");
  std::mt19937_64 random(seed);
  std::vector<double> arrivals;
  double now_ms = 0;
  while (arrivals.size() < min_count || now_ms < min_duration_s * 1000.0) {
    // u in [0, 1) from the top 53 bits; -log(1 - u) is an exponential variate of mean 1.
    const double u = static_cast<double>(random() >> 11) * 0x1.0p-53;
    now_ms += -std::log1p(-u) / rate_per_s * 1000.0;
    arrivals.push_back(now_ms);
  }
  return arrivals;
}

Timeline measured_phase(const Timeline& whole_run, std::size_t warmup_requests) {
  const std::vector<TraceEvent> events = whole_run.events();  // sorted by start
  // Request lives in submit order: the first `warmup_requests` are the warm-up's.
  std::vector<const TraceEvent*> lives;
  for (const auto& e : events)
    if (e.category == "request") lives.push_back(&e);
  Timeline measured;
  if (warmup_requests >= lives.size()) return measured;
  const double origin = lives[warmup_requests]->start_us;
  std::set<std::string> ids;
  for (std::size_t i = warmup_requests; i < lives.size(); ++i) {
    auto id = lives[i]->args.find("request");
    if (id != lives[i]->args.end()) ids.insert(id->second);
  }
  // By request rather than by time: device and host clocks agree only to a few microseconds.
  for (TraceEvent e : events) {
    auto id = e.args.find("request");
    if (id != e.args.end() ? ids.count(id->second) == 0 : e.start_us < origin) continue;
    e.start_us -= origin;
    measured.add(std::move(e));
  }
  return measured;
}

}  // namespace loom::bench
