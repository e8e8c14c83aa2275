# Command-line behaviour of rdmx-gen: usage errors, missing files, --help,
# --version, --include search, --depfile, several inputs in one run.
#   cmake -DGEN=<rdmx-gen> -DSRC=<this folder> -DOUT=<scratch> -P cli.cmake
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
function(run want_rc)
  execute_process(COMMAND "${GEN}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e
    WORKING_DIRECTORY "${SRC}")
  if(NOT rc EQUAL want_rc)
    message(FATAL_ERROR "rdmx-gen ${ARGN}: exit ${rc}, expected ${want_rc}\n${o}${e}")
  endif()
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()
function(expect what text pattern)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: \"${text}\" does not match \"${pattern}\"")
  endif()
endfunction()

run(0 --help)
expect(help "${out}" "usage: rdmx-gen")
run(0 --version)
expect(version "${out}" "^rdmx-gen [0-9]")
run(0 -h)
expect(help-short "${out}" "usage: rdmx-gen")
run(2 protos/all.proto)
expect(no-out "${err}" "rdmx-gen: error: --out DIR is required")
run(2 --out "${OUT}/x")
expect(no-input "${err}" "rdmx-gen: error: no input files")
run(2 --bogus --out "${OUT}/x" protos/all.proto)
expect(bad-option "${err}" "^rdmx-gen: unknown option '--bogus'\n")
run(2 --bogus=3 --out "${OUT}/x" protos/all.proto)
expect(bad-option-value "${err}" "^rdmx-gen: unknown option '--bogus'\n")
run(2 -Z --out "${OUT}/x" protos/all.proto)
expect(bad-short-option "${err}" "^rdmx-gen: unknown option '-Z'\n")
run(1 --out "${OUT}/x" protos/nope.proto)
expect(missing "${err}" "rdmx-gen: error: cannot open \"protos/nope.proto\"")
run(2 --out)
expect(needs-value "${err}" "rdmx-gen: option '--out' requires an argument")

# imports through --include, with both spellings, and a depfile
file(MAKE_DIRECTORY "${OUT}/src")
file(COPY "${SRC}/protos/imp_main.proto" DESTINATION "${OUT}/src")
run(1 --out "${OUT}/gen" "${OUT}/src/imp_main.proto")
expect(import-not-found "${err}" "^imp_dep.proto: error: File not found.\n[^\n]*imp_main.proto:4:1: error: Import \"imp_dep.proto\" was not found or had errors.\n")
run(0 --include "${SRC}/protos" --out "${OUT}/gen" --depfile "${OUT}/gen.d"
  "${OUT}/src/imp_main.proto")
run(0 "-I${SRC}/protos" "--out=${OUT}/gen2" "${OUT}/src/imp_main.proto")
run(0 "--proto_path=${SRC}/protos" --out "${OUT}/gen3" "${OUT}/src/imp_main.proto")
run(0 --proto_path "${SRC}/protos" "--include=${OUT}/src" --out "${OUT}/gen4" "${OUT}/src/imp_main.proto")
foreach(f gen/imp_main.rdmx.h gen/imp_main.rdmx.c gen2/imp_main.rdmx.c)
  if(NOT EXISTS "${OUT}/${f}")
    message(FATAL_ERROR "${f} was not written")
  endif()
endforeach()
if(EXISTS "${OUT}/gen/imp_dep.rdmx.h")
  message(FATAL_ERROR "an import was generated although not an input")
endif()
file(READ "${OUT}/gen.d" dep)
expect(depfile "${dep}" "imp_main.rdmx.h .*imp_main.rdmx.c:.*imp_main.proto .*protos/imp_dep.proto")

# several inputs, one run; the same file twice is fine; same base names are not
run(0 --out "${OUT}/many" protos/all.proto protos/svc.proto protos/all.proto)
foreach(f all.rdmx.h all.rdmx.c svc.rdmx.h svc.rdmx.c)
  if(NOT EXISTS "${OUT}/many/protos/${f}")
    message(FATAL_ERROR "many/${f} was not written")
  endif()
endforeach()
# files outside every proto path are named by their file name: a clash
file(COPY "${SRC}/protos/svc.proto" DESTINATION "${OUT}/other")
file(COPY "${SRC}/protos/svc.proto" DESTINATION "${OUT}/other2")
run(1 --out "${OUT}/dup" "${OUT}/other2/svc.proto" "${OUT}/other/svc.proto")
expect(same-base "${err}" "would both write svc.rdmx.h")

