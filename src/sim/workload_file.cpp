// The workload file (docs/workload-format.md): strict JSON reading that names the file and the
// field of every problem, and the writer that read_workload reads back.
#include <cmath>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"
#include "loom/model_info.hpp"
#include "loom/sim.hpp"
#include "sim/json_text.hpp"
#include "sim/workload_check.hpp"

namespace loom::sim {
namespace {

using detail::number_text;
using nlohmann::json;

// Reads one JSON document, reporting every problem as "<source>: <field>: <problem>".
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw Error(ErrorCode::invalid_argument, source_ + ": " + (field.empty() ? "" : field + ": ") + problem);
  }

  void expect_object(const json& value, const std::string& field) const {
    if (!value.is_object()) fail(field, "expected an object, got " + describe(value));
  }

  // Every key of `object` must be one of `known`.
  void only_keys(const json& object, const std::string& field, const std::set<std::string>& known) const {
    for (const auto& [key, value] : object.items()) {
      if (known.count(key)) continue;
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(join(field, key), "unknown field (known here: " + list + ")");
    }
  }

  const json& array_field(const json& object, const std::string& field, const std::string& key) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(join(field, key), "missing (an array is required)");
    if (!it->is_array()) fail(join(field, key), "expected an array, got " + describe(*it));
    if (it->empty()) fail(join(field, key), "empty (at least one entry is required)");
    return *it;
  }

  std::string string_field(const json& object, const std::string& field, const std::string& key,
                           const std::string* fallback) const {
    const auto it = object.find(key);
    if (it == object.end()) {
      if (!fallback) fail(join(field, key), "missing (a string is required)");
      return *fallback;
    }
    if (!it->is_string()) fail(join(field, key), "expected a string, got " + describe(*it));
    const std::string text = it->get<std::string>();
    if (text.empty()) fail(join(field, key), "empty string");
    return text;
  }

  // Microseconds: a finite number >= 0.
  double time_field(const json& object, const std::string& field, const std::string& key,
                    const double* fallback) const {
    const auto it = object.find(key);
    if (it == object.end()) {
      if (!fallback) fail(join(field, key), "missing (a number of microseconds is required)");
      return *fallback;
    }
    if (!it->is_number()) fail(join(field, key), "expected a number of microseconds, got " + describe(*it));
    const double value = it->get<double>();
    if (!std::isfinite(value)) fail(join(field, key), "not a finite number");
    if (value < 0) fail(join(field, key), "negative time " + number_text(value) + " (times are microseconds >= 0)");
    return value;
  }

  // A whole number in [min, max]; 5e6 counts as whole.
  double integer_field(const json& object, const std::string& field, const std::string& key, double fallback,
                       double min, double max) const {
    const auto it = object.find(key);
    if (it == object.end()) return fallback;
    if (!it->is_number()) fail(join(field, key), "expected a whole number, got " + describe(*it));
    double value = 0;
    if (it->is_number_unsigned())
      value = static_cast<double>(it->get<std::uint64_t>());
    else if (it->is_number_integer())
      value = static_cast<double>(it->get<std::int64_t>());
    else
      value = it->get<double>();
    if (!std::isfinite(value) || value != std::floor(value))
      fail(join(field, key), "expected a whole number, got " + it->dump());
    if (value < min || value > max)
      fail(join(field, key), it->dump() + " is out of range [" + number_text(min) + ", " + number_text(max) + "]");
    return value;
  }

  std::uint64_t bytes_field(const json& object, const std::string& field, const std::string& key) const {
    const auto it = object.find(key);
    if (it != object.end() && it->is_number_unsigned()) return it->get<std::uint64_t>();  // exact, any size
    return static_cast<std::uint64_t>(integer_field(object, field, key, 0, 0, 9.007199254740992e15));
  }

  static std::string join(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }

 private:
  static std::string describe(const json& value) { return detail::describe_json(value); }

  std::string source_;
};

// The most requests a workload file may expand to (each entry's count summed): a few bytes of
// "count" must not make the reader allocate gigabytes.
constexpr std::size_t kMaxRequests = 1000000;

