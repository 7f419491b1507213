// src/report/html_assets.h — the HTML report's front end, embedded into the library at build time by
// web/embed_assets.cmake (from web/src/ and the npm-installed charting library), so that a report can be
// written by a binary that has no access to the source tree.
#pragma once

#include <string_view>

namespace parity::report_assets {

std::string_view template_html();     // web/src/report.html, with the placeholders listed in html_report.cpp
std::string_view report_css();        // web/src/report.css
std::string_view report_js();         // web/src/*.js concatenated in load order
std::string_view charting_library();  // echarts.min.js; empty when npm packages were missing at build time
std::string_view charting_library_version();  // "5.6.0"; empty when missing

}  // namespace parity::report_assets
