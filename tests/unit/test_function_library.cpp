// The function library (loom/placement.hpp): measured on the CPU, written and read back, bad files
// refused naming the field, the committed files, and lookups (src/placement/figures.hpp) on
// hand-made libraries.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "loom/placement.hpp"
#include "placement/figures.hpp"
#include "test_support.hpp"

using namespace loom;
using loom::test_support::expect_error;

namespace {

void expect_same(const FunctionLibrary& a, const FunctionLibrary& b) {
  EXPECT_EQ(a.machine, b.machine);
  EXPECT_EQ(a.method, b.method);
  ASSERT_EQ(a.processors.size(), b.processors.size());
  for (std::size_t i = 0; i < a.processors.size(); ++i) {
    const auto& p = a.processors[i];
    const auto& q = b.processors[i];
    EXPECT_EQ(std::tie(p.name, p.device_name, p.host, p.launch_us, p.fixed_us, p.flops_per_us, p.bytes_per_us,
                       p.link_latency_us, p.link_bytes_per_us, p.round_trip_us),
              std::tie(q.name, q.device_name, q.host, q.launch_us, q.fixed_us, q.flops_per_us, q.bytes_per_us,
                       q.link_latency_us, q.link_bytes_per_us, q.round_trip_us))
        << p.name;
  }
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const auto& e = a.entries[i];
    const auto& f = b.entries[i];
    EXPECT_EQ(std::tie(e.op, e.dtype, e.bucket, e.processor, e.work, e.bytes, e.time_us),
              std::tie(f.op, f.dtype, f.bucket, f.processor, f.work, f.bytes, f.time_us));
    EXPECT_EQ(std::tie(e.terms.transfer_us, e.terms.accumulated_us, e.terms.speed_us, e.terms.complexity_us),
              std::tie(f.terms.transfer_us, f.terms.accumulated_us, f.terms.speed_us, f.terms.complexity_us));
  }
}

FunctionLibrary parse(const std::string& text) {
  std::istringstream in(text);
  return parse_function_library(in, "lib.json");
}

// A valid document with one processor and one entry; the error cases edit it.
const char* kValid = R"({"format_version": 1, "machine": "m",
  "processors": [{"name": "cpu", "host": true, "launch_us": 0, "fixed_us": 1, "flops_per_us": 100,
                  "bytes_per_us": 10, "link_latency_us": 0, "link_bytes_per_us": 0, "round_trip_us": 0}],
  "entries": [{"op": "matmul", "dtype": "f32", "bucket": 2, "processor": "cpu", "work": 16, "bytes": 64,
               "time_us": 2, "t_us": 0, "a_us": 2, "s_us": 0, "o_us": 0}]})";

std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

void expect_bad(const std::string& text, std::initializer_list<std::string> parts) {
  expect_error([&] { parse(text); }, ErrorCode::invalid_argument, parts);
}

}  // namespace

// Pointwise, scalar and matmul at the sizes of their ladders up to 5000 work units, on the CPU and
// on cpu:accel: pointwise n = 16, 256, 4096 (buckets 2, 4, 6); scalar n = 1, 4, 16, 64 (0, 1, 2,
// 3); matmul 8^3 (2 * 512 = 1024 FLOPs, bucket 5; 16^3 is 8192, above the bound).
TEST(FunctionLibrary, MeasuredOnTheCpuFillsEveryEntryItClaims) {
  LibraryMeasureOptions options;
  options.processors = {"cpu", "cpu:accel"};
  options.op_kinds = {"pointwise", "scalar", "matmul"};
  options.max_work = 5000;
  options.runs = 2;
  options.warmup = 0;
  const FunctionLibrary library = measure_function_library(options);

  ASSERT_EQ(library.processors.size(), 2u);
  const LibraryProcessor& cpu = library.processors[0];
  const LibraryProcessor& accel = library.processors[1];
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_TRUE(cpu.host);
  EXPECT_EQ(cpu.link_latency_us, 0);
  EXPECT_EQ(accel.name, "cpu:accel");
  EXPECT_FALSE(accel.host);
  EXPECT_GT(accel.link_bytes_per_us, 0);
  EXPECT_GT(accel.link_latency_us, 0);
  for (const auto& p : library.processors) {
    EXPECT_GT(p.fixed_us, 0) << p.name;
    EXPECT_GT(p.flops_per_us, 0) << p.name;
    EXPECT_GT(p.bytes_per_us, 0) << p.name;
  }

  const std::map<std::string, std::set<int>> expected = {
      {"pointwise", {2, 4, 6}}, {"scalar", {0, 1, 2, 3}}, {"matmul", {5}}};
  std::map<std::tuple<std::string, std::string, int>, int> seen;
  double slowest_scalar_a[4] = {};
  for (const LibraryEntry& e : library.entries) {
    ++seen[{e.processor, e.op, e.bucket}];
    EXPECT_EQ(e.dtype, e.op == "scalar" ? DType::i64 : DType::f32) << e.op;
    EXPECT_EQ(size_bucket(e.work), e.bucket);
    EXPECT_GT(e.time_us, 0);
    EXPECT_GT(e.bytes, 0);
    // a = time + launch (the CPU's launches are inside its timed events: launch 0).
    EXPECT_DOUBLE_EQ(e.terms.accumulated_us, e.time_us);
    EXPECT_GE(e.terms.speed_us, 0);
    if (e.processor == "cpu") {
      EXPECT_EQ(e.terms.transfer_us, 0);
      // Scalar work on the host: the round trip it saves against cpu:accel.
      EXPECT_DOUBLE_EQ(e.terms.complexity_us, e.op == "scalar" ? accel.round_trip_us : 0.0);
    } else {
      // In and out over the link: two latencies and every byte once.
      EXPECT_DOUBLE_EQ(e.terms.transfer_us, 2 * accel.link_latency_us + e.bytes / accel.link_bytes_per_us);
      EXPECT_EQ(e.terms.complexity_us, 0);
    }
    if (e.op == "scalar") slowest_scalar_a[e.bucket] = std::max(slowest_scalar_a[e.bucket], e.terms.accumulated_us);
  }
  for (const auto& processor : {"cpu", "cpu:accel"})
    for (const auto& [op, buckets] : expected)
      for (const int bucket : buckets)
        EXPECT_EQ((seen[{processor, op, bucket}]), 1) << processor << " " << op << " " << bucket;
  EXPECT_EQ(library.entries.size(), 2u * 8u);
  // s: the slowest processor's a minus this one's, at the same size.
  for (const LibraryEntry& e : library.entries)
    if (e.op == "scalar") EXPECT_DOUBLE_EQ(e.terms.speed_us, slowest_scalar_a[e.bucket] - e.terms.accumulated_us);

  // Written and read back, equal.
  expect_same(parse(function_library_json(library)), library);
}

