# Sanitizer builds (`make test` runs one with address,undefined and one with thread).  They are
# applied to every target, the fake NVML included, because a sanitized process must not load
# uninstrumented code that shares its objects.
if(JOULES_SANITIZE)
  string(REPLACE "," ";" _joules_sanitizers "${JOULES_SANITIZE}")
  foreach(_s IN LISTS _joules_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "JOULES_SANITIZE: unknown sanitizer '${_s}' (address, undefined, thread)")
    endif()
  endforeach()
  add_compile_options(-fsanitize=${JOULES_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${JOULES_SANITIZE})
  add_compile_definitions(JOULES_SANITIZED=1)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # Clang links its runtime into each program by default; joules' trees share one, as with
    # GCC, so that a python test can preload it and then start sanitized programs
    # (tests/CMakeLists.txt, joules_python_loads_sanitized).  The runtime lives in clang's own
    # folder: the programs find it by their rpath.
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir
                    OUTPUT_VARIABLE JOULES_SANITIZER_RUNTIME_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
    add_link_options(-shared-libsan -Wl,-rpath,${JOULES_SANITIZER_RUNTIME_DIR})
  endif()
endif()

# The libFuzzer targets (tests/fuzz) are built in the clang asan tree: joules_core gets the
# coverage instrumentation libFuzzer steers by (-fsanitize=fuzzer-no-link; in programs without
# libFuzzer its hooks are the sanitizer runtime's no-ops), so the fuzzers and the asan tests
# share one compile of joules.
if(JOULES_SANITIZE MATCHES "address" AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(JOULES_FUZZ ON)
else()
  set(JOULES_FUZZ OFF)
endif()
