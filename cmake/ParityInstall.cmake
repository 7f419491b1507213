# What `pip install` and `cmake --install` put where (README "Install", docs/architecture.md
# "The installed library"). Included from the top-level CMakeLists.txt after every target is declared.
#
# A wheel (scikit-build-core sets SKBUILD; pyproject.toml) carries the two things a Python user runs:
# the `parity` CLI in the wheel's scripts (pip puts it on the environment's PATH) and the extension
# _parity_core at the top of site-packages, where the in-tree layout (build/python) has it too.
if(SKBUILD)
  install(TARGETS parity RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
  if(TARGET _parity_core)
    install(TARGETS _parity_core LIBRARY DESTINATION .)
  endif()
  return()
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# libparity: the objects of every module in one shared library, so a C++ user links one target
# (parity::parity) and none of the per-module static libraries or their order. The modules stay
# separate static libraries inside the build, where the layers are enforced (cmake/ParityModule.cmake).
get_property(parity_modules GLOBAL PROPERTY PARITY_MODULES)
set(parity_objects "")
set(parity_external_deps "")
foreach(m IN LISTS parity_modules)
  get_target_property(type parity_${m} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    list(APPEND parity_objects $<TARGET_OBJECTS:parity_${m}>)
    get_target_property(deps parity_${m} LINK_LIBRARIES)
  else()
    get_target_property(deps parity_${m} INTERFACE_LINK_LIBRARIES)
  endif()
  foreach(d IN LISTS deps)
    if(d AND NOT d MATCHES "^parity_")
      list(APPEND parity_external_deps ${d})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES parity_external_deps)

# The dependencies the public headers include (csv_cell.h: fmt; compare_runs.h, diagnosis.h:
# nlohmann/json) are PUBLIC, so a user of parity::parity gets them and parityConfig.cmake finds them
# (find_dependency); every other one (OpenMP, zlib, protobuf, threads) stays inside the shared library.
set(parity_public_deps fmt::fmt nlohmann_json::nlohmann_json)
set(parity_private_deps ${parity_external_deps})
list(REMOVE_ITEM parity_private_deps ${parity_public_deps})

add_library(parity_lib SHARED ${parity_objects})
add_library(parity::parity ALIAS parity_lib)
set_target_properties(parity_lib PROPERTIES
  OUTPUT_NAME parity EXPORT_NAME parity LINKER_LANGUAGE CXX
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_include_directories(parity_lib PUBLIC
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(parity_lib PUBLIC cxx_std_20)
target_link_libraries(parity_lib PUBLIC ${parity_public_deps} PRIVATE ${parity_private_deps})

install(TARGETS parity RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS parity_lib EXPORT parityTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/parity DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

# find_package(parity CONFIG): parityConfig.cmake finds the public dependencies, then the exported
# target. Both files locate the prefix from their own path, so `cmake --install --prefix P` works.
set(parity_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/parity)
install(EXPORT parityTargets NAMESPACE parity:: DESTINATION ${parity_cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/parityConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/parityConfig.cmake INSTALL_DESTINATION ${parity_cmake_dir})
# 0.x: a minor version may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/parityConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/install/parityConfig.cmake ${CMAKE_BINARY_DIR}/install/parityConfigVersion.cmake
  DESTINATION ${parity_cmake_dir})

# pkg-config: parity.pc names its prefix relative to its own folder (${pcfiledir}), so it too is
# correct wherever the prefix is.
file(RELATIVE_PATH parity_pc_to_prefix ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" parity_pc_to_prefix "${parity_pc_to_prefix}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/parity.pc.in ${CMAKE_BINARY_DIR}/install/parity.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/install/parity.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
