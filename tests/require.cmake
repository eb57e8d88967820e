# The check the test scripts share: require(<what> <condition...>) stops the script with
# "check failed: <what>" unless the condition (as if() reads it) holds.
function(require condition_text)
  if(NOT (${ARGN}))
    message(FATAL_ERROR "check failed: ${condition_text}")
  endif()
endfunction()
