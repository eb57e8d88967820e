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

}  // namespace loom::core
