# The library's parts, one OBJECT library each, as HACKING.md lays them out (scripts/check_dependencies.py
# checks that each includes only the parts below it):
#
#   <prefix>_core, <prefix>_config, <prefix>_spec, <prefix>_pipeline, <prefix>_convert,
#   <prefix>_format_<name> for each format folder src/formats/<name> (without its register.cpp), and
#   <prefix>_registrations: the formats' register.cpp files and the generated list that calls them.
#
# The main build links them all into libcntkio; the fuzz build links only the parts it fuzzes, compiled with
# its own flags. Neither lists source files.
#
#   cntkio_components(PREFIX <prefix> ROOT <repository> VERSION <version> PARTS <part>...
#                     [FORMATS <format>...] [GENERATED_DIR <dir>])
#
# PARTS names parts as above without the prefix (core, config, spec, pipeline, convert, format_ctf, ...,
# registrations); FORMATS are the formats `registrations` registers. Sets <prefix>_OBJECTS in the caller's
# scope: a generator expression list of every part's objects.
function(cntkio_components)
  cmake_parse_arguments(arg "" "PREFIX;ROOT;VERSION;GENERATED_DIR" "PARTS;FORMATS" ${ARGN})
  set(objects "")
  foreach(part IN LISTS arg_PARTS)
    if(part MATCHES "^format_(.+)$")
      file(GLOB sources CONFIGURE_DEPENDS ${arg_ROOT}/src/formats/${CMAKE_MATCH_1}/*.cpp)
      list(FILTER sources EXCLUDE REGEX "/register\\.cpp$")
    elseif(part STREQUAL "registrations")
      # Each registered format's register.cpp defines register_<format>_format(); the generated
      # builtin_formats.cpp calls them all (src/spec/builtin_formats.hpp).
      set(sources "")
      set(CNTKIO_BUILTIN_DECLARATIONS "")
      set(CNTKIO_BUILTIN_CALLS "")
      foreach(format IN LISTS arg_FORMATS)
        list(APPEND sources ${arg_ROOT}/src/formats/${format}/register.cpp)
        string(APPEND CNTKIO_BUILTIN_DECLARATIONS "void register_${format}_format();\n")
        string(APPEND CNTKIO_BUILTIN_CALLS "  register_${format}_format();\n")
      endforeach()
      configure_file(${arg_ROOT}/cmake/builtin_formats.cpp.in ${arg_GENERATED_DIR}/builtin_formats.cpp @ONLY)
      list(APPEND sources ${arg_GENERATED_DIR}/builtin_formats.cpp)
    elseif(part STREQUAL "core")  # with its Envs (src/core/env/)
      file(GLOB sources CONFIGURE_DEPENDS ${arg_ROOT}/src/core/*.cpp ${arg_ROOT}/src/core/env/*.cpp)
    else()
      file(GLOB sources CONFIGURE_DEPENDS ${arg_ROOT}/src/${part}/*.cpp)
    endif()
    set(target ${arg_PREFIX}_${part})
    add_library(${target} OBJECT ${sources})
    target_include_directories(${target} PUBLIC ${arg_ROOT}/include PRIVATE ${arg_ROOT}/src)
    target_link_libraries(${target} PUBLIC Threads::Threads)
    target_compile_definitions(${target} PRIVATE CNTKIO_VERSION="${arg_VERSION}")
    list(APPEND objects $<TARGET_OBJECTS:${target}>)
  endforeach()
  set(${arg_PREFIX}_OBJECTS ${objects} PARENT_SCOPE)
endfunction()

# The formats built into the library: every folder of src/formats with a register.cpp but the image format,
# which is a component loaded on first use (cmake/image_component.cmake).
function(cntkio_builtin_formats root out)
  file(GLOB registrations CONFIGURE_DEPENDS ${root}/src/formats/*/register.cpp)
  set(formats "")
  foreach(registration IN LISTS registrations)
    get_filename_component(folder ${registration} DIRECTORY)
    get_filename_component(format ${folder} NAME)
    if(format STREQUAL "image")
      continue()
    endif()
    list(APPEND formats ${format})
  endforeach()
  set(${out} ${formats} PARENT_SCOPE)
endfunction()
