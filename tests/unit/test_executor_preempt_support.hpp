// Shared by the CPU and CUDA preemption tests: a long request and an urgent one, the urgent one
// submitted exactly when the long one has launched a chosen number of Steps (through
// runtime::ExecutorTestHooks::after_step), so a preemption can be forced at every cancellation point.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "loom/executor.hpp"
#include "loom/workloads.hpp"
#include "runtime/executor_test_hooks.hpp"

namespace loom::test_support {

inline bool same_bits(const Outputs& a, const Outputs& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype() != b[i].dtype() || a[i].shape() != b[i].shape() || a[i].bytes() != b[i].bytes() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0)
      return false;
  return true;
}

// Runs each request alone on a fresh executor with `options` (no hook, no limits).
inline Outputs run_alone(ExecutorOptions options, const Model& model, const std::string& name,
                         const std::vector<Tensor>& inputs) {
  options.arena_memory_limit_bytes = 0;
  Executor ex(options);
  ex.load(model, name);
  return ex.submit(name, inputs).get();
}

// What one long + urgent pair did.
struct PairRun {
  Outputs long_outputs, urgent_outputs;
  std::vector<std::string> completion_order;  // "long" / "urgent", as the callbacks ran
  ExecutorStats stats_before, stats_after;
  std::vector<TraceEvent> long_preemptions;  // the long request's "preempt" events, by time
};

// One executor with models "long" and "urgent" and a hook that submits the urgent request when
// the long one has launched `trigger_after_steps` Steps. With `urgent_on_long_model`, the urgent
// request goes to "long" too (one stream and kernel scratch for both requests). "long" loads with
// `long_load` (its name replaced).
class PreemptionHarness {
 public:
  PreemptionHarness(ExecutorOptions options, const Model& long_model, const Model& urgent_model,
                    bool urgent_on_long_model = false, LoadOptions long_load = {})
      : urgent_name_(urgent_on_long_model ? "long" : "urgent") {
    options.record_timeline = true;
    runtime::ExecutorTestHooks hooks;
    hooks.after_step = [this](const std::string& model, std::size_t launched) -> std::uint64_t {
      std::lock_guard lock(mutex_);
      if (model != "long" || launched != trigger_ || fired_) return 0;
      fired_ = true;
      submit_urgent_locked();
      return arrivals_;  // hold the dispatcher until the urgent request reached it
    };
    executor_ = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
    long_load.name = "long";
    executor_->load(long_model, long_load);
    executor_->load(urgent_model, "urgent");
  }

  Executor& executor() { return *executor_; }

  // Submits the long request (priority `long_priority`) and, once it has launched
  // `trigger_after_steps` Steps, the urgent one (priority `urgent_priority`); waits for both.
  PairRun run(const std::vector<Tensor>& long_inputs, const std::vector<Tensor>& urgent_inputs,
              std::size_t trigger_after_steps, Priority long_priority = Priority::normal,
              Priority urgent_priority = Priority::urgent) {
    PairRun result;
    result.stats_before = executor_->stats();
    auto long_done = std::make_shared<std::promise<Outputs>>();
    auto long_future = long_done->get_future();
    std::future<Outputs> urgent_future;
    std::uint64_t long_id = 0;
    {
      std::lock_guard lock(mutex_);
      trigger_ = trigger_after_steps;
      fired_ = false;
      urgent_inputs_ = urgent_inputs;
      urgent_priority_ = urgent_priority;
      urgent_done_ = std::make_shared<std::promise<Outputs>>();
      urgent_future = urgent_done_->get_future();
      long_id = next_request_++;
      ++arrivals_;
      RequestOptions ro;
      ro.priority = long_priority;
      executor_->submit("long", long_inputs, completion(long_done, "long"), ro);
    }
    result.long_outputs = long_future.get();
    {
      std::lock_guard lock(mutex_);
      EXPECT_TRUE(fired_) << "the long request never launched " << trigger_after_steps << " Steps";
      if (!fired_) return result;
    }
    result.urgent_outputs = urgent_future.get();
    result.stats_after = executor_->stats();
    {
      std::lock_guard lock(order_mutex_);
      result.completion_order = order_;
      order_.clear();
    }
    for (auto& e : executor_->timeline().events())
      if (e.category == "preempt" && e.args["request"] == std::to_string(long_id)) result.long_preemptions.push_back(e);
    return result;
  }

 private:
  Callback completion(std::shared_ptr<std::promise<Outputs>> done, std::string name) {
    return [this, done, name](std::exception_ptr error, Outputs outputs) {
      {
        std::lock_guard lock(order_mutex_);
        order_.push_back(name);
      }
      if (error)
        done->set_exception(error);
      else
        done->set_value(std::move(outputs));
    };
  }

  void submit_urgent_locked() {
    ++next_request_;
    ++arrivals_;
    RequestOptions ro;
    ro.priority = urgent_priority_;
    executor_->submit(urgent_name_, urgent_inputs_, completion(urgent_done_, "urgent"), ro);
  }

  std::string urgent_name_;
  std::unique_ptr<Executor> executor_;
  std::mutex mutex_, order_mutex_;
  std::size_t trigger_ = 0;
  bool fired_ = false;
  std::uint64_t arrivals_ = 0, next_request_ = 0;
  std::vector<Tensor> urgent_inputs_;
  Priority urgent_priority_ = Priority::urgent;
  std::shared_ptr<std::promise<Outputs>> urgent_done_;
  std::vector<std::string> order_;
};

