// Device profiles on disk: the JSON format of docs/profile-format.md, file names per device, and
// where the executor looks for them.
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <istream>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"
#include "core/atomic_file.hpp"
#include "core/json_fields.hpp"
#include "core/profile_dirs.hpp"
#include "loom/profile.hpp"

namespace loom {
namespace {

using json = nlohmann::json;
// Written in the order of docs/profile-format.md (nlohmann::json would sort the keys).
using ordered_json = nlohmann::ordered_json;

constexpr int kFormatVersion = 1;

using core::FieldReader;

StepProfile read_step(const FieldReader& reader, const json& value, const std::string& field) {
  reader.object(value, field);
  StepProfile step;
  step.name = reader.string(value, field, "name", true);
  step.measured_us = reader.number(value, field, "measured_us", true);
  step.compute_probe_slowdown = reader.number(value, field, "compute_probe_slowdown", false);
  step.memory_probe_slowdown = reader.number(value, field, "memory_probe_slowdown", false);
  return step;
}

ModelProfile read_model(const FieldReader& reader, const json& value, const std::string& field) {
  reader.object(value, field);
  ModelProfile model;
  model.model = reader.string(value, field, "model", false);
  model.fingerprint = reader.string(value, field, "fingerprint", true);
  const std::string dtype = reader.string(value, field, "compute_dtype", true);
  try {
    model.compute_dtype = dtype_from_name(dtype);
  } catch (const Error&) {
    reader.fail(FieldReader::join(field, "compute_dtype"), "unknown dtype '" + dtype + "'");
  }
  const std::string steps_field = FieldReader::join(field, "steps");
  const json& steps = reader.array(value, field, "steps");
  for (std::size_t i = 0; i < steps.size(); ++i)
    model.steps.push_back(read_step(reader, steps[i], FieldReader::index(steps_field, i)));
  return model;
}

ordered_json step_json(const StepProfile& step) {
  return ordered_json{{"name", step.name},
                      {"measured_us", step.measured_us},
                      {"compute_probe_slowdown", step.compute_probe_slowdown},
                      {"memory_probe_slowdown", step.memory_probe_slowdown}};
}

ordered_json model_json(const ModelProfile& model) {
  ordered_json steps = ordered_json::array();
  for (const auto& step : model.steps) steps.push_back(step_json(step));
  return ordered_json{{"model", model.model},
                      {"fingerprint", model.fingerprint},
                      {"compute_dtype", std::string(dtype_name(model.compute_dtype))},
                      {"steps", std::move(steps)}};
}

}  // namespace

const ModelProfile* DeviceProfile::find(const std::string& fingerprint) const {
  for (const auto& model : models)
    if (model.fingerprint == fingerprint) return &model;
  return nullptr;
}

DeviceProfile parse_profile(std::istream& in, const std::string& source_name) {
  const FieldReader reader("profile '" + source_name + "'");
  const json doc = reader.parse(in);
  DeviceProfile profile;
  profile.format_version = reader.format_version(doc, kFormatVersion);
  profile.device_name = reader.string(doc, "", "device_name", true);
  profile.created = reader.string(doc, "", "created", false);
  profile.loom_version = reader.string(doc, "", "loom_version", false);
  profile.command = reader.string(doc, "", "command", false);

  const json& peaks = reader.object(reader.require(doc, "", "peaks"), "peaks");
  profile.peaks.flops_f32 = reader.number(peaks, "peaks", "flops_f32", true);
  profile.peaks.flops_f16 = reader.number(peaks, "peaks", "flops_f16", false);
  profile.peaks.bandwidth = reader.number(peaks, "peaks", "bandwidth", true);
  profile.peaks.method = reader.string(peaks, "peaks", "method", false);

  const json& models = reader.array(doc, "", "models");
  for (std::size_t i = 0; i < models.size(); ++i)
    profile.models.push_back(read_model(reader, models[i], FieldReader::index("models", i)));
  return profile;
}

DeviceProfile read_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::invalid_argument, "profile '" + path + "': cannot open the file");
  return parse_profile(in, path);
}

void write_profile(const DeviceProfile& profile, const std::string& path) {
  ordered_json models = ordered_json::array();
  for (const auto& model : profile.models) models.push_back(model_json(model));
  const ordered_json doc{{"format_version", profile.format_version},
                         {"device_name", profile.device_name},
                         {"created", profile.created},
                         {"loom_version", profile.loom_version},
                         {"command", profile.command},
                         {"peaks",
                          {{"flops_f32", profile.peaks.flops_f32},
                           {"flops_f16", profile.peaks.flops_f16},
                           {"bandwidth", profile.peaks.bandwidth},
                           {"method", profile.peaks.method}}},
                         {"models", std::move(models)}};

  core::write_file_atomically(path, doc.dump(2) + "\n", "profile '" + path + "'");
}

std::string profile_file_name(const std::string& device_name) {
  // Lower-case letters and digits; every run of anything else becomes one '-'.
  std::string stem;
  bool pending_dash = false;
  for (const char c : device_name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) && u < 0x80) {
      if (pending_dash && !stem.empty()) stem += '-';
      pending_dash = false;
      stem += static_cast<char>(std::tolower(u));
    } else {
      pending_dash = true;
    }
  }
  if (stem.empty()) stem = "unknown-device";
  return stem + ".json";
}

std::optional<std::string> find_profile(const std::string& device_name) {
  return core::find_in_profile_directories(profile_file_name(device_name));
}

}  // namespace loom
