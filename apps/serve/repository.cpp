// Reading the model repository: version folders, model.onnx and config.json (nlohmann_json), each
// problem kept as the model's error so that the other models still load.
#include "serve/repository.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"

namespace loom::serve {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& file, const std::string& key, const std::string& what) {
  throw std::runtime_error(file + ": key \"" + key + "\": " + what);
}

std::int64_t integer_at_least(const std::string& file, const std::string& key, const json& value,
                              std::int64_t minimum) {
  if (!value.is_number_integer()) refuse(file, key, "expected an integer, got " + value.dump());
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    refuse(file, key, "the value " + value.dump() + " is too large");
  const auto v = value.get<std::int64_t>();
  if (v < minimum) refuse(file, key, "expected an integer >= " + std::to_string(minimum) + ", got " + value.dump());
  return v;
}

double number_at_least_zero(const std::string& file, const std::string& key, const json& value) {
  if (!value.is_number()) refuse(file, key, "expected a number, got " + value.dump());
  const double v = value.get<double>();
  if (!(v >= 0) || v > 1e15) refuse(file, key, "expected a number >= 0, got " + value.dump());
  return v;
}

std::string string_of(const std::string& file, const std::string& key, const json& value) {
  if (!value.is_string()) refuse(file, key, "expected a string, got " + value.dump());
  return value.get<std::string>();
}

const json& object_of(const std::string& file, const std::string& key, const json& value) {
  if (!value.is_object()) refuse(file, key, "expected an object of dim names, got " + value.dump());
  return value;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_version_name(const std::string& name) {
  return !name.empty() && name.size() <= 18 &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }) && std::stoll(name) > 0;
}

}  // namespace

ModelConfig parse_model_config(const std::string& text, const std::string& file) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(file + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object()) throw std::runtime_error(file + ": expected a JSON object, got " + doc.dump());
  ModelConfig config;
  for (const auto& [key, value] : doc.items()) {
    if (key == "priority") {
      // The names are the library's (priority_from_name), not a second list here.
      try {
        config.priority = priority_from_name(string_of(file, key, value));
      } catch (const Error& e) {
        refuse(file, key, e.what());
      }
    } else if (key == "max_batch_size") {
      config.max_batch_size = integer_at_least(file, key, value, 0);
    } else if (key == "batch_dim") {
      config.batch_dim = string_of(file, key, value);
      if (config.batch_dim.empty()) refuse(file, key, "expected a dim name, got \"\"");
    } else if (key == "max_queue_delay_us") {
      config.max_queue_delay_us = number_at_least_zero(file, key, value);
    } else if (key == "dims") {
      for (const auto& [dim, size] : object_of(file, key, value).items())
        config.dims[dim] = integer_at_least(file, key + "." + dim, size, 1);
    } else if (key == "dim_ranges") {
      for (const auto& [dim, range] : object_of(file, key, value).items()) {
        const std::string where = key + "." + dim;
        if (!range.is_array() || range.size() != 3)
          refuse(file, where, "expected [min, opt, max], got " + range.dump());
        DimRange r{integer_at_least(file, where, range[0], 1), integer_at_least(file, where, range[1], 1),
                   integer_at_least(file, where, range[2], 1)};
        if (r.min > r.opt || r.opt > r.max) refuse(file, where, "expected min <= opt <= max, got " + range.dump());
        config.dim_ranges[dim] = r;
      }
    } else if (key == "device") {
      config.device = static_cast<int>(integer_at_least(file, key, value, 0));
      if (*config.device != value.get<std::int64_t>()) refuse(file, key, "the value " + value.dump() + " is too large");
    } else if (key == "timeout_ms") {
      config.timeout_ms = number_at_least_zero(file, key, value);
    } else if (key == "stream_priority") {
      // An unsigned value over INT64_MAX would read as a negative int64: compared as unsigned.
      if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<std::uint64_t>() > 1000) ||
          value.get<std::int64_t>() < -1000 || value.get<std::int64_t>() > 1000)
        refuse(file, key, "expected an integer from -1000 to 1000, got " + value.dump());
      config.stream_priority = value.get<int>();
    } else {
      refuse(file, key, std::string("unknown key (known: ") + kModelConfigKeys + ")");
    }
  }
  for (const auto& [dim, size] : config.dims)
    if (config.dim_ranges.count(dim))
      refuse(file, "dims." + dim, "the dim is also in dim_ranges (bound at load or left open: one of the two)");
  if (config.max_batch_size == 0 && !config.batch_dim.empty())
    refuse(file, "batch_dim", "given without max_batch_size > 0");
  return config;
}

std::vector<ModelEntry> scan_repository(const std::string& repository) {
  std::error_code ec;
  if (!fs::is_directory(repository, ec))
    throw Error(ErrorCode::invalid_argument, "model repository '" + repository + "' is not a folder" +
                                                 (ec ? " (" + ec.message() + ")" : std::string()));
  std::vector<fs::path> model_dirs;
  fs::directory_iterator it(repository, ec);
  if (ec)
    throw Error(ErrorCode::invalid_argument, "model repository '" + repository + "' cannot be read: " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec)
      throw Error(ErrorCode::invalid_argument, "model repository '" + repository + "' cannot be read: " + ec.message());
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] != '.' && it->is_directory(ec)) model_dirs.push_back(it->path());
  }
  std::sort(model_dirs.begin(), model_dirs.end());

  std::vector<ModelEntry> entries;
  for (const auto& dir : model_dirs) {
    ModelEntry& entry = entries.emplace_back();
    entry.name = dir.filename().string();
    // The highest numeric version folder holding a model.onnx.
    std::int64_t best = 0;
    bool any_version = false;
    for (fs::directory_iterator v(dir, ec); !ec && v != fs::directory_iterator(); v.increment(ec)) {
      const std::string version = v->path().filename().string();
      if (!is_version_name(version) || !v->is_directory(ec)) continue;
      any_version = true;
      if (std::stoll(version) > best && fs::is_regular_file(v->path() / "model.onnx", ec)) {
        best = std::stoll(version);
        entry.version = version;
        entry.path = (v->path() / "model.onnx").string();
      }
    }
    if (ec) {
      entry.error = dir.string() + ": cannot be read: " + ec.message();
      continue;
    }
    if (!any_version) {
      entry.error = dir.string() + ": no version folder (" + dir.string() + "/<positive integer>/model.onnx)";
      continue;
    }
    if (entry.path.empty()) {
      entry.error = dir.string() + ": no version folder holds a model.onnx";
      continue;
    }
    const fs::path config = dir / "config.json";
    if (fs::exists(config, ec)) {
      try {
        entry.config = parse_model_config(read_text(config), config.string());
      } catch (const std::exception& e) {
        entry.error = e.what();
      }
    }
  }
  return entries;
}

}  // namespace loom::serve
