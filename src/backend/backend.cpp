// Shared parts of the backend seam: the checked kernel entry and the error helpers.
#include "backend/backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "backend/kernel_registry.hpp"
#include "backend/open_backend.hpp"
#include "loom/error.hpp"

namespace loom::backend {

OpKernel::OpKernel(const KernelSpec& spec)
    : op_type_(spec.node ? spec.node->op_type : std::string("?")),
      node_name_(spec.node ? spec.node->name : std::string("?")),
      input_count_(spec.inputs.size()),
      output_count_(spec.outputs.size()) {}

void OpKernel::run(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                   Stream& stream) {
  if (inputs.size() != input_count_ || outputs.size() != output_count_)
    throw Error(ErrorCode::internal, op_type_ + " node '" + node_name_ + "': run with " +
                                         std::to_string(inputs.size()) + " inputs and " +
                                         std::to_string(outputs.size()) + " outputs, created with " +
                                         std::to_string(input_count_) + " and " + std::to_string(output_count_));
  run_impl(inputs, outputs, workspace, stream);
}

void OpKernel::run_resumable(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                             const ResumeContext& context, Stream& stream) {
  const std::string where = op_type_ + " node '" + node_name_ + "'";
  if (!resumable()) throw Error(ErrorCode::internal, where + ": run_resumable on a kernel that cannot pause");
  if (!context.progress || (!context.state && resume_state_bytes() > 0))
    throw Error(ErrorCode::internal, where + ": run_resumable without its state or progress memory");
  if (context.start_iteration < 0 || context.start_iteration >= std::max<std::int32_t>(resume_iterations(), 1))
    throw Error(ErrorCode::internal, where + ": resume at iteration " + std::to_string(context.start_iteration) +
                                         " of " + std::to_string(resume_iterations()));
  if (inputs.size() != input_count_ || outputs.size() != output_count_)
    throw Error(ErrorCode::internal, where + ": run with " + std::to_string(inputs.size()) + " inputs and " +
                                         std::to_string(outputs.size()) + " outputs, created with " +
                                         std::to_string(input_count_) + " and " + std::to_string(output_count_));
  run_resumable_impl(inputs, outputs, workspace, context, stream);
}

void OpKernel::run_resumable_impl(std::span<const void* const>, std::span<void* const>, void*, const ResumeContext&,
                                  Stream&) {
  throw Error(ErrorCode::internal, op_type_ + " node '" + node_name_ + "': resumable() without run_resumable_impl");
}

namespace {

// The CPU's flag: kernels run on the host, so the word the host sets is the word they poll.
class HostPauseFlag final : public PauseFlag {
 public:
  HostPauseFlag() noexcept : PauseFlag(&word_, &word_) {}

 private:
  volatile std::int32_t word_ = 0;
};

}  // namespace

std::unique_ptr<PauseFlag> Backend::create_pause_flag() { return std::make_unique<HostPauseFlag>(); }

std::optional<FusedKernel> Backend::create_fused_kernel(const FusionCandidate&) { return std::nullopt; }

bool FusionCandidate::needed_outside(int id, std::span<const std::size_t> members) const {
  if (std::find(read_after_step.begin(), read_after_step.end(), id) != read_after_step.end()) return true;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (std::find(members.begin(), members.end(), n) != members.end()) continue;
    const auto& reads = nodes[n].inputs;
    if (std::find(reads.begin(), reads.end(), id) != reads.end()) return true;
  }
  return false;
}

