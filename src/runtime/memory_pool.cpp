// MemoryPool: best-fit reuse of freed device blocks.
#include "runtime/memory_pool.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <algorithm>
#include <cstdio>
#include <utility>

#include "plan/compiled_model.hpp"

namespace loom::runtime {

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PooledBuffer::reset() noexcept {
  if (pool_ && ptr_) pool_->release(ptr_);
  pool_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

namespace {

// A block left to a failed device is never freed: tell LeakSanitizer (ASan builds: the asan
// preset) that this one is meant, so that it still reports every other leak.
void leak_deliberately(void* block) {
#if defined(__SANITIZE_ADDRESS__)
  __lsan_ignore_object(block);
#else
  (void)block;
#endif
}

}  // namespace

MemoryPool::~MemoryPool() {
  std::lock_guard lock(mutex_);
  if (!used_.empty()) std::fprintf(stderr, "loom: memory pool destroyed with %zu blocks still in use\n", used_.size());
  // Blocks still pending go once their work is done; a block whose event cannot be waited for
  // (a failed device) is leaked rather than freed under a kernel that may still use it.
  for (Pending& pending : pending_) {
    bool reached = true;
    for (auto& event : pending.after) {
      try {
        event->synchronize();
      } catch (...) {
        reached = false;
      }
    }
    if (reached)
      free_.emplace(pending.size, pending.ptr);
    else
      leak_deliberately(pending.ptr);
  }
  pending_.clear();
  trim_locked();
  for (auto& [ptr, size] : used_) device_.deallocate(ptr);
}

PooledBuffer MemoryPool::acquire(std::size_t bytes) {
  const std::size_t size = plan::align_up(bytes == 0 ? 1 : bytes);
  std::lock_guard lock(mutex_);
  ++stats_.allocations;
  collect_pending_locked();
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= 2 * size) {
    const auto [block_size, ptr] = *it;
    free_.erase(it);
    used_.emplace(ptr, block_size);
    ++stats_.reuses;
    stats_.bytes_in_use += block_size;
    return PooledBuffer(this, ptr, block_size);
  }
  void* ptr = nullptr;
  try {
    ptr = device_.allocate(size);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::out_of_memory || free_.empty()) throw;
    trim_locked();
    ptr = device_.allocate(size);
  }
  used_.emplace(ptr, size);
  stats_.bytes_reserved += size;
  stats_.bytes_in_use += size;
  return PooledBuffer(this, ptr, size);
}

void MemoryPool::release(void* ptr) noexcept {
  std::lock_guard lock(mutex_);
  auto it = used_.find(ptr);
  if (it == used_.end()) return;
  stats_.bytes_in_use -= it->second;
  free_.emplace(it->second, ptr);
  used_.erase(it);
}

void MemoryPool::release_after(PooledBuffer buffer, std::vector<std::unique_ptr<backend::Event>> after) {
  if (!buffer.ptr_) return;
  if (buffer.pool_ != this) {
    buffer.reset();  // not ours to hold back; its own pool takes it
    return;
  }
  std::lock_guard lock(mutex_);
  auto it = used_.find(buffer.ptr_);
  if (it == used_.end()) return;
  pending_.push_back({buffer.ptr_, it->second, std::move(after)});
  stats_.bytes_in_use -= it->second;
  used_.erase(it);
  buffer.pool_ = nullptr;  // the pool holds the block now
  buffer.ptr_ = nullptr;
  buffer.bytes_ = 0;
}

void MemoryPool::collect_pending_locked() {
  std::erase_if(pending_, [&](Pending& pending) {
    for (auto& event : pending.after) {
      bool reached = false;
      try {
        reached = event->ready();
      } catch (...) {
        // A failed device: the work may never be known done, so the block is never reused.
      }
      if (!reached) return false;
    }
    free_.emplace(pending.size, pending.ptr);
    return true;
  });
}

PoolStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  PoolStats s = stats_;
  s.used_blocks = used_.size();
  s.free_blocks = free_.size();
  s.pending_blocks = pending_.size();
  return s;
}

void MemoryPool::trim() {
  std::lock_guard lock(mutex_);
  collect_pending_locked();
  trim_locked();
}

void MemoryPool::trim_locked() {
  for (auto& [size, ptr] : free_) {
    device_.deallocate(ptr);
    stats_.bytes_reserved -= size;
  }
  free_.clear();
}

std::uint64_t ArenaBudget::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

bool ArenaBudget::try_charge(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (limit_ != 0 && held_ + bytes > limit_) return false;
  held_ += bytes;
  return true;
}

void ArenaBudget::refund(std::uint64_t bytes) noexcept {
  {
    std::lock_guard lock(mutex_);
    held_ -= std::min(bytes, held_);
    ++refunds_;
  }
  refunded_.notify_all();
}

std::uint64_t ArenaBudget::refunds() const {
  std::lock_guard lock(mutex_);
  return refunds_;
}

void ArenaBudget::wait_for_refund(std::uint64_t seen, std::chrono::microseconds timeout) const {
  std::unique_lock lock(mutex_);
  refunded_.wait_for(lock, timeout, [&] { return refunds_ != seen; });
}

BudgetCharge& BudgetCharge::operator=(BudgetCharge&& other) noexcept {
  if (this != &other) {
    reset();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void BudgetCharge::reset() noexcept {
  if (budget_) budget_->refund(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

HostBuffer::HostBuffer(backend::Backend& device, std::size_t bytes)
    : device_(&device), data_(static_cast<std::byte*>(device.allocate_host(bytes == 0 ? 1 : bytes))), bytes_(bytes) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void HostBuffer::reset() noexcept {
  if (device_ && data_) device_->deallocate_host(data_);
  device_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace loom::runtime
