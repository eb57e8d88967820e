// Regressions found while fuzzing the file readers (tests/fuzz): each test is one input that a
// reader once got wrong, and the answer it must give now.
#include <gtest/gtest.h>

#include <sstream>

#include "loom/error.hpp"
#include "loom/profile.hpp"
#include "loom/sim.hpp"
#include "onnx/tensor_files.hpp"
#include "onnx_proto_builder.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

// A .npy file of format 1.0 with this header dict and data.
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + data;
}

std::string profile_with_version(const std::string& version) {
  return R"({"format_version": )" + version + R"(, "device_name": "cpu",
             "peaks": {"flops_f32": 1e9, "bandwidth": 1e9}, "models": []})";
}

}  // namespace

// An empty array whose first size is not 0 was refused ("need more" bytes than the none it has).
TEST(FileReaderFixes, NpyEmptyArrayWithANonZeroLeadingSizeLoads) {
  const Tensor t = onnx_import::npy_from_bytes(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 0), }", ""), "empty.npy");
  EXPECT_EQ(t.shape(), (Shape{1, 0}));
  EXPECT_EQ(t.numel(), 0);
}

// What the fix above must not let through: sizes whose product overflows int64 around a 0 (Shape::numel()
// would overflow before or after reaching the 0).
TEST(FileReaderFixes, NpyShapeWhoseSizesOverflowIsRefusedEvenWhenEmpty) {
  for (const char* shape : {"(4611686018427387904, 4611686018427387904, 0)", "(0, 4611686018427387904, 4)"}) {
    const CaughtError error = error_of([&] {
      onnx_import::npy_from_bytes(
          npy_bytes(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }", ""), "big.npy");
    });
    EXPECT_EQ(error.code, ErrorCode::invalid_argument);
    EXPECT_NE(error.message.find("overflows"), std::string::npos) << error.message;
  }
}

// format_version was narrowed to int before the check, so 2^32 + 1 passed as version 1.
TEST(FileReaderFixes, ProfileFormatVersionIsComparedWithoutNarrowing) {
  std::istringstream good(profile_with_version("1"));
  EXPECT_EQ(parse_profile(good, "p.json").format_version, 1);
  for (const char* version : {"4294967297", "18446744073709551615", "-4294967295"}) {
    std::istringstream in(profile_with_version(version));
    const CaughtError error = error_of([&] { parse_profile(in, "p.json"); });
    EXPECT_EQ(error.code, ErrorCode::invalid_argument);
    EXPECT_NE(error.message.find(std::string("version ") + version + " is not supported"), std::string::npos)
        << error.message;
  }
}

// A number too large for a double threw nlohmann's out_of_range through parse_workload, which
// caught only parse errors.
TEST(FileReaderFixes, WorkloadNumberOverflowIsAMalformedFileError) {
  std::istringstream in(R"({"onchip_capacity_bytes": 1e400, "models": [], "requests": []})");
  const CaughtError error = error_of([&] { sim::parse_workload(in, "w.json"); });
  EXPECT_EQ(error.code, ErrorCode::invalid_argument);
  EXPECT_NE(error.message.find("w.json: malformed JSON"), std::string::npos) << error.message;
}

// Describing a value of the wrong type dumped it whole, recursing once per level of nesting: a
// file nested a million deep overflowed the stack.
TEST(FileReaderFixes, DeeplyNestedJsonIsAnErrorNotAStackOverflow) {
  const std::string nested = std::string(1000000, '[') + std::string(1000000, ']');
  std::istringstream workload(R"({"models": [)" + nested + "]}");
  const CaughtError in_workload = error_of([&] { sim::parse_workload(workload, "w.json"); });
  EXPECT_EQ(in_workload.code, ErrorCode::invalid_argument);
  EXPECT_NE(in_workload.message.find("models[0]: expected an object, got array of 1 entries"), std::string::npos)
      << in_workload.message;
  std::istringstream gpu(R"({"name": )" + nested + "}");
  const CaughtError in_gpu = error_of([&] { sim::parse_gpu_device(gpu, "g.json"); });
  EXPECT_EQ(in_gpu.code, ErrorCode::invalid_argument);
  EXPECT_NE(in_gpu.message.find("name: expected a string, got array of 1 entries"), std::string::npos)
      << in_gpu.message;
}

// Each entry's count was capped at 1e7 but not their sum: a 200-byte file asked for gigabytes.
TEST(FileReaderFixes, WorkloadRequestCountsAreCappedInTotal) {
  std::istringstream in(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]}],
    "requests": [{"model": "a", "count": 600000}, {"model": "a", "count": 400000}, {"model": "a"}]})");
  const CaughtError error = error_of([&] { sim::parse_workload(in, "w.json"); });
  EXPECT_EQ(error.code, ErrorCode::invalid_argument);
  EXPECT_NE(error.message.find("requests[2].count: the file expands to more than 1000000 requests"), std::string::npos)
      << error.message;
}