void check_fused_kernel(const FusionCandidate& candidate, const FusedKernel& fused) {
  const Node* anchor = candidate.nodes.empty() ? nullptr : candidate.nodes.front().spec.node;
  const std::string where =
      anchor ? anchor->op_type + " node '" + anchor->name + "'" : std::string("an empty fusion candidate");
  const auto refuse = [&](const std::string& what) {
    throw Error(ErrorCode::internal, where + ": the backend's fused kernel " + what);
  };
  if (!fused.kernel) refuse("is null");
  if (fused.members.empty() || fused.members.front() != 0) refuse("does not start at the anchor");
  std::vector<bool> member(candidate.nodes.size(), false);
  for (std::size_t i = 0; i < fused.members.size(); ++i) {
    const std::size_t m = fused.members[i];
    if (m >= candidate.nodes.size() || (i > 0 && m <= fused.members[i - 1]))
      refuse("names its nodes out of order or past the Step");
    if (candidate.nodes[m].view) refuse("claims the view '" + candidate.nodes[m].spec.node->name + "'");
    member[m] = true;
  }
  // A member runs early, at the anchor's place: what it reads must not come from a node that still
  // runs after that place.
  for (std::size_t m : fused.members) {
    for (int id : candidate.nodes[m].inputs) {
      if (id < 0) continue;
      for (std::size_t n = 1; n < candidate.nodes.size(); ++n) {
        if (member[n]) continue;
        const auto& writes = candidate.nodes[n].outputs;
        if (std::find(writes.begin(), writes.end(), id) != writes.end())
          refuse("computes '" + candidate.nodes[m].spec.node->name + "' before '" + candidate.nodes[n].spec.node->name +
                 "', which writes its input");
      }
    }
  }
}

void FailureScope::fail(std::exception_ptr error) noexcept {
  std::lock_guard lock(mutex_);
  if (failure_ || !error) return;
  failure_ = std::move(error);
  failed_.store(true, std::memory_order_release);
}

std::exception_ptr FailureScope::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void Stream::copy_on_device_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                               std::size_t row_bytes, std::size_t rows) {
  if (row_bytes == dst_pitch && row_bytes == src_pitch) return copy_on_device(dst, src, row_bytes * rows);
  for (std::size_t r = 0; r < rows; ++r)
    copy_on_device(static_cast<std::byte*>(dst) + r * dst_pitch, static_cast<const std::byte*>(src) + r * src_pitch,
                   row_bytes);
}

void Stream::begin_capture() {
  throw Error(ErrorCode::unsupported,
              "this backend's streams cannot record graphs (Backend::supports_graphs() is false)");
}

std::unique_ptr<Graph> Stream::end_capture() {
  throw Error(ErrorCode::unsupported,
              "this backend's streams cannot record graphs (Backend::supports_graphs() is false)");
}

static std::string describe(const KernelSpec& spec) {
  if (!spec.node) return "op";
  return spec.node->op_type + " node '" + spec.node->name + "'";
}

void throw_unsupported(const KernelSpec& spec, const std::string& what) {
  throw Error(ErrorCode::unsupported, describe(spec) + ": " + what);
}

void throw_bad_shape(const KernelSpec& spec, const std::string& what) {
  throw Error(ErrorCode::shape_mismatch, describe(spec) + ": " + what);
}

std::vector<std::int64_t> constant_ints(const KernelSpec& spec, std::size_t index, const char* role) {
  const Tensor* value = index < spec.constants.size() ? spec.constants[index] : nullptr;
  if (!value)
    throw_unsupported(spec, std::string(role) + " (input " + std::to_string(index) +
                                ") must be a constant known when the model is compiled");
  if (value->dtype() == DType::i64) {
    const auto v = value->values<std::int64_t>();
    return {v.begin(), v.end()};
  }
  if (value->dtype() == DType::i32) {
    const auto v = value->values<std::int32_t>();
    return {v.begin(), v.end()};
  }
  throw_unsupported(spec, std::string(role) + " must be i64 or i32, got " + std::string(dtype_name(value->dtype())));
}

#ifndef LOOM_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend(int) {
  throw Error(ErrorCode::backend, "this build of Loom has no CUDA backend (nvcc was not found at build time)");
}
int cuda_device_count() noexcept { return 0; }
std::optional<CudaKernelCoverage> cuda_kernel_coverage() { return std::nullopt; }
namespace {
// Registered without devices, so that "cuda" is a known device that is absent here (an
// Error(backend), as on a machine without a GPU) rather than an unknown spelling.
[[maybe_unused]] const bool cuda_absent_registered =
    register_backend({"cuda", 1, cuda_device_count, make_cuda_backend});
}  // namespace
#endif

}  // namespace loom::backend
