# `cmake --install`: the library (shared and static), its headers, a CMake package (gpumemConfig.cmake
# with a version file, exporting gpumem::gpumem, gpumem::gpumem_static and gpumem::headers), a
# pkg-config file, and where they are built the gpumem command, its injection library and the
# exporter's systemd unit, the command's shell completions and its man page. GNUInstallDirs places them; components: library (what runs),
# development (what compiles against it), tools (the command and what it needs).
include(CMakePackageConfigHelpers)

set(GPUMEM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gpumem CACHE STRING
    "Where gpumemConfig.cmake is installed (relative to the prefix)")
set(GPUMEM_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig CACHE STRING
    "Where gpumem.pc is installed (relative to the prefix)")
set(GPUMEM_INSTALL_SYSTEMDDIR lib/systemd/system CACHE STRING
    "Where the exporter's systemd unit is installed (relative to the prefix)")

install(TARGETS gpumem gpumem_static gpumem_headers EXPORT gpumemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gpumem ${PROJECT_BINARY_DIR}/include/gpumem
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
install(EXPORT gpumemTargets NAMESPACE gpumem:: DESTINATION ${GPUMEM_INSTALL_CMAKEDIR}
        COMPONENT development)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gpumemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpumemConfig.cmake INSTALL_DESTINATION ${GPUMEM_INSTALL_CMAKEDIR})
# Before 1.0 a minor release may break the API: a request for 0.1 accepts 0.1.x only.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_gpumem_compatibility SameMinorVersion)
else()
  set(_gpumem_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpumemConfigVersion.cmake
  COMPATIBILITY ${_gpumem_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/gpumemConfig.cmake ${PROJECT_BINARY_DIR}/gpumemConfigVersion.cmake
        DESTINATION ${GPUMEM_INSTALL_CMAKEDIR} COMPONENT development)

# gpumem.pc finds its prefix from its own folder, so an installed tree may be moved (dpkg -x).
file(RELATIVE_PATH GPUMEM_PC_PREFIX_FROM_PCDIR
     ${CMAKE_INSTALL_PREFIX}/${GPUMEM_INSTALL_PKGCONFIGDIR} ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" GPUMEM_PC_PREFIX_FROM_PCDIR "${GPUMEM_PC_PREFIX_FROM_PCDIR}")
set(GPUMEM_PC_DL "")
foreach(library IN LISTS CMAKE_DL_LIBS)
  string(APPEND GPUMEM_PC_DL " -l${library}")
endforeach()
string(STRIP "${GPUMEM_PC_DL}" GPUMEM_PC_DL)
configure_file(${PROJECT_SOURCE_DIR}/cmake/gpumem.pc.in ${PROJECT_BINARY_DIR}/gpumem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gpumem.pc DESTINATION ${GPUMEM_INSTALL_PKGCONFIGDIR}
        COMPONENT development)

if(TARGET gpumem_cli)
  install(TARGETS gpumem_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  # bin/gpumem looks for it in the library folder (tools/cli/CMakeLists.txt).
  install(TARGETS gpumem_inject LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tools)
  # The unit names the installed command, under the prefix of the install (cpack's may differ
  # from the configured one), so it is written at install time.
  install(CODE "
    set(CMAKE_INSTALL_FULL_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
    configure_file(\"${PROJECT_SOURCE_DIR}/deploy/systemd/gpumem-exporter.service.in\"
                   \"${PROJECT_BINARY_DIR}/gpumem-exporter.service\" @ONLY)"
    COMPONENT tools)
  install(FILES ${PROJECT_BINARY_DIR}/gpumem-exporter.service
          DESTINATION ${GPUMEM_INSTALL_SYSTEMDDIR} COMPONENT tools)
  # The shell completions and the man page, written by the built command (tools/cli), where each
  # shell and man look for a package's own.
  set(_gpumem_written ${PROJECT_BINARY_DIR}/tools/cli)
  install(FILES ${_gpumem_written}/completions/gpumem
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT tools)
  install(FILES ${_gpumem_written}/completions/_gpumem
          DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT tools)
  install(FILES ${_gpumem_written}/completions/gpumem.fish
          DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d COMPONENT tools)
  install(FILES ${_gpumem_written}/gpumem.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          COMPONENT tools)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT library)
