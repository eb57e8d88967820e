// The strided copy: an odometer over all but the innermost dim, which is a memcpy when the source
// is contiguous, a fill when it is broadcast, and an element loop otherwise.
#include "backend/cpu/shape_strided_copy.hpp"

#include <cstring>

namespace loom::backend::cpu {
namespace {

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

void StridedCopy::run(const void* src_base, void* dst_base) const {
  if (count_ == 0) return;
  const auto* src = static_cast<const std::byte*>(src_base);
  auto* dst = static_cast<std::byte*>(dst_base);
  const std::size_t rank = dims_.size();
  const std::int64_t run = dims_.back();
  const std::int64_t run_stride = strides_.back();
  const std::int64_t outer = count_ / run;
  const auto element = static_cast<std::int64_t>(element_size_);
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;  // in source elements
  for (std::int64_t o = 0; o < outer; ++o) {
    copy_run(dst, src + offset * element, run, run_stride, element_size_);
    dst += run * element;
    for (std::size_t d = rank - 1; d-- > 0;) {
      offset += strides_[d];
      if (++index[d] < dims_[d]) break;
      offset -= strides_[d] * dims_[d];
      index[d] = 0;
    }
  }
}

}  // namespace loom::backend::cpu
