// Runs one op on the CPU backend the way the runtime does (spec → kernel → device buffers →
// stream), with outputs and workspace poisoned first, and compares results to an independent
// reference with an absolute + relative tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/error.hpp"
#include "loom/model.hpp"
#include "loom/tensor.hpp"

namespace loom::testing {

// One op input: a value, or an omitted optional input. `constant` marks an initializer, which
// the kernel may read at creation (Reshape's target shape).
struct OpInput {
  std::optional<Tensor> value;
  bool constant = false;

  OpInput(Tensor t) : value(std::move(t)) {}  // NOLINT: implicit on purpose, keeps calls short
  static OpInput absent() { return OpInput(); }
  static OpInput initializer(Tensor t) {
    OpInput in(std::move(t));
    in.constant = true;
    return in;
  }

 private:
  OpInput() = default;
};

struct OpOutput {
  DType dtype = DType::f32;
  Shape shape;
  bool present = true;
  static OpOutput absent() { return {DType::f32, Shape{}, false}; }
};

// The op's outputs as host tensors; an absent output is an empty Tensor.
using OpResult = std::vector<Tensor>;

inline backend::KernelSpec make_spec(const Node& node, const std::vector<OpInput>& inputs,
                                     const std::vector<OpOutput>& outputs) {
  backend::KernelSpec spec;
  spec.node = &node;
  for (const OpInput& in : inputs) {
    backend::TensorDesc desc;
    if (in.value) {
      desc.dtype = in.value->dtype();
      desc.shape = in.value->shape();
    } else {
      desc.present = false;
    }
    spec.inputs.push_back(desc);
    spec.constants.push_back(in.constant && in.value ? &*in.value : nullptr);
  }
  for (const OpOutput& out : outputs) spec.outputs.push_back({out.dtype, out.shape, out.present});
  return spec;
}

inline Node make_node(const std::string& op_type, Attributes attrs, std::size_t input_count,
                      const std::vector<OpOutput>& outputs, const std::vector<OpInput>* inputs = nullptr) {
  Node node;
  node.op_type = op_type;
  node.name = "test_" + op_type;
  node.attrs = std::move(attrs);
  for (std::size_t i = 0; i < input_count; ++i)
    node.inputs.push_back(inputs && !(*inputs)[i].value ? "" : "in" + std::to_string(i));
  for (std::size_t i = 0; i < outputs.size(); ++i)
    node.outputs.push_back(outputs[i].present ? "out" + std::to_string(i) : "");
  return node;
}

// Device memory of the CPU backend, freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(backend::Backend& backend, std::size_t bytes) : backend_(backend), ptr_(backend.allocate(bytes)) {}
  ~DeviceBuffer() { backend_.deallocate(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  backend::Backend& backend_;
  void* ptr_;
};

// Creates the CPU kernel for `op_type` and runs it once. Output and workspace bytes start as 0xFF
// (NaN for floats, -1 for integers) so a kernel that skips an element or reads scratch it did not
// write shows up. Throws whatever kernel creation or the run throws. `threads`: the threads the
// kernel may use (backend::HostThreading::threads); 0 = the backend's default.
inline OpResult run_cpu_op(const std::string& op_type, Attributes attrs, const std::vector<OpInput>& inputs,
                           const std::vector<OpOutput>& outputs, std::size_t threads = 0) {
  auto backend = backend::make_cpu_backend();
  backend->set_host_threading({threads, false});
  const Node node = make_node(op_type, std::move(attrs), inputs.size(), outputs, &inputs);
  const backend::KernelSpec spec = make_spec(node, inputs, outputs);
  auto kernel = backend->create_kernel(spec);
  auto stream = backend->create_stream();

  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<const void*> input_ptrs;
  for (const OpInput& in : inputs) {
    if (!in.value) {
      input_ptrs.push_back(nullptr);
      continue;
    }
    buffers.push_back(std::make_unique<DeviceBuffer>(*backend, in.value->bytes()));
    stream->copy_to_device(buffers.back()->get(), in.value->data(), in.value->bytes());
    input_ptrs.push_back(buffers.back()->get());
  }
  std::vector<void*> output_ptrs;
  for (const OpOutput& out : outputs) {
    if (!out.present) {
      output_ptrs.push_back(nullptr);
      continue;
    }
    const std::size_t bytes = static_cast<std::size_t>(out.shape.numel()) * dtype_size(out.dtype);
    buffers.push_back(std::make_unique<DeviceBuffer>(*backend, bytes));
    std::memset(buffers.back()->get(), 0xFF, bytes);
    output_ptrs.push_back(buffers.back()->get());
  }
  const std::size_t workspace_bytes = kernel->workspace_bytes();
  DeviceBuffer workspace(*backend, workspace_bytes);
  std::memset(workspace.get(), 0xFF, workspace_bytes);

  kernel->run(input_ptrs, output_ptrs, workspace.get(), *stream);
  stream->synchronize();

  OpResult result;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].present) {
      result.emplace_back();
      continue;
    }
    Tensor host(outputs[i].dtype, outputs[i].shape);
    stream->copy_to_host(host.data(), output_ptrs[i], host.bytes());
    result.push_back(std::move(host));
  }
  stream->synchronize();
  return result;
}

