// src/report/html_report.cpp — assembles the self-contained HTML report (parity/html_report.h).
//
// The template (web/src/report.html) carries five placeholders, each an HTML comment on its own:
//   <!--@TITLE@-->    the page title, HTML-escaped
//   <!--@CSS@-->      web/src/report.css, inside <style>
//   <!--@DATA@-->     the data envelope, JSON inside <script type="application/json" id="parity-data">
//   <!--@LIBRARY@-->  the charting library (ECharts), inside <script>
//   <!--@SCRIPT@-->   the report's own script (web/src/*.js), inside <script>
// The template is split at the placeholders in one pass, so text inside an inlined asset that happens
// to look like a placeholder is never substituted.
#include "parity/html_report.h"
#include "parity/schemas.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "report/html_assets.h"
#include "report/report_rows.h"
#include "report/tree_index.h"

namespace parity {

namespace {

using nlohmann::json;

constexpr std::string_view kDataSchema = schemas::kReportData.id;

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

bool iequals_at(std::string_view s, size_t pos, std::string_view word) {
  if (pos + word.size() > s.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[pos + i])) != word[i]) return false;
  }
  return true;
}

// A script's text made unable to end its <script> element early (HTML: script data ends at "</script"
// in any case; "<!--" enters the escaped state). "<\/" and "<\!--" mean the same inside JavaScript
// strings, regular expressions and comments, the only places where these sequences can occur.
std::string script_safe(std::string_view js) {
  std::string out;
  out.reserve(js.size());
  for (size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && iequals_at(js, i + 1, "/script")) {
      out += "<\\/";
      ++i;  // skip '/', the rest is copied by the loop
      continue;
    }
    if (js[i] == '<' && js.compare(i, 4, "<!--") == 0) {
      out += "<\\!";
      ++i;  // skip '!'
      continue;
    }
    out += js[i];
  }
  return out;
}

// The verdict of the first compare result, for the page title.
std::string derive_title(const std::vector<ReportInput>& inputs) {
  for (const ReportInput& in : inputs) {
    const json& r = *in.result;
    auto schema = r.value("schema", std::string());
    auto it = r.find("summary");
    if (schema.rfind(schemas::family(schemas::kCompare), 0) == 0 && it != r.end() && it->is_object()) {
      auto v = it->find("verdict");
      if (v != it->end() && v->is_string()) return "parity report: " + v->get<std::string>();
    }
  }
  return "parity report";
}

}  // namespace

