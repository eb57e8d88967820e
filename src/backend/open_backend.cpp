// The backend registry and open_backend(), the one parser of device strings.
#include "backend/open_backend.hpp"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "loom/error.hpp"

namespace loom::backend {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<BackendEntry> entries;  // highest preference first
};

Registry& registry() {
  // Never destroyed: registrations run from other files' static initializers, in any order.
  static auto* r = new Registry();
  return *r;
}

std::string registered_names() {
  std::string names;
  for (const BackendEntry& e : registered_backends()) names += (names.empty() ? "" : ", ") + e.name;
  return names;
}

}  // namespace

bool register_backend(BackendEntry entry) noexcept {
  try {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const BackendEntry& e : r.entries)
      if (e.name == entry.name) return true;
    const auto at = std::find_if(r.entries.begin(), r.entries.end(),
                                 [&](const BackendEntry& e) { return e.preference < entry.preference; });
    r.entries.insert(at, std::move(entry));
  } catch (...) {
    // Out of memory at library load: the backend is simply not offered.
  }
  return true;
}

std::vector<BackendEntry> registered_backends() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.entries;
}

std::unique_ptr<Backend> open_backend(const std::string& device) {
  const std::vector<BackendEntry> entries = registered_backends();
  if (device == "auto") {
    for (const BackendEntry& e : entries)
      if (e.device_count() > 0) return e.open(0);
    throw Error(ErrorCode::backend,
                "device 'auto': no registered backend has a device (registered: " + registered_names() + ")");
  }
  // A registered name that holds a colon ("cpu:accel") is a device of its own, not NAME:N.
  const auto exact =
      std::find_if(entries.begin(), entries.end(), [&](const BackendEntry& e) { return e.name == device; });
  if (exact != entries.end() && device.find(':') != std::string::npos) {
    if (exact->device_count() == 0)
      throw Error(ErrorCode::backend, "device '" + device + "' requested but it is not present");
    return exact->open(0);
  }
  const std::size_t colon = device.find(':');
  const std::string name = device.substr(0, colon);
  const auto entry =
      std::find_if(entries.begin(), entries.end(), [&](const BackendEntry& e) { return e.name == name; });
  if (entry == entries.end())
    throw Error(ErrorCode::invalid_argument,
                "unknown device '" + device + "' (expected auto, or NAME or NAME:N for " + registered_names() + ")");
  int index = 0;
  if (colon != std::string::npos) {
    try {
      std::size_t used = 0;
      const std::string number = device.substr(colon + 1);
      index = std::stoi(number, &used);
      if (used != number.size() || index < 0) throw std::invalid_argument(device);
    } catch (const std::exception&) {
      throw Error(ErrorCode::invalid_argument, "bad device '" + device + "' (expected " + name + ":N)");
    }
  }
  const int count = entry->device_count();
  if (index >= count)
    throw Error(ErrorCode::backend, "device '" + device + "' requested but " +
                                        (count == 0 ? "no " + name + " device is present"
                                                    : std::to_string(count) + " " + name + " device(s) are present"));
  return entry->open(index);
}

}  // namespace loom::backend
