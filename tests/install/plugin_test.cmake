# Part of install_test.cmake (same variables, its run() and `prefix`): the example plugin against the
# installed package. The plugin is found once through CNTKIO_PLUGIN_PATH and once in the config's folder.
set(plugin_source ${SOURCE_DIR}/examples/plugin)
set(plugin_build ${WORK_DIR}/plugin-build)
set(check_build ${WORK_DIR}/plugin-check-build)
foreach(project IN ITEMS "${plugin_source};${plugin_build}" "${SOURCE_DIR}/tests/install/plugin_check;${check_build}")
  list(GET project 0 from)
  list(GET project 1 to)
  run(${CMAKE_COMMAND} -S ${from} -B ${to} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_PREFIX_PATH=${prefix} -DNPY_PLUGIN_SOURCE_DIR=${plugin_source})
  run(${CMAKE_COMMAND} --build ${to})
endforeach()

# Two run folders with the config and the data: `env` finds the plugin through CNTKIO_PLUGIN_PATH, `beside`
# holds the plugin next to the config. `bad` holds a .npy file whose values are cut short.
set(env_dir ${WORK_DIR}/npy-env)
set(beside_dir ${WORK_DIR}/npy-beside)
set(bad_dir ${WORK_DIR}/npy-bad)
foreach(dir ${env_dir} ${beside_dir})
  file(COPY ${plugin_source}/npy.cntk ${plugin_source}/data DESTINATION ${dir})
