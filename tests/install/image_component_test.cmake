# Part of install_test.cmake (same variables, its run() and `prefix`): the installed image component
# (<libdir>/cntkio/cntkio_image.so, and beside the Python module) is what the installed CLI, a program linking
# the installed shared library, one linking the static library whole and exported, and the installed Python
# module load when they read an image; nothing from the build tree. A program linking the static library as
# usual cannot load it, and says why. The map file holds one 1x1 PNG whose pixel is R 16, G 32, B 48 (CHW: 48 32 16).
file(GLOB component ${prefix}/lib*/cntkio/cntkio_image.so ${prefix}/lib*/*/cntkio/cntkio_image.so)
if(NOT component)
  message(FATAL_ERROR "cmake --install did not install the image component in <libdir>/cntkio")
endif()
set(image_dir ${WORK_DIR}/image)
file(MAKE_DIRECTORY ${image_dir})
file(WRITE ${image_dir}/b64.txt
     "1\tiVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGMQUDAAAACkAGE0Zn1yAAAAAElFTkSuQmCC\n")
file(WRITE ${image_dir}/image.cntk "Img = [ reader = [ randomize = false
  deserializers = ([ type = \"Base64ImageDeserializer\" ; file = \"b64.txt\"
    input = [ features = [ transforms = ( [ type = \"Scale\" ; width = 1 ; height = 1 ; channels = 3 ] ) ]
              labels = [ labelDim = 2 ] ] ]) ] ]\n")

# Runs `command` in the image folder under LD_DEBUG=files without CNTKIO_COMPONENT_PATH; checks that it
# printed `expected` and loaded `library` (a path).
function(expect_image_read what expected library)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CNTKIO_COMPONENT_PATH LD_DEBUG=files ${ARGN}
                  WORKING_DIRECTORY ${image_dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out STREQUAL "${expected}")
    message(FATAL_ERROR "${what} exited with ${rc} and printed '${out}', expected '${expected}':\n${err}")
  endif()
  string(REGEX MATCHALL "file=[^ ]*cntkio_image.so" loaded "${err}")
  list(REMOVE_DUPLICATES loaded)
  if(NOT loaded STREQUAL "file=${library}")
    message(FATAL_ERROR "${what} loaded '${loaded}', expected the installed ${library}")
  endif()
endfunction()

expect_image_read("the installed cntkio dump of an image" "48 32 16\n0 1\n" ${component}
                  ${prefix}/bin/cntkio dump --config image.cntk --section Img --mb-size 1)

set(image_check_build ${WORK_DIR}/image-check-build)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/image_check -B ${image_check_build} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${image_check_build})
expect_image_read("a program linking the installed libcntkio.so" "48\n32\n16\n" ${component}
                  ${image_check_build}/read_base64_image b64.txt)
get_filename_component(component_dir ${component} DIRECTORY)
expect_image_read("a program linking the static library whole and exported" "48\n32\n16\n" ${component}
                  ${CMAKE_COMMAND} -E env CNTKIO_COMPONENT_PATH=${component_dir}
                  ${image_check_build}/read_base64_image_static_exported b64.txt)
execute_process(COMMAND ${CMAKE_COMMAND} -E env CNTKIO_COMPONENT_PATH=${component_dir}
                        ${image_check_build}/read_base64_image_static b64.txt
                WORKING_DIRECTORY ${image_dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${err}" "does not export its symbols" at)
if(rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "a program linking the static library as usual read an image, or failed without "
                      "saying why (${rc}):\n${out}\n${err}")
endif()

if(PYTHON)
  file(GLOB python_component ${prefix}/lib/python*/dist-packages/cntkio/cntkio_image.so)
  if(NOT python_component)
    message(FATAL_ERROR "the image component was not installed beside the Python module")
  endif()
  get_filename_component(package_dir ${python_component} DIRECTORY)
  get_filename_component(site_dir ${package_dir} DIRECTORY)
  expect_image_read("the installed Python module" "[48.0, 32.0, 16.0]\n" ${python_component}
                    ${CMAKE_COMMAND} -E env PYTHONPATH=${site_dir} PYTHONDONTWRITEBYTECODE=1 ${PYTHON} -c
                    "import cntkio
s = cntkio.MinibatchSource(cntkio.Base64ImageDeserializer('b64.txt', cntkio.StreamDefs(
    features=cntkio.StreamDef(field='image'), labels=cntkio.StreamDef(field='label', shape=2))), randomize=False)
print(s.next_minibatch(1)[s.streams.features].asarray().ravel().tolist())")
endif()
