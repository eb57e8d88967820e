# The tools' --debug-compare on the CPU, against the cpu:accel stand-in (same kernels, so nothing
# may diverge and exit status 3 would be a bug):
#   cmake -DLOOM_BENCH=<loom-bench> [-DLOOM_RUN=<loom-run> -DMODEL_DIR=<ONNX test case>] -P check_debug_compare.cmake
# loom-bench on the default workload: one "no divergence" line per model, with every Step of every
# request compared; --compare beside --debug-compare refused. loom-run (when given) on one ONNX test
# case: "no divergence", and --debug-inputs without --debug-compare refused.
cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/../require.cmake)

execute_process(COMMAND ${LOOM_BENCH} --device=cpu:accel --debug-compare --size=small --iterations=2 --warmUp=0
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
require("loom-bench --debug-compare exits 0, not ${rc}:\n${out}\n${err}" rc EQUAL 0)
foreach(model resnet bert lstm)
  string(REGEX MATCH "\n${model}: no divergence: ([0-9]+) Steps \\(([0-9]+) requests\\) compared on [^\n]*max abs diff 0,"
               line "${out}")
  require("a no-divergence line for ${model} with max abs diff 0 in:\n${out}" line)
  require("${model}: ${CMAKE_MATCH_2} requests compared, at least 2" NOT CMAKE_MATCH_2 LESS 2)
  require("${model}: ${CMAKE_MATCH_1} Steps compared for ${CMAKE_MATCH_2} requests" CMAKE_MATCH_1 GREATER CMAKE_MATCH_2)
endforeach()

execute_process(COMMAND ${LOOM_BENCH} --device=cpu:accel --debug-compare --compare --iterations=1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
require("--compare with --debug-compare is refused (exit 2, not ${rc}): ${err}" rc EQUAL 2 AND err MATCHES "--compare")
message(STATUS "loom-bench --debug-compare checked")

if(NOT LOOM_RUN)
  return()
endif()
if(NOT IS_DIRECTORY "${MODEL_DIR}")
  message(FATAL_ERROR "the ONNX test case ${MODEL_DIR} is missing: run scripts/install-deps (libonnx-testdata)")
endif()
set(run ${LOOM_RUN} --onnx ${MODEL_DIR}/model.onnx --input-dir ${MODEL_DIR}/test_data_set_0 --device cpu:accel)
execute_process(COMMAND ${run} --output-dir ${WORK_DIR}/out --debug-compare
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
require("loom-run --debug-compare exits 0, not ${rc}:\n${out}\n${err}" rc EQUAL 0)
require("loom-run reports no divergence:\n${out}" out MATCHES "\nmodel: no divergence: [1-9][0-9]* Steps \\(1 requests\\)")
execute_process(COMMAND ${run} --output-dir ${WORK_DIR}/out --debug-inputs ${WORK_DIR}/inputs
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
require("--debug-inputs without --debug-compare is refused (exit 2, not ${rc}): ${err}"
        rc EQUAL 2 AND err MATCHES "--debug-inputs applies to --debug-compare")
message(STATUS "loom-run --debug-compare checked")
