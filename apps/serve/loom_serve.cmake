# loom_serve: loom-serve's server layer below its front ends (apps/serve/: the model repository,
# one Executor per device, dynamic batching; docs/serve.md). Public API only, as any service
# embedding Loom; the tests (tests/serve) link it. Included by apps/CMakeLists.txt, and by
# tests/serve/CMakeLists.txt where the apps are off (LOOM_BUILD_APPS=OFF: the sanitizer presets), so
# the Service's tests run under ASan too.
set(LOOM_SERVE_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(loom_serve STATIC ${LOOM_SERVE_DIR}/service.cpp ${LOOM_SERVE_DIR}/repository.cpp
                              ${LOOM_SERVE_DIR}/batcher.cpp ${LOOM_SERVE_DIR}/devices.cpp)
target_link_libraries(loom_serve PUBLIC loom PRIVATE nlohmann_json::nlohmann_json)
target_include_directories(loom_serve PUBLIC ${LOOM_SERVE_DIR}/..)
target_compile_options(loom_serve PRIVATE -Wall -Wextra)
