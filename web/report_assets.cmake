# Embeds the HTML report's front end into the parity library, so a report can be written from any
# directory by a binary that has no access to the source tree.
#
# Included from the top-level CMakeLists.txt after parity_module(report ...). The embedding runs at
# *build* time (not configure time) because `make build` configures first and installs the npm packages
# (scripts/install-web.sh) afterwards; it rewrites the generated source only when an asset changed, so
# an unchanged tree recompiles nothing.
set(PARITY_REPORT_ASSETS_CPP ${CMAKE_BINARY_DIR}/generated/report_assets.cpp)
file(GLOB PARITY_REPORT_WEB_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/web/src/*.html ${CMAKE_SOURCE_DIR}/web/src/*.css ${CMAKE_SOURCE_DIR}/web/src/*.js)
add_custom_target(parity_report_assets
  COMMAND ${CMAKE_COMMAND} -DWEB_DIR=${CMAKE_SOURCE_DIR}/web -DOUT=${PARITY_REPORT_ASSETS_CPP}
          -P ${CMAKE_SOURCE_DIR}/web/embed_assets.cmake
  BYPRODUCTS ${PARITY_REPORT_ASSETS_CPP}
  SOURCES ${PARITY_REPORT_WEB_SOURCES}
  COMMENT "Embedding the HTML report template and charting library"
  VERBATIM)
target_sources(parity_report PRIVATE ${PARITY_REPORT_ASSETS_CPP})
add_dependencies(parity_report parity_report_assets)
