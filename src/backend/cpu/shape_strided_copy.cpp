// The strided copy: an odometer over all but the innermost dim, which is a memcpy when the source
// is contiguous, a fill when it is broadcast, and an element loop otherwise.
#include "backend/cpu/shape_strided_copy.hpp"

#include <algorithm>
#include <cstring>

#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {
namespace {

// Bytes of output worth a thread of their own.
constexpr std::int64_t kChunkBytes = std::int64_t{1} << 17;

// Copies `count` elements from `src`, `stride` elements apart, to a dense destination.
template <class Element>
void copy_run(std::byte* dst, const std::byte* src, std::int64_t count, std::int64_t stride) {
  auto* out = reinterpret_cast<Element*>(dst);
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(out + i, src + i * stride * std::int64_t{sizeof(Element)}, sizeof(Element));
}

void copy_run(std::byte* dst, const std::byte* src, std::int64_t count, std::int64_t stride, std::size_t element_size) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<std::size_t>(count) * element_size);
    return;
  }
  switch (element_size) {
    case 1:
      copy_run<std::uint8_t>(dst, src, count, stride);
      break;
    case 2:
      copy_run<std::uint16_t>(dst, src, count, stride);
      break;
    case 4:
      copy_run<std::uint32_t>(dst, src, count, stride);
      break;
    default:
      copy_run<std::uint64_t>(dst, src, count, stride);
      break;
  }
}

}  // namespace

StridedCopy::StridedCopy(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& src_strides,
                         std::size_t element_size)
    : element_size_(element_size) {
  count_ = 1;
  for (const auto d : dims) count_ *= d;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    // The destination is dense, so only the source decides whether two dims form one run.
    if (!dims_.empty() && strides_.back() == src_strides[d] * dims[d]) {
      dims_.back() *= dims[d];
      strides_.back() = src_strides[d];
      continue;
    }
    dims_.push_back(dims[d]);
    strides_.push_back(src_strides[d]);
  }
  if (dims_.empty()) {  // a single element
    dims_.push_back(1);
    strides_.push_back(1);
  }
}

void StridedCopy::run(const void* src, void* dst) const {
  parallel_for(count_, std::max<std::int64_t>(1, kChunkBytes / static_cast<std::int64_t>(element_size_)),
               [&](std::int64_t begin, std::int64_t end) { run_range(src, dst, begin, end); });
}

void StridedCopy::run_range(const void* src_base, void* dst_base, std::int64_t begin, std::int64_t end) const {
  if (begin >= end) return;
  const auto* src = static_cast<const std::byte*>(src_base);
  const auto element = static_cast<std::int64_t>(element_size_);
  auto* dst = static_cast<std::byte*>(dst_base) + begin * element;
  const std::size_t rank = dims_.size();
  const std::int64_t run = dims_.back();
  const std::int64_t run_stride = strides_.back();
  // The odometer at the run holding `begin`.
  std::int64_t o = begin / run;
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;  // in source elements
  for (std::size_t d = rank - 1, rest = static_cast<std::size_t>(o); d-- > 0;) {
    index[d] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(dims_[d]));
    rest /= static_cast<std::size_t>(dims_[d]);
    offset += index[d] * strides_[d];
  }
  for (std::int64_t first = begin - o * run; o * run < end; ++o, first = 0) {
    const std::int64_t n = std::min(run, end - o * run) - first;
    copy_run(dst, src + (offset + first * run_stride) * element, n, run_stride, element_size_);
    dst += n * element;
    for (std::size_t d = rank - 1; d-- > 0;) {
      offset += strides_[d];
      if (++index[d] < dims_[d]) break;
      offset -= strides_[d] * dims_[d];
      index[d] = 0;
    }
  }
}

}  // namespace loom::backend::cpu