std::string escape_json_for_script(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') { out += "\\u003c"; continue; }
    if (c == '>') { out += "\\u003e"; continue; }
    if (c == '&') { out += "\\u0026"; continue; }
    // U+2028 / U+2029 (E2 80 A8 / E2 80 A9) end a line in older JavaScript parsers.
    if (static_cast<unsigned char>(c) == 0xE2 && i + 2 < text.size() &&
        static_cast<unsigned char>(text[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(text[i + 2]) == 0xA8 || static_cast<unsigned char>(text[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(text[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
      continue;
    }
    out += c;
  }
  return out;
}

Status validate_result(const json& result) {
  if (!result.is_object()) return Status::Invalid("a result must be a JSON object, got " + std::string(result.type_name()));
  auto it = result.find("schema");
  if (it == result.end() || !it->is_string()) {
    return Status::Invalid("no \"schema\" string: not a parity result (write one with a command's --json)");
  }
  const std::string& s = it->get_ref<const std::string&>();
  const auto slash = s.find('/');
  if (s.rfind("parity.", 0) != 0 || slash == std::string::npos || slash + 1 >= s.size()) {
    return Status::Invalid("schema \"" + s + "\" is not a parity result schema (\"parity.<command>/<version>\")");
  }
  return Status::OK();
}

json compare_report_for_html(const CompareReport& report, const HtmlReportOptions& options) {
  const RowList& rows = report.result.rows;
  if (options.max_rows == 0 || rows.size() <= options.max_rows) return compare_report_to_json(report);
  const std::optional<FirstDivergence>& fd = report.findings.analysis.first_divergence;
  const std::string first_name = fd ? fd->name : std::string();
  const std::vector<size_t> kept = report_rows::worst_rows(rows.size(), options.max_rows, [&](size_t i) {
    const CompareRow& row = rows[i];
    const bool first = !first_name.empty() && row.golden->name == first_name;
    const double ratio = row.noise_ratio;  // as its JSON spelling reads back: NaN and -inf as -1
    const double r = std::isnan(ratio) || ratio == -std::numeric_limits<double>::infinity() ? -1.0 : ratio;
    return report_rows::RowSeverity{first, report_rows::verdict_rank(verdict_name(row.verdict)), r};
  });
  json out = compare_report_to_json(report, kept);
  report_rows::mark_trimmed(out, options.max_rows, rows.size());
  // The tree's index reads every row as its JSON, written by the one row serializer, one row at a time.
  report_rows::TreeIndexBuilder index;
  std::string text;
  for (const CompareRow& row : rows) {
    text.clear();
    write_compare_row_json(row, text, "");
    index.add(json::parse(text));
  }
  report_rows::attach_tree_index(out, index, kept);
  return out;
}

Result<std::string> render_html_report(const std::vector<ReportInput>& inputs, const HtmlReportOptions& options) {
  const std::string_view library = report_assets::charting_library();
  if (library.empty()) {
    return Status::Unsupported(
        "this parity was built without the report's charting library (web/node_modules/echarts): "
        "run `make web` (scripts/install-web.sh) and rebuild");
  }
  if (inputs.empty()) return Status::Invalid("a report needs at least one result");
  for (size_t i = 0; i < inputs.size(); ++i) {
    assert(inputs[i].result != nullptr);
    Status st = validate_result(*inputs[i].result);
    if (!st.ok()) return st.WithContext(inputs[i].origin.empty() ? "result #" + std::to_string(i + 1) : inputs[i].origin);
  }

  // The envelope is written piecewise so that large results are serialised once, not copied into a
  // wrapper object first. Invalid UTF-8 in names from a dump is replaced (U+FFFD), never fatal.
  std::string data = "{\"schema\":" + json(kDataSchema).dump() +
                     ",\"generated_by\":" + json(options.generated_by.empty() ? "parity" : options.generated_by)
                                                .dump(-1, ' ', false, json::error_handler_t::replace) +
                     ",\"charting_library\":" + json("echarts " + std::string(report_assets::charting_library_version())).dump() +
                     ",\"inputs\":[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) data += ',';
    data += "{\"origin\":" + json(inputs[i].origin).dump(-1, ' ', false, json::error_handler_t::replace) + ",\"result\":";
    const json& r = *inputs[i].result;
    const auto rows = r.find("rows");
    if (options.max_rows > 0 && report_rows::is_compare_result(r) && rows != r.end() && rows->is_array() &&
        rows->size() > options.max_rows)
      data += report_rows::trim_compare_rows(r, options.max_rows).dump(-1, ' ', false, json::error_handler_t::replace);
    else
      data += r.dump(-1, ' ', false, json::error_handler_t::replace);
    data += '}';
  }
  data += "]}";

  const std::string title = options.title.empty() ? derive_title(inputs) : options.title;
  struct Slot {
    std::string_view marker;
    std::string text;
  };
  // Order of appearance in the template; each must occur exactly once.
  std::array<Slot, 5> slots = {{
      {"<!--@TITLE@-->", html_escape(title)},
      {"<!--@CSS@-->", std::string(report_assets::report_css())},
      {"<!--@DATA@-->", escape_json_for_script(data)},
      {"<!--@LIBRARY@-->", script_safe(library)},
      {"<!--@SCRIPT@-->", script_safe(report_assets::report_js())},
  }};
  const std::string_view tmpl = report_assets::template_html();
  std::string out;
  size_t size = tmpl.size();
  for (const Slot& s : slots) size += s.text.size();
  out.reserve(size);
  size_t pos = 0;
  for (const Slot& s : slots) {
    const size_t at = tmpl.find(s.marker, pos);
    // The template is parity's own file, embedded at build time: a missing marker is a bug, not input.
    if (at == std::string_view::npos) {
      return Status::Internal("report template lacks " + std::string(s.marker) + " (web/src/report.html)");
    }
    out.append(tmpl.substr(pos, at - pos));
    out.append(s.text);
    pos = at + s.marker.size();
  }
  out.append(tmpl.substr(pos));
  return out;
}

Status write_html_report(const std::string& path, const std::vector<ReportInput>& inputs,
                         const HtmlReportOptions& options) {
  PARITY_ASSIGN_OR_RETURN(std::string html, render_html_report(inputs, options));
  namespace fs = std::filesystem;
  const fs::path target(path);
  // The temporary beside the report is a new file with an unpredictable name (mkstemp: O_CREAT|O_EXCL, so
  // never an existing file and never through a link planted under a guessable <report>.tmp.<pid>).
  std::string tmpl = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return Status::IOError(path + ": cannot create the report file: " + std::strerror(errno));
  const fs::path tmp(tmpl);
  ::fchmod(fd, 0644);
  {
    const char* p = html.data();
    size_t left = html.size();
    int err = 0;
    while (left > 0) {
      const ssize_t w = ::write(fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        err = errno;
        break;
      }
      p += w;
      left -= static_cast<size_t>(w);
    }
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return Status::IOError(path + ": write failed: " + std::strerror(err));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::IOError(path + ": cannot move the report into place: " + ec.message());
  }
  return Status::OK();
}

Status write_html_report(const std::string& path, const std::vector<nlohmann::json>& results,
                         const HtmlReportOptions& options) {
  std::vector<ReportInput> inputs;
  inputs.reserve(results.size());
  for (const json& r : results) inputs.push_back({"", &r});
  return write_html_report(path, inputs, options);
}

}  // namespace parity