// Single-output f32 shorthand.
inline Tensor run_cpu_op1(const std::string& op_type, Attributes attrs, const std::vector<OpInput>& inputs,
                          const Shape& output_shape, DType output_dtype = DType::f32) {
  return std::move(run_cpu_op(op_type, std::move(attrs), inputs, {{output_dtype, output_shape}})[0]);
}

// Kernel creation only: returns the error code it throws, or nullopt when it succeeds.
inline std::optional<ErrorCode> create_error(const std::string& op_type, Attributes attrs,
                                             const std::vector<OpInput>& inputs, const std::vector<OpOutput>& outputs) {
  auto backend = backend::make_cpu_backend();
  const Node node = make_node(op_type, std::move(attrs), inputs.size(), outputs, &inputs);
  try {
    (void)backend->create_kernel(make_spec(node, inputs, outputs));
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

// Uniform values in [low, high), seeded, as f32.
inline Tensor random_tensor(const Shape& shape, std::uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (float& v : values) v = dist(engine);
  return Tensor::from<float>(shape, values);
}

// Checks |actual - expected| <= abs_tol + rel_tol * |expected| elementwise (NaN never passes) and
// reports the first few mismatches with their flat index.
inline ::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                            double abs_tol = 1e-5, double rel_tol = 1e-5) {
  if (actual.dtype() != DType::f32) return ::testing::AssertionFailure() << "actual is not f32";
  if (static_cast<std::size_t>(actual.numel()) != expected.size())
    return ::testing::AssertionFailure() << "actual has " << actual.numel() << " elements, expected "
                                         << expected.size();
  const auto values = actual.values<float>();
  std::ostringstream report;
  int failures = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = values[i];
    const double e = expected[i];
    const bool ok = std::fabs(a - e) <= abs_tol + rel_tol * std::fabs(e);  // false for NaN
    if (!ok && failures++ < 8) report << "\n  [" << i << "] actual " << a << ", expected " << e;
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures << " of " << expected.size() << " elements differ" << report.str();
}

template <class T>
::testing::AssertionResult all_equal(const Tensor& actual, const std::vector<T>& expected) {
  const auto values = actual.values<T>();
  if (values.size() != expected.size())
    return ::testing::AssertionFailure() << "actual has " << values.size() << " elements, expected " << expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (values[i] != expected[i])
      return ::testing::AssertionFailure() << "[" << i << "] actual " << +values[i] << ", expected " << +expected[i];
  return ::testing::AssertionSuccess();
}

// Row-major strides of a shape, for the naive references.
inline std::vector<std::int64_t> strides_of(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.rank(), 1);
  for (std::size_t d = shape.rank(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

}  // namespace loom::testing
