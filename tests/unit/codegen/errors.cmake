# Negative test: rdmx-gen on errors/<CASE>.proto must exit 1, write nothing,
# and print exactly errors/<CASE>.err on stderr.
#   cmake -DGEN=<rdmx-gen> -DSRC=<this folder> -DOUT=<scratch> -DCASE=<name> -P errors.cmake
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${GEN}" --out "${OUT}" "${CASE}.proto"
  WORKING_DIRECTORY "${SRC}/errors" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ "${SRC}/errors/${CASE}.err" want)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "exit status ${rc}, expected 1\n${err}")
endif()
if(EXISTS "${OUT}")
  message(FATAL_ERROR "rdmx-gen wrote ${OUT} although it failed")
endif()
if(NOT err STREQUAL want)
  message(FATAL_ERROR "stderr differs.\n--- expected\n${want}--- got\n${err}")
endif()