TEST(FunctionLibrary, MeasurementRefusesUnknownProcessorsAndKinds) {
  LibraryMeasureOptions options;
  options.processors = {"tpu"};
  expect_error([&] { measure_function_library(options); }, ErrorCode::invalid_argument,
               {"processor 'tpu'", "available: ", "cpu"});
  options.processors = {"cpu"};
  options.op_kinds = {"fft"};
  expect_error([&] { measure_function_library(options); }, ErrorCode::invalid_argument, {"op kind 'fft'"});
}

TEST(FunctionLibrary, BadFilesAreRefusedNamingTheField) {
  EXPECT_NO_THROW(parse(kValid));
  expect_bad("{", {"function library 'lib.json'", "not valid JSON"});
  expect_bad(with(kValid, R"("format_version": 1)", R"("format_version": 2)"), {"field 'format_version'", "version 2"});
  expect_bad(with(kValid, R"("time_us": 2)", R"("time_us": "2")"), {"field 'entries[0].time_us'", "expected a number"});
  expect_bad(with(kValid, R"("time_us": 2, )", ""), {"field 'entries[0].time_us'", "missing"});
  expect_bad(with(kValid, R"("s_us": 0)", R"("s_us": -1)"), {"field 'entries[0].s_us'", ">= 0"});
  expect_bad(with(kValid, R"("bucket": 2)", R"("bucket": 3)"),
             {"field 'entries[0].bucket'", "not the bucket of work 16"});
  expect_bad(with(kValid, R"("bucket": 2)", R"("bucket": 1.5)"), {"field 'entries[0].bucket'", "integer"});
  expect_bad(with(kValid, R"("op": "matmul")", R"("op": "fft")"), {"field 'entries[0].op'", "unknown op kind 'fft'"});
  expect_bad(with(kValid, R"("dtype": "f32")", R"("dtype": "f33")"), {"field 'entries[0].dtype'", "unknown dtype"});
  expect_bad(with(kValid, R"("processor": "cpu", "work")", R"("processor": "gpu", "work")"),
             {"field 'entries[0].processor'", "'gpu' is not in 'processors'"});
  expect_bad(with(kValid, R"("host": true)", R"("host": false)"),
             {"field 'processors[0].link_bytes_per_us'", "off the host"});
  expect_bad(with(kValid, R"("host": true)", R"("host": 1)"), {"field 'processors[0].host'", "true or false"});
  expect_bad(with(kValid, R"("flops_per_us": 100)", R"("flops_per_us": 0)"),
             {"field 'processors[0].flops_per_us'", "> 0"});
  expect_bad(with(kValid, R"("processors": [)", R"("processors": [{"name": "cpu", "host": true, "launch_us": 0,
      "fixed_us": 1, "flops_per_us": 1, "bytes_per_us": 1, "link_latency_us": 0, "link_bytes_per_us": 0,
      "round_trip_us": 0}, )"),
             {"field 'processors[1].name'", "listed twice"});
  expect_bad(with(kValid, R"("entries": [)", R"("entries": 3, "x": [)"), {"field 'entries'", "expected an array"});
  expect_error([] { read_function_library("/nonexistent/lib.json"); }, ErrorCode::invalid_argument,
               {"'/nonexistent/lib.json'", "cannot open"});
}

