# Install-time part of the Python package's installation (python/CMakeLists.txt sets CNTKIO_PY_MODULE,
# CNTKIO_PY_FILES, CNTKIO_PY_COMPONENTS, CNTKIO_PY_DIR and CNTKIO_PY_VERSION before this runs).
#
# Where the package goes, when CNTKIO_INSTALL_PYTHONDIR (CNTKIO_PY_DIR) is empty:
#   prefix /usr (the Debian package; cpack installs with that prefix): /usr/lib/python3/dist-packages,
#     where Debian's python3 finds packaged modules;
#   any other prefix: <prefix>/lib/python3.<minor>/dist-packages, which Debian's python3 searches for the
#     prefix /usr/local and which PYTHONPATH names for other prefixes.
set(dir "${CNTKIO_PY_DIR}")
if(dir STREQUAL "")
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(dir "lib/python3/dist-packages")
  else()
    set(dir "lib/python${CNTKIO_PY_VERSION}/dist-packages")
  endif()
endif()
if(NOT IS_ABSOLUTE "${dir}")
  set(dir "${CMAKE_INSTALL_PREFIX}/${dir}")
endif()
file(INSTALL DESTINATION "${dir}/cntkio" TYPE MODULE FILES "${CNTKIO_PY_MODULE}")
file(INSTALL DESTINATION "${dir}/cntkio" TYPE FILE FILES ${CNTKIO_PY_FILES})
if(CNTKIO_PY_COMPONENTS)  # the image component, beside the module that loads it on first use
  file(INSTALL DESTINATION "${dir}/cntkio" TYPE MODULE FILES ${CNTKIO_PY_COMPONENTS})
endif()
