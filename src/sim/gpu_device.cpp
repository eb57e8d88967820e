// The GPU device model's descriptions (profiles/gpu/*.json, profiles/gpu/README.md): strict reading
// that names the file and the field of every problem, where the shipped ones are found, and the
// CUDA occupancy calculator that says how many blocks of a kernel one SM holds.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/profile_dirs.hpp"
#include "loom/error.hpp"
#include "loom/sim.hpp"
#include "sim/json_text.hpp"
#include "sim/workload_check.hpp"

namespace loom::sim {
namespace {

using detail::number_text;
using nlohmann::json;

// The occupancy calculator's constants that GpuDevice does not carry, the same on every compute
// capability from 7.0 to 9.0 (CUDA's cuda_occupancy.h): registers are allocated per warp in each
// of 4 SM sub-partitions, and shared memory in units of 128 bytes (8.x, 9.x).
constexpr int kSubPartitionsPerSm = 4;
constexpr std::uint64_t kSharedAllocationUnit = 128;

std::uint64_t round_up(std::uint64_t n, std::uint64_t unit) { return (n + unit - 1) / unit * unit; }

// Reads one GPU description, reporting every problem as "<source>: <field>: <problem>" (the
// workload file's error style).
class DeviceReader {
 public:
  DeviceReader(std::string source, const json& doc) : source_(std::move(source)), doc_(doc) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw Error(ErrorCode::invalid_argument, source_ + ": " + (field.empty() ? "" : field + ": ") + problem);
  }

  std::string text(const std::string& key) const {
    const json* value = find(key, "a string");
    if (!value->is_string()) fail(key, "expected a string, got " + describe(*value));
    std::string result = value->get<std::string>();
    if (result.empty()) fail(key, "empty string");
    return result;
  }

  // A finite number > 0; `fallback` (null: the field is required) when absent.
  double positive(const std::string& key, const double* fallback) const {
    const json* value = find(key, "a positive number", fallback != nullptr);
    if (!value) return *fallback;
    if (!value->is_number()) fail(key, "expected a positive number, got " + describe(*value));
    const double result = value->get<double>();
    if (!std::isfinite(result)) fail(key, "not a finite number");
    if (!(result > 0)) fail(key, number_text(result) + " is not positive");
    return result;
  }

  // A whole number in [min, max]; `fallback` (null: required) when absent.
  std::uint64_t whole(const std::string& key, const std::uint64_t* fallback, std::uint64_t min,
                      std::uint64_t max) const {
    const json* value = find(key, "a whole number", fallback != nullptr);
    if (!value) return *fallback;
    if (!value->is_number()) fail(key, "expected a whole number, got " + describe(*value));
    if (value->is_number_float()) {
      const double d = value->get<double>();
      if (!std::isfinite(d) || d != std::floor(d)) fail(key, "expected a whole number, got " + value->dump());
      if (d < static_cast<double>(min) || d > static_cast<double>(max)) out_of_range(key, *value, min, max);
      return static_cast<std::uint64_t>(d);
    }
    if (value->is_number_integer() && !value->is_number_unsigned()) {
      const std::int64_t i = value->get<std::int64_t>();
      if (i < 0 || static_cast<std::uint64_t>(i) < min) out_of_range(key, *value, min, max);
    }
    const std::uint64_t result = value->get<std::uint64_t>();
    if (result < min || result > max) out_of_range(key, *value, min, max);
    return result;
  }

  int count(const std::string& key, int fallback) const {
    const auto fallback_value = static_cast<std::uint64_t>(fallback);
    return static_cast<int>(whole(key, &fallback_value, 1, INT_MAX));
  }

 private:
  const json* find(const std::string& key, const char* required, bool optional = false) const {
    const auto it = doc_.find(key);
    if (it == doc_.end()) {
      if (optional) return nullptr;
      fail(key, std::string("missing (") + required + " is required)");
    }
    return &*it;
  }

  [[noreturn]] void out_of_range(const std::string& key, const json& value, std::uint64_t min,
                                 std::uint64_t max) const {
    fail(key, value.dump() + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }

  static std::string describe(const json& value) { return detail::describe_json(value); }

  std::string source_;
  const json& doc_;
};

// Where GPU descriptions are looked up, in order: the gpu/ folder of each place find_profile()
// searches for device profiles ($LOOM_PROFILE_DIR, ./profiles, the installed share/loom/profiles).
std::vector<std::filesystem::path> description_directories() {
  std::vector<std::filesystem::path> directories = core::profile_directories();
  for (auto& directory : directories) directory /= "gpu";
  return directories;
}

bool is_path(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() >= 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
}

GpuDevice read_description(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::invalid_argument, path + ": cannot open the GPU description");
  return parse_gpu_device(in, path);
}

}  // namespace