# the output mirrors the proto path: v1/x.proto and v2/x.proto side by side,
# with header guards and includes by that path
file(MAKE_DIRECTORY "${OUT}/tree/acme/v1" "${OUT}/tree/acme/v2")
file(WRITE "${OUT}/tree/acme/v1/api.proto" "syntax = \"proto3\";\npackage acme.v1;\nmessage A { int32 x = 1; }\n")
file(WRITE "${OUT}/tree/acme/v2/api.proto" "syntax = \"proto3\";\npackage acme.v2;\nimport \"acme/v1/api.proto\";\nimport \"google/protobuf/timestamp.proto\";\nmessage A { acme.v1.A old = 1; google.protobuf.Timestamp at = 2; }\nservice S { rpc Up(stream A) returns (A); rpc Get(A) returns (A); }\n")
run(0 -I "${OUT}/tree" --out "${OUT}/mirror" "${OUT}/tree/acme/v1/api.proto" "${OUT}/tree/acme/v2/api.proto")
# streaming methods generate like the others: no warning
if(err MATCHES "warning")
  message(FATAL_ERROR "streaming-no-warning: rdmx-gen warned:\n${err}")
endif()
foreach(f acme/v1/api.rdmx.h acme/v1/api.rdmx.c acme/v2/api.rdmx.h acme/v2/api.rdmx.c
    google/protobuf/timestamp.rdmx.h google/protobuf/timestamp.rdmx.c)
  if(NOT EXISTS "${OUT}/mirror/${f}")
    message(FATAL_ERROR "mirror/${f} was not written")
  endif()
endforeach()
file(READ "${OUT}/mirror/acme/v2/api.rdmx.h" h)
expect(mirror-guard "${h}" "#ifndef RDMX_GEN_ACME_V2_API_RDMX_H")
expect(streaming-stub "${h}" "int acme_v2_S_Up_open[(]struct rdmx_rpc_ep [*]ep,")
expect(streaming-handler "${h}" "void [(][*]Up[)][(]struct rdmx_rpc_stream [*]s, void [*]arg[)];")
expect(mirror-include "${h}" "#include \"acme/v1/api.rdmx.h\"\n#include \"google/protobuf/timestamp.rdmx.h\"")
# inputs named relative to the current folder (protoc's default proto path)
execute_process(COMMAND "${GEN}" --out "${OUT}/cwd" acme/v2/api.proto acme/v1/api.proto
  WORKING_DIRECTORY "${OUT}/tree" RESULT_VARIABLE rc ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT EXISTS "${OUT}/cwd/acme/v2/api.rdmx.h")
  message(FATAL_ERROR "current folder as the proto path: exit ${rc}\n${e}")
endif()
message(STATUS "cli: ok")

# a well-known type given as an input next to a file that imports it (both
# orders): one definition, not two
file(MAKE_DIRECTORY "${OUT}/wkt/google/protobuf")
file(WRITE "${OUT}/wkt/google/protobuf/timestamp.proto" "syntax = \"proto3\";\npackage google.protobuf;\nmessage Timestamp { int64 seconds = 1; int32 nanos = 2; }\n")
file(WRITE "${OUT}/wkt/u.proto" "syntax = \"proto3\";\npackage u;\nimport \"google/protobuf/timestamp.proto\";\nmessage U { google.protobuf.Timestamp t = 1; }\n")
run(0 -I "${OUT}/wkt" --out "${OUT}/wkt1" "${OUT}/wkt/google/protobuf/timestamp.proto" "${OUT}/wkt/u.proto")
run(0 -I "${OUT}/wkt" --out "${OUT}/wkt2" "${OUT}/wkt/u.proto" "${OUT}/wkt/google/protobuf/timestamp.proto")
# and on its own, from the built-in definitions
run(0 --out "${OUT}/wkt3" google/protobuf/duration.proto)
if(NOT EXISTS "${OUT}/wkt3/google/protobuf/duration.rdmx.c")
  message(FATAL_ERROR "a built-in well-known type was not generated on request")
endif()
message(STATUS "cli: well-known types ok")

