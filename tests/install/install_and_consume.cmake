# Run by ctest (see CMakeLists.txt here): cmake --install into WORK_DIR/prefix, then build and run
# the consumer project against that prefix alone. Any failing step fails the test.
foreach(var LOOM_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT ${var})
    message(FATAL_ERROR "install_and_consume.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_and_consume: ${what} failed (${rc}): ${ARGN}")
  endif()
endfunction()

run_step("cmake --install" ${CMAKE_COMMAND} --install ${LOOM_BUILD_DIR} --prefix ${prefix} --config ${BUILD_TYPE})

set(configure_args -S ${CONSUMER_SOURCE_DIR} -B ${consumer_build} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    -DCMAKE_PREFIX_PATH=${prefix}
    # Only the fresh install may satisfy find_package(loom): no package registries.
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    -DEXPECTED_LOOM_PREFIX=${prefix})
if(MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(CXX_LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()
run_step("configuring the consumer" ${CMAKE_COMMAND} ${configure_args})
run_step("building the consumer" ${CMAKE_COMMAND} --build ${consumer_build} --config ${BUILD_TYPE})
run_step("running the consumer" ${consumer_build}/loom_consumer)
message(STATUS "install_and_consume: passed")
