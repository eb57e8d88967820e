# loom-serve's HTTP front end (serve-http). Included by apps/CMakeLists.txt, and by
# tests/serve/CMakeLists.txt where the apps are off (the sanitizer presets), after loom_serve.cmake.
# loom_serve_parameters: the request parameters both front ends read ("priority", "timeout").
# loom_serve_http: the KServe v2 REST codec and front end; cpp-httplib's flags reach only
# http_frontend.cpp, the file that includes httplib.h.
set(LOOM_SERVE_HTTP_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(loom_serve_parameters STATIC ${LOOM_SERVE_HTTP_DIR}/request_parameters.cpp)
target_link_libraries(loom_serve_parameters PUBLIC loom)
target_include_directories(loom_serve_parameters PUBLIC ${LOOM_SERVE_HTTP_DIR})
target_compile_options(loom_serve_parameters PRIVATE -Wall -Wextra)

add_library(loom_serve_http STATIC ${LOOM_SERVE_HTTP_DIR}/http_codec.cpp ${LOOM_SERVE_HTTP_DIR}/http_frontend.cpp)
target_link_libraries(loom_serve_http PUBLIC loom_serve loom_serve_parameters
                                      PRIVATE nlohmann_json::nlohmann_json ${LOOM_HTTPLIB_LINK_LIBRARIES})
target_include_directories(loom_serve_http PUBLIC ${LOOM_SERVE_HTTP_DIR})
target_compile_options(loom_serve_http PRIVATE -Wall -Wextra)
set_source_files_properties(${LOOM_SERVE_HTTP_DIR}/http_frontend.cpp PROPERTIES COMPILE_OPTIONS "${LOOM_HTTPLIB_CFLAGS}")