// One entry of a Step's "kernels" (the GPU model's launch; KernelSpec).
KernelSpec read_kernel(const Reader& in, const json& value, const std::string& field, const std::string& step) {
  in.expect_object(value, field);
  in.only_keys(value, field,
               {"name", "blocks", "threads_per_block", "registers_per_thread", "shared_bytes_per_block", "flops",
                "bytes", "f16", "cooperative"});
  KernelSpec k;
  k.name = in.string_field(value, field, "name", &step);
  if (!value.contains("blocks")) in.fail(Reader::join(field, "blocks"), "missing (the grid size is required)");
  k.blocks = static_cast<std::uint32_t>(in.integer_field(value, field, "blocks", 1, 1, 2147483647.0));
  k.threads_per_block =
      static_cast<std::uint32_t>(in.integer_field(value, field, "threads_per_block", k.threads_per_block, 1, 1024));
  k.registers_per_thread = static_cast<std::uint32_t>(
      in.integer_field(value, field, "registers_per_thread", k.registers_per_thread, 1, 255));
  k.shared_bytes_per_block = in.bytes_field(value, field, "shared_bytes_per_block");
  // FLOPs: a finite count >= 0.
  if (const auto it = value.find("flops"); it != value.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
      in.fail(Reader::join(field, "flops"), "expected a finite number >= 0");
    k.flops = it->get<double>();
  }
  k.bytes = in.bytes_field(value, field, "bytes");
  for (const char* flag : {"f16", "cooperative"})
    if (const auto it = value.find(flag); it != value.end()) {
      if (!it->is_boolean()) in.fail(Reader::join(field, flag), "expected true or false");
      (std::string(flag) == "f16" ? k.f16 : k.cooperative) = it->get<bool>();
    }
  return k;
}

// A Step larger than onchip_capacity_bytes is read as any other: the simulator runs it as tiles.
SimStep read_step(const Reader& in, const json& value, const std::string& field, std::size_t index) {
  in.expect_object(value, field);
  in.only_keys(
      value, field,
      {"name", "compute_us", "memory_us", "onchip_bytes", "live_bytes_after", "cancellation_point", "kernels"});
  SimStep step;
  const std::string default_name = "step" + std::to_string(index);
  step.name = in.string_field(value, field, "name", &default_name);
  step.compute_us = in.time_field(value, field, "compute_us", nullptr);
  step.memory_us = in.time_field(value, field, "memory_us", nullptr);
  step.onchip_bytes = in.bytes_field(value, field, "onchip_bytes");
  step.live_bytes_after = in.bytes_field(value, field, "live_bytes_after");
  if (const auto it = value.find("cancellation_point"); it != value.end()) {
    if (!it->is_boolean()) in.fail(Reader::join(field, "cancellation_point"), "expected true or false");
    step.cancellation_point = it->get<bool>();
  }
  if (value.contains("kernels")) {
    const json& kernels = in.array_field(value, field, "kernels");
    for (std::size_t k = 0; k < kernels.size(); ++k)
      step.kernels.push_back(read_kernel(in, kernels[k], field + ".kernels[" + std::to_string(k) + "]", step.name));
  }
  return step;
}

}  // namespace

