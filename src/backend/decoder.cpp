// The registry of decoder factories, one per backend, filled at library load by each backend's
// decode files and read by the DecodeEngine through make_device_decoder().
#include "backend/decoder.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "loom/error.hpp"

namespace loom::backend {
namespace {

struct DecoderRegistry {
  std::mutex mutex;
  std::map<std::string, DecoderFactory> factories;  // nullptr: registered twice, or null
};

DecoderRegistry& registry() {
  // Never destroyed: registrations run from other files' static initializers, in any order.
  static auto* r = new DecoderRegistry();
  return *r;
}

std::string names(const std::vector<std::string>& list) {
  std::string text;
  for (const std::string& name : list) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}

}  // namespace

bool register_decoder_factory(std::string backend, DecoderFactory factory) noexcept {
  try {
    DecoderRegistry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto [at, added] = r.factories.emplace(std::move(backend), factory);
    if (!added) at->second = nullptr;
  } catch (...) {
    // Out of memory at library load: the backend simply has no decoders.
  }
  return true;
}

std::vector<std::string> decoder_backends() {
  DecoderRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> list;
  for (const auto& entry : r.factories) list.push_back(entry.first);
  return list;
}

DecoderFactory decoder_factory(const std::string& backend) {
  DecoderRegistry& r = registry();
  {
    std::lock_guard lock(r.mutex);
    const auto found = r.factories.find(backend);
    if (found != r.factories.end()) {
      if (!found->second)
        throw Error(ErrorCode::internal, "the " + backend + " backend's decoders are registered twice, or null");
      return found->second;
    }
  }
  throw Error(ErrorCode::unsupported, "no decoder for the " + backend +
                                          " backend in this build (decoders for: " + names(decoder_backends()) + ")");
}

std::unique_ptr<DeviceDecoder> make_device_decoder(const DecoderProgram& program, Backend& device) {
  DecoderFactory factory = nullptr;
  try {
    factory = decoder_factory(device.name());
  } catch (const Error& e) {
    throw Error(e.code(), "decoder '" + program.name + "': " + e.what());
  }
  return factory(program, device);
}

}  // namespace loom::backend
