// The batcher's thread: waits for rows or the delay, joins members along axis 0, splits outputs.
#include "serve/batcher.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>

#include "loom/error.hpp"

namespace loom::serve {
namespace {

std::string join_key(const Batcher::Item& item) {
  std::string key = std::to_string(static_cast<int>(item.priority));
  for (const Tensor& t : item.inputs) {
    key += '|';
    for (std::size_t axis = 1; axis < t.shape().rank(); ++axis) key += std::to_string(t.shape()[axis]) + ",";
  }
  return key;
}

// The members' tensors one after another along axis 0 (row-major: their bytes one after another).
Tensor concat_rows(const std::vector<const Tensor*>& parts, std::int64_t rows) {
  std::vector<std::int64_t> dims = parts.front()->shape().dims();
  dims[0] = rows;
  Tensor joined(parts.front()->dtype(), Shape(std::move(dims)));
  auto* out = static_cast<std::byte*>(joined.data());
  for (const Tensor* part : parts) {
    std::memcpy(out, part->data(), part->bytes());
    out += part->bytes();
  }
  return joined;
}

// The deadline a joined request carries: its members' latest, none (the clock's epoch) when one of
// them has none.
std::chrono::steady_clock::time_point batch_deadline(const std::vector<Batcher::Item>& members) {
  constexpr std::chrono::steady_clock::time_point none{};
  std::chrono::steady_clock::time_point latest = none;
  for (const Batcher::Item& m : members) {
    if (m.deadline == none) return none;
    latest = std::max(latest, m.deadline);
  }
  return latest;
}

}  // namespace

Batcher::Batcher(Options options, Submit submit) : options_(std::move(options)), submit_(std::move(submit)) {
  thread_ = std::thread([this] { run(); });
}

Batcher::~Batcher() { close(); }

bool Batcher::push(Item& item) {
  Queued queued{std::move(item), {}, std::chrono::steady_clock::now()};
  queued.key = join_key(queued.item);
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      item = std::move(queued.item);
      return false;
    }
    queue_.push_back(std::move(queued));
  }
  wake_.notify_all();
  return true;
}

void Batcher::flush() {
  {
    std::lock_guard lock(mutex_);
    flushing_ = true;
  }
  wake_.notify_all();
}

void Batcher::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

BatchCounts Batcher::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void Batcher::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closed and drained
    // The oldest request decides the group; only this thread pops, so it stays at the front.
    const std::string key = queue_.front().key;
    const auto until = queue_.front().arrival + options_.max_delay;
    auto rows_queued = [&] {
      std::int64_t rows = 0;
      for (const Queued& q : queue_)
        if (q.key == key) rows += q.item.rows;
      return rows;
    };
    while (!closed_ && !flushing_ && rows_queued() < options_.max_rows && std::chrono::steady_clock::now() < until)
      wake_.wait_until(lock, until);
    // Members in arrival order while they fit; the others keep their place. The oldest always
    // goes, alone if it holds more than max_rows (the executor then refuses it): left queued, it
    // would have been picked again at once, for ever, and close() would never return.
    std::vector<Item> members;
    std::int64_t rows = 0;
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->key == key && (members.empty() || rows + it->item.rows <= options_.max_rows)) {
        rows += it->item.rows;
        members.push_back(std::move(it->item));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    submit_batch(std::move(members));
    lock.lock();
  }
}

void Batcher::submit_batch(std::vector<Item> members) {
  // A member whose deadline passed while it waited here fails now, as the executor would fail it.
  const auto now = std::chrono::steady_clock::now();
  std::vector<Item> live;
  for (Item& m : members) {
    if (m.deadline != std::chrono::steady_clock::time_point{} && m.deadline <= now) {
      m.done(std::make_exception_ptr(
                 Error(ErrorCode::deadline_exceeded,
                       "model '" + options_.model + "': the request's timeout passed while it waited for a batch")),
             {});
    } else {
      live.push_back(std::move(m));
    }
  }
  if (live.empty()) return;
  RequestOptions request;
  request.priority = live.front().priority;
  // The batch's deadline is its members' latest, none when one has none: the executor drops a
  // batch not started by then, which must fail no member before its own deadline (a request
  // without a timeout never fails with timeout for sharing a batch with one that has a short one).
  // A member whose deadline passes while its batch waits in the executor gets its answer anyway,
  // as a request that has started does.
  request.deadline = batch_deadline(live);
  std::int64_t rows = 0;
  for (const Item& m : live) rows += m.rows;
  {
    std::lock_guard lock(mutex_);
    ++counts_.batches;
    counts_.requests += live.size();
    counts_.largest_batch = std::max<std::uint64_t>(counts_.largest_batch, live.size());
    counts_.largest_batch_rows = std::max(counts_.largest_batch_rows, rows);
  }

  if (live.size() == 1) {
    Item& only = live.front();
    Callback done = std::move(only.done);
    try {
      submit_(std::move(only.inputs), request, done);
    } catch (...) {
      done(std::current_exception(), {});
    }
    return;
  }

  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < live.front().inputs.size(); ++i) {
    std::vector<const Tensor*> parts;
    for (const Item& m : live) parts.push_back(&m.inputs[i]);
    inputs.push_back(concat_rows(parts, rows));
  }
  // The members' callbacks and row counts travel with the joined request.
  auto shared = std::make_shared<std::vector<Item>>(std::move(live));
  for (Item& m : *shared) m.inputs.clear();
  const std::string model = options_.model;
  Callback split = [shared, rows, model](std::exception_ptr error, Outputs outputs) {
    if (!error) {
      for (const Tensor& out : outputs)
        if (out.shape().rank() == 0 || out.shape()[0] != rows) {
          error = std::make_exception_ptr(
              Error(ErrorCode::internal, "model '" + model + "': a batch of " + std::to_string(rows) +
                                             " rows gave an output of shape " + out.shape().to_string() +
                                             ", which cannot be split back along axis 0"));
          break;
        }
    }
    if (error) {
      for (Item& m : *shared) m.done(error, {});
      return;
    }
    // Every member's rows are cut out before any is answered: should that fail (out of memory),
    // each member gets the error, none is left without an answer.
    std::vector<Outputs> parts;
    try {
      std::int64_t first_row = 0;
      for (const Item& m : *shared) {
        Outputs own;
        for (const Tensor& out : outputs) {
          std::vector<std::int64_t> dims = out.shape().dims();
          const std::size_t row_bytes = out.bytes() / static_cast<std::size_t>(rows);
          dims[0] = m.rows;
          Tensor part(out.dtype(), Shape(std::move(dims)));
          std::memcpy(part.data(), static_cast<const std::byte*>(out.data()) + first_row * row_bytes, part.bytes());
          own.push_back(std::move(part));
        }
        first_row += m.rows;
        parts.push_back(std::move(own));
      }
    } catch (...) {
      const std::exception_ptr failed = std::current_exception();
      for (Item& m : *shared) m.done(failed, {});
      return;
    }
    for (std::size_t i = 0; i < shared->size(); ++i) (*shared)[i].done(nullptr, std::move(parts[i]));
  };
  try {
    submit_(std::move(inputs), request, split);
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    for (Item& m : *shared) m.done(error, {});
  }
}

}  // namespace loom::serve
