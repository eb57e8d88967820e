# cpp-httplib (Debian's libcpp-httplib-dev), the metrics endpoint's HTTP server. Debian describes it
# by pkg-config only (no CMake config); where pkg-config is missing (a GPU machine building from the
# folder scripts/bundle-deps makes) the library and its cpp-httplib.pc are found on the prefix path
# and the .pc file's Cflags are read directly: the features the library was built with
# (CPPHTTPLIB_OPENSSL_SUPPORT, ...) decide the declarations its header makes, so the flags must
# match the library's. Sets LOOM_HTTPLIB_LINK_LIBRARIES and LOOM_HTTPLIB_CFLAGS, or stops.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(LOOM_HTTPLIB QUIET cpp-httplib)
endif()
if(NOT LOOM_HTTPLIB_FOUND)
  find_path(LOOM_HTTPLIB_INCLUDE_DIR httplib.h)
  find_library(LOOM_HTTPLIB_LIBRARY cpp-httplib)
  find_file(LOOM_HTTPLIB_PC cpp-httplib.pc PATH_SUFFIXES lib/pkgconfig lib/x86_64-linux-gnu/pkgconfig
                                                         lib/aarch64-linux-gnu/pkgconfig share/pkgconfig)
  if(NOT LOOM_HTTPLIB_INCLUDE_DIR OR NOT LOOM_HTTPLIB_LIBRARY OR NOT LOOM_HTTPLIB_PC)
    message(FATAL_ERROR "cpp-httplib not found (httplib.h: ${LOOM_HTTPLIB_INCLUDE_DIR}, the library: "
                        "${LOOM_HTTPLIB_LIBRARY}, cpp-httplib.pc: ${LOOM_HTTPLIB_PC}); install Debian's "
                        "libcpp-httplib-dev (scripts/install-deps), or point CMAKE_PREFIX_PATH at a folder made by "
                        "scripts/bundle-deps")
  endif()
  file(STRINGS "${LOOM_HTTPLIB_PC}" cflags_line REGEX "^Cflags:")
  string(REGEX MATCHALL "-D[A-Za-z0-9_]+(=[^ ]*)?" LOOM_HTTPLIB_CFLAGS "${cflags_line}")
  list(PREPEND LOOM_HTTPLIB_CFLAGS "-I${LOOM_HTTPLIB_INCLUDE_DIR}")
  set(LOOM_HTTPLIB_LINK_LIBRARIES "${LOOM_HTTPLIB_LIBRARY}")
  message(STATUS "Loom: cpp-httplib ${LOOM_HTTPLIB_LIBRARY} (flags from ${LOOM_HTTPLIB_PC}: ${LOOM_HTTPLIB_CFLAGS})")
endif()