Workload parse_workload(std::istream& in, const std::string& source_name) {
  const Reader reader(source_name);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    reader.fail("", std::string("malformed JSON: ") + e.what());
  }
  reader.expect_object(doc, "(top level)");
  reader.only_keys(doc, "", {"description", "onchip_capacity_bytes", "models", "requests"});
  if (doc.contains("description") && !doc["description"].is_string()) reader.fail("description", "expected a string");

  Workload workload;
  workload.onchip_capacity_bytes = reader.bytes_field(doc, "", "onchip_capacity_bytes");

  std::map<std::string, std::size_t> model_index;
  const json& models = reader.array_field(doc, "", "models");
  for (std::size_t m = 0; m < models.size(); ++m) {
    const std::string field = "models[" + std::to_string(m) + "]";
    const json& value = models[m];
    reader.expect_object(value, field);
    reader.only_keys(value, field,
                     {"name", "description", "steps", "cancellation_interval_us", "cancellation_max_live_bytes"});
    SimModel model;
    model.name = reader.string_field(value, field, "name", nullptr);
    if (!model_index.emplace(model.name, m).second)
      reader.fail(field + ".name", "model '" + model.name + "' is defined twice");
    const json& steps = reader.array_field(value, field, "steps");
    for (std::size_t s = 0; s < steps.size(); ++s)
      model.steps.push_back(read_step(reader, steps[s], field + ".steps[" + std::to_string(s) + "]", s));
    // A model's own cancellation rule: its points are chosen here and kept as given points, so
    // they do not depend on the simulator's options.
    if (value.contains("cancellation_interval_us") || value.contains("cancellation_max_live_bytes")) {
      for (std::size_t s = 0; s < model.steps.size(); ++s)
        if (model.steps[s].cancellation_point)
          reader.fail(field + ".steps[" + std::to_string(s) + "].cancellation_point",
                      "given points and the model's cancellation_interval_us / cancellation_max_live_bytes "
                      "exclude each other");
      SimOptions rule;
      const double default_interval = rule.cancellation_interval_us;
      rule.cancellation_interval_us = reader.time_field(value, field, "cancellation_interval_us", &default_interval);
      rule.cancellation_max_live_bytes = reader.bytes_field(value, field, "cancellation_max_live_bytes");
      const std::vector<bool> points = cancellation_points(model, rule);
      for (std::size_t s = 0; s < model.steps.size(); ++s) model.steps[s].cancellation_point = points[s];
    }
    workload.models.push_back(std::move(model));
  }

  const json& requests = reader.array_field(doc, "", "requests");
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const std::string field = "requests[" + std::to_string(r) + "]";
    const json& value = requests[r];
    reader.expect_object(value, field);
    reader.only_keys(value, field,
                     {"model", "arrival_us", "priority", "count", "interval_us", "back_to_back", "follows", "host_us"});
    SimRequest request;
    request.model = reader.string_field(value, field, "model", nullptr);
    if (!model_index.count(request.model)) {
      std::string known;
      for (const auto& [name, index] : model_index) known += (known.empty() ? "" : ", ") + name;
      reader.fail(field + ".model", "unknown model '" + request.model + "' (known: " + known + ")");
    }
    const double zero = 0;
    request.arrival_us = reader.time_field(value, field, "arrival_us", &zero);
    request.host_us = reader.time_field(value, field, "host_us", &zero);
    if (const auto it = value.find("priority"); it != value.end() && it->is_string()) {
      try {
        request.priority = static_cast<int>(priority_from_name(it->get<std::string>()));
      } catch (const Error& e) {
        reader.fail(field + ".priority", e.what());
      }
    } else {
      request.priority = static_cast<int>(reader.integer_field(
          value, field, "priority", 0, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    }
    if (value.contains("follows")) {
      // Indices count expanded requests, so only an entry of count 1 can be named exactly.
      const double limit = static_cast<double>(workload.requests.size()) - 1;
      if (limit < 0) reader.fail(field + ".follows", "no earlier request to follow");
      request.follows = static_cast<std::size_t>(reader.integer_field(value, field, "follows", 0, 0, limit));
    }
    const auto count =
        static_cast<std::size_t>(reader.integer_field(value, field, "count", 1, 1, static_cast<double>(kMaxRequests)));
    if (count > kMaxRequests - workload.requests.size())
      reader.fail(field + ".count", "the file expands to more than " + std::to_string(kMaxRequests) +
                                        " requests (each entry's count summed), the most a workload may hold");
    const double interval = reader.time_field(value, field, "interval_us", &zero);
    bool back_to_back = false;
    if (const auto it = value.find("back_to_back"); it != value.end()) {
      if (!it->is_boolean()) reader.fail(field + ".back_to_back", "expected true or false");
      back_to_back = it->get<bool>();
    }
    for (std::size_t i = 0; i < count; ++i) {
      SimRequest copy = request;
      if (back_to_back && i > 0) {
        // Closed loop: each copy arrives interval_us after the previous one finishes.
        copy.follows = workload.requests.size() - 1;
        copy.arrival_us = interval;
      } else if (!back_to_back) {
        copy.arrival_us = request.arrival_us + static_cast<double>(i) * interval;
      }
      workload.requests.push_back(std::move(copy));
    }
  }
  return workload;
}

Workload read_workload(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::invalid_argument, path + ": cannot open the workload file");
  return parse_workload(in, path);
}

std::string workload_json(const Workload& workload) {
  nlohmann::ordered_json doc;
  doc["onchip_capacity_bytes"] = workload.onchip_capacity_bytes;
  doc["models"] = nlohmann::ordered_json::array();
  for (const SimModel& model : workload.models) {
    nlohmann::ordered_json m;
    m["name"] = model.name;
    m["steps"] = nlohmann::ordered_json::array();
    for (const SimStep& step : model.steps) {
      nlohmann::ordered_json s;
      s["name"] = step.name;
      s["compute_us"] = step.compute_us;
      s["memory_us"] = step.memory_us;
      s["onchip_bytes"] = step.onchip_bytes;
      if (step.live_bytes_after > 0) s["live_bytes_after"] = step.live_bytes_after;
      if (step.cancellation_point) s["cancellation_point"] = *step.cancellation_point;
      for (const KernelSpec& k : step.kernels) {
        nlohmann::ordered_json kernel;
        kernel["name"] = k.name;
        kernel["blocks"] = k.blocks;
        kernel["threads_per_block"] = k.threads_per_block;
        kernel["registers_per_thread"] = k.registers_per_thread;
        kernel["shared_bytes_per_block"] = k.shared_bytes_per_block;
        kernel["flops"] = k.flops;
        kernel["bytes"] = k.bytes;
        if (k.f16) kernel["f16"] = true;
        if (k.cooperative) kernel["cooperative"] = true;
        s["kernels"].push_back(std::move(kernel));
      }
      m["steps"].push_back(std::move(s));
    }
    doc["models"].push_back(std::move(m));
  }
  doc["requests"] = nlohmann::ordered_json::array();
  for (const SimRequest& request : workload.requests) {
    nlohmann::ordered_json r;
    r["model"] = request.model;
    r["arrival_us"] = request.arrival_us;
    r["priority"] = request.priority;
    if (request.follows) r["follows"] = *request.follows;
    if (request.host_us > 0) r["host_us"] = request.host_us;
    doc["requests"].push_back(std::move(r));
  }
  return doc.dump(2) + "\n";
}

}  // namespace loom::sim
