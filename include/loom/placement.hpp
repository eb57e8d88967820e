// The function library (MISSION.md §2, the source text's 函数库): per (op kind, dtype, size bucket,
// processor) the measured time of an op and the source text's terms t, a, s, o; per processor its
// launch, link and round-trip figures. loom-profile --library measures it into
// profiles/library/<device>.json; the placement pass reads it at load (docs/placement.md).
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/model_info.hpp"
#include "loom/placement_types.hpp"
#include "loom/tensor.hpp"

namespace loom {

// One processor as the library knows it. Times in microseconds, rates per microsecond.
struct LibraryProcessor {
  std::string name;         // as device strings name it: "cpu", "cpu:accel", "cuda"
  std::string device_name;  // as the backend reports it
  // The CPU backend itself: its memory is the application's, so nothing crosses a link to it.
  bool host = false;
  // Host time per kernel launch that the measured op times do not include (an asynchronous
  // backend's launch; 0 where timed events bracket the whole synchronous call).
  double launch_us = 0;
  // Default figures for an op with no entry: fixed_us + max(FLOPs / flops_per_us,
  // bytes / bytes_per_us).
  double fixed_us = 0;
  double flops_per_us = 0;
  double bytes_per_us = 0;
  // One copy between the host and this processor: latency_us + bytes / link_bytes_per_us (both 0
  // on the host).
  double link_latency_us = 0;
  double link_bytes_per_us = 0;
  // A scalar the host must see: device -> host, then the decision's result host -> device.
  double round_trip_us = 0;
};

// One op kind at one size on one processor.
struct LibraryEntry {
  std::string op;  // the op kind (library_op_kinds())
  DType dtype = DType::f32;
  int bucket = 0;  // size_bucket(work)
  std::string processor;
  double work = 0;     // the size measured, in work units: max(FLOPs, output elements)
  double bytes = 0;    // bytes it read and wrote
  double time_us = 0;  // median measured time
  // The source text's terms at this size against the library's processors (docs/placement.md):
  // t if every input and output crossed to this processor from the host, a = time + launch,
  // s = the slowest processor's a - this a, o = the complexity benefit.
  PlacementTerms terms;
};

struct FunctionLibrary {
  int format_version = 1;
  std::string machine;  // what it was measured on, e.g. "Intel(R) Xeon(R) Processor, 2 cores"
  std::string created;  // ISO-8601 UTC
  std::string loom_version;
  std::string command;
  std::string method;  // how the entries were measured
  std::vector<LibraryProcessor> processors;
  std::vector<LibraryEntry> entries;

  // nullptr when the library has no processor of that name.
  const LibraryProcessor* find_processor(std::string_view name) const;
};

// Throws Error(invalid_argument) naming the file and the field's path ("entries[3].time_us"):
// missing file, bad JSON, a missing required field, a field of the wrong type, a negative number,
// an unknown dtype or op kind, an entry naming a processor the library does not list, a processor
// off the host without a link rate, another format_version.
FunctionLibrary read_function_library(const std::string& path);
// As read_function_library() on a document read from `in`; `source_name` names it in messages.
FunctionLibrary parse_function_library(std::istream& in, const std::string& source_name);
// The JSON text (docs/placement.md, "The function library"); parse_function_library reads it back
// equal.
std::string function_library_json(const FunctionLibrary& library);
// Written to <path>.tmp, renamed over <path>. Throws Error(invalid_argument) when it cannot be.
void write_function_library(const FunctionLibrary& library, const std::string& path);

// "library/<profile_file_name(device_name)>": under profiles/, the library measured on the machine
// whose executor device is `device_name`.
std::string function_library_file_name(const std::string& device_name);
// The first existing profiles/<function_library_file_name> in core's profile directories
// ($LOOM_PROFILE_DIR, ./profiles, the installed share/loom/profiles); nullopt when none exists.
std::optional<std::string> find_function_library(const std::string& device_name);

// The documented defaults (docs/placement.md, "Defaults"): figures for "cpu", "cpu:accel" and
// "cuda", no entries. Every lookup falls back to them.
FunctionLibrary default_function_library();

// The op kinds the library measures, in order: "matmul", "conv", "pointwise", "reduce", "pool",
// "layout", "scalar". Other kinds ("recurrent", "control", "view", "other") use default figures.
std::vector<std::string> library_op_kinds();
// The kind the library files a node under: "scalar" for scalar work, else by op type.
std::string library_op_kind(std::string_view op_type, WorkClass work_class);
// floor(log4(work)); 0 for work < 4.
int size_bucket(double work);

// The placement report as JSON (loom-run --placement-report; docs/placement.md, "The report"):
// the model, the library, processors and thresholds, a summary and one object per entry of
// info.placement.nodes. Throws Error(invalid_argument) when the placement did not run.
std::string placement_report_json(const ModelInfo& info);

// --- Measuring a library (loom-profile --library; implemented beside the Profiler) ---

struct LibraryMeasureOptions {
  // Processors to measure, as device strings name them; empty: every registered backend with a
  // device present ("cpu", "cpu:accel", and "cuda" where a GPU is).
  std::vector<std::string> processors;
  std::vector<std::string> op_kinds;  // empty: library_op_kinds()
  double max_work = 0;                // > 0: only the ladder's sizes of at most this many work units
  int runs = 20;                      // timed runs per size; the median is kept
  int warmup = 3;
  std::function<void(const std::string&)> progress;  // one line per measurement; may be empty
};

// Times each op kind at its ladder of sizes on every processor (docs/placement.md, "How it is
// measured") and the links between the host and each processor, and fills every entry's terms.
// Throws Error(invalid_argument) for an unknown processor or op kind, and what opening a device
// and running its kernels throw.
FunctionLibrary measure_function_library(const LibraryMeasureOptions& options);

}  // namespace loom
