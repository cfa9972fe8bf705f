# Runs as `cmake -P`: CLI (the cntkio binary), DOC (docs/cli.md). Fails unless DOC contains, verbatim, the
# output of `cntkio --help` and of `cntkio <verb> --help` for every verb that help lists, and documents no
# verb the CLI does not have. Fix: scripts/gen-cli-docs.sh.
cmake_minimum_required(VERSION 3.22)
file(READ ${DOC} doc)

function(help_of out_var)
  execute_process(COMMAND ${CLI} ${ARGN} --help OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cntkio ${ARGN} --help exited with ${rc}: ${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

help_of(top)
# The verbs: the names in the "Subcommands:" section.
string(REGEX MATCH "\nSubcommands:\n(  [^\n]*\n)+" section "${top}")
string(REGEX MATCHALL "\n  [a-z][a-z0-9-]*" verbs "${section}")
list(TRANSFORM verbs STRIP)
if(NOT verbs)
  message(FATAL_ERROR "no verbs found in `cntkio --help`:\n${top}")
endif()

set(drifted)
string(FIND "${doc}" "${top}" at)
if(at EQUAL -1)
  list(APPEND drifted "cntkio --help")
endif()
foreach(verb IN LISTS verbs)
  help_of(help ${verb})
  string(FIND "${doc}" "${help}" at)
  if(at EQUAL -1)
    list(APPEND drifted "cntkio ${verb} --help")
  endif()
endforeach()

# Verbs the page documents (its "## `cntkio VERB`" headings) must still exist.
string(REGEX MATCHALL "\n## `cntkio [a-z0-9-]+`" headings "${doc}")
foreach(heading IN LISTS headings)
  string(REGEX REPLACE ".*`cntkio ([a-z0-9-]+)`" "\\1" verb "${heading}")
  if(NOT verb IN_LIST verbs)
    list(APPEND drifted "documented verb '${verb}' is not a verb of the CLI")
  endif()
endforeach()

if(drifted)
  list(JOIN drifted "\n  " list)
  message(FATAL_ERROR "${DOC} does not match the CLI:\n  ${list}\nRegenerate it: scripts/gen-cli-docs.sh")
endif()
list(LENGTH verbs n)
message(STATUS "docs/cli.md matches `cntkio --help` and the help of ${n} verbs")