endforeach()
file(COPY ${plugin_build}/libcntkio_npy.so DESTINATION ${beside_dir})
file(MAKE_DIRECTORY ${bad_dir})
# 150 of the 248 bytes of s05.npy: its header and part of its values.
execute_process(COMMAND head -c 150 ${plugin_source}/data/s05.npy OUTPUT_FILE ${bad_dir}/s05.npy RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not write ${bad_dir}/s05.npy")
endif()
file(READ ${plugin_source}/npy.cntk config)
string(REPLACE "folder = \"data\"" "folder = \"${bad_dir}\"" config "${config}")
file(WRITE ${bad_dir}/npy.cntk "${config}")

# What make_data.py writes, times the config's factor 10: sequence sII (i = 0..11) has 1 + (5 i mod 7)
# samples, value d of sample t is 100 i + 10 t + d. `expected_lines_<key>` is what `cntkio dump` prints for
# it (one sample per line), `expected_read_<key>` the line read_npy prints.
set(all_keys)
set(total_samples 0)
foreach(i RANGE 11)
  if(i LESS 10)
    set(key s0${i})
  else()
    set(key s${i})
  endif()
  list(APPEND all_keys ${key})
  math(EXPR samples "1 + (5 * ${i}) % 7")
  math(EXPR total_samples "${total_samples} + ${samples}")
  set(lines "")
  set(read_line "${key}")
  math(EXPR last "${samples} - 1")
  foreach(t RANGE ${last})
    math(EXPR v0 "10 * (100 * ${i} + 10 * ${t})")
    math(EXPR v1 "${v0} + 10")
    math(EXPR v2 "${v0} + 20")
    string(APPEND lines "${v0} ${v1} ${v2}\n")
    if(t GREATER 0)
      string(APPEND read_line " |")
    endif()
    string(APPEND read_line " ${v0} ${v1} ${v2}")
  endforeach()
  set(expected_lines_${key} "${lines}")
  set(expected_read_${key} "${read_line}")
endforeach()

# `cntkio dump` of the config in `dir`, the output in `out`.
function(dump dir)
  # --keys reads whole epochs; value dumps are capped at 10 minibatches unless told otherwise.
  set(cap --max-minibatches 1000)
  if("--keys" IN_LIST ARGN)
    set(cap)
  endif()
  execute_process(COMMAND ${prefix}/bin/cntkio dump --config npy.cntk --section Train ${cap} ${ARGN}
                  WORKING_DIRECTORY ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cntkio dump ${ARGN} in ${dir} failed (${rc}):\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# Checks that `keys` (a list) holds every key once.
function(check_every_key_once keys what)
  list(SORT keys)
  if(NOT keys STREQUAL all_keys)
    message(FATAL_ERROR "${what}: the keys read are '${keys}', expected each of '${all_keys}' once")
  endif()
endfunction()

set(ENV{CNTKIO_PLUGIN_PATH} ${plugin_build})
# One sweep, one sequence per minibatch: the keys, then the values in the same order.
dump(${env_dir} --mb-size 1 --keys)
string(REGEX REPLACE "\n$" "" order "${out}")
string(REPLACE "\n" ";" order "${order}")
check_every_key_once("${order}" "cntkio dump (CNTKIO_PLUGIN_PATH)")
if(order STREQUAL all_keys)
  message(FATAL_ERROR "cntkio dump read the sequences in file order; the config randomizes them")
endif()
set(expected_values "")
foreach(key IN LISTS order)
  string(APPEND expected_values "${expected_lines_${key}}")
endforeach()
dump(${env_dir} --mb-size 1)
if(NOT out STREQUAL expected_values)
  message(FATAL_ERROR "cntkio dump printed the values:\n${out}\nexpected (order ${order}):\n${expected_values}")
endif()

# Two workers: every sequence exactly once between them.
set(both)
foreach(rank 0 1)
  dump(${env_dir} --mb-size 8 --keys --subsets 2 --subset ${rank})
  string(REGEX REPLACE "\n$" "" keys "${out}")
  string(REPLACE "\n" ";" keys "${keys}")
  list(APPEND both ${keys})
endforeach()
check_every_key_once("${both}" "cntkio dump, two workers")

# A .npy file cut short: the plugin's FormatError is the CLI's malformed-input exit code 4, located.
execute_process(COMMAND ${prefix}/bin/cntkio dump --config ${bad_dir}/npy.cntk --section Train --mb-size 8
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 4 OR NOT err MATCHES "Malformed \\.npy file: .*file '${bad_dir}/s05\\.npy', byte offset 128")
  message(FATAL_ERROR "cntkio dump of a cut .npy file exited with ${rc} (expected 4, malformed input):\n${err}")
endif()

# The plugin in the config's folder, CNTKIO_PLUGIN_PATH unset: the same sweep.
unset(ENV{CNTKIO_PLUGIN_PATH})
dump(${beside_dir} --mb-size 1 --keys)
string(REGEX REPLACE "\n$" "" beside_order "${out}")
string(REPLACE "\n" ";" beside_order "${beside_order}")
if(NOT beside_order STREQUAL order)
  message(FATAL_ERROR "with the plugin in the config's folder, cntkio dump read '${beside_order}', not '${order}'")
endif()

# read_npy: the plugin's types in a ReaderSpec built in C++ (the same reader as the config).
set(ENV{CNTKIO_PLUGIN_PATH} ${plugin_build})
execute_process(COMMAND ${plugin_build}/read_npy cntkio_npy data 10 WORKING_DIRECTORY ${env_dir}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(expected_read "")
foreach(key IN LISTS order)
  string(APPEND expected_read "${expected_read_${key}}\n")
endforeach()
string(APPEND expected_read "sequences 12\nsamples ${total_samples}\n")
if(NOT rc EQUAL 0 OR NOT out STREQUAL expected_read)
  message(FATAL_ERROR "read_npy exited with ${rc} and printed:\n${out}${err}\nexpected:\n${expected_read}")
endif()

# The checker: config and C++ spec alike, randomized, two workers, a checkpoint after every minibatch, the
# plugin's FormatError caught as such by a program that links the shared libcntkio.
execute_process(COMMAND ${check_build}/check_npy_plugin npy.cntk ${bad_dir} WORKING_DIRECTORY ${env_dir}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE ";" " " order_text "${order}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "format error caught: Malformed \\.npy file: [^\n]*s05\\.npy.*\nplugin check passed: 12 sequences, order ${order_text}\n$")
  message(FATAL_ERROR "check_npy_plugin exited with ${rc}:\n${out}${err}")
endif()
unset(ENV{CNTKIO_PLUGIN_PATH})
message(STATUS "example plugin: read through cntkio dump, read_npy and check_npy_plugin in the order ${order_text}")
