# Installation (cmake --install), the CMake package (find_package(cntkio CONFIG)), the pkg-config file and
# the Debian package (cpack -G DEB; scripts/deb-check.sh). Included from the root CMakeLists.txt.
#
# Layout under the prefix (GNUInstallDirs):
#   bin/cntkio                                   the command line
#   <libdir>/libcntkio.so.<ver>, libcntkio.a     the shared and the static library
#   include/cntkio/*.hpp                         the public headers
#   <libdir>/cmake/cntkio/                       cntkioConfig.cmake, its version file and the targets
#   <libdir>/pkgconfig/cntkio.pc                 pkg-config (relocatable: paths relative to the .pc file)
#   <python dir>/cntkio/                         the Python package (python/CMakeLists.txt)
include(CMakePackageConfigHelpers)

set(CNTKIO_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/cntkio" CACHE STRING
    "Where the CMake package files go, relative to the prefix")

install(TARGETS cntkio_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS cntkio cntkio_shared EXPORT cntkioTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cntkio DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT development FILES_MATCHING PATTERN "*.hpp")
install(EXPORT cntkioTargets NAMESPACE cntkio:: DESTINATION ${CNTKIO_INSTALL_CMAKEDIR} COMPONENT development)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cntkioConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cntkioConfig.cmake INSTALL_DESTINATION ${CNTKIO_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cntkioConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cntkioConfig.cmake ${PROJECT_BINARY_DIR}/cntkioConfigVersion.cmake
        DESTINATION ${CNTKIO_INSTALL_CMAKEDIR} COMPONENT development)

# pkg-config: the prefix is found from the .pc file's own folder, so the package can be moved.
file(RELATIVE_PATH CNTKIO_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" CNTKIO_PC_TO_PREFIX "${CNTKIO_PC_TO_PREFIX}")
set(CNTKIO_PC_PRIVATE_LIBS "")
foreach(library IN LISTS CNTKIO_INSTALLED_PRIVATE_LIBS)
  string(APPEND CNTKIO_PC_PRIVATE_LIBS " -l${library}")
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/cntkio.pc.in ${PROJECT_BINARY_DIR}/cntkio.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cntkio.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)

# ---- Debian package: one package `cntkio` with everything above, installed under /usr. ----
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "cntkio")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "cntkio")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "CNTK's data readers (CTF, CBF, HTK, images): library, CLI and Python module")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
    "cntkio reads CNTK datasets with CNTK's exact reader semantics: the CNTK Text Format, the CNTK Binary "
    "Format, HTK features with MLF labels and image maps, with CNTK's randomization, epochs and distributed "
    "reading. The package holds the cntkio command line, the shared and static C++ library with its headers, "
    "CMake and pkg-config files, and the Python module cntkio.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")  # cntkio_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "cntkio developers <cntkio@localhost>" CACHE STRING
    "Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the libraries the binaries link (dpkg-shlibdeps)
# The Python module imports NumPy (SciPy for sparse data); the CLI and the library need neither.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-scipy, python3-torch")
set(CPACK_DEB_COMPONENT_INSTALL OFF)
include(CPack)