// The committed defaults are the built-in ones (loom-profile --library-defaults wrote them), and
// the committed measured library reads.
TEST(FunctionLibrary, CommittedFilesMatchTheBuiltInDefaultsAndRead) {
  const std::string dir = std::string(LOOM_SOURCE_DIR) + "/profiles/library/";
  expect_same(read_function_library(dir + "defaults.json"), default_function_library());
  // Measured on the 2-core Intel Xeon this project's CPU machines have (loom-profile --library).
  const FunctionLibrary measured = read_function_library(dir + "intel-r-xeon-r-processor.json");
  EXPECT_FALSE(measured.entries.empty());
  EXPECT_NE(measured.find_processor("cpu"), nullptr);
  EXPECT_NE(measured.find_processor("cpu:accel"), nullptr);
}

TEST(FunctionLibrary, FileNamesFollowTheDeviceProfiles) {
  EXPECT_EQ(function_library_file_name("NVIDIA H100 80GB HBM3"), "library/nvidia-h100-80gb-hbm3.json");
  EXPECT_EQ(size_bucket(0), 0);
  EXPECT_EQ(size_bucket(3.9), 0);
  EXPECT_EQ(size_bucket(4), 1);
  EXPECT_EQ(size_bucket(1024), 5);
  EXPECT_EQ(size_bucket(4095), 5);
  EXPECT_EQ(library_op_kind("Conv", WorkClass::tensor), "conv");
  EXPECT_EQ(library_op_kind("Gemm", WorkClass::tensor), "matmul");
  EXPECT_EQ(library_op_kind("Relu", WorkClass::tensor), "pointwise");
  EXPECT_EQ(library_op_kind("Reshape", WorkClass::tensor), "view");
  EXPECT_EQ(library_op_kind("Transpose", WorkClass::tensor), "layout");
  EXPECT_EQ(library_op_kind("ReduceMean", WorkClass::tensor), "reduce");
  EXPECT_EQ(library_op_kind("Loop", WorkClass::tensor), "control");
  EXPECT_EQ(library_op_kind("Gather", WorkClass::scalar), "scalar");
}

// Lookups on a hand-made library: processor "p" with fixed_us 1 and rates 100 FLOP/µs, 10 B/µs;
// matmul entries at work 64 (bucket 3, 5 µs) and 4096 (bucket 6, 50 µs).
TEST(FunctionLibrary, LookupScalesTheNearestEntryAndFallsBackToDefaults) {
  FunctionLibrary library;
  library.processors.push_back({"p", "", true, 0, 1, 100, 10, 0, 0, 0});
  library.entries.push_back({"matmul", DType::f32, 3, "p", 64, 0, 5, {}});
  library.entries.push_back({"matmul", DType::f32, 6, "p", 4096, 0, 50, {}});
  const LibraryProcessor p = placement::processor_figures(library, "p");
  // work 128 (bucket 3): the bucket-3 entry, 1 + (5 - 1) * 128 / 64 = 9.
  auto f = placement::op_time(library, {"matmul", DType::f32, 128, 128, 0}, p);
  EXPECT_DOUBLE_EQ(f.time_us, 9);
  EXPECT_TRUE(f.measured);
  // work 1024 (bucket 5): nearest is bucket 6: 1 + 49 * 1024 / 4096 = 13.25.
  f = placement::op_time(library, {"matmul", DType::f32, 1024, 1024, 0}, p);
  EXPECT_DOUBLE_EQ(f.time_us, 13.25);
  // An f16 node takes the f32 entries.
  f = placement::op_time(library, {"matmul", DType::f16, 128, 128, 0}, p);
  EXPECT_DOUBLE_EQ(f.time_us, 9);
  // No conv entry: fixed + max(2000 FLOPs / 100, 100 bytes / 10) = 1 + 20 = 21.
  f = placement::op_time(library, {"conv", DType::f32, 2000, 2000, 100}, p);
  EXPECT_DOUBLE_EQ(f.time_us, 21);
  EXPECT_FALSE(f.measured);
  // A view aliases its input: no time.
  EXPECT_EQ(placement::op_time(library, {"view", DType::f32, 64, 0, 256}, p).time_us, 0);
  // A processor the library lacks comes from the defaults; one neither has is an error.
  EXPECT_EQ(placement::processor_figures(library, "cuda").launch_us, 5);
  expect_error([&] { placement::processor_figures(library, "tpu"); }, ErrorCode::invalid_argument,
               {"processor 'tpu'", "known: p, cpu, cpu:accel, cuda"});
}
