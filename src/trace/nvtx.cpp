// NVTX ranges in Loom's own domain, so Nsight groups them apart from other libraries'.
#include "trace/nvtx.hpp"

#ifdef LOOM_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace loom::trace {

#ifdef LOOM_HAVE_CUDA
namespace {
nvtxDomainHandle_t domain() noexcept {
  static nvtxDomainHandle_t handle = nvtxDomainCreateA("loom");
  return handle;
}
nvtxEventAttributes_t attributes(const std::string& name) noexcept {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = name.c_str();
  return attr;
}
}  // namespace

ScopedRange::ScopedRange(const std::string& name) noexcept {
  auto attr = attributes(name);
  nvtxDomainRangePushEx(domain(), &attr);
}
ScopedRange::~ScopedRange() { nvtxDomainRangePop(domain()); }
std::uint64_t start_range(const std::string& name) noexcept {
  auto attr = attributes(name);
  return nvtxDomainRangeStartEx(domain(), &attr);
}
void end_range(std::uint64_t id) noexcept { nvtxDomainRangeEnd(domain(), id); }
#else
ScopedRange::ScopedRange(const std::string&) noexcept {}
ScopedRange::~ScopedRange() = default;
std::uint64_t start_range(const std::string&) noexcept { return 0; }
void end_range(std::uint64_t) noexcept {}
#endif

}  // namespace loom::trace
