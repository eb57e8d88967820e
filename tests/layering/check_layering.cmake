# The layering check: every #include "..." in include/loom/, src/ and kernels/ must point to the
# file's own layer or to a layer it may use (docs/architecture.md, "Layers"). Script mode:
#
#   cmake -DROOT=<source tree> -P check_layering.cmake             check ROOT; exit 1 on a violation
#   cmake -DROOT=<source tree> -DSELF_TEST=ON -P check_layering.cmake
#                                                   check that the fixture's planted violations fail
#
# A violation prints "<file>:<line>: <layer> -> <layer>: #include "<path>" (<layer> may use: ...)".
# A file in no layer, or a quoted include that names no file of the tree, is an error too, so a new
# folder cannot slip past the check unclassified.
cmake_minimum_required(VERSION 3.20)

if(NOT DEFINED ROOT)
  message(FATAL_ERROR "check_layering: pass -DROOT=<source tree>")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

# --- The layers ----------------------------------------------------------------------------------
# loom_layer(<name> PATHS <prefixes> USES <layers>): the files whose ROOT-relative path starts with
# one of PATHS (the longest matching prefix wins) may include their own layer, the layers named in
# USES, and whatever those may use. A layer uses only layers declared above it, so the arrows
# cannot form a cycle. Public headers sit in `api` (types every layer shares) unless they declare a
# higher layer's entry points (Executor, DecodeEngine, simulate, ...): then they belong to it.
set(LAYER_NAMES "")
set(LAYER_PREFIXES "")
set(LAYER_OF_PREFIX "")
macro(loom_layer name)
  cmake_parse_arguments(_layer "" "" "PATHS;USES" ${ARGN})
  set(LAYER_${name}_USES ${_layer_USES})
  set(LAYER_${name}_REACH ${_layer_USES})
  foreach(_used IN LISTS _layer_USES)
    if(NOT _used IN_LIST LAYER_NAMES)
      message(FATAL_ERROR "check_layering: layer '${name}' uses '${_used}', which is not declared above it")
    endif()
    list(APPEND LAYER_${name}_REACH ${LAYER_${_used}_REACH})
  endforeach()
  list(REMOVE_DUPLICATES LAYER_${name}_REACH)
  list(APPEND LAYER_NAMES ${name})
  foreach(_prefix IN LISTS _layer_PATHS)
    list(APPEND LAYER_PREFIXES "${_prefix}")
    list(APPEND LAYER_OF_PREFIX ${name})
  endforeach()
endmacro()

loom_layer(api PATHS include/loom/)  # error, tensor, model, model_info, decode_types: plain types
loom_layer(core PATHS src/core/ USES api)
loom_layer(graph PATHS src/graph/ USES core)  # the IR's ops, shape inference; not passes/
loom_layer(onnx PATHS src/onnx/ include/loom/onnx.hpp USES graph)
loom_layer(workloads PATHS src/workloads/ include/loom/workloads.hpp USES graph)
loom_layer(plan PATHS src/plan/ USES graph)
# The seam (ops and decoders) and the parsing both backends share.
loom_layer(backend PATHS src/backend/ USES graph)
# Each backend's op kernels and, in decode/, its decoder loops (registered under its name).
loom_layer(backend-cpu PATHS src/backend/cpu/ USES backend)
loom_layer(backend-cuda PATHS src/backend/cuda/ kernels/ USES backend)
loom_layer(passes PATHS src/graph/passes/ USES graph backend)  # folding runs the CPU backend's kernels
loom_layer(sched PATHS src/sched/ include/loom/policy.hpp USES api)
# Stats as Prometheus text and the HTTP endpoint serving it; the runtime hands it a stats source.
loom_layer(metrics PATHS src/metrics/ USES api)
loom_layer(trace PATHS src/trace/ include/loom/trace.hpp USES backend)  # timed events of the seam
loom_layer(profile PATHS src/profile/ include/loom/profile.hpp USES plan backend)
loom_layer(sim PATHS src/sim/ include/loom/sim.hpp USES plan sched trace)
# Classification comes from passes; library files are named as device profiles are.
loom_layer(placement PATHS src/placement/ include/loom/placement.hpp USES passes profile)
# The DecodeEngine reaches each backend's decoder loops through the seam's registry only; its runs
# are NVTX ranges (trace).
loom_layer(decode PATHS src/decode/ include/loom/decode.hpp USES backend trace)
# The runtime talks to the backend seam only, never to backend-cpu or backend-cuda.
loom_layer(runtime PATHS src/runtime/ include/loom/executor.hpp USES plan backend sched trace profile metrics placement)
loom_layer(profiler PATHS src/profiler/ USES runtime profile)  # loads models as the runtime does
loom_layer(everything PATHS include/loom/loom.hpp USES onnx workloads runtime sim decode profile placement)

# Includes allowed against the table, each with the reason: "<file>|<included path>". An entry is
# a debt to pay back by moving a type or function down; keep the list short (empty today).
set(LAYERING_EXCEPTIONS "")

# --- The check -----------------------------------------------------------------------------------

# The layer of ROOT-relative `path`, or "" when no prefix matches.
function(layer_of path out)
  set(best "")
  set(best_length 0)
  foreach(prefix layer IN ZIP_LISTS LAYER_PREFIXES LAYER_OF_PREFIX)
    string(FIND "${path}" "${prefix}" at)
    string(LENGTH "${prefix}" length)
    if(at EQUAL 0 AND length GREATER best_length)
      set(best ${layer})
      set(best_length ${length})
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

