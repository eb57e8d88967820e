# Runs loom-sim on a long normal model and an urgent short one arriving mid-run, and checks the
# warning "preemption is on but the run made 0 pauses" on stderr exactly when it applies:
#   - unlimited on-chip capacity, Steps with no memory time: all three Steps of "long" are
#     dispatched at time 0, "short" arrives at 5 with nothing left to pause: warned;
#   - the same with onchip_capacity_bytes = 1 (one Step on chip at a time): "long" pauses after
#     its second Step: silent (both with a cancellation point at every boundary);
#   - --preemption off: no pause is expected: silent;
#   - seed 002's worked example (every Step decided at the previous one's end): silent, and its
#     text output shows the host CPU line.
#   cmake -DLOOM_SIM=<loom-sim> -DSOURCE_DIR=<repository> -DWORK_DIR=<scratch> -P check_loom_sim_warning.cmake
cmake_minimum_required(VERSION 3.25)

set(warning "loom-sim: warning: preemption is on but the run made 0 pauses")

# sim(<out var> <err var> args...): loom-sim's stdout and stderr; it must exit 0.
function(sim out_var err_var)
  execute_process(COMMAND ${LOOM_SIM} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "loom-sim ${ARGN} exited ${rc}:\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(expect_warning expected err what)
  string(FIND "${err}" "${warning}" at)
  if(expected AND at EQUAL -1)
    message(FATAL_ERROR "${what}: no warning on stderr:\n${err}")
  elseif(NOT expected AND NOT at EQUAL -1)
    message(FATAL_ERROR "${what}: unexpected warning on stderr:\n${err}")
  endif()
endfunction()

file(MAKE_DIRECTORY ${WORK_DIR})
set(models [=[
  "models": [
    {"name": "long", "steps": [{"compute_us": 10, "memory_us": 0, "onchip_bytes": 1},
                               {"compute_us": 10, "memory_us": 0, "onchip_bytes": 1},
                               {"compute_us": 10, "memory_us": 0, "onchip_bytes": 1}]},
    {"name": "short", "steps": [{"compute_us": 1, "memory_us": 0, "onchip_bytes": 1}]}],
  "requests": [{"model": "long", "arrival_us": 0}, {"model": "short", "arrival_us": 5, "priority": "urgent"}]]=])
file(WRITE ${WORK_DIR}/run_ahead.json "{${models}}\n")
file(WRITE ${WORK_DIR}/bounded.json "{\"onchip_capacity_bytes\": 1, ${models}}\n")

sim(out err --workload ${WORK_DIR}/run_ahead.json --policy fifo --cancel-interval-us 0)
expect_warning(TRUE "${err}" "unlimited on-chip capacity")
string(FIND "${err}" "short#1 (priority 1) arrived at 5.000 us while long#0 (priority 0)" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the warning does not name the requests:\n${err}")
endif()
string(FIND "${out}" "Pauses:        0," at)
if(at EQUAL -1)
  message(FATAL_ERROR "the run-ahead workload paused (the case the warning is about is gone):\n${out}")
endif()

sim(out err --workload ${WORK_DIR}/bounded.json --policy fifo --cancel-interval-us 0)
expect_warning(FALSE "${err}" "capacity of one Step")
string(FIND "${out}" "Pauses:        1," at)
if(at EQUAL -1)
  message(FATAL_ERROR "with one Step on chip, long should pause once:\n${out}")
endif()

sim(out err --workload ${WORK_DIR}/run_ahead.json --policy fifo --preemption off)
expect_warning(FALSE "${err}" "--preemption off")

sim(out err --workload ${SOURCE_DIR}/bench/workloads/seed002-worked-example.json --policy fifo
    --device-memory-bytes 25000000)
expect_warning(FALSE "${err}" "seed 002's worked example")
string(FIND "${out}" "Host CPU:      busy   120000.000 us, 8 host stage(s)" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the worked example's text output has no host CPU line:\n${out}")
endif()
