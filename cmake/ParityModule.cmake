# parity_module(<name> [HEADERS <header>...] [DEPS <target>...])
# Builds src/<name>/**/*.cpp into the static library parity_<name>. A new source file in that folder
# is picked up without touching any CMakeLists (CONFIGURE_DEPENDS). A module with no sources yet is an
# INTERFACE library so the dependency graph can be declared before the code exists.
#
# The layers are enforced by the compiler (docs/architecture.md, "Layers"):
#   - HEADERS names the public headers the module owns, as file names in include/parity/. They are
#     staged at configure time as symbolic links in ${CMAKE_BINARY_DIR}/include/<name>/parity/, and that
#     folder is the library's PUBLIC include directory. DEPS are linked PUBLIC, so a module sees the
#     public headers of itself and of the modules below it (transitively), and no others.
#   - A parity_<x> in DEPS must be declared already: modules are declared bottom-up, so the graph of
#     modules cannot have a cycle.
#   - The module's private headers, src/<name>/*.h, are included as "<name>/....h" through the PRIVATE
#     include directory ${CMAKE_BINARY_DIR}/private/<name> (a link <name> -> src/<name>): only the
#     module's own sources see them.
# Every module is recorded, in declaration order, in the global property PARITY_MODULES (the installed
# library libparity is built from their objects, cmake/ParityInstall.cmake).
# parity_check_header_owners(), called after the last module, fails the configure step when a header
# in include/parity/ has no owner; a header listed by two modules fails at the second.
set(PARITY_PUBLIC_HEADERS ${CMAKE_SOURCE_DIR}/include/parity)

# Points the symbolic link `link` at `target`, leaving a link that already does untouched.
function(_parity_link target link)
  if(IS_SYMLINK ${link})
    file(READ_SYMLINK ${link} current)
    if(current STREQUAL target)
      return()
    endif()
  endif()
  file(REMOVE_RECURSE ${link})
  file(CREATE_LINK ${target} ${link} SYMBOLIC)
endfunction()

function(parity_module name)
  cmake_parse_arguments(PM "" "" "HEADERS;DEPS" ${ARGN})
  if(PM_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "parity_module(${name}): unexpected arguments ${PM_UNPARSED_ARGUMENTS} (HEADERS or DEPS?)")
  endif()
  foreach(dep IN LISTS PM_DEPS)
    if(dep MATCHES "^parity_" AND NOT TARGET ${dep})
      message(FATAL_ERROR "parity_module(${name}) depends on ${dep}, which is not declared yet: a module may "
                          "only use the modules declared before it (the layers go one way, docs/architecture.md)")
    endif()
  endforeach()

  # Public headers: claim each one, then stage exactly these in include/<name>/parity/.
  set(public ${CMAKE_BINARY_DIR}/include/${name})
  file(MAKE_DIRECTORY ${public}/parity)
  foreach(h IN LISTS PM_HEADERS)
    if(NOT EXISTS ${PARITY_PUBLIC_HEADERS}/${h} OR IS_DIRECTORY ${PARITY_PUBLIC_HEADERS}/${h})
      message(FATAL_ERROR "parity_module(${name}) lists the header ${h}, but include/parity/${h} does not exist")
    endif()
    get_property(owner GLOBAL PROPERTY PARITY_HEADER_OWNER_${h})
    if(owner)
      message(FATAL_ERROR "include/parity/${h} is listed in the HEADERS of two modules, ${owner} and ${name}: "
                          "every public header belongs to exactly one module")
    endif()
    set_property(GLOBAL PROPERTY PARITY_HEADER_OWNER_${h} ${name})
    _parity_link(${PARITY_PUBLIC_HEADERS}/${h} ${public}/parity/${h})
  endforeach()
  file(GLOB staged RELATIVE ${public}/parity LIST_DIRECTORIES true ${public}/parity/*)
  foreach(h IN LISTS staged)
    if(NOT h IN_LIST PM_HEADERS)
      file(REMOVE_RECURSE ${public}/parity/${h})  # a header this module no longer owns
    endif()
  endforeach()

  # Private headers: src/<name>/ seen as "<name>/" by this module alone.
  set(private ${CMAKE_BINARY_DIR}/private/${name})
  if(IS_DIRECTORY ${CMAKE_SOURCE_DIR}/src/${name})
    file(MAKE_DIRECTORY ${private})
    _parity_link(${CMAKE_SOURCE_DIR}/src/${name} ${private}/${name})
  endif()

  set_property(GLOBAL APPEND PROPERTY PARITY_MODULES ${name})  # in declaration order (bottom-up)
  set_property(GLOBAL PROPERTY PARITY_MODULE_DEPS_${name} ${PM_DEPS})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp ${CMAKE_SOURCE_DIR}/src/${name}/*.cc)
  if(srcs)
    add_library(parity_${name} STATIC ${srcs})
    target_include_directories(parity_${name} PUBLIC ${public} PRIVATE ${private})
    target_link_libraries(parity_${name} PUBLIC ${PM_DEPS})
  else()
    add_library(parity_${name} INTERFACE)
    target_include_directories(parity_${name} INTERFACE ${public})
    target_link_libraries(parity_${name} INTERFACE ${PM_DEPS})
  endif()
endfunction()

# parity_check_header_owners()
# Fails unless every file in include/parity/ is listed in the HEADERS of some parity_module(). A new
# header re-runs the configure step (CONFIGURE_DEPENDS), so it cannot be forgotten.
function(parity_check_header_owners)
  file(GLOB headers RELATIVE ${PARITY_PUBLIC_HEADERS} CONFIGURE_DEPENDS ${PARITY_PUBLIC_HEADERS}/*)
  set(unowned "")
  foreach(h IN LISTS headers)
    get_property(owner GLOBAL PROPERTY PARITY_HEADER_OWNER_${h})
    if(NOT owner)
      list(APPEND unowned include/parity/${h})
    endif()
  endforeach()
  if(unowned)
    list(JOIN unowned ", " unowned)
    message(FATAL_ERROR "no module owns ${unowned}: add each to the HEADERS of the parity_module() that "
                        "defines it (CMakeLists.txt; docs/architecture.md, \"Layers\")")
  endif()
endfunction()

# parity_write_module_graph(<file>)
# Writes, at generate time, one line per module: "<name> <static library or -> <module it uses>,...",
# the declared graph that tests/install/link_layers.py checks the libraries' symbols against.
function(parity_write_module_graph file)
  get_property(modules GLOBAL PROPERTY PARITY_MODULES)
  set(lines "")
  foreach(m IN LISTS modules)
    get_property(deps GLOBAL PROPERTY PARITY_MODULE_DEPS_${m})
    list(FILTER deps INCLUDE REGEX "^parity_")
    list(TRANSFORM deps REPLACE "^parity_" "")
    list(JOIN deps "," deps)
    get_target_property(type parity_${m} TYPE)
    if(type STREQUAL "STATIC_LIBRARY")
      set(lib "$<TARGET_FILE:parity_${m}>")
    else()
      set(lib "-")
    endif()
    string(APPEND lines "${m} ${lib} ${deps}\n")
  endforeach()
  file(GENERATE OUTPUT ${file} CONTENT "${lines}")
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
    PARITY_SOURCE_DIR="${CMAKE_SOURCE_DIR}" PARITY_BINARY_DIR="${CMAKE_BINARY_DIR}"
    PARITY_TEST_PYTHON="${PARITY_TEST_PYTHON}")  # the venv's python: numpy writes reference files
  add_test(NAME cpp_${dir} COMMAND test_${dir} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