// Checks a pair whose long request was preempted once, at the boundary after Step `step`: both
// outputs equal their runs alone bit for bit, the urgent request finished first, and
// `dumped_bytes` went to host memory (0 without an arena limit); the long request's trace starts
// with a pause and ends with a resume at that boundary.
inline void expect_preempted_once(const PairRun& run, const Outputs& long_alone, const Outputs& urgent_alone,
                                  std::size_t step, std::uint64_t dumped_bytes) {
  EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
  EXPECT_TRUE(same_bits(run.urgent_outputs, urgent_alone));
  EXPECT_EQ(run.completion_order, (std::vector<std::string>{"urgent", "long"}));
  EXPECT_EQ(run.stats_after.preemptions - run.stats_before.preemptions, 1u);
  EXPECT_EQ(run.stats_after.bytes_dumped - run.stats_before.bytes_dumped, dumped_bytes);
  ASSERT_GE(run.long_preemptions.size(), 2u);
  EXPECT_EQ(run.long_preemptions.front().args.at("action"), "pause");
  EXPECT_EQ(run.long_preemptions.back().args.at("action"), "resume");
  for (const auto& e : run.long_preemptions) EXPECT_EQ(e.args.at("step"), std::to_string(step));
}

// Urgent requests injected into a long request's pausable Step (runtime::ExecutorTestHooks::
// pausable_step), for the CPU and CUDA tests of pausing inside a Step. Once start() has
// submitted the long request, the first `urgent_count` times model "long"'s pausable Step is about
// to run or resume at iteration k == the urgent requests so far, one urgent request (to
// `urgent_name`) goes in and the launch waits until it reached the dispatcher; each pause then
// comes after one iteration. Records the order in which the requests completed.
class UrgentInjector {
 public:
  UrgentInjector(std::string urgent_name, std::vector<Tensor> urgent_in, int urgent_count)
      : urgent_name_(std::move(urgent_name)), urgent_in_(std::move(urgent_in)), urgent_count_(urgent_count) {
    futures_.reserve(static_cast<std::size_t>(urgent_count) + 1);  // never reallocates: see start()
  }

  // Sets the hook in `hooks`; the executor made with them must then be given to attach().
  void install(runtime::ExecutorTestHooks& hooks) {
    hooks.pausable_step = [this](const std::string& model, std::size_t, std::int32_t iteration) -> std::uint64_t {
      std::lock_guard lock(mutex_);
      ++hook_calls_;
      const auto submitted = static_cast<int>(futures_.size()) - 1;
      if (!armed_ || model != "long" || submitted >= urgent_count_ || iteration != submitted) return 0;
      submit_locked(urgent_name_, urgent_in_, Priority::urgent, "urgent");
      return handed_;
    };
  }
  void attach(Executor& executor) { executor_ = &executor; }

  // Arms the hook and submits the long request to "long"; `handed_before` is the number of
  // requests the executor was handed before. Returns the long request's outputs once done.
  Outputs run_long(const std::vector<Tensor>& long_in, std::uint64_t handed_before) {
    std::future<Outputs>* long_future = nullptr;
    {
      std::lock_guard lock(mutex_);
      handed_ = handed_before;
      armed_ = true;
      submit_locked("long", long_in, Priority::normal, "long");
      long_future = &futures_.front();
    }
    return long_future->get();
  }
  // The urgent requests' outputs, in submission order; call after the executor's shutdown() (every
  // urgent request was submitted before the long one finished).
  std::vector<Outputs> urgent_outputs() {
    std::vector<Outputs> outputs;
    for (std::size_t i = 1; i < futures_.size(); ++i) outputs.push_back(futures_[i].get());
    return outputs;
  }
  std::vector<std::string> completion_order() const {
    std::lock_guard lock(mutex_);
    return order_;
  }
  int hook_calls() const {
    std::lock_guard lock(mutex_);
    return hook_calls_;
  }

 private:
  void submit_locked(const std::string& model, const std::vector<Tensor>& inputs, Priority priority,
                     const std::string& label) {
    auto done = std::make_shared<std::promise<Outputs>>();
    futures_.push_back(done->get_future());
    RequestOptions options;
    options.priority = priority;
    ++handed_;
    executor_->submit(
        model, inputs,
        [this, done, label](std::exception_ptr error, Outputs outputs) {
          {
            std::lock_guard lock(mutex_);
            order_.push_back(label);
          }
          if (error)
            done->set_exception(error);
          else
            done->set_value(std::move(outputs));
        },
        options);
  }

  std::string urgent_name_;
  std::vector<Tensor> urgent_in_;
  int urgent_count_;
  mutable std::mutex mutex_;
  Executor* executor_ = nullptr;
  bool armed_ = false;
  std::uint64_t handed_ = 0;
  int hook_calls_ = 0;
  std::vector<std::future<Outputs>> futures_;  // the long request's, then the urgent ones'
  std::vector<std::string> order_;
};

// What one request's arena takes (ModelInfo::activation_bytes) for `long_model` and
// `urgent_model`, loaded with `options`: the figures an arena limit is set from.
inline std::pair<std::uint64_t, std::uint64_t> arena_bytes(const ExecutorOptions& options, const Model& long_model,
                                                           const Model& urgent_model) {
  Executor probe(options);
  probe.load(long_model, "long");
  probe.load(urgent_model, "urgent");
  return {probe.model_info("long").activation_bytes, probe.model_info("urgent").activation_bytes};
}

// The Steps after which model `info` may pause.
inline std::vector<std::size_t> cancellation_points(const ModelInfo& info) {
  std::vector<std::size_t> points;
  for (std::size_t s = 0; s < info.steps.size(); ++s)
    if (info.steps[s].cancellation_point) points.push_back(s);
  return points;
}

}  // namespace loom::test_support
