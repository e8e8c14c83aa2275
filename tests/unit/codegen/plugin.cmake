# protoc-gen-rdmx against rdmx-gen over the whole corpus: protoc with the
# plugin and rdmx-gen must write the same files, byte for byte.
#   cmake -DGEN=<rdmx-gen> -DPLUGIN=<protoc-gen-rdmx> -DPROTOC=<protoc>
#         -DPBINC=<folder with google/protobuf/descriptor.proto> -DCORPUS=<corpus>
#         -DOUT=<scratch> -P plugin.cmake
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}/gen" "${OUT}/plugin")
file(GLOB_RECURSE protos RELATIVE "${CORPUS}" "${CORPUS}/*.proto")
list(FILTER protos EXCLUDE REGEX "^third_party/")
list(SORT protos)
foreach(p ${protos})
  execute_process(COMMAND "${GEN}" -I . -I third_party --out "${OUT}/gen" "${p}"
    WORKING_DIRECTORY "${CORPUS}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "rdmx-gen ${p}: exit ${rc}\n${err}")
  endif()
  execute_process(COMMAND "${PROTOC}" "--plugin=protoc-gen-rdmx=${PLUGIN}"
    "--rdmx_out=${OUT}/plugin" -I . -I third_party -I "${PBINC}" "${p}"
    WORKING_DIRECTORY "${CORPUS}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "protoc --rdmx_out ${p}: exit ${rc}\n${err}")
  endif()
endforeach()
file(GLOB_RECURSE a RELATIVE "${OUT}/gen" "${OUT}/gen/*")
file(GLOB_RECURSE b RELATIVE "${OUT}/plugin" "${OUT}/plugin/*")
list(SORT a)
list(SORT b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "different file sets:\nrdmx-gen: ${a}\nplugin:   ${b}")
endif()
set(n 0)
foreach(f ${a})
  file(SHA256 "${OUT}/gen/${f}" ha)
  file(SHA256 "${OUT}/plugin/${f}" hb)
  if(NOT ha STREQUAL hb)
    message(FATAL_ERROR "${f} differs between rdmx-gen and protoc-gen-rdmx (diff -r ${OUT}/gen ${OUT}/plugin)")
  endif()
  math(EXPR n "${n} + 1")
endforeach()
if(n LESS 60)
  message(FATAL_ERROR "only ${n} files compared")
endif()

# errors come back through protoc, in rdmx-gen's format (a clash of generated
# C names: protoc accepts the file)
execute_process(COMMAND "${PROTOC}" "--plugin=protoc-gen-rdmx=${PLUGIN}" "--rdmx_out=${OUT}/plugin"
  -I "${ERRORS}" c_names.proto RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "c_names.proto:7:11: error: generated C name \"x_A_B\"")
  message(FATAL_ERROR "an error through the plugin: exit ${rc}\n${err}")
endif()
list(LENGTH protos np)
message(STATUS "plugin: ${n} generated files identical over ${np} protos")
