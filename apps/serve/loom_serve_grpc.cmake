# loom-serve's gRPC front end (serve-grpc). Included by apps/CMakeLists.txt, and by
# tests/serve/CMakeLists.txt where the apps are off (the sanitizer presets), after
# loom_serve.cmake and loom_serve_http.cmake (loom_serve_parameters: the request parameters both
# front ends read). cmake/loom_grpc.cmake finds gRPC and generates the protocol's code
# (loom_serve_grpc_proto); without gRPC, loom_serve_grpc is not defined.
# loom_serve_grpc: the KServe v2 gRPC codec and front end.
include(${PROJECT_SOURCE_DIR}/cmake/loom_grpc.cmake)
if(LOOM_HAVE_GRPC)
  set(LOOM_SERVE_GRPC_DIR ${CMAKE_CURRENT_LIST_DIR})
  add_library(loom_serve_grpc STATIC ${LOOM_SERVE_GRPC_DIR}/grpc_codec.cpp ${LOOM_SERVE_GRPC_DIR}/grpc_frontend.cpp)
  target_link_libraries(loom_serve_grpc PUBLIC loom_serve loom_serve_parameters loom_serve_grpc_proto)
  target_include_directories(loom_serve_grpc PUBLIC ${LOOM_SERVE_GRPC_DIR})
  target_compile_options(loom_serve_grpc PRIVATE -Wall -Wextra)
endif()
