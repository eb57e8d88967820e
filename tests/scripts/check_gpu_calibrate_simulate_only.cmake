# Runs loom-gpu-calibrate --simulate-only (no CUDA call, no GPU needed) and checks what gpu-check's
# calibrate step relies on: --help explains every case; every case is printed as a table row with a
# simulated figure and no measured one; --json writes valid JSON naming the description, every case
# in order with its kernels and quantities; the cases are wired to the laws they mirror (co-run
# beats co-run-sequence, the urgent stream's priority shortens its wait, two memory-bound kernels
# gain nothing); a description given by path works; bad flags fail.
#   cmake -DCALIBRATE=<loom-gpu-calibrate> -DSOURCE_DIR=<repository> -DWORK_DIR=<scratch> -P check_gpu_calibrate_simulate_only.cmake
cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/../require.cmake)

# require() passes its condition on as words: compare with variables by name, not with "".
set(empty "")
set(cases compute-alone memory-alone memory-narrow half-pair full-pair co-run co-run-sequence memory-pair
          priority priority-equal cooperative launch graph-launch graph-launch-10)
list(LENGTH cases case_count)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# --help explains each case and every option.
execute_process(COMMAND ${CALIBRATE} --help RESULT_VARIABLE rc OUTPUT_VARIABLE help ERROR_VARIABLE err)
require("--help exits 0 (${rc}): ${err}" rc EQUAL 0)
foreach(word IN LISTS cases ITEMS --simulate-only --repeat --json --gpu)
  string(FIND "${help}" "${word}" at)
  require("--help mentions ${word}" at GREATER -1)
endforeach()

# json_get(<out> <document> <keys...>): the value, or a failed check naming the path.
function(json_get out doc)
  string(JSON value ERROR_VARIABLE error GET "${doc}" ${ARGN})
  require("the JSON has ${ARGN} (${error})" error STREQUAL "NOTFOUND")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# json_length(<out> <document> <keys...>): the length of that array.
function(json_length out doc)
  string(JSON value ERROR_VARIABLE error LENGTH "${doc}" ${ARGN})
  require("the JSON has an array at ${ARGN} (${error})" error STREQUAL "NOTFOUND")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# simulated(<out> <document> <case name> <quantity index>): that quantity's simulated_us.
