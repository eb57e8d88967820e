# loom-serve's gRPC front end (KServe v2 over gRPC): Debian's gRPC 1.51 (libgrpc++-dev, its CMake
# package), protoc and grpc_cpp_plugin (protobuf-compiler, protobuf-compiler-grpc). Optional: when
# any of them is missing, loom-serve serves HTTP only. The protobuf is the one the top-level
# find_package(Protobuf) found for onnx_proto, the one Debian built gRPC with: the generated code
# and both libraries must come from one protobuf version. Defines loom_serve_grpc_proto (the code
# generated from proto/grpc_predict_v2.proto, one library) and sets LOOM_HAVE_GRPC.
set(LOOM_HAVE_GRPC OFF)
option(LOOM_ENABLE_GRPC "Build loom-serve's gRPC front end when gRPC is found" ON)
if(LOOM_ENABLE_GRPC)
  # The plugin first: the gRPC package's imported targets name it, and loading that package where
  # the plugin is not installed stops the configure instead of reporting "not found".
  find_program(LOOM_GRPC_CPP_PLUGIN grpc_cpp_plugin)
  if(LOOM_GRPC_CPP_PLUGIN AND Protobuf_PROTOC_EXECUTABLE)
    find_package(gRPC CONFIG QUIET)
  endif()
  if(TARGET gRPC::grpc++ AND LOOM_GRPC_CPP_PLUGIN AND Protobuf_PROTOC_EXECUTABLE)
    set(LOOM_HAVE_GRPC ON)
  endif()
endif()
if(NOT LOOM_HAVE_GRPC)
  message(STATUS "Loom: gRPC (libgrpc++-dev, protobuf-compiler, protobuf-compiler-grpc) not found or "
                 "LOOM_ENABLE_GRPC=OFF: loom-serve serves KServe v2 over HTTP only")
  return()
endif()
message(STATUS "Loom: loom-serve's gRPC front end on gRPC ${gRPC_VERSION} (protoc ${Protobuf_PROTOC_EXECUTABLE}, "
               "${LOOM_GRPC_CPP_PLUGIN})")

set(loom_grpc_proto ${PROJECT_SOURCE_DIR}/proto/grpc_predict_v2.proto)
set(loom_grpc_gen ${PROJECT_BINARY_DIR}/generated/proto)
set(loom_grpc_sources ${loom_grpc_gen}/grpc_predict_v2.pb.cc ${loom_grpc_gen}/grpc_predict_v2.grpc.pb.cc)
set(loom_grpc_headers ${loom_grpc_gen}/grpc_predict_v2.pb.h ${loom_grpc_gen}/grpc_predict_v2.grpc.pb.h)
add_custom_command(
  OUTPUT ${loom_grpc_sources} ${loom_grpc_headers}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${loom_grpc_gen}
  COMMAND ${Protobuf_PROTOC_EXECUTABLE} --proto_path=${PROJECT_SOURCE_DIR}/proto --cpp_out=${loom_grpc_gen}
          --grpc_out=${loom_grpc_gen} --plugin=protoc-gen-grpc=${LOOM_GRPC_CPP_PLUGIN} ${loom_grpc_proto}
  DEPENDS ${loom_grpc_proto}
  COMMENT "protoc: proto/grpc_predict_v2.proto (messages and the gRPC service)"
  VERBATIM)
add_library(loom_serve_grpc_proto STATIC ${loom_grpc_sources} ${loom_grpc_headers})
target_include_directories(loom_serve_grpc_proto SYSTEM PUBLIC ${loom_grpc_gen})
target_link_libraries(loom_serve_grpc_proto PUBLIC gRPC::grpc++ protobuf::libprotobuf)
