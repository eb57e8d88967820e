// The GPU model's block scheduler (gpu_engine.hpp; docs/simulator.md, "The GPU model").
//
// Placement. A kernel's blocks may be dispatched from launch_latency_us after its launch, once the
// kernel before it on its stream has finished. Eligible kernels are served in order of stream
// priority (higher first), then launch order: the first places as many of its pending blocks as
// the free SM resources hold (threads in whole warps, registers, shared memory with the per-block
// reserve, block slots — summed over the GPU — and at most sm_count x blocks_per_sm of its own);
// while it still has pending blocks, the kernels behind it wait (the hardware dispatches a grid's
// blocks before the next grid's). A cooperative kernel waits until all its blocks fit at once.
//
// Progress. The blocks are taken as spread evenly over the SMs: min(sm_count, resident blocks)
// SMs are busy. Each block needs g us of one SM at peak (its flops over the SM's share of the
// peak) and m bytes of DRAM. The rates are a weighted dominant-resource fair share (progressive
// filling) under: total SM time per us <= busy SMs; total bytes per us <= min(DRAM bandwidth,
// busy SMs x what one SM can draw); one block at most one SM's compute and one SM's bandwidth.
// A block's weight is its warps over its dominant share (the larger of g / sm_count and m / DRAM
// bandwidth), so blocks of equal size progress at equal dominant shares. A kernel alone with a
// block per SM runs at its roofline, max(flops / peak, bytes / bandwidth); a compute-bound and a
// memory-bound kernel sharing the SMs each use what the other leaves.
#include "sim/gpu_engine.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "loom/error.hpp"

