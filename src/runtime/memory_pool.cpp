// MemoryPool: best-fit reuse of freed device blocks.
#include "runtime/memory_pool.hpp"

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

MemoryPool::~MemoryPool() {
  std::lock_guard lock(mutex_);
  if (!used_.empty()) std::fprintf(stderr, "loom: memory pool destroyed with %zu blocks still in use\n", used_.size());
  trim_locked();
  for (auto& [ptr, size] : used_) device_.deallocate(ptr);
}

PooledBuffer MemoryPool::acquire(std::size_t bytes) {
  const std::size_t size = plan::align_up(bytes == 0 ? 1 : bytes);
  std::lock_guard lock(mutex_);
  ++stats_.allocations;
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

PoolStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  PoolStats s = stats_;
  s.used_blocks = used_.size();
  s.free_blocks = free_.size();
  return s;
}

void MemoryPool::trim() {
  std::lock_guard lock(mutex_);
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
