# Writes the man pages and shell completions the joules binary makes from its own option
# declarations into OUT: joules.1, joules-COMMAND.1 for every command joules.1 lists, joules.bash,
# _joules (zsh) and joules.fish, then OUT/stamp.  Run with cmake -P at build time
# (src/CMakeLists.txt).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
function(joules_write name)
  execute_process(COMMAND "${JOULES}" ${ARGN} OUTPUT_FILE "${OUT}/${name}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "joules ${ARGN} failed (${rc})")
  endif()
endfunction()
joules_write(joules.1 manpage)
# The commands, as joules(1) lists them: `.BR joules\-NAME (1)`.
file(STRINGS "${OUT}/joules.1" listed REGEX "^\\.BR joules\\\\-[a-z]+ \\(1\\)$")
list(REMOVE_DUPLICATES listed)
foreach(line IN LISTS listed)
  string(REGEX REPLACE "^\\.BR joules\\\\-([a-z]+) .*" "\\1" sub "${line}")
  joules_write(joules-${sub}.1 manpage ${sub})
endforeach()
joules_write(joules.bash completion bash)
joules_write(_joules completion zsh)
joules_write(joules.fish completion fish)
file(WRITE "${OUT}/stamp" "")
