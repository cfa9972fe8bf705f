# `cntkio --version` prints "cntkio <project version>" (the version CMakeLists.txt declares, passed as VERSION).
execute_process(COMMAND ${CLI} --version OUTPUT_VARIABLE out RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cntkio --version exited with ${rc}")
endif()
if(NOT out STREQUAL "cntkio ${VERSION}")
  message(FATAL_ERROR "cntkio --version printed '${out}', the project version is ${VERSION}")
endif()
