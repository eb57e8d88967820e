// The function library on disk: the JSON format of docs/placement.md, its file name per machine,
// and where the executor looks for it.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <istream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/json_fields.hpp"
#include "core/profile_dirs.hpp"
#include "loom/error.hpp"
#include "loom/placement.hpp"
#include "loom/profile.hpp"

namespace loom {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;
using core::FieldReader;

constexpr int kFormatVersion = 1;

// Every kind an entry may name: the measured ones and those with default figures only.
bool known_op_kind(const std::string& kind) {
  static const std::set<std::string> kinds = [] {
    std::set<std::string> all;
    for (const auto& k : library_op_kinds()) all.insert(k);
    for (const char* k : {"recurrent", "control", "other"}) all.insert(k);
    return all;
  }();
  return kinds.count(kind) != 0;
}

LibraryProcessor read_processor(const FieldReader& reader, const json& value, const std::string& field) {
  reader.object(value, field);
  LibraryProcessor p;
  p.name = reader.string(value, field, "name", true);
  if (p.name.empty()) reader.fail(FieldReader::join(field, "name"), "empty processor name");
  p.device_name = reader.string(value, field, "device_name", false);
  p.host = reader.boolean(value, field, "host", true);
  p.launch_us = reader.number(value, field, "launch_us", true);
  p.fixed_us = reader.number(value, field, "fixed_us", true);
  p.flops_per_us = reader.number(value, field, "flops_per_us", true);
  p.bytes_per_us = reader.number(value, field, "bytes_per_us", true);
  p.link_latency_us = reader.number(value, field, "link_latency_us", true);
  p.link_bytes_per_us = reader.number(value, field, "link_bytes_per_us", true);
  p.round_trip_us = reader.number(value, field, "round_trip_us", true);
  if (!(p.flops_per_us > 0)) reader.fail(FieldReader::join(field, "flops_per_us"), "must be > 0");
  if (!(p.bytes_per_us > 0)) reader.fail(FieldReader::join(field, "bytes_per_us"), "must be > 0");
  if (!p.host && !(p.link_bytes_per_us > 0))
    reader.fail(FieldReader::join(field, "link_bytes_per_us"),
                "must be > 0 for a processor off the host (data reaches '" + p.name + "' over a link)");
  return p;
}

LibraryEntry read_entry(const FieldReader& reader, const json& value, const std::string& field,
                        const FunctionLibrary& library) {
  reader.object(value, field);
  LibraryEntry e;
  e.op = reader.string(value, field, "op", true);
  if (!known_op_kind(e.op)) {
    std::string known;
    for (const auto& k : library_op_kinds()) known += (known.empty() ? "" : ", ") + k;
    reader.fail(FieldReader::join(field, "op"),
                "unknown op kind '" + e.op + "' (known: " + known + ", recurrent, control, other)");
  }
  const std::string dtype = reader.string(value, field, "dtype", true);
  try {
    e.dtype = dtype_from_name(dtype);
  } catch (const Error&) {
    reader.fail(FieldReader::join(field, "dtype"), "unknown dtype '" + dtype + "'");
  }
  const json& bucket = reader.require(value, field, "bucket");
  if (!bucket.is_number_integer() || bucket.get<std::int64_t>() < 0 || bucket.get<std::int64_t>() > 64)
    reader.fail(FieldReader::join(field, "bucket"), "expected an integer in [0, 64], got " + bucket.dump());
  e.bucket = bucket.get<int>();
  e.processor = reader.string(value, field, "processor", true);
  if (!library.find_processor(e.processor))
    reader.fail(FieldReader::join(field, "processor"), "'" + e.processor + "' is not in 'processors'");
  e.work = reader.number(value, field, "work", true);
  if (!(e.work >= 1)) reader.fail(FieldReader::join(field, "work"), "must be >= 1");
  if (size_bucket(e.work) != e.bucket)
    reader.fail(FieldReader::join(field, "bucket"),
                std::to_string(e.bucket) + " is not the bucket of work " + json(e.work).dump() +
                    " (floor(log4(work)) = " + std::to_string(size_bucket(e.work)) + ")");
  e.bytes = reader.number(value, field, "bytes", true);
  e.time_us = reader.number(value, field, "time_us", true);
  if (!(e.time_us > 0)) reader.fail(FieldReader::join(field, "time_us"), "must be > 0");
  e.terms.transfer_us = reader.number(value, field, "t_us", true);
  e.terms.accumulated_us = reader.number(value, field, "a_us", true);
  e.terms.speed_us = reader.number(value, field, "s_us", true);
  e.terms.complexity_us = reader.number(value, field, "o_us", true);
  return e;
}

}  // namespace

