# parity_module(<name> DEPS <targets...>)
# Builds src/<name>/**/*.cpp into the static library parity_<name>. A new source file in that folder
# is picked up without touching any CMakeLists (CONFIGURE_DEPENDS). A module with no sources yet is an
# INTERFACE library so the dependency graph can be declared before the code exists.
function(parity_module name)
  cmake_parse_arguments(PM "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp ${CMAKE_SOURCE_DIR}/src/${name}/*.cc)
  if(srcs)
    add_library(parity_${name} STATIC ${srcs})
    target_include_directories(parity_${name} PUBLIC ${CMAKE_SOURCE_DIR}/include PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(parity_${name} PUBLIC ${PM_DEPS})
  else()
    add_library(parity_${name} INTERFACE)
    target_include_directories(parity_${name} INTERFACE ${CMAKE_SOURCE_DIR}/include)
    target_link_libraries(parity_${name} INTERFACE ${PM_DEPS})
  endif()
endfunction()

# parity_test_dir(<dir>)
# tests/<dir>/*_test.cpp become one GoogleTest executable test_<dir>, registered with ctest.
function(parity_test_dir dir)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*_test.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(test_${dir} ${srcs})
  target_include_directories(test_${dir} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_${dir} PRIVATE parity_all GTest::gtest GTest::gtest_main)
  target_compile_definitions(test_${dir} PRIVATE
    PARITY_SOURCE_DIR="${CMAKE_SOURCE_DIR}" PARITY_BINARY_DIR="${CMAKE_BINARY_DIR}")
  add_test(NAME cpp_${dir} COMMAND test_${dir} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
