# Runs scripts/gpu-check --dry-run (no GPU needed) and checks the plan it prints: every step, in
# order, each with a timeout and a command; the timeouts add up to the printed worst case, every
# phase fits one call's budget (with the preflight), and the whole check stays under 20 minutes.
#   cmake -DGPU_CHECK=<path to scripts/gpu-check> -DWORK_DIR=<scratch folder> -P check_gpu_check_dry_run.cmake
cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/../require.cmake)

# dry_run(<out var> args...): the output of `gpu-check --dry-run args... WORK_DIR/out`, which must
# exit 0 and leave WORK_DIR/out unmade.
function(dry_run out_var)
  file(REMOVE_RECURSE ${WORK_DIR}/out)
  execute_process(COMMAND ${GPU_CHECK} --dry-run ${ARGN} ${WORK_DIR}/out
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gpu-check --dry-run ${ARGN} exited ${rc}:\n${out}\n${err}")
  endif()
  require("--dry-run ${ARGN} wrote nothing" NOT EXISTS ${WORK_DIR}/out)
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# steps(<output> <prefix>): <prefix>_names, <prefix>_phases, <prefix>_timeouts, <prefix>_commands.
set(step_regex "step +([0-9]+) +([a-z]+) +([a-z0-9-]+) +timeout +([0-9]+) s  ([^\n]*)")
function(steps output prefix)
  string(REGEX MATCHALL "(^|\n)${step_regex}" lines "${output}")
  set(names "")
  set(phases "")
  set(timeouts "")
  set(commands "")
  set(expected_index 0)
  foreach(line IN LISTS lines)
    string(REGEX MATCH "${step_regex}" _ "${line}")
    require("step ${CMAKE_MATCH_3} is number ${expected_index}, not ${CMAKE_MATCH_1}" CMAKE_MATCH_1 EQUAL expected_index)
    require("step ${CMAKE_MATCH_3} has a timeout of at least 1 s (${CMAKE_MATCH_4})" CMAKE_MATCH_4 GREATER 0)
    string(STRIP "${CMAKE_MATCH_5}" command)
    require("step ${CMAKE_MATCH_3} has a command" NOT command STREQUAL empty)
    list(APPEND names ${CMAKE_MATCH_3})
    list(APPEND phases ${CMAKE_MATCH_2})
    list(APPEND timeouts ${CMAKE_MATCH_4})
    list(APPEND commands "${command}")
    math(EXPR expected_index "${expected_index} + 1")
  endforeach()
  set(${prefix}_names "${names}" PARENT_SCOPE)
  set(${prefix}_phases "${phases}" PARENT_SCOPE)
  set(${prefix}_timeouts "${timeouts}" PARENT_SCOPE)
  set(${prefix}_commands "${commands}" PARENT_SCOPE)
endfunction()

# require() passes its condition on as words: compare with variables by name, not with "" or lists.
set(empty "")
set(budget 540)
set(twenty_minutes 1200)
set(build_steps preflight deps configure build)
set(test_steps gpu-tests unit-tests sanitizer-memcheck sanitizer-racecheck)
set(bench_steps calibrate bench-resnet-b1 bench-resnet-b8 bench-bert-b1 bench-bert-b8 bench-lstm-b1 bench-lstm-b8
                bench-mix-b1 bench-mix-b8 compare-closed compare-open decode-lstm decode-greedy preempt)

# --help documents the modes.
execute_process(COMMAND ${GPU_CHECK} --help RESULT_VARIABLE rc OUTPUT_VARIABLE help)
require("--help exits 0 (${rc})" rc EQUAL 0)
foreach(option --dry-run --budget --build-only --no-build --self-test "Exit status")
  string(FIND "${help}" "${option}" at)
  require("--help mentions ${option}" at GREATER -1)
endforeach()

# The whole check: every step in order, and the timeouts within 20 minutes and one call per phase.
dry_run(all)
steps("${all}" all)
set(expected "${build_steps};${test_steps};${bench_steps}")
require("steps in order: ${all_names}" all_names STREQUAL expected)
set(total 0)
set(sum_all 0)
set(sum_build 0)
set(sum_test 0)
set(sum_bench 0)
foreach(name phase timeout IN ZIP_LISTS all_names all_phases all_timeouts)
  math(EXPR total "${total} + ${timeout}")
  math(EXPR sum_${phase} "${sum_${phase}} + ${timeout}")
endforeach()
string(REGEX MATCH "worst case: ([0-9]+) s for ([0-9]+) steps" _ "${all}")
require("the printed worst case ${CMAKE_MATCH_1} s is the sum of the timeouts, ${total} s" CMAKE_MATCH_1 EQUAL total)
require("the printed step count ${CMAKE_MATCH_2} is 22" CMAKE_MATCH_2 EQUAL 22)
require("the whole check, ${total} s of timeouts, is under 20 minutes" total LESS twenty_minutes)
foreach(phase build test bench)
  math(EXPR call "${sum_all} + ${sum_${phase}}")
  require("the ${phase} phase with the preflight, ${call} s, fits one call's ${budget} s" NOT call GREATER budget)
endforeach()
string(FIND "${all}" "budget: ${budget} s" at)
require("the default budget is ${budget} s" at GREATER -1)

# What runs: per-test ctest timeouts, every benchmark on CUDA, both sanitizers on the GPU tests,
# the calibration's JSON and table into the bundle.
foreach(name command IN ZIP_LISTS all_names all_commands)
  if(name MATCHES "-tests$")
    require("${name} sets a per-test timeout: ${command}" command MATCHES "^ctest .*--timeout [0-9]+")
  elseif(name MATCHES "^sanitizer-(.*)$")
    require("${name} runs --tool ${CMAKE_MATCH_1} on the GPU tests: ${command}"
            command MATCHES "--tool ${CMAKE_MATCH_1} .*loom_gpu_tests '?--gtest_filter=")
  elseif(name STREQUAL "calibrate")
    require("calibrate writes its JSON and its table into the bundle: ${command}"
            command MATCHES "loom-gpu-calibrate --json [^ ]*/out/calibration.json >[^ ]*/out/calibration.md$")
  elseif(name MATCHES "^(bench|compare|decode|preempt)")
    require("${name} runs on CUDA and prints JSON: ${command}" command MATCHES "--device[= ]cuda" AND command MATCHES "--json")
  endif()
endforeach()
list(GET all_commands 3 build_command)
require("the build uses every core: ${build_command}" build_command MATCHES "^cmake --build .* -j [0-9]+$")

# Each phase alone fits the budget even if every step ran to its timeout.
foreach(mode "--build-only" "--only;test" "--only;bench")
  dry_run(one ${mode})
  string(FIND "${one}" "fits: yes" at)
  require("gpu-check --dry-run ${mode} fits ${budget} s" at GREATER -1)
endforeach()
dry_run(build_only --build-only)
steps("${build_only}" build_only)
require("--build-only runs ${build_steps}, not ${build_only_names}" build_only_names STREQUAL build_steps)
dry_run(no_build --no-build)
steps("${no_build}" no_build)
set(expected "preflight;${test_steps};${bench_steps}")
require("--no-build runs preflight and the test and bench steps, not ${no_build_names}" no_build_names STREQUAL expected)

# --timeout and --budget: overridden timeouts are shown, and a small budget does not fit.
dry_run(small --budget 100 --timeout bench-*=20 --timeout=gpu-tests=7)
steps("${small}" small)
foreach(name timeout IN ZIP_LISTS small_names small_timeouts)
  if(name MATCHES "^bench-")
    require("--timeout bench-*=20 gives ${name} 20 s, not ${timeout}" timeout EQUAL 20)
  elseif(name STREQUAL "gpu-tests")
    require("--timeout=gpu-tests=7 gives gpu-tests 7 s, not ${timeout}" timeout EQUAL 7)
  endif()
endforeach()
string(REGEX MATCH "fits: only if[^\n]*not run \\(budget\\)\": ([^\n]*)" _ "${small}")
require("--budget 100 leaves steps not run in the worst case" NOT CMAKE_MATCH_1 STREQUAL empty)

# Bad options exit 2 and run nothing.
execute_process(COMMAND ${GPU_CHECK} --dry-run --only deploy RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
require("--only deploy exits 2 (${rc})" rc EQUAL 2)
execute_process(COMMAND ${GPU_CHECK} --dry-run --budget soon RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
require("--budget soon exits 2 (${rc})" rc EQUAL 2)
message(STATUS "gpu-check --dry-run: ${total} s of timeouts over 22 steps; build ${sum_build} s, test ${sum_test} s, "
               "bench ${sum_bench} s, preflight ${sum_all} s")
