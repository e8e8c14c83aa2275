# The corpus (tests/corpus/proto): every file generates with rdmx-gen (one
# run per file, as a build would), every generated .c compiles as C11 with
# -Wall -Wextra -Werror -Wshadow -pedantic and every header compiles as C++11
# (wild/lang/short_names.proto: each type named like a generated local is a
# compile error or a shadowing unless rdmx-gen renames it).
#   cmake -DGEN=<rdmx-gen> -DCORPUS=<corpus> -DOUT=<scratch> -DCC=<cc> -DCXX=<c++>
#         -DINC=<rdmx include dir> -P corpus.cmake
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
file(GLOB_RECURSE protos RELATIVE "${CORPUS}" "${CORPUS}/*.proto")
list(FILTER protos EXCLUDE REGEX "^third_party/")
list(SORT protos)
list(LENGTH protos n)
if(n LESS 30)
  message(FATAL_ERROR "corpus: only ${n} files found in ${CORPUS}")
endif()
set(failed "")
foreach(p ${protos})
  execute_process(COMMAND "${GEN}" -I . -I third_party --out "${OUT}/gen" "${p}"
    WORKING_DIRECTORY "${CORPUS}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(APPEND failed "${p}: rdmx-gen exit ${rc}: ${err}")
  endif()
endforeach()
file(GLOB_RECURSE cfiles "${OUT}/gen/*.rdmx.c")
file(GLOB_RECURSE hfiles "${OUT}/gen/*.rdmx.h")
foreach(c ${cfiles})
  execute_process(COMMAND "${CC}" -std=c11 -Wall -Wextra -Werror -Wshadow -pedantic -I "${OUT}/gen"
    -I "${INC}" -c "${c}" -o "${OUT}/obj.o" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(APPEND failed "${c}: C: ${err}")
  endif()
endforeach()
foreach(h ${hfiles})
  file(WRITE "${OUT}/inc.cc" "#include \"${h}\"\nint main() { return 0; }\n")
  execute_process(COMMAND "${CXX}" -std=c++11 -Wall -Wextra -Werror -pedantic -I "${OUT}/gen"
    -I "${INC}" -fsyntax-only "${OUT}/inc.cc" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(APPEND failed "${h}: C++: ${err}")
  endif()
endforeach()
list(LENGTH cfiles nc)
list(LENGTH failed nf)
if(nf GREATER 0)
  string(JOIN "\n" msg ${failed})
  message(FATAL_ERROR "corpus: ${nf} failures over ${n} files\n${msg}")
endif()
message(STATUS "corpus: ${n} files generated, ${nc} .c files compiled as C11 and their headers as C++")
