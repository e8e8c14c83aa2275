# rdmx_generate(TARGET <target> PROTOS <file.proto>...
#               [IMPORT_DIRS <dir>...] [OUT_DIR <dir>] [LIBRARY <lib>|NONE])
#
# Runs rdmx-gen at build time on each .proto (relative paths are taken from
# the current source folder) and adds the generated NAME.rdmx.c to <target>,
# with the folder of NAME.rdmx.h on its include path.
#  - <target> exists: the sources are added to it (like protobuf_generate);
#    otherwise a static library <target> holding them is created.
#  - IMPORT_DIRS: the proto paths (--proto_path): folders imports are searched
#    in (then the importing file's own folder). A proto under one of them is
#    named relative to it and its output mirrors that path (a/b/c.proto ->
#    <OUT_DIR>/a/b/c.rdmx.h); other protos are generated flat. Imported files must be generated too (list
#    them in PROTOS, here or in another rdmx_generate call) and linked.
#  - OUT_DIR: where the files go (default ${CMAKE_CURRENT_BINARY_DIR}/rdmx_gen/<target>).
#  - LIBRARY: what the generated code links (default rdmx::rdmx); NONE to skip.
# Sets <target>_RDMX_SOURCES and <target>_RDMX_HEADERS in the caller's scope.
#
# In the rdmx tree it runs the rdmx-gen target being built; from an installed
# rdmx (find_package(rdmx)) it runs the installed rdmx-gen program (override
# with -DRDMX_GEN_EXECUTABLE=/path/to/rdmx-gen).
include_guard(GLOBAL)
set(_RDMX_GENERATE_LIST_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(rdmx_generate)
  cmake_parse_arguments(ARG "" "TARGET;OUT_DIR;LIBRARY" "PROTOS;IMPORT_DIRS" ${ARGN})
  if(NOT ARG_TARGET)
    message(FATAL_ERROR "rdmx_generate: TARGET is required")
  endif()
  if(NOT ARG_PROTOS)
    message(FATAL_ERROR "rdmx_generate: PROTOS is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "rdmx_generate: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()

  if(TARGET rdmx-gen)
    set(gen "$<TARGET_FILE:rdmx-gen>")
    set(gen_dep rdmx-gen)
  else()
    find_program(RDMX_GEN_EXECUTABLE rdmx-gen
      HINTS "${_RDMX_GENERATE_LIST_DIR}/../../../bin" "${_RDMX_GENERATE_LIST_DIR}/../../../../bin"
      DOC "the rdmx-gen IDL compiler")
    if(NOT RDMX_GEN_EXECUTABLE)
      message(FATAL_ERROR "rdmx_generate: the rdmx-gen program was not found (set RDMX_GEN_EXECUTABLE)")
    endif()
    set(gen "${RDMX_GEN_EXECUTABLE}")
    set(gen_dep "${RDMX_GEN_EXECUTABLE}")
  endif()

  if(ARG_OUT_DIR)
    get_filename_component(out "${ARG_OUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(out "${CMAKE_CURRENT_BINARY_DIR}/rdmx_gen/${ARG_TARGET}")
  endif()
  file(MAKE_DIRECTORY "${out}")

  set(inc_args "")
  set(inc_dirs "")
  foreach(dir ${ARG_IMPORT_DIRS})
    get_filename_component(adir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND inc_args --proto_path "${adir}")
    list(APPEND inc_dirs "${adir}")
  endforeach()

  set(srcs "")
  set(hdrs "")
  foreach(proto ${ARG_PROTOS})
    get_filename_component(abs "${proto}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    # the output mirrors the proto's path under the first IMPORT_DIR that
    # holds it (as rdmx-gen names it); otherwise it is flat
    get_filename_component(name "${abs}" NAME_WLE)
    get_filename_component(pdir "${abs}" DIRECTORY)
    set(own_args --proto_path "${pdir}")
    foreach(adir ${inc_dirs})
      string(LENGTH "${adir}/" alen)
      string(SUBSTRING "${abs}" 0 ${alen} head)
      if(head STREQUAL "${adir}/")
        file(RELATIVE_PATH rel "${adir}" "${abs}")
        string(REGEX REPLACE "\\.proto$" "" name "${rel}")
        set(own_args "")
        break()
      endif()
    endforeach()
    set(h "${out}/${name}.rdmx.h")
    set(c "${out}/${name}.rdmx.c")
    string(MAKE_C_IDENTIFIER "${name}" dname)
    set(d "${out}/${dname}.rdmx.d")
    add_custom_command(
      OUTPUT "${h}" "${c}"
      COMMAND "${gen}" ${inc_args} ${own_args} --out "${out}" --depfile "${d}" "${abs}"
      DEPENDS "${abs}" ${gen_dep}
      DEPFILE "${d}"
      COMMENT "rdmx-gen ${proto}"
      VERBATIM)
    list(APPEND srcs "${c}")
    list(APPEND hdrs "${h}")
    # well-known types it imports: rdmx-gen has them built in and writes
    # them on request (google/protobuf/X.proto as an input)
    file(STRINGS "${abs}" wkt_lines REGEX "^[ \t]*import[ \t]+(public[ \t]+)?\"google/protobuf/[a-z_]+\\.proto\"")
    set(wkts "")
    foreach(line ${wkt_lines})
      string(REGEX MATCH "google/protobuf/[a-z_]+" wkt "${line}")
      list(APPEND wkts "${wkt}")
      # what the built-in ones import in turn
      if(wkt STREQUAL "google/protobuf/api")
        list(APPEND wkts google/protobuf/type google/protobuf/source_context google/protobuf/any)
      elseif(wkt STREQUAL "google/protobuf/type")
        list(APPEND wkts google/protobuf/source_context google/protobuf/any)
      endif()
    endforeach()
    foreach(wkt ${wkts})
      if(wkt STREQUAL "google/protobuf/descriptor" OR "${out}/${wkt}.rdmx.c" IN_LIST srcs)
        continue()
      endif()
      add_custom_command(
        OUTPUT "${out}/${wkt}.rdmx.h" "${out}/${wkt}.rdmx.c"
        COMMAND "${gen}" --out "${out}" "${wkt}.proto"
        DEPENDS ${gen_dep}
        COMMENT "rdmx-gen ${wkt}.proto (built in)"
        VERBATIM)
      list(APPEND srcs "${out}/${wkt}.rdmx.c")
      list(APPEND hdrs "${out}/${wkt}.rdmx.h")
    endforeach()
  endforeach()

  if(TARGET ${ARG_TARGET})
    target_sources(${ARG_TARGET} PRIVATE ${srcs} ${hdrs})
    target_include_directories(${ARG_TARGET} PUBLIC "${out}")
  else()
    add_library(${ARG_TARGET} STATIC ${srcs} ${hdrs})
    target_include_directories(${ARG_TARGET} PUBLIC "${out}")
  endif()

  if(NOT ARG_LIBRARY)
    if(TARGET rdmx::rdmx)
      set(ARG_LIBRARY rdmx::rdmx)
    elseif(TARGET rdmx)
      set(ARG_LIBRARY rdmx)
    endif()
  endif()
  if(ARG_LIBRARY AND NOT ARG_LIBRARY STREQUAL "NONE")
    # Properties rather than target_link_libraries(), so the call works
    # whichever target_link_libraries signature the target's owner uses.
    set_property(TARGET ${ARG_TARGET} APPEND PROPERTY LINK_LIBRARIES "${ARG_LIBRARY}")
    get_target_property(type ${ARG_TARGET} TYPE)
    if(NOT type STREQUAL "EXECUTABLE")
      set_property(TARGET ${ARG_TARGET} APPEND PROPERTY INTERFACE_LINK_LIBRARIES "${ARG_LIBRARY}")
    endif()
  endif()

  set(${ARG_TARGET}_RDMX_SOURCES ${srcs} PARENT_SCOPE)
  set(${ARG_TARGET}_RDMX_HEADERS ${hdrs} PARENT_SCOPE)
endfunction()
