// A hand-made function library shared by the placement tests (test_placement_load,
// test_placement_execute): cpu, the host, and cpu:accel with a link of 1 µs + 64 bytes/µs (round
// trip 4 µs). MatMul [1,16] x [16,16] (512 FLOPs, bucket 4) takes 10 µs on the cpu and 2 on
// cpu:accel; pointwise work of 16 elements (bucket 2) 1 µs on either; no scalar entries (the
// defaults' fixed 1 µs on each). Each test states what the rule makes of it for its own model.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace loom::test_support {

inline const char* const kHandMadeLibrary = R"({"format_version": 1, "machine": "hand-made",
  "processors": [
    {"name": "cpu", "host": true, "launch_us": 0, "fixed_us": 1, "flops_per_us": 100, "bytes_per_us": 10,
     "link_latency_us": 0, "link_bytes_per_us": 0, "round_trip_us": 0},
    {"name": "cpu:accel", "host": false, "launch_us": 0, "fixed_us": 1, "flops_per_us": 100, "bytes_per_us": 10,
     "link_latency_us": 1, "link_bytes_per_us": 64, "round_trip_us": 4}],
  "entries": [
    {"op": "matmul", "dtype": "f32", "bucket": 4, "processor": "cpu", "work": 512, "bytes": 1152, "time_us": 10,
     "t_us": 0, "a_us": 10, "s_us": 0, "o_us": 0},
    {"op": "matmul", "dtype": "f32", "bucket": 4, "processor": "cpu:accel", "work": 512, "bytes": 1152, "time_us": 2,
     "t_us": 0, "a_us": 2, "s_us": 8, "o_us": 0},
    {"op": "pointwise", "dtype": "f32", "bucket": 2, "processor": "cpu", "work": 16, "bytes": 128, "time_us": 1,
     "t_us": 0, "a_us": 1, "s_us": 0, "o_us": 0},
    {"op": "pointwise", "dtype": "f32", "bucket": 2, "processor": "cpu:accel", "work": 16, "bytes": 128, "time_us": 1,
     "t_us": 0, "a_us": 1, "s_us": 0, "o_us": 0}]})";

// kHandMadeLibrary written to a temporary file of this process, removed with the object.
class HandMadeLibraryFile {
 public:
  explicit HandMadeLibraryFile(const std::string& stem)
      : path_((std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ".json")).string()) {
    std::ofstream(path_) << kHandMadeLibrary;
  }
  ~HandMadeLibraryFile() { std::remove(path_.c_str()); }
  HandMadeLibraryFile(const HandMadeLibraryFile&) = delete;
  HandMadeLibraryFile& operator=(const HandMadeLibraryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace loom::test_support