GpuDevice parse_gpu_device(std::istream& in, const std::string& source_name) {
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    throw Error(ErrorCode::invalid_argument, source_name + ": malformed JSON: " + e.what());
  }
  const DeviceReader reader(source_name, doc);
  if (!doc.is_object()) reader.fail("(top level)", "expected an object, got " + std::string(doc.type_name()));
  static const std::set<std::string> known = {"name",
                                              "source",
                                              "sm_count",
                                              "max_threads_per_sm",
                                              "max_blocks_per_sm",
                                              "registers_per_sm",
                                              "register_allocation_unit",
                                              "max_registers_per_thread",
                                              "shared_bytes_per_sm",
                                              "shared_bytes_per_block_max",
                                              "shared_bytes_reserved_per_block",
                                              "max_threads_per_block",
                                              "warp_size",
                                              "peak_flops_f32",
                                              "peak_flops_f16",
                                              "dram_bytes_per_s",
                                              "l2_bytes",
                                              "sm_bandwidth_share",
                                              "launch_us",
                                              "graph_launch_us",
                                              "launch_latency_us"};
  for (const auto& [key, value] : doc.items()) {
    if (known.count(key)) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    reader.fail(key, "unknown field (known: " + list + ")");
  }

  GpuDevice device;
  device.name = reader.text("name");
  device.source = reader.text("source");
  device.sm_count = static_cast<int>(reader.whole("sm_count", nullptr, 1, INT_MAX));
  device.max_threads_per_sm = reader.count("max_threads_per_sm", device.max_threads_per_sm);
  device.max_blocks_per_sm = reader.count("max_blocks_per_sm", device.max_blocks_per_sm);
  device.registers_per_sm = reader.count("registers_per_sm", device.registers_per_sm);
  device.register_allocation_unit = reader.count("register_allocation_unit", device.register_allocation_unit);
  device.max_registers_per_thread = reader.count("max_registers_per_thread", device.max_registers_per_thread);
  constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 53;  // exact as a JSON double
  device.shared_bytes_per_sm = reader.whole("shared_bytes_per_sm", nullptr, 1, kMaxBytes);
  device.shared_bytes_per_block_max = reader.whole("shared_bytes_per_block_max", nullptr, 1, kMaxBytes);
  // The one field that may be 0: GPUs before compute capability 8.0 reserve nothing per block.
  device.shared_bytes_reserved_per_block =
      reader.whole("shared_bytes_reserved_per_block", &device.shared_bytes_reserved_per_block, 0, kMaxBytes);
  device.max_threads_per_block = reader.count("max_threads_per_block", device.max_threads_per_block);
  device.warp_size = reader.count("warp_size", device.warp_size);
  device.peak_flops_f32 = reader.positive("peak_flops_f32", nullptr);
  if (doc.contains("peak_flops_f16")) device.peak_flops_f16 = reader.positive("peak_flops_f16", nullptr);
  device.dram_bytes_per_s = reader.positive("dram_bytes_per_s", nullptr);
  device.l2_bytes = reader.whole("l2_bytes", &device.l2_bytes, 0, kMaxBytes);
  device.sm_bandwidth_share = reader.positive("sm_bandwidth_share", &device.sm_bandwidth_share);
  device.launch_us = reader.positive("launch_us", &device.launch_us);
  device.graph_launch_us = reader.positive("graph_launch_us", &device.graph_launch_us);
  device.launch_latency_us = reader.positive("launch_latency_us", &device.launch_latency_us);

  // Limits that contradict each other would make blocks_per_sm() answer nonsense.
  if (device.shared_bytes_per_block_max + device.shared_bytes_reserved_per_block > device.shared_bytes_per_sm)
    reader.fail("shared_bytes_per_block_max",
                std::to_string(device.shared_bytes_per_block_max) + " plus the per-block reserve " +
                    std::to_string(device.shared_bytes_reserved_per_block) + " exceeds shared_bytes_per_sm " +
                    std::to_string(device.shared_bytes_per_sm));
  if (device.max_threads_per_block > device.max_threads_per_sm)
    reader.fail("max_threads_per_block", std::to_string(device.max_threads_per_block) + " exceeds max_threads_per_sm " +
                                             std::to_string(device.max_threads_per_sm));
  if (device.max_threads_per_sm % device.warp_size != 0)
    reader.fail("max_threads_per_sm", std::to_string(device.max_threads_per_sm) +
                                          " is not a whole number of warps of " + std::to_string(device.warp_size));
  return device;
}