namespace loom::sim::detail {
namespace {

constexpr double kEpsilon = 1e-9;

std::string kernel_text(const KernelSpec& k) {
  return "kernel '" + k.name + "' (" + std::to_string(k.blocks) + " blocks of " + std::to_string(k.threads_per_block) +
         " threads, " + std::to_string(k.registers_per_thread) + " registers, " +
         std::to_string(k.shared_bytes_per_block) + " shared bytes)";
}

}  // namespace

GpuBlockScheduler::GpuBlockScheduler(const GpuDevice& device) : device_(device) {
  if (device_.sm_count <= 0 || !(device_.dram_bytes_per_s > 0) || !(device_.peak_flops_f32 > 0))
    throw Error(ErrorCode::invalid_argument, "GPU model: device '" + device_.name +
                                                 "' needs a positive sm_count, peak_flops_f32 and dram_bytes_per_s");
  const double sms = device_.sm_count;
  sm_bandwidth_ = device_.sm_bandwidth_share * device_.dram_bytes_per_s / 1e6 / sms;
  total_threads_ = sms * device_.max_threads_per_sm;
  total_registers_ = sms * device_.registers_per_sm;
  total_shared_ = sms * static_cast<double>(device_.shared_bytes_per_sm);
  total_blocks_ = sms * device_.max_blocks_per_sm;
}

std::size_t GpuBlockScheduler::launch(const KernelSpec& spec, int stream, int priority, double at_us) {
  if (spec.blocks == 0) throw Error(ErrorCode::invalid_argument, "GPU model: " + kernel_text(spec) + " has no blocks");
  if (!(spec.flops >= 0) || !std::isfinite(spec.flops))
    throw Error(ErrorCode::invalid_argument,
                "GPU model: " + kernel_text(spec) + ": flops must be a finite number >= 0");
  const int per_sm = blocks_per_sm(device_, spec);
  if (per_sm <= 0)
    throw Error(ErrorCode::invalid_argument,
                "GPU model: " + kernel_text(spec) + " does not fit on one SM of " + device_.name);
  const auto resident = static_cast<std::uint32_t>(per_sm) * static_cast<std::uint32_t>(device_.sm_count);
  if (spec.cooperative && spec.blocks > resident)
    throw Error(ErrorCode::invalid_argument, "GPU model: cooperative " + kernel_text(spec) +
                                                 " needs all blocks resident, " + device_.name + " holds " +
                                                 std::to_string(resident));
  if (!(at_us >= now_)) at_us = now_;

  Kernel k;
  k.spec = spec;
  k.stream = stream;
  k.priority = priority;
  k.launched_us = at_us;
  k.pending = spec.blocks;
  k.max_resident = resident;
  const double peak = spec.f16 && device_.peak_flops_f16 > 0 ? device_.peak_flops_f16 : device_.peak_flops_f32;
  const double blocks = spec.blocks;
  k.sm_us = spec.flops / blocks / (peak / 1e6 / device_.sm_count);
  k.bytes = static_cast<double>(spec.bytes) / blocks;
  const double warp = device_.warp_size;
  k.warps = std::ceil(spec.threads_per_block / warp);
  k.threads = k.warps * warp;
  const double unit = device_.register_allocation_unit;
  k.registers = std::ceil(spec.registers_per_thread * warp / unit) * unit * k.warps;
  k.shared = static_cast<double>(spec.shared_bytes_per_block + device_.shared_bytes_reserved_per_block);

  const std::size_t id = kernels_.size();
  const auto s = std::find(stream_ids_.begin(), stream_ids_.end(), stream);
  const auto si = static_cast<std::size_t>(s - stream_ids_.begin());
  if (s == stream_ids_.end()) {
    stream_ids_.push_back(stream);
    stream_tail_.push_back(kNone);
  }
  const std::size_t tail = stream_tail_[si];
  if (tail == kNone || kernels_[tail].done)
    k.eligible_us = at_us + device_.launch_latency_us;
  else
    kernels_[tail].next_on_stream = id;
  stream_tail_[si] = id;
  kernels_.push_back(k);
  waiting_.push_back(id);
  rates_valid_ = false;
  return id;
}

std::uint32_t GpuBlockScheduler::blocks_that_fit(const Kernel& k) const {
  double n = static_cast<double>(k.max_resident - k.running);
  n = std::min(n, std::floor((total_threads_ - used_threads_) / k.threads + kEpsilon));
  n = std::min(n, std::floor((total_registers_ - used_registers_) / k.registers + kEpsilon));
  n = std::min(n, std::floor((total_shared_ - used_shared_) / k.shared + kEpsilon));
  n = std::min(n, std::floor(total_blocks_ - used_blocks_ + kEpsilon));
  return n <= 0 ? 0 : static_cast<std::uint32_t>(std::min<double>(n, k.pending));
}

void GpuBlockScheduler::dispatch_blocks() {
  std::vector<std::size_t> ready;
  for (std::size_t id : waiting_)
    if (kernels_[id].eligible_us <= now_) ready.push_back(id);
  std::sort(ready.begin(), ready.end(), [&](std::size_t a, std::size_t b) {
    if (kernels_[a].priority != kernels_[b].priority) return kernels_[a].priority > kernels_[b].priority;
    return a < b;
  });
  for (std::size_t id : ready) {
    Kernel& k = kernels_[id];
    const std::uint32_t n = blocks_that_fit(k);
    if (n == 0 || (k.spec.cooperative && n < k.pending)) break;  // head of line: the rest wait
    if (!cohorts_.empty() && cohorts_.back().kernel == id && cohorts_.back().remaining == 1.0)
      cohorts_.back().blocks += n;
    else
      cohorts_.push_back({id, n, 1.0, 0.0});
    k.pending -= n;
    k.running += n;
    used_threads_ += n * k.threads;
    used_registers_ += n * k.registers;
    used_shared_ += n * k.shared;
    used_blocks_ += n;
    if (!k.started) {
      k.started = true;
      k.start_us = now_;
    }
    rates_valid_ = false;
    if (k.pending > 0) break;
  }
  std::erase_if(waiting_, [&](std::size_t id) { return kernels_[id].pending == 0; });
}

// Progressive filling: every unfrozen cohort's rate is lambda x its weight; lambda rises until a
// cohort reaches its own cap (it freezes) or a shared resource is full (every cohort using it
// freezes).
void GpuBlockScheduler::share() {
  if (rates_valid_) return;
  rates_valid_ = true;
  double resident = 0;
  for (const Cohort& c : cohorts_) resident += c.blocks;
  const double busy_sms = std::min<double>(device_.sm_count, resident);
  const double compute_capacity = busy_sms;  // SM-us per us
  const double memory_capacity = std::min(device_.dram_bytes_per_s / 1e6, busy_sms * sm_bandwidth_);

  const std::size_t n = cohorts_.size();
  std::vector<double> weight(n), cap(n);  // cap: the largest lambda the cohort's own limits allow
  std::vector<bool> frozen(n, false);
  double compute_used = 0, memory_used = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Cohort& c = cohorts_[i];
    const Kernel& k = kernels_[c.kernel];
    const double dominant = std::max(k.sm_us / device_.sm_count, k.bytes / (device_.dram_bytes_per_s / 1e6));
    if (dominant <= 0) {  // no work: done at once
      c.rate = kNever;
      frozen[i] = true;
      continue;
    }
    weight[i] = k.warps / dominant;
    double x_cap = kNever;
    if (k.sm_us > 0) x_cap = std::min(x_cap, 1.0 / k.sm_us);
    if (k.bytes > 0) x_cap = std::min(x_cap, sm_bandwidth_ / k.bytes);
    cap[i] = x_cap / weight[i];
  }
  for (;;) {
    double compute_demand = 0, memory_demand = 0, lambda = kNever;
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      const Kernel& k = kernels_[cohorts_[i].kernel];
      compute_demand += cohorts_[i].blocks * weight[i] * k.sm_us;
      memory_demand += cohorts_[i].blocks * weight[i] * k.bytes;
      lambda = std::min(lambda, cap[i]);
    }
    if (lambda == kNever && compute_demand == 0 && memory_demand == 0) break;  // all frozen
    const double compute_lambda =
        compute_demand > 0 ? std::max(0.0, compute_capacity - compute_used) / compute_demand : kNever;
    const double memory_lambda =
        memory_demand > 0 ? std::max(0.0, memory_capacity - memory_used) / memory_demand : kNever;
    lambda = std::min({lambda, compute_lambda, memory_lambda});
    const bool compute_full = compute_lambda <= lambda * (1 + kEpsilon);
    const bool memory_full = memory_lambda <= lambda * (1 + kEpsilon);
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (frozen[i]) continue;
      const Kernel& k = kernels_[cohorts_[i].kernel];
      const bool freeze =
          cap[i] <= lambda * (1 + kEpsilon) || (compute_full && k.sm_us > 0) || (memory_full && k.bytes > 0);
      if (!freeze) continue;
      frozen[i] = true;
      any = true;
      cohorts_[i].rate = lambda * weight[i];
      compute_used += cohorts_[i].blocks * cohorts_[i].rate * k.sm_us;
      memory_used += cohorts_[i].blocks * cohorts_[i].rate * k.bytes;
    }
    if (!any) throw Error(ErrorCode::internal, "GPU model: sharing made no progress");
  }
}

