# The image format as a component: the shared module cntkio_image.so, loaded the first time one of its names
# is looked up (src/spec/components.cpp), so that a process that reads no image never loads OpenCV, libzip
# or libturbojpeg. It holds only the image format's objects; the rest of cntkio (the registry, the Env, the
# errors) it takes from its host: the program or module that holds cntkio (the CLI, the Python module, a
# test program, libcntkio.so), which must hold all of cntkio and export its symbols (cntkio_component_host).
#
# Where it lies: in the build tree beside the CLI and libcntkio.so (and copied beside the Python module);
# installed in <libdir>/cntkio/ and in the Python package's folder.

# The symbols a host exports to the component: everything of namespace cntkio (functions, vtables,
# type_infos, guard variables), as mangled-name patterns.
set(CNTKIO_HOST_SYMBOLS "_ZN6cntkio*;_ZNK6cntkio*;_ZTVN6cntkio*;_ZTIN6cntkio*;_ZTSN6cntkio*;_ZGVN6cntkio*;_ZTTN6cntkio*")
string(REPLACE ";" ";\n    " cntkio_host_symbol_lines "${CNTKIO_HOST_SYMBOLS};")
file(WRITE ${PROJECT_BINARY_DIR}/cntkio_host.dynamic-list "{\n    ${cntkio_host_symbol_lines}\n};\n")
file(WRITE ${PROJECT_BINARY_DIR}/cntkio_python_host.version-script
     "{\n  global:\n    PyInit__core;\n    ${cntkio_host_symbol_lines}\n  local: *;\n};\n")

# Makes `target` (an executable or a Python module) a host of the components: it links every object of the
# static library, not only those it calls itself, and exports cntkio's symbols. An executable exports
# nothing else; the Python module nothing else either (its other symbols stay out of the process's global
# scope, into which it is promoted when a component loads).
function(cntkio_component_host target)
  target_link_libraries(${target} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,cntkio>")
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_link_options(${target} PRIVATE "LINKER:--dynamic-list=${PROJECT_BINARY_DIR}/cntkio_host.dynamic-list")
  else()
    target_link_options(${target} PRIVATE
                        "LINKER:--version-script=${PROJECT_BINARY_DIR}/cntkio_python_host.version-script")
  endif()
endfunction()

if(NOT CNTKIO_WITH_IMAGES)
  return()
endif()

# The image format's objects (register.cpp included): the component's, and those of the tests and the
# benchmark that call the format directly (they link it in, and then no file is loaded).
file(GLOB cntkio_image_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/formats/image/*.cpp)
add_library(cntkio_format_image OBJECT ${cntkio_image_sources})
target_include_directories(cntkio_format_image PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(cntkio_format_image PRIVATE CNTKIO_VERSION="${PROJECT_VERSION}")
target_link_libraries(cntkio_format_image PUBLIC Threads::Threads opencv_core opencv_imgproc opencv_imgcodecs
                                                 PkgConfig::LIBZIP PkgConfig::TURBOJPEG PkgConfig::ZLIBPC
                                          PRIVATE Boost::headers)

# The component. Its cntkio symbols are left undefined: the host's are taken when it is loaded.
add_library(cntkio_image MODULE $<TARGET_OBJECTS:cntkio_format_image>)
set_target_properties(cntkio_image PROPERTIES PREFIX "" OUTPUT_NAME cntkio_image
                                              LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
target_link_libraries(cntkio_image PRIVATE Threads::Threads opencv_core opencv_imgproc opencv_imgcodecs
                                           PkgConfig::LIBZIP PkgConfig::TURBOJPEG PkgConfig::ZLIBPC)
install(TARGETS cntkio_image LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/cntkio COMPONENT runtime)