function(simulated out doc name index)
  json_length(count "${doc}" cases)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    json_get(case_name "${doc}" cases ${i} name)
    if(case_name STREQUAL name)
      json_get(value "${doc}" cases ${i} quantities ${index} simulated_us)
      set(${out} "${value}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "check failed: no case ${name} in the JSON")
endfunction()

foreach(gpu h100-sxm l4)
  set(json_file ${WORK_DIR}/${gpu}.json)
  execute_process(COMMAND ${CALIBRATE} --simulate-only --gpu ${gpu} --json ${json_file}
                  WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  require("--simulate-only --gpu ${gpu} exits 0 (${rc}): ${err}" rc EQUAL 0)
  require("--simulate-only --gpu ${gpu} prints no warning or error: ${err}" err STREQUAL empty)
  foreach(name IN LISTS cases)
    # A row: | name | quantity | - (not measured) | simulated us | - |
    string(REGEX MATCH "\n\\| ${name} \\| [^|\n]+ \\| - \\| [0-9]+\\.[0-9]+ \\| - \\|" row "${out}")
    require("${gpu}: the table has a row for ${name} with a simulated figure and no measured one" NOT row STREQUAL empty)
  endforeach()
  string(FIND "${out}" "Suggested corrections to ${gpu}" at)
  require("${gpu}: the table names the description" at GREATER -1)

  require("${gpu}: --json wrote ${json_file}" EXISTS ${json_file})
  file(READ ${json_file} doc)
  json_get(mode "${doc}" mode)
  require("${gpu}: mode is simulate-only, not ${mode}" mode STREQUAL "simulate-only")
  string(JSON device_type TYPE "${doc}" device)
  require("${gpu}: device is null without a GPU (${device_type})" device_type STREQUAL "NULL")
  json_get(description "${doc}" description name)
  require("${gpu}: the description is ${gpu}, not ${description}" description STREQUAL gpu)
  json_length(count "${doc}" cases)
  require("${gpu}: ${count} cases in the JSON, ${case_count} expected" count EQUAL case_count)
  set(index 0)
  foreach(name IN LISTS cases)
    json_get(case_name "${doc}" cases ${index} name)
    require("${gpu}: case ${index} is ${name}, not ${case_name}" case_name STREQUAL name)
    json_get(law "${doc}" cases ${index} law)
    require("${gpu}: ${name} states its law" NOT law STREQUAL empty)
    json_get(kind "${doc}" cases ${index} kind)
    if(kind STREQUAL "kernels")
      json_length(kernels "${doc}" cases ${index} kernels)
      require("${gpu}: ${name} has kernels" kernels GREATER 0)
      math(EXPR last_kernel "${kernels} - 1")
      foreach(k RANGE ${last_kernel})
        json_get(blocks "${doc}" cases ${index} kernels ${k} blocks)
        json_get(flops "${doc}" cases ${index} kernels ${k} flops)
        json_get(bytes "${doc}" cases ${index} kernels ${k} bytes)
        require("${gpu}: ${name} kernel ${k} has blocks (${blocks})" blocks GREATER 0)
        require("${gpu}: ${name} kernel ${k} has work (${flops} FLOPs, ${bytes} bytes)" flops GREATER 0 OR bytes GREATER 0)
      endforeach()
    endif()
    json_length(quantities "${doc}" cases ${index} quantities)
    require("${gpu}: ${name} has quantities" quantities GREATER 0)
    math(EXPR last_quantity "${quantities} - 1")
    foreach(q RANGE ${last_quantity})
      json_get(value "${doc}" cases ${index} quantities ${q} simulated_us)
      require("${gpu}: ${name} quantity ${q} is simulated (${value})" value GREATER 0)
      string(JSON measured_type TYPE "${doc}" cases ${index} quantities ${q} measured_us)
      require("${gpu}: ${name} quantity ${q} is not measured" measured_type STREQUAL "NULL")
    endforeach()
    math(EXPR index "${index} + 1")
  endforeach()

  # The cases exercise their laws on the model.
  simulated(co_run "${doc}" co-run 0)
  simulated(sequence "${doc}" co-run-sequence 0)
  require("${gpu}: co-run (${co_run} us) is shorter than co-run-sequence (${sequence} us)" co_run LESS sequence)
  simulated(urgent "${doc}" priority 0)
  simulated(urgent_equal "${doc}" priority-equal 0)
  require("${gpu}: the urgent kernel waits less with priority (${urgent} us) than without (${urgent_equal} us)"
          urgent LESS urgent_equal)
  simulated(memory_alone "${doc}" memory-alone 0)
  simulated(memory_pair "${doc}" memory-pair 0)
  string(REGEX REPLACE "\\..*" "" memory_alone_whole "${memory_alone}")
  string(REGEX REPLACE "\\..*" "" memory_pair_whole "${memory_pair}")
  math(EXPR nearly_twice "${memory_alone_whole} * 19 / 10")
  require("${gpu}: two memory-bound kernels (${memory_pair} us) take about twice one alone (${memory_alone} us)"
          NOT memory_pair_whole LESS nearly_twice)
endforeach()

# A description given by path.
execute_process(COMMAND ${CALIBRATE} --simulate-only --gpu ${SOURCE_DIR}/profiles/gpu/a100-sxm.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
require("--gpu <path> exits 0 (${rc}): ${err}" rc EQUAL 0)
string(FIND "${out}" "against a100-sxm" at)
require("--gpu <path> simulates a100-sxm" at GREATER -1)

# Bad flags fail and say why.
execute_process(COMMAND ${CALIBRATE} --simulate-only --gpu no-such-gpu WORKING_DIRECTORY ${SOURCE_DIR}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
require("an unknown --gpu fails (${rc})" NOT rc EQUAL 0)
string(FIND "${err}" "unknown GPU 'no-such-gpu'" at)
require("an unknown --gpu is named: ${err}" at GREATER -1)
execute_process(COMMAND ${CALIBRATE} --simulate-only --repeat 0 RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
require("--repeat 0 fails (${rc})" NOT rc EQUAL 0)
message(STATUS "loom-gpu-calibrate --simulate-only: ${case_count} cases on h100-sxm and l4, JSON checked")