double GpuBlockScheduler::next_event() const {
  double t = kNever;
  for (const Cohort& c : cohorts_) t = std::min(t, c.rate == kNever ? now_ : now_ + c.remaining / c.rate);
  for (std::size_t id : waiting_)
    if (kernels_[id].eligible_us > now_) t = std::min(t, kernels_[id].eligible_us);
  return t;
}

void GpuBlockScheduler::finish_kernel(std::size_t id) {
  Kernel& k = kernels_[id];
  k.done = true;
  k.end_us = now_;
  finished_.push_back(id);
  if (k.next_on_stream != kNone) {
    Kernel& next = kernels_[k.next_on_stream];
    next.eligible_us = std::max(now_, next.launched_us + device_.launch_latency_us);
  }
}

void GpuBlockScheduler::step_to(double t) {
  const double dt = t - now_;
  // Cohorts whose end falls at t (within rounding) finish; the others progress.
  std::vector<std::size_t> ending;
  for (std::size_t i = 0; i < cohorts_.size(); ++i) {
    Cohort& c = cohorts_[i];
    const double end = c.rate == kNever ? now_ : now_ + c.remaining / c.rate;
    if (end <= t + kEpsilon * std::max(1.0, std::abs(t)))
      ending.push_back(i);
    else
      c.remaining -= c.rate * dt;
  }
  now_ = std::max(now_, t);
  std::vector<std::size_t> touched;
  for (auto it = ending.rbegin(); it != ending.rend(); ++it) {
    const Cohort c = cohorts_[*it];
    cohorts_.erase(cohorts_.begin() + static_cast<std::ptrdiff_t>(*it));
    Kernel& k = kernels_[c.kernel];
    k.running -= c.blocks;
    used_threads_ -= c.blocks * k.threads;
    used_registers_ -= c.blocks * k.registers;
    used_shared_ -= c.blocks * k.shared;
    used_blocks_ -= c.blocks;
    touched.push_back(c.kernel);
  }
  // Finish in kernel order so ties resolve the same way every run.
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (std::size_t id : touched)
    if (kernels_[id].pending == 0 && kernels_[id].running == 0) finish_kernel(id);
  if (!ending.empty()) rates_valid_ = false;
}

