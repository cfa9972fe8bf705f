# Start-up of the CLI (issue #25 item 4): `cntkio --version` and a `dump` of a tiny CTF file load no image
# library (OpenCV, libzip, libturbojpeg) and not the image component, as the dynamic loader's LD_DEBUG=files
# trace shows; a dump of a Base64ImageDeserializer loads the component (and OpenCV) from beside the CLI; a copy
# of the CLI without the component beside it fails on images with an error that names the component and the
# places it was looked for. Timings are measured by bench/startup, not here.
#   cmake -DCLI=<cntkio> -DVERSION=<x.y.z> -DWORK_DIR=<dir> -DWITH_IMAGES=<bool> -P cli_startup_test.cmake
set(heavy "libopencv|libzip|libturbojpeg|cntkio_image")
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/tiny.ctf "0 |x 1 2\n1 |x 3 4\n")
file(WRITE ${WORK_DIR}/tiny.cntk "Tiny = [ reader = [
  readerType = CNTKTextFormatReader ; file = \"tiny.ctf\" ; randomize = false
  input = [ x = [ dim = 2 ; format = dense ] ] ] ]\n")
# One 1x1 PNG whose pixel is R 16, G 32, B 48 (written by a few lines of Python's zlib and struct).
file(WRITE ${WORK_DIR}/b64.txt
     "1\tiVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGMQUDAAAACkAGE0Zn1yAAAAAElFTkSuQmCC\n")
file(WRITE ${WORK_DIR}/image.cntk "Img = [ reader = [ randomize = false
  deserializers = ([ type = \"Base64ImageDeserializer\" ; module = \"ImageReader\" ; file = \"b64.txt\"
    input = [ features = [ transforms = ( [ type = \"Scale\" ; width = 1 ; height = 1 ; channels = 3 ] ) ]
              labels = [ labelDim = 2 ] ] ]) ] ]\n")

# Runs the CLI at `cli` with `args` under LD_DEBUG=files (CNTKIO_COMPONENT_PATH unset): sets rc, out, err.
macro(run cli)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CNTKIO_COMPONENT_PATH LD_DEBUG=files ${cli} ${ARGN}
                  WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endmacro()
macro(expect_light what)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} exited with ${rc}:\n${out}\n${err}")
  endif()
  string(REGEX MATCHALL "file=[^ ]*(${heavy})[^ ]*" loaded "${err}")
  if(loaded)
    list(REMOVE_DUPLICATES loaded)
    message(FATAL_ERROR "${what} loaded image libraries at start-up: ${loaded}")
  endif()
endmacro()

run(${CLI} --version)
expect_light("cntkio --version")
if(NOT out STREQUAL "cntkio ${VERSION}\n")
  message(FATAL_ERROR "cntkio --version printed '${out}'")
endif()

run(${CLI} dump --config tiny.cntk --section Tiny --mb-size 2)
expect_light("cntkio dump of a CTF file")
if(NOT out STREQUAL "1 2\n3 4\n")
  message(FATAL_ERROR "cntkio dump of tiny.ctf printed '${out}'")
endif()

if(NOT WITH_IMAGES)
  return()
endif()

run(${CLI} dump --config image.cntk --section Img --mb-size 1)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "48 32 16\n0 1\n")
  message(FATAL_ERROR "cntkio dump of an image exited with ${rc}, printed '${out}':\n${err}")
endif()
get_filename_component(cli_dir ${CLI} DIRECTORY)
foreach(library "${cli_dir}/cntkio_image.so" "libopencv_imgcodecs")
  string(FIND "${err}" "file=${library}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "cntkio dump of an image did not load ${library}:\n${err}")
  endif()
endforeach()

file(MAKE_DIRECTORY ${WORK_DIR}/alone)
file(COPY ${CLI} DESTINATION ${WORK_DIR}/alone)
run(${WORK_DIR}/alone/cntkio dump --config tiny.cntk --section Tiny --mb-size 2)
expect_light("a copy of cntkio without the image component, on a CTF file")
run(${WORK_DIR}/alone/cntkio dump --config image.cntk --section Img --mb-size 1)
if(NOT rc EQUAL 5)  # an I/O error: a file is missing
  message(FATAL_ERROR "cntkio without its image component exited with ${rc} on an image:\n${out}\n${err}")
endif()
foreach(part "error: Cannot load the image component" "Base64ImageDeserializer"
             "${WORK_DIR}/alone/cntkio_image.so (not there)" "CNTKIO_COMPONENT_PATH")
  string(FIND "${err}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the error of cntkio without its image component lacks '${part}':\n${err}")
  endif()
endforeach()
