// Reading one JSON document field by field, for the files Loom reads (device profiles, function
// libraries): every error is Error(invalid_argument) naming the document and the field's path
// (e.g. "models[1].steps[0].measured_us").
#pragma once

#include <istream>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"

namespace loom::core {

class FieldReader {
 public:
  using json = nlohmann::json;

  // `document` opens every message, e.g. "profile 'profiles/h200.json'".
  explicit FieldReader(std::string document) : document_(std::move(document)) {}

  // The JSON document read from `in`, which must be an object.
  json parse(std::istream& in) const {
    json doc;
    try {
      doc = json::parse(in);
    } catch (const json::exception& e) {
      throw Error(ErrorCode::invalid_argument, document_ + ": not valid JSON: " + e.what());
    }
    object(doc, "(document)");
    return doc;
  }

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw Error(ErrorCode::invalid_argument, document_ + ": field '" + field + "': " + problem);
  }

  const json& require(const json& object, const std::string& parent, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(join(parent, key), "missing");
    return *it;
  }

  std::string string(const json& object, const std::string& parent, const char* key, bool required) const {
    const json* value = lookup(object, parent, key, required);
    if (!value) return {};
    if (!value->is_string()) fail(join(parent, key), "expected a string, got " + type_of(*value));
    return value->get<std::string>();
  }

  // A number >= 0; 0 when absent and not required.
  double number(const json& object, const std::string& parent, const char* key, bool required) const {
    const json* value = lookup(object, parent, key, required);
    if (!value) return 0;
    if (!value->is_number()) fail(join(parent, key), "expected a number, got " + type_of(*value));
    const double result = value->get<double>();
    if (result < 0) fail(join(parent, key), "expected a number >= 0, got " + value->dump());
    return result;
  }

  bool boolean(const json& object, const std::string& parent, const char* key, bool required) const {
    const json* value = lookup(object, parent, key, required);
    if (!value) return false;
    if (!value->is_boolean()) fail(join(parent, key), "expected true or false, got " + type_of(*value));
    return value->get<bool>();
  }

  const json& array(const json& object, const std::string& parent, const char* key) const {
    const json& value = require(object, parent, key);
    if (!value.is_array()) fail(join(parent, key), "expected an array, got " + type_of(value));
    return value;
  }

  const json& object(const json& value, const std::string& field) const {
    if (!value.is_object()) fail(field, "expected an object, got " + type_of(value));
    return value;
  }

  // The document's format_version, which must be the JSON integer `supported`: a reader never
  // guesses at a newer format.
  int format_version(const json& doc, int supported) const {
    const json& version = require(doc, "", "format_version");
    if (!version.is_number_integer()) fail("format_version", "expected an integer, got " + type_of(version));
    // Compared as the JSON number, not narrowed to int first (2^32 + 1 is not version 1).
    if (version != supported)
      fail("format_version", "version " + version.dump() + " is not supported (this Loom reads version " +
                                 std::to_string(supported) + ")");
    return supported;
  }

  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }
  static std::string index(const std::string& parent, std::size_t i) { return parent + "[" + std::to_string(i) + "]"; }

 private:
  const json* lookup(const json& object, const std::string& parent, const char* key, bool required) const {
    const auto it = object.find(key);
    if (it != object.end()) return &*it;
    if (required) fail(join(parent, key), "missing");
    return nullptr;
  }
  static std::string type_of(const json& value) { return value.type_name(); }

  std::string document_;
};

}  // namespace loom::core
