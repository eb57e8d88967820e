// Dynamic batching of one model's queued requests (docs/serve.md, "Batching"): requests of the same
// priority and the same sizes on every axis but the first are joined along axis 0 up to a number
// of rows, waiting at most a delay after the first arrives, submitted as one request, and each
// output is split back along axis 0. One thread per batched model.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loom/executor.hpp"
#include "serve/service.hpp"

namespace loom::serve {

class Batcher {
 public:
  // Submits one (joined) request; throws as Executor::submit does (the batch's members then fail
  // with that error).
  using Submit = std::function<void(std::vector<Tensor> inputs, RequestOptions options, Callback done)>;
  struct Options {
    std::string model;  // for messages
    std::int64_t max_rows = 1;
    std::chrono::microseconds max_delay{0};
  };
  // A validated request: every input has `rows` as its first dim; `done` gets the model's outputs
  // (its own rows) or the error, exactly once.
  struct Item {
    std::vector<Tensor> inputs;
    std::int64_t rows = 1;
    Priority priority = Priority::normal;
    std::chrono::steady_clock::time_point deadline{};  // epoch: none
    Callback done;
  };

  Batcher(Options options, Submit submit);
  ~Batcher();  // close()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues `item`; false (and `item` untouched) once closed: the caller fails it.
  bool push(Item& item);
  // From now on, submits what is queued (and what arrives) at once, without waiting for the
  // delay; still accepts. For a server stopping: its last requests wait for no company.
  void flush();
  // Stops accepting, submits everything queued without waiting for the delay, and joins the
  // thread. Idempotent.
  void close();
  BatchCounts counts() const;

 private:
  struct Queued {
    Item item;
    std::string key;  // priority and the sizes past axis 0: only equal keys join
    std::chrono::steady_clock::time_point arrival;
  };
  void run();
  void submit_batch(std::vector<Item> members);

  Options options_;
  Submit submit_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Queued> queue_;
  bool closed_ = false;
  bool flushing_ = false;  // flush(): no waiting for the delay
  BatchCounts counts_;
  std::thread thread_;
};

}  // namespace loom::serve
