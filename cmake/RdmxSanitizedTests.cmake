# Criterion passes a test whose forked worker printed a LeakSanitizer report
# (its exit code stays 0), so in sanitizer builds every add_test(NAME ...) of
# this project fails on any sanitizer report in its output. Included by the
# top-level CMakeLists.txt before any folder defines tests.
if(RDMX_SANITIZE)
  function(add_test)
    _add_test(${ARGN})
    if(ARGV0 STREQUAL "NAME")
      set_property(TEST ${ARGV1} APPEND PROPERTY FAIL_REGULAR_EXPRESSION
        "ERROR: LeakSanitizer" "ERROR: AddressSanitizer" "runtime error:")
    endif()
  endfunction()
endif()
