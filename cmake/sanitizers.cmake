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
endif()
