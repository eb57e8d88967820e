# Runs loom_decode_bench on the CPU with tiny sizes and --json=- and checks the document's structure
# (not its timings): one row per batch x hidden, hidden-major in the order given, every Loom method
# timed with a positive figure, no CUDA-only column, and the host_loop/persistent ratio present.
#   cmake -DLOOM_DECODE_BENCH=<path> -DCELL=lstm|gru -DKIND=recurrent|greedy -P check_decode_bench_json.cmake
cmake_minimum_required(VERSION 3.25)  # string(JSON)

include(${CMAKE_CURRENT_LIST_DIR}/../require.cmake)

set(batches 1 3)
set(hiddens 128 256)
set(steps 5)
execute_process(
  COMMAND ${LOOM_DECODE_BENCH} --device=cpu --cell=${CELL} --kind=${KIND} --batch=1,3 --hidden=128,256
          --steps=${steps} --repeats=2 --warmup=0 --vocab=50 --json=-
  RESULT_VARIABLE rc OUTPUT_VARIABLE doc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "loom_decode_bench exited ${rc}:\n${err}")
endif()

string(JSON backend GET "${doc}" backend)
string(JSON dtype GET "${doc}" dtype)
string(JSON cell GET "${doc}" cell)
string(JSON kind GET "${doc}" kind)
string(JSON doc_steps GET "${doc}" steps)
require("backend cpu, not ${backend}" backend STREQUAL "cpu")
require("dtype f32 by default on the CPU, not ${dtype}" dtype STREQUAL "f32")
require("cell ${CELL}, not ${cell}" cell STREQUAL CELL)
require("kind ${KIND}, not ${kind}" kind STREQUAL KIND)
require("steps ${steps}, not ${doc_steps}" doc_steps EQUAL steps)

string(JSON row_count LENGTH "${doc}" rows)
require("4 rows (2 batches x 2 hiddens), not ${row_count}" row_count EQUAL 4)
set(i 0)
foreach(hidden IN LISTS hiddens)
  foreach(batch IN LISTS batches)
    string(JSON row_batch GET "${doc}" rows ${i} batch)
    string(JSON row_hidden GET "${doc}" rows ${i} hidden)
    require("row ${i}: batch ${batch} hidden ${hidden}, not ${row_batch} ${row_hidden}"
            row_batch EQUAL batch AND row_hidden EQUAL hidden)
    foreach(method persistent graph host_loop)
      string(JSON us ERROR_VARIABLE missing GET "${doc}" rows ${i} us_per_step ${method})
      require("row ${i}: us_per_step.${method} present (${missing})" NOT missing)
      require("row ${i}: us_per_step.${method} = ${us} > 0" us GREATER 0)
    endforeach()
    foreach(cuda_only cudnn_step cudnn_sequence weight_read_bound)
      string(JSON us ERROR_VARIABLE missing GET "${doc}" rows ${i} us_per_step ${cuda_only})
      require("row ${i}: no ${cuda_only} on the CPU" missing)
    endforeach()
    string(JSON ratio ERROR_VARIABLE missing GET "${doc}" rows ${i} ratios "host_loop/persistent")
    require("row ${i}: ratios.host_loop/persistent = ${ratio} > 0" NOT missing AND ratio GREATER 0)
    string(JSON weight_bytes GET "${doc}" rows ${i} recurrent_weight_bytes)
    require("row ${i}: recurrent_weight_bytes = ${weight_bytes} > 0" weight_bytes GREATER 0)
    math(EXPR i "${i} + 1")
  endforeach()
endforeach()
message(STATUS "loom_decode_bench --cell=${CELL} --kind=${KIND}: ${row_count} rows checked")
