# Runs as `cmake -P`: DOXYGEN (path, or empty/NOTFOUND), SOURCE_DIR, OUTPUT_DIR. Runs docs/Doxyfile over
# include/cntkio with the output in OUTPUT_DIR; fails on any warning (an undocumented public symbol, a
# broken doc command). Without doxygen it prints "SKIPPED: ...", which ctest reports as a skipped test.
cmake_minimum_required(VERSION 3.22)
if(NOT DOXYGEN)
  message("SKIPPED: doxygen is not installed (apt-get install doxygen, or bash scripts/setup.sh)")
  return()
endif()
file(REMOVE_RECURSE ${OUTPUT_DIR})
file(MAKE_DIRECTORY ${OUTPUT_DIR})
# The project's Doxyfile, with the output moved into the build tree.
file(WRITE ${OUTPUT_DIR}/Doxyfile "@INCLUDE = ${SOURCE_DIR}/docs/Doxyfile\nOUTPUT_DIRECTORY = ${OUTPUT_DIR}\n")
execute_process(COMMAND ${DOXYGEN} ${OUTPUT_DIR}/Doxyfile WORKING_DIRECTORY ${SOURCE_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(STRIP "${err}" err)
if(NOT rc EQUAL 0 OR NOT err STREQUAL "")
  message(FATAL_ERROR "doxygen (exit code ${rc}) reports problems in the public headers:\n${err}\n${out}")
endif()
if(NOT EXISTS ${OUTPUT_DIR}/html/index.html)
  message(FATAL_ERROR "doxygen wrote no ${OUTPUT_DIR}/html/index.html")
endif()
message(STATUS "doxygen: no warnings; HTML in ${OUTPUT_DIR}/html/index.html")
