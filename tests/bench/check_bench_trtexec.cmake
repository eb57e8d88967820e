# loom-bench's trtexec and perf_analyzer flags run for real on the CPU with small budgets; checks
# of behaviour and structure, never of timings.
#   cmake -DLOOM_BENCH=<loom-bench> -DLOOM_RUN=<loom-run> -DCHECK=<loom_bench_check> -DWORK_DIR=<dir>
#         -DMODE=io|profile|sweep|stability -P check_bench_trtexec.cmake
# io:        --loadInputs of an .npy binds an ONNX model's batch dim (2 rows) and --exportOutput holds
#            exactly what loom-run writes for the same model and input file (an independent path);
#            a wrong shape, a missing file and an unknown input fail with messages naming them.
# profile:   --exportProfile against the --json report of the same run (loom_bench_check profile).
# sweep:     --concurrency-range=1:2:1 --csv gives 2 points, a row per model and an "all" row each;
#            the --json sweep has 2 points; a backwards range exits 2 naming the flag.
# stability: --measurement-interval: at most --max-trials windows, figures over the last 3, and a
#            run that stopped early was stable.
cmake_minimum_required(VERSION 3.25)  # string(JSON)

include(${CMAKE_CURRENT_LIST_DIR}/../require.cmake)

# Runs `command...`; sets <prefix>_rc, <prefix>_out and <prefix>_err. Every run has a timeout.
function(run prefix)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
  set(${prefix}_err "${err}" PARENT_SCOPE)
endfunction()