void GpuBlockScheduler::advance_to(double t) {
  for (;;) {
    dispatch_blocks();
    share();
    const double e = next_event();
    if (e > t) break;
    step_to(e);
  }
  if (t > now_ && t != kNever) step_to(t);
}

double GpuBlockScheduler::next_event_time() {
  dispatch_blocks();
  share();
  return next_event();
}

double GpuBlockScheduler::run_until_finished(std::size_t id) {
  while (!kernels_[id].done) {
    dispatch_blocks();
    share();
    const double e = next_event();
    if (e == kNever)
      throw Error(ErrorCode::internal, "GPU model: kernel '" + kernels_[id].spec.name + "' can never finish");
    step_to(e);
  }
  return kernels_[id].end_us;
}

double GpuBlockScheduler::run_until_idle() {
  double last = now_;
  for (std::size_t id = 0; id < kernels_.size(); ++id) last = std::max(last, run_until_finished(id));
  return last;
}

std::vector<std::size_t> GpuBlockScheduler::take_finished() {
  std::vector<std::size_t> out;
  out.swap(finished_);
  return out;
}

}  // namespace loom::sim::detail

namespace loom::sim {

KernelSpec default_kernel(const SimStep& step, const GpuDevice& device) {
  KernelSpec k;
  k.name = step.name;
  k.blocks = static_cast<std::uint32_t>(std::max(1, device.sm_count));
  k.threads_per_block = 256;
  k.registers_per_thread = 32;
  k.flops = step.compute_us * device.peak_flops_f32 / 1e6;
  k.bytes = static_cast<std::uint64_t>(std::llround(step.memory_us * device.dram_bytes_per_s / 1e6));
  return k;
}

std::vector<GpuKernelRun> simulate_kernels(const GpuDevice& device, const std::vector<GpuLaunch>& launches) {
  detail::GpuBlockScheduler gpu(device);
  std::vector<std::size_t> order(launches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return launches[a].at_us < launches[b].at_us; });
  std::vector<std::size_t> id_of(launches.size());
  for (std::size_t i : order) {
    const GpuLaunch& l = launches[i];
    if (!std::isfinite(l.at_us) || l.at_us < 0)
      throw Error(ErrorCode::invalid_argument,
                  "GPU model: launch " + std::to_string(i) + " at a negative or non-finite time");
    gpu.advance_to(l.at_us);
    id_of[i] = gpu.launch(l.kernel, l.stream, l.priority, l.at_us);
  }
  gpu.run_until_idle();
  std::vector<GpuKernelRun> runs(launches.size());
  for (std::size_t i = 0; i < launches.size(); ++i) runs[i] = {gpu.start_us(id_of[i]), gpu.end_us(id_of[i])};
  return runs;
}

double kernel_alone_us(const GpuDevice& device, const KernelSpec& kernel) {
  const GpuKernelRun run = simulate_kernels(device, {GpuLaunch{kernel, 0, 0, 0}}).front();
  return run.end_us - run.start_us;
}

}  // namespace loom::sim
