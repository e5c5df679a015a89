# `cpack` (run in the build folder) makes a .deb of what `cmake --install` places: the library,
# its headers and CMake/pkg-config files, the gpumem command with its injection library, and the
# exporter's systemd unit. Configure with -DCMAKE_INSTALL_PREFIX=/usr for a package that installs
# under /usr (scripts/test.sh builds one so and runs it from a tree unpacked with dpkg -x).
set(CPACK_GENERATOR DEB CACHE STRING "Package formats cpack makes")
set(CPACK_PACKAGE_NAME gpumem)
set(CPACK_PACKAGE_VENDOR gpumem)
set(CPACK_PACKAGE_CONTACT "gpumem maintainers <gpumem@localhost>" CACHE STRING
    "The .deb's Maintainer field")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "gpumem tells how much GPU memory code uses and how high it peaks: a C++ library (fastai.utils.mem's API with exact, overlapping, resettable peaks), the gpumem command (list, watch, run, serve) and a Prometheus exporter with a systemd unit.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# Runtime dependencies from the binaries themselves (dpkg-shlibdeps). The NVIDIA driver is not one:
# gpumem loads it at run time and says so when it is missing.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Loaded when present, never linked: libunwind (allocation stacks) and elfutils' libdw (their
# files and lines).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libunwind8, libdw1")
# The library's own folder, for dpkg-shlibdeps to find libgpumem.so that bin/gpumem needs.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${GPUMEM_OUTPUT_LIB_DIR})
include(CPack)
