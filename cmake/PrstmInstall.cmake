# PrstmInstall.cmake: install rules for the library, its headers, prstm-run, the CMake package prstm::prstm and prstm.pc.
#
# Included from the top-level CMakeLists.txt after the prstm and prstm-run
# targets exist. `cmake --install build --prefix DIR` then lays out:
#   DIR/lib/libprstm.so*                     the library, built-in workloads included
#   DIR/include/prstm/prstm.h, prstm_tx.h    the host API and the body API
#   DIR/include/prstm/detail/*.h             the layers under the body API's inline code
#   DIR/bin/prstm-run                        the CLI
#   DIR/lib/cmake/prstm/                     prstmConfig.cmake, its version file, the
#                                            exported targets and PrstmWorkload.cmake
#   DIR/lib/pkgconfig/prstm.pc               for pkg-config
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# A project that adds prstm as a subdirectory (often EXCLUDE_FROM_ALL, where
# prstm-run is never built) gets no install rules of prstm unless it asks.
option(PRSTM_INSTALL "Generate the install rules of prstm" ${PROJECT_IS_TOP_LEVEL})
if(NOT PRSTM_INSTALL)
  return()
endif()

set(PRSTM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/prstm)

# prstm_tx.h, the body API, is inline code over the port layer, the tuning
# policy, the lock word, the table view, the STM core and the contention
# manager's walk: a workload's bodies need them all, so they are installed
# under detail/, which the package puts on the include path too.
install(FILES ${PROJECT_SOURCE_DIR}/include/prstm/prstm.h ${PROJECT_SOURCE_DIR}/include/prstm/prstm_tx.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/prstm)
install(FILES
  ${PROJECT_SOURCE_DIR}/engine/stm/stm_port.h
  ${PROJECT_SOURCE_DIR}/engine/stm/stm_policy.h
  ${PROJECT_SOURCE_DIR}/engine/stm/stm_lock.h
  ${PROJECT_SOURCE_DIR}/engine/stm/stm_core.h
  ${PROJECT_SOURCE_DIR}/txtable/txtable_view.h
  ${PROJECT_SOURCE_DIR}/cmp/cmp_priority.h
  ${PROJECT_SOURCE_DIR}/cmp/cmp_walk.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/prstm/detail)

# An installed prstm-run finds the installed library next to it, wherever the
# prefix is; both keep the path of the CUDA runtime they were linked with,
# which is often outside the loader's default folders (/usr/local/cuda/lib64).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(prstm_run_rpath "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH prstm_bin_to_lib "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set(prstm_run_rpath "$ORIGIN/${prstm_bin_to_lib}")
endif()
set_target_properties(prstm-run PROPERTIES INSTALL_RPATH "${prstm_run_rpath}" INSTALL_RPATH_USE_LINK_PATH TRUE)
set_target_properties(prstm PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
# The library links the CUDA runtime through nvcc, which treats the toolkit's
# folder as implicit and leaves it out of the rpath; name it explicitly.
if(PRSTM_HAVE_CUDA AND CUDAToolkit_LIBRARY_DIR)
  set_target_properties(prstm PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
endif()

install(TARGETS prstm prstm-run EXPORT prstmTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT prstmTargets NAMESPACE prstm:: FILE prstmTargets.cmake DESTINATION ${PRSTM_INSTALL_CMAKEDIR})

# The package config needs to know whether the library has its GPU backend
# (then prstm::prstm links CUDA::cudart, which find_dependency must provide)
# and where the toolkit it was built with lives, as a hint for the consumer.
set(PRSTM_CUDA_ROOT "")
if(PRSTM_HAVE_CUDA AND CUDAToolkit_BIN_DIR)
  get_filename_component(PRSTM_CUDA_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/prstmConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/prstmConfig.cmake
  INSTALL_DESTINATION ${PRSTM_INSTALL_CMAKEDIR})
# 0.x releases may change the API between minor versions, so a request for
# 0.1 accepts 0.1.z only.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/prstmConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/prstmConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/prstmConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/PrstmWorkload.cmake
  DESTINATION ${PRSTM_INSTALL_CMAKEDIR})

# prstm.pc is written at install time, because `cmake --install --prefix DIR`
# chooses the prefix only then and the file names it in absolute paths.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(PRSTM_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(PRSTM_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(PRSTM_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(PRSTM_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# What a static link would add; the shared library records these itself.
set(PRSTM_PC_LIBS_PRIVATE "-lcjson -lpthread -lm -ldl")
if(PRSTM_HAVE_CUDA AND CUDAToolkit_LIBRARY_DIR)
  string(APPEND PRSTM_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
# The first pass fills in everything but the prefix, which it writes back as
# its own placeholder for the second pass, at install time.
set(PRSTM_PC_PREFIX "@PRSTM_PC_PREFIX@")
configure_file(${CMAKE_CURRENT_LIST_DIR}/prstm.pc.in ${CMAKE_CURRENT_BINARY_DIR}/prstm.pc.template @ONLY)
install(CODE "
  set(PRSTM_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_CURRENT_BINARY_DIR}/prstm.pc.template\" \"${CMAKE_CURRENT_BINARY_DIR}/prstm.pc\" @ONLY)
  file(INSTALL \"${CMAKE_CURRENT_BINARY_DIR}/prstm.pc\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
")
