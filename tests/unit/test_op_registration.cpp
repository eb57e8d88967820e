// One registration per op: every op the graph's schema registry accepts (what the ONNX importer
// and the planner take) has a CPU kernel, and a CUDA kernel unless it is on the CUDA backend's
// CPU-only list; no registry holds an op the schemas do not know. The CUDA half reads the CUDA
// registry's tables, so it runs in any build with the CUDA backend, with or without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "backend/kernel_registry.hpp"
#include "graph/ops.hpp"

namespace loom {
namespace {

std::set<std::string> as_set(const std::vector<std::string>& names) { return {names.begin(), names.end()}; }

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

const char* const kNoCudaBuild =
    "this build has no CUDA backend (nvcc, cuDNN or NVTX3 was missing at configure time), so there is no CUDA "
    "kernel registry to inspect";

TEST(OpRegistration, SchemaRegistryIsNotEmpty) {
  const std::vector<std::string> ops = graph::supported_ops();
  EXPECT_GT(ops.size(), 50u);
  for (const char* op : {"Conv", "MatMul", "LSTM", "Slice", "ReduceSum", "Relu"})
    EXPECT_TRUE(graph::is_supported_op(op)) << op;
}

TEST(OpRegistration, EverySchemaOpHasACpuKernel) {
  const std::set<std::string> cpu = as_set(backend::cpu_kernel_op_types());
  std::vector<std::string> missing;
  for (const std::string& op : graph::supported_ops())
    if (!cpu.count(op)) missing.push_back(op);
  EXPECT_TRUE(missing.empty()) << "ops the importer accepts with no CPU kernel (register one in "
                                  "src/backend/cpu/registry_<family>.cpp): "
                               << listed(missing);
}

TEST(OpRegistration, CpuRegistryHoldsOnlySchemaOps) {
  std::vector<std::string> unknown;
  for (const std::string& op : backend::cpu_kernel_op_types())
    if (!graph::is_supported_op(op)) unknown.push_back(op);
  EXPECT_TRUE(unknown.empty()) << "CPU kernels for ops with no schema in src/graph/ops/: " << listed(unknown);
}

TEST(OpRegistration, EverySchemaOpHasACudaKernelOrIsCpuOnly) {
  const auto coverage = backend::cuda_kernel_coverage();
  if (!coverage) GTEST_SKIP() << kNoCudaBuild;
  const std::set<std::string> cuda = as_set(coverage->kernels);
  std::set<std::string> cpu_only;
  for (const backend::CpuOnlyOp& entry : coverage->cpu_only) cpu_only.insert(entry.op_type);
  std::vector<std::string> missing;
  for (const std::string& op : graph::supported_ops())
    if (!cuda.count(op) && !cpu_only.count(op)) missing.push_back(op);
  EXPECT_TRUE(missing.empty()) << "ops with neither a CUDA kernel (src/backend/cuda/registry_<family>.cpp) nor an "
                                  "entry on the CPU-only list (src/backend/cuda/cpu_only_ops.cpp): "
                               << listed(missing);
}

TEST(OpRegistration, CudaRegistryHoldsOnlySchemaOps) {
  const auto coverage = backend::cuda_kernel_coverage();
  if (!coverage) GTEST_SKIP() << kNoCudaBuild;
  std::vector<std::string> unknown;
  for (const std::string& op : coverage->kernels)
    if (!graph::is_supported_op(op)) unknown.push_back(op);
  EXPECT_TRUE(unknown.empty()) << "CUDA kernels for ops with no schema in src/graph/ops/: " << listed(unknown);
}

TEST(OpRegistration, CpuOnlyListIsExplainedAndDisjointFromCudaKernels) {
  const auto coverage = backend::cuda_kernel_coverage();
  if (!coverage) GTEST_SKIP() << kNoCudaBuild;
  const std::set<std::string> cuda = as_set(coverage->kernels);
  std::set<std::string> seen;
  for (const backend::CpuOnlyOp& entry : coverage->cpu_only) {
    SCOPED_TRACE(entry.op_type);
    EXPECT_TRUE(graph::is_supported_op(entry.op_type)) << "the CPU-only list names an op with no schema";
    EXPECT_FALSE(cuda.count(entry.op_type)) << "on the CPU-only list but registered with a CUDA kernel";
    EXPECT_FALSE(entry.reason.empty()) << "a CPU-only entry needs its reason";
    EXPECT_TRUE(seen.insert(entry.op_type).second) << "listed twice";
  }
}

// A second registration of an op must fail loudly rather than replace the first.
TEST(OpRegistration, RegistryRefusesASecondRegistration) {
  using Factory = int (*)();
  backend::KernelRegistry<Factory> registry("test");
  const Factory one = [] { return 1; };
  const Factory two = [] { return 2; };
  registry.add({"Relu", "Tanh"}, one);
  try {
    registry.add("Relu", two);
    FAIL() << "a second registration of Relu was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
    EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos) << e.what();
  }
  EXPECT_EQ(registry.find("Relu"), one);
  EXPECT_EQ(registry.find("Gelu"), nullptr);
  EXPECT_EQ(registry.op_types(), (std::vector<std::string>{"Relu", "Tanh"}));
}

}  // namespace
}  // namespace loom