# a file without a syntax line is read as proto2, as protoc reads it (an
# input and an import alike), and the warning says so
file(MAKE_DIRECTORY "${OUT}/nosyntax")
file(WRITE "${OUT}/nosyntax/dep.proto" "package dep;\nmessage D { optional int32 x = 1; required string s = 2; }\n")
file(WRITE "${OUT}/nosyntax/main.proto" "syntax = \"proto3\";\npackage m;\nimport \"dep.proto\";\nmessage M { dep.D d = 1; }\n")
run(0 -I "${OUT}/nosyntax" --out "${OUT}/nosyntax/gen" "${OUT}/nosyntax/main.proto")
expect(nosyntax-import "${err}" "dep.proto:1:1: warning: no syntax specified; assuming syntax = \"proto2\" [(]as protoc does[)]")
run(0 -I "${OUT}/nosyntax" --out "${OUT}/nosyntax/gen" "${OUT}/nosyntax/dep.proto")
expect(nosyntax-input "${err}" "dep.proto:1:1: warning: no syntax specified; assuming syntax = \"proto2\" [(]as protoc does[)]\n")
if(NOT EXISTS "${OUT}/nosyntax/gen/dep.rdmx.c")
  message(FATAL_ERROR "a file without syntax was not generated")
endif()
message(STATUS "cli: files without syntax ok")

# a proto2 input is generated; an extension of one of its data messages is
# not, and the warning says so (an extension of an *Options message defines
# a custom option: no warning)
file(MAKE_DIRECTORY "${OUT}/p2")
file(WRITE "${OUT}/p2/old.proto" "syntax = \"proto2\";\npackage old;\nimport \"google/protobuf/descriptor.proto\";\nmessage R { required int32 id = 1; extensions 10 to max; }\nextend R {\n  optional string note = 10;\n}\nextend google.protobuf.FieldOptions { optional bool tag = 50000; }\n")
run(0 -I "${OUT}/p2" --out "${OUT}/p2/gen" "${OUT}/p2/old.proto")
expect(proto2-input "${err}" "^[^\n]*old.proto:6:19: warning: extension \"old.note\" of \"old.R\" is not generated: the C struct of \"old.R\" has no member for it [(]its decoder skips it as an unknown field[)]\n$")
if(NOT EXISTS "${OUT}/p2/gen/old.rdmx.h")
  message(FATAL_ERROR "a proto2 input was not generated")
endif()
message(STATUS "cli: proto2 input ok")

# an import used only for its options may describe descriptors
# (google.protobuf.FieldDescriptorProto.Type, which rdmx-gen's descriptor.proto
# leaves out); generating it is the error (errors/descriptor_import)
file(MAKE_DIRECTORY "${OUT}/dopt")
file(WRITE "${OUT}/dopt/opt_only.proto" "syntax = \"proto3\";\npackage oo;\nimport \"descriptor_dep.proto\";\nmessage M { int32 n = 1 [(dd.rule).min = 1]; }\n")
run(0 -I "${OUT}/dopt" -I errors --out "${OUT}/dopt/gen" "${OUT}/dopt/opt_only.proto")
if(NOT EXISTS "${OUT}/dopt/gen/opt_only.rdmx.h" OR EXISTS "${OUT}/dopt/gen/descriptor_dep.rdmx.h")
  message(FATAL_ERROR "an option-only import that describes descriptors: not generated as expected")
endif()
message(STATUS "cli: option import with descriptor types ok")

# a field type's simple name passes over a package of that name in an inner
# scope (protoc's scoping rules look for types only): `b` in package a.b is
# the top-level message b
file(WRITE "${OUT}/lookup/top.proto" "syntax = \"proto3\";\nmessage b { int32 v = 1; }\n")
file(WRITE "${OUT}/lookup/inner.proto"
  "syntax = \"proto3\";\npackage a.b;\nimport \"top.proto\";\nmessage M { b x = 1; }\n")
run(0 -I "${OUT}/lookup" --out "${OUT}/lookup/gen" "${OUT}/lookup/inner.proto")
file(READ "${OUT}/lookup/gen/inner.rdmx.h" h)
expect(type-past-package "${h}" "struct b_ \\*x;")

# a proto path holding "*/" or "/*" (a folder named "x*", protoc takes it)
# cannot end or open a comment of the generated files: their first line
# names it "x*\/m.proto"
file(WRITE "${OUT}/star/x*/m.proto" "syntax = \"proto3\";\npackage star;\nmessage M { int32 a = 1; }\n")
run(0 -I "${OUT}/star" --out "${OUT}/star/gen" "${OUT}/star/x*/m.proto")
foreach(ext h c)
  file(STRINGS "${OUT}/star/gen/x*/m.rdmx.${ext}" first LIMIT_COUNT 1)
  expect(comment-safe-path-${ext} "${first}"
    "^/\\* Generated by rdmx-gen from x\\*\\\\/m\\.proto\\. Do not edit\\. \\*/$")
endforeach()
message(STATUS "cli: a path with */ in the generated comments ok")
