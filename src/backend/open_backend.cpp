// open_backend(): the one parser of device strings.
#include "backend/open_backend.hpp"

#include <stdexcept>

#include "loom/error.hpp"

namespace loom::backend {

std::unique_ptr<Backend> open_backend(const std::string& device) {
  if (device == "cpu") return make_cpu_backend();
  if (device == "auto") return cuda_device_count() > 0 ? make_cuda_backend(0) : make_cpu_backend();
  if (device != "cuda" && device.rfind("cuda:", 0) != 0)
    throw Error(ErrorCode::invalid_argument, "unknown device '" + device + "' (expected auto, cpu, cuda or cuda:N)");
  int index = 0;
  if (device.size() > 5) {
    try {
      std::size_t used = 0;
      index = std::stoi(device.substr(5), &used);
      if (used != device.size() - 5 || index < 0) throw std::invalid_argument(device);
    } catch (const std::exception&) {
      throw Error(ErrorCode::invalid_argument, "bad device '" + device + "' (expected cuda:N)");
    }
  }
  const int count = cuda_device_count();
  if (index >= count)
    throw Error(ErrorCode::backend, "device '" + device + "' requested but " +
                                        (count == 0 ? std::string("no CUDA device is present")
                                                    : std::to_string(count) + " CUDA device(s) are present"));
  return make_cuda_backend(index);
}

}  // namespace loom::backend