std::vector<std::string> gpu_device_names() {
  std::set<std::string> names;
  for (const auto& directory : description_directories()) {
    std::error_code error;
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error))
      if (it->path().extension() == ".json" && it->is_regular_file(error)) names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

GpuDevice gpu_device(const std::string& name_or_path) {
  if (is_path(name_or_path)) return read_description(name_or_path);
  for (const auto& directory : description_directories()) {
    const std::filesystem::path candidate = directory / (name_or_path + ".json");
    std::error_code error;
    if (!std::filesystem::is_regular_file(candidate, error)) continue;
    GpuDevice device = read_description(candidate.string());
    // A name finds its file by the file name; the two must agree, or lists of devices would lie.
    if (device.name != name_or_path)
      throw Error(ErrorCode::invalid_argument, candidate.string() + ": name: '" + device.name +
                                                   "' differs from the file name '" + name_or_path + "'");
    return device;
  }
  std::string known;
  for (const auto& name : gpu_device_names()) known += (known.empty() ? "" : ", ") + name;
  std::string searched;
  for (const auto& directory : description_directories())
    searched += (searched.empty() ? "" : ", ") + directory.string();
  throw Error(ErrorCode::invalid_argument, "unknown GPU '" + name_or_path +
                                               "' (known: " + (known.empty() ? "none" : known) + "; looked in " +
                                               searched + "; or give the path of a .json description)");
}

// The occupancy calculator of cuda_occupancy.h (CUDA 11-13, compute capability 7.0-9.0), for the
// inputs GpuDevice and KernelSpec carry; the least of four limits:
//   warps:     (max_threads_per_sm / warp_size) / warps per block, warps = ceil(threads / warp_size);
//   registers: a warp's registers, regs x warp_size, are rounded up to register_allocation_unit and
//              allocated in one of the SM's 4 sub-partitions, so warps that fit = 4 x
//              floor(registers_per_sm / 4 / that); blocks = that / warps per block. A block whose
//              warps, rounded up to 4, need more than the SM's registers does not run at all (the
//              hardware check; the per-block register limit equals registers_per_sm on every GPU
//              shipped here). 0 registers per thread: no register limit;
//   shared memory: every block takes its bytes plus the driver's reserve, even with none of its
//              own (cc 8.0 on: cuda_occupancy.h adds reservedSharedMemPerBlock unconditionally),
//              rounded up to 128 bytes: floor(shared_bytes_per_sm / that). The per-SM figure is the
//              largest carve-out; the driver picks one that fits, so that is what occupancy reaches;
//   blocks:    max_blocks_per_sm.
// 0 when one block cannot run: too many threads, registers per thread or shared bytes.
int blocks_per_sm(const GpuDevice& device, const KernelSpec& kernel) {
  const auto threads = static_cast<std::uint64_t>(kernel.threads_per_block);
  if (threads == 0 || threads > static_cast<std::uint64_t>(device.max_threads_per_block)) return 0;
  if (kernel.registers_per_thread > static_cast<std::uint32_t>(device.max_registers_per_thread)) return 0;
  if (kernel.shared_bytes_per_block > device.shared_bytes_per_block_max) return 0;
  const auto warp_size = static_cast<std::uint64_t>(device.warp_size);
  const std::uint64_t warps = (threads + warp_size - 1) / warp_size;

  const std::uint64_t by_warps = static_cast<std::uint64_t>(device.max_threads_per_sm) / warp_size / warps;

  std::uint64_t by_registers = std::numeric_limits<std::uint64_t>::max();
  if (kernel.registers_per_thread > 0) {
    const auto registers = static_cast<std::uint64_t>(device.registers_per_sm);
    const std::uint64_t per_warp = round_up(std::uint64_t{kernel.registers_per_thread} * warp_size,
                                            static_cast<std::uint64_t>(device.register_allocation_unit));
    if (per_warp * round_up(warps, kSubPartitionsPerSm) > registers) return 0;
    const std::uint64_t warps_that_fit = registers / kSubPartitionsPerSm / per_warp * kSubPartitionsPerSm;
    by_registers = warps_that_fit / warps;
  }

  std::uint64_t by_shared = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t shared =
      round_up(kernel.shared_bytes_per_block + device.shared_bytes_reserved_per_block, kSharedAllocationUnit);
  if (shared > 0) by_shared = device.shared_bytes_per_sm / shared;

  const std::uint64_t blocks =
      std::min({by_warps, by_registers, by_shared, static_cast<std::uint64_t>(device.max_blocks_per_sm)});
  return static_cast<int>(blocks);
}

}  // namespace loom::sim
