#include "core/profile_dirs.hpp"

#include <cstdlib>

namespace loom::core {

std::vector<std::filesystem::path> profile_directories() {
  std::vector<std::filesystem::path> directories;
  if (const char* env = std::getenv("LOOM_PROFILE_DIR"); env && *env) directories.emplace_back(env);
  directories.emplace_back("profiles");
#ifdef LOOM_INSTALL_PROFILE_DIR
  directories.emplace_back(LOOM_INSTALL_PROFILE_DIR);
#endif
  return directories;
}

std::optional<std::string> resolve_file_option(const std::string& option, std::string_view off,
                                               const std::function<std::optional<std::string>()>& find) {
  if (option == off) return std::nullopt;
  if (option == "auto") return find();
  return option;
}

std::optional<std::string> find_in_profile_directories(const std::string& relative) {
  for (const auto& directory : profile_directories()) {
    const std::filesystem::path candidate = directory / relative;
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace loom::core
