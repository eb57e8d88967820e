// Where Loom looks for the files of profiles/: device profiles (find_profile) and the GPU model's
// descriptions (sim::gpu_device, in gpu/), in this order.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::core {

// $LOOM_PROFILE_DIR when set, ./profiles, then the installed share/loom/profiles.
std::vector<std::filesystem::path> profile_directories();

// The first <directory>/<relative> that is a regular file, in profile_directories() order;
// nullopt when none is.
std::optional<std::string> find_in_profile_directories(const std::string& relative);

// A file option as ExecutorOptions takes them (profile, function_library): `off` names no file
// (nullopt), "auto" the file `find` finds (nullopt when there is none), anything else is a path.
std::optional<std::string> resolve_file_option(const std::string& option, std::string_view off,
                                               const std::function<std::optional<std::string>()>& find);

}  // namespace loom::core