# Where `#include "<name>"` in ROOT-relative `file` lands, as the compilers search: the including
# file's folder, then src/, include/ and kernels/ (the library's include path). "" when nowhere.
function(resolve_include file name out)
  get_filename_component(folder "${file}" DIRECTORY)
  foreach(base IN ITEMS "${folder}" src include kernels)
    if(EXISTS "${ROOT}/${base}/${name}" AND NOT IS_DIRECTORY "${ROOT}/${base}/${name}")
      file(RELATIVE_PATH found "${ROOT}" "${ROOT}/${base}/${name}")
      set(${out} "${found}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# Checks every file under ROOT; sets `out` to the list of problems (one line each).
function(check_tree out)
  set(problems "")
  set(used_exceptions "")
  set(sources "")
  foreach(folder IN ITEMS include/loom src kernels)
    if(IS_DIRECTORY "${ROOT}/${folder}")
      file(GLOB_RECURSE found RELATIVE "${ROOT}" "${ROOT}/${folder}/*.hpp" "${ROOT}/${folder}/*.h"
           "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.cuh" "${ROOT}/${folder}/*.cu")
      list(APPEND sources ${found})
    endif()
  endforeach()
  list(SORT sources)
  foreach(file IN LISTS sources)
    layer_of("${file}" from)
    if(from STREQUAL "")
      list(APPEND problems "${file}: in no layer (add its folder to the table in tests/layering/check_layering.cmake and to docs/architecture.md)")
      continue()
    endif()
    file(READ "${ROOT}/${file}" text)
    # Only the part up to the last #include matters; it is split into lines after characters
    # that CMake lists treat specially are masked.
    string(FIND "${text}" "#include" last REVERSE)
    if(last LESS 0)
      continue()
    endif()
    string(SUBSTRING "${text}" 0 ${last} head)
    string(SUBSTRING "${text}" ${last} -1 tail)
    string(FIND "${tail}" "\n" end)
    if(end GREATER_EQUAL 0)
      string(SUBSTRING "${tail}" 0 ${end} tail)
    endif()
    string(APPEND head "${tail}")
    string(REPLACE "\\" "/" head "${head}")
    string(REPLACE ";" "," head "${head}")
    string(REPLACE "[" "(" head "${head}")
    string(REPLACE "]" ")" head "${head}")
    string(REPLACE "\n" ";" lines "${head}")
    set(number 0)
    foreach(line IN LISTS lines)
      math(EXPR number "${number} + 1")
      if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
        continue()
      endif()
      set(name "${CMAKE_MATCH_1}")
      resolve_include("${file}" "${name}" target)
      if(target STREQUAL "")
        list(APPEND problems "${file}:${number}: #include \"${name}\" names no file under include/, src/ or kernels/")
        continue()
      endif()
      layer_of("${target}" to)
      if(to STREQUAL "")
        list(APPEND problems "${file}:${number}: #include \"${name}\" is in no layer")
        continue()
      endif()
      if(to STREQUAL from OR to IN_LIST LAYER_${from}_REACH)
        continue()
      endif()
      if("${file}|${name}" IN_LIST LAYERING_EXCEPTIONS)
        list(APPEND used_exceptions "${file}|${name}")
        continue()
      endif()
      string(REPLACE ";" ", " allowed "${LAYER_${from}_REACH}")
      if(allowed STREQUAL "")
        set(allowed "nothing else")
      endif()
      list(APPEND problems "${file}:${number}: ${from} -> ${to}: #include \"${name}\" (${from} may use: ${allowed})")
    endforeach()
  endforeach()
  # An exception whose file is still there but no longer needs it is stale: the list must shrink.
  foreach(exception IN LISTS LAYERING_EXCEPTIONS)
    string(REPLACE "|" ";" parts "${exception}")
    list(GET parts 0 file)
    if(EXISTS "${ROOT}/${file}" AND NOT exception IN_LIST used_exceptions)
      list(APPEND problems "${file}: the exception for \"${exception}\" is no longer needed (remove it)")
    endif()
  endforeach()
  set(${out} "${problems}" PARENT_SCOPE)
endfunction()

if(SELF_TEST)
  # The fixture plants two violations beside allowed includes; the check must fail and name both,
  # each with its file, line and arrow, and nothing else.
  get_filename_component(fixture "${CMAKE_CURRENT_LIST_DIR}/fixture" ABSOLUTE)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DROOT=${fixture} -P "${CMAKE_CURRENT_LIST_FILE}"
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  set(expected "src/core/uses_runtime.hpp:4: core -> runtime: #include \"runtime/runner.hpp\""
               "src/plan/uses_executor.hpp:5: plan -> runtime: #include \"loom/executor.hpp\"")
  set(failures "")
  if(result EQUAL 0)
    list(APPEND failures "the check passed a tree with planted violations")
  endif()
  foreach(line IN LISTS expected)
    string(FIND "${output}" "${line}" at)
    if(at LESS 0)
      list(APPEND failures "missing: ${line}")
    endif()
  endforeach()
  if(NOT output MATCHES "2 layering problems")
    list(APPEND failures "expected exactly 2 problems")
  endif()
  if(failures)
    string(REPLACE ";" "\n  " failures "${failures}")
    message(FATAL_ERROR "check_layering self-test failed:\n  ${failures}\nThe check printed:\n${output}")
  endif()
  message(STATUS "check_layering self-test: the planted violations are caught")
  return()
endif()

check_tree(problems)
if(problems)
  list(LENGTH problems count)
  foreach(problem IN LISTS problems)
    message(NOTICE "${problem}")
  endforeach()
  if(count EQUAL 1)
    set(count "1 layering problem")
  else()
    set(count "${count} layering problems")
  endif()
  message(FATAL_ERROR "${count} above (layers: docs/architecture.md, \"Layers\")")
endif()
message(STATUS "check_layering: every include of ${ROOT} keeps to the layers")