const LibraryProcessor* FunctionLibrary::find_processor(std::string_view name) const {
  for (const auto& p : processors)
    if (p.name == name) return &p;
  return nullptr;
}

FunctionLibrary parse_function_library(std::istream& in, const std::string& source_name) {
  const FieldReader reader("function library '" + source_name + "'");
  const json doc = reader.parse(in);
  FunctionLibrary library;
  library.format_version = reader.format_version(doc, kFormatVersion);
  library.machine = reader.string(doc, "", "machine", false);
  library.created = reader.string(doc, "", "created", false);
  library.loom_version = reader.string(doc, "", "loom_version", false);
  library.command = reader.string(doc, "", "command", false);
  library.method = reader.string(doc, "", "method", false);

  const json& processors = reader.array(doc, "", "processors");
  if (processors.empty()) reader.fail("processors", "empty: a library needs at least one processor");
  std::size_t hosts = 0;
  for (std::size_t i = 0; i < processors.size(); ++i) {
    const std::string field = FieldReader::index("processors", i);
    LibraryProcessor p = read_processor(reader, processors[i], field);
    if (library.find_processor(p.name))
      reader.fail(FieldReader::join(field, "name"), "processor '" + p.name + "' is listed twice");
    hosts += p.host ? 1 : 0;
    if (hosts > 1) reader.fail(FieldReader::join(field, "host"), "a second host processor (at most one is the host)");
    library.processors.push_back(std::move(p));
  }
  const json& entries = reader.array(doc, "", "entries");
  for (std::size_t i = 0; i < entries.size(); ++i)
    library.entries.push_back(read_entry(reader, entries[i], FieldReader::index("entries", i), library));
  return library;
}

FunctionLibrary read_function_library(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::invalid_argument, "function library '" + path + "': cannot open the file");
  return parse_function_library(in, path);
}

std::string function_library_json(const FunctionLibrary& library) {
  ordered_json processors = ordered_json::array();
  for (const auto& p : library.processors)
    processors.push_back({{"name", p.name},
                          {"device_name", p.device_name},
                          {"host", p.host},
                          {"launch_us", p.launch_us},
                          {"fixed_us", p.fixed_us},
                          {"flops_per_us", p.flops_per_us},
                          {"bytes_per_us", p.bytes_per_us},
                          {"link_latency_us", p.link_latency_us},
                          {"link_bytes_per_us", p.link_bytes_per_us},
                          {"round_trip_us", p.round_trip_us}});
  ordered_json entries = ordered_json::array();
  for (const auto& e : library.entries)
    entries.push_back({{"op", e.op},
                       {"dtype", std::string(dtype_name(e.dtype))},
                       {"bucket", e.bucket},
                       {"processor", e.processor},
                       {"work", e.work},
                       {"bytes", e.bytes},
                       {"time_us", e.time_us},
                       {"t_us", e.terms.transfer_us},
                       {"a_us", e.terms.accumulated_us},
                       {"s_us", e.terms.speed_us},
                       {"o_us", e.terms.complexity_us}});
  const ordered_json doc{
      {"format_version", library.format_version}, {"machine", library.machine},   {"created", library.created},
      {"loom_version", library.loom_version},     {"command", library.command},   {"method", library.method},
      {"processors", std::move(processors)},      {"entries", std::move(entries)}};
  return doc.dump(2) + "\n";
}

void write_function_library(const FunctionLibrary& library, const std::string& path) {
  core::write_file_atomically(path, function_library_json(library), "function library '" + path + "'");
}

std::string function_library_file_name(const std::string& device_name) {
  return "library/" + profile_file_name(device_name);
}

std::optional<std::string> find_function_library(const std::string& device_name) {
  return core::find_in_profile_directories(function_library_file_name(device_name));
}

}  // namespace loom