function(run_ok prefix)
  run(r ${ARGN})
  if(NOT r_rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nexited ${r_rc}:\n${r_out}\n${r_err}")
  endif()
  set(${prefix}_out "${r_out}" PARENT_SCOPE)
  set(${prefix}_err "${r_err}" PARENT_SCOPE)
endfunction()

# Expects exit status `status` and every further argument in stderr.
function(expect_failure status what)
  cmake_parse_arguments(F "" "" "COMMAND;MESSAGE" ${ARGN})
  run(r ${F_COMMAND})
  require("${what}: exit status ${r_rc}, expected ${status}; stderr:\n${r_err}" r_rc EQUAL status)
  foreach(part IN LISTS F_MESSAGE)
    string(FIND "${r_err}" "${part}" at)
    require("${what}: stderr names '${part}':\n${r_err}" NOT at EQUAL -1)
  endforeach()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(cpu --device=cpu --size=small --warmUp=20)

if(MODE STREQUAL "io")
  run_ok(made ${CHECK} make ${WORK_DIR})
  set(onnx --onnx=${WORK_DIR}/mlp.onnx)
  run_ok(bench ${LOOM_BENCH} ${cpu} ${onnx} --iterations=3 --loadInputs=x:${WORK_DIR}/in/input_0.npy
         --exportOutput=${WORK_DIR}/outputs.json --json)
  file(READ ${WORK_DIR}/outputs.json outputs)
  string(JSON dims GET "${outputs}" 0 dimensions)
  string(JSON model GET "${outputs}" 0 model)
  require("the file's 2 rows bind the batch dim: dimensions ${dims}" dims STREQUAL "2x3")
  require("the output belongs to mlp, not ${model}" model STREQUAL "mlp")
  run_ok(loom_run ${LOOM_RUN} --onnx ${WORK_DIR}/mlp.onnx --input-dir ${WORK_DIR}/in --output-dir ${WORK_DIR}/run
         --device cpu)
  run_ok(same ${CHECK} same-outputs ${WORK_DIR}/outputs.json ${WORK_DIR}/run/output_0.pb)
  message(STATUS "${same_out}")

  expect_failure(1 "a file of the wrong shape"
                 COMMAND ${LOOM_BENCH} ${cpu} ${onnx} --iterations=1 --loadInputs=x:${WORK_DIR}/wrong.npy
                 MESSAGE "--loadInputs: input mlp/x from ${WORK_DIR}/wrong.npy" "shape 2x5" "x (N x 4) f32")
  expect_failure(1 "a missing file"
                 COMMAND ${LOOM_BENCH} ${cpu} ${onnx} --iterations=1 --loadInputs=mlp/x:${WORK_DIR}/missing.npy
                 MESSAGE "mlp/x" "${WORK_DIR}/missing.npy")
  expect_failure(2 "an input no model has"
                 COMMAND ${LOOM_BENCH} ${cpu} ${onnx} --iterations=1 --loadInputs=images:${WORK_DIR}/wrong.npy
                 MESSAGE "--loadInputs" "no running model has an input 'images'" "mlp/x")
  message(STATUS "loom-bench --loadInputs/--exportOutput checked")
elseif(MODE STREQUAL "profile")
  run_ok(bench ${LOOM_BENCH} ${cpu} --models=lstm,resnet --iterations=3 --exportProfile=${WORK_DIR}/profile.json
         --json)
  file(WRITE ${WORK_DIR}/report.json "${bench_out}")
  run_ok(checked ${CHECK} profile ${WORK_DIR}/profile.json ${WORK_DIR}/report.json)
  message(STATUS "${checked_out}")
  run_ok(printed ${LOOM_BENCH} ${cpu} --models=lstm --iterations=2 --dumpProfile)
  foreach(part "=== Profile: lstm (" "Time(ms)" "Total")
    string(FIND "${printed_out}" "${part}" at)
    require("--dumpProfile prints '${part}'" NOT at EQUAL -1)
  endforeach()
  message(STATUS "loom-bench --exportProfile/--dumpProfile checked")
elseif(MODE STREQUAL "sweep")
  run_ok(bench ${LOOM_BENCH} ${cpu} --models=lstm,resnet --iterations=3 --concurrency-range=1:2:1
         --csv=${WORK_DIR}/sweep.csv)
  file(STRINGS ${WORK_DIR}/sweep.csv rows)
  list(LENGTH rows count)
  require("header + 2 points x (lstm, resnet, all) = 7 CSV lines, not ${count}" count EQUAL 7)
  list(GET rows 0 header)
  require("CSV header starts Concurrency,Model,Inferences/Second: ${header}"
          header MATCHES "^Concurrency,Model,Inferences/Second,")
  set(expected "1,lstm" "1,resnet" "1,all" "2,lstm" "2,resnet" "2,all")
  foreach(i RANGE 1 6)
    list(GET rows ${i} row)
    math(EXPR e "${i} - 1")
    list(GET expected ${e} start)
    require("CSV row ${i} starts ${start}: ${row}" row MATCHES "^${start},[0-9.]+,[0-9]+,")
  endforeach()
  run_ok(doc ${LOOM_BENCH} ${cpu} --models=lstm --iterations=2 --concurrency-range=1:2 --json)
  string(JSON points LENGTH "${doc_out}" sweep points)
  string(JSON second GET "${doc_out}" sweep points 1 concurrency)
  require("--json sweep: 2 points, not ${points}" points EQUAL 2)
  require("--json sweep: the second point has concurrency 2, not ${second}" second EQUAL 2)
  expect_failure(2 "a backwards range" COMMAND ${LOOM_BENCH} ${cpu} --concurrency-range=3:1
                 MESSAGE "--concurrency-range" "START 3 is above END 1")
  expect_failure(2 "a sweep with --compare" COMMAND ${LOOM_BENCH} ${cpu} --concurrency-range=1:2 --compare
                 MESSAGE "--concurrency-range")
  message(STATUS "loom-bench --concurrency-range/--csv checked")
elseif(MODE STREQUAL "stability")
  run_ok(bench ${LOOM_BENCH} ${cpu} --models=lstm --measurement-interval=100 --max-trials=4 --json)
  string(JSON measured GET "${bench_out}" stability windows_measured)
  string(JSON reported GET "${bench_out}" stability reported_windows)
  string(JSON stable GET "${bench_out}" stability stable)
  string(JSON requests GET "${bench_out}" models 0 requests)
  require("3 to 4 windows measured, not ${measured}" measured GREATER_EQUAL 3 AND measured LESS_EQUAL 4)
  require("figures over 3 windows, not ${reported}" reported EQUAL 3)
  if(measured LESS 4)
    require("stopped before --max-trials only when stable" stable)
  endif()
  # The model's requests are those of the last three windows.
  set(sum 0)
  math(EXPR last "${measured} - 1")
  math(EXPR first "${measured} - 3")
  foreach(w RANGE ${first} ${last})
    string(JSON n GET "${bench_out}" stability windows ${w} models 0 requests)
    math(EXPR sum "${sum} + ${n}")
  endforeach()
  require("${requests} requests reported = ${sum} in the last 3 windows" requests EQUAL sum)
  expect_failure(2 "--max-trials below 3" COMMAND ${LOOM_BENCH} ${cpu} --measurement-interval=100 --max-trials=2
                 MESSAGE "--max-trials")
  expect_failure(2 "windows with --iterations" COMMAND ${LOOM_BENCH} ${cpu} --measurement-interval=100 --iterations=5
                 MESSAGE "--measurement-interval" "--iterations")
  message(STATUS "loom-bench --measurement-interval checked (${measured} windows, stable: ${stable})")
else()
  message(FATAL_ERROR "MODE must be io, profile, sweep or stability, not '${MODE}'")
endif()
