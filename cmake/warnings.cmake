# Warnings every joules target is built with; -Werror comes from JOULES_WERROR (on in `make test`).
add_library(joules_warnings INTERFACE)
target_compile_options(joules_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wold-style-cast
  -Wnon-virtual-dtor -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wformat=2
  -Wimplicit-fallthrough)
if(JOULES_WERROR)
  target_compile_options(joules_warnings INTERFACE -Werror)
  if(JOULES_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's documentation warns that sanitizer instrumentation makes its flow-based warnings
    # (maybe-uninitialized, null-dereference, the stringop and array-bounds ones) report code
    # that is fine: the inserted checks add paths that never run.  They stay warnings there;
    # the dev build keeps every warning an error.
    target_compile_options(joules_warnings INTERFACE
      -Wno-error=maybe-uninitialized -Wno-error=null-dereference -Wno-error=stringop-overflow
      -Wno-error=stringop-overread -Wno-error=array-bounds)
  endif()
endif()
