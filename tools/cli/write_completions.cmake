# Writes gpumem's shell completions and man page with the built command:
#   cmake -DGPUMEM=bin/gpumem -DOUT=folder -P write_completions.cmake
file(MAKE_DIRECTORY ${OUT}/completions)
foreach(pair "bash;completions/gpumem" "zsh;completions/_gpumem" "fish;completions/gpumem.fish"
             "man;gpumem.1")
  list(GET pair 0 kind)
  list(GET pair 1 file)
  execute_process(COMMAND ${GPUMEM} completion ${kind} OUTPUT_FILE ${OUT}/${file}.new
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${GPUMEM} completion ${kind} failed: ${status}")
  endif()
  file(RENAME ${OUT}/${file}.new ${OUT}/${file})
endforeach()
