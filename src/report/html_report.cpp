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
#include "parity/json_depth.h"

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

namespace parity {

namespace {

using nlohmann::json;

constexpr std::string_view kDataSchema = "parity.report-data/1";

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
    if (schema.rfind("parity.compare/", 0) == 0 && it != r.end() && it->is_object()) {
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

Result<json> load_result_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(path + ": cannot open result file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IOError(path + ": read error");
  if (const std::string deep = json_depth_problem(ss.str()); !deep.empty()) return Status::Invalid(path + ": " + deep);
  json doc;
  try {
    doc = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    return Status::Invalid(path + ": not valid JSON (" + e.what() + ")");
  }
  PARITY_RETURN_NOT_OK(validate_result(doc).WithContext(path));
  return doc;
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

namespace {

// The selection rule of a report that shows at most max_rows rows (HtmlReportOptions::max_rows): rows
// named like the first divergence first, then by verdict (error, fail, warn, pass), then by noise ratio
// (largest first; +inf above every number, NaN and -inf below), then in order. Returns the kept rows'
// indices in order. `severity(i)` gives row i's {first divergence's name?, verdict rank 0..3, ratio}.
template <typename Severity>
std::vector<size_t> worst_rows(size_t n, size_t max_rows, Severity severity) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  std::vector<std::tuple<bool, int, double, size_t>> keys(n);
  for (size_t i = 0; i < n; ++i) {
    const auto [first, v, r] = severity(i);
    keys[i] = {!first, -v, -r, i};
  }
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(max_rows), idx.end(),
                    [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  idx.resize(max_rows);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// What a trimmed document says of itself: "report_rows" and a note.
void mark_trimmed(json& out, size_t shown, size_t total) {
  const std::string rule = "the worst rows by verdict, then noise ratio, and the first divergence";
  out["report_rows"] = {{"shown", shown}, {"total", total}, {"rule", rule}};
  if (!out.contains("notes") || !out["notes"].is_array()) out["notes"] = json::array();
  out["notes"].push_back("this report shows " + std::to_string(shown) + " of " + std::to_string(total) +
                         " rows (" + rule + "); every row is in the --json and --csv output");
}

int verdict_rank(std::string_view v) {
  static const std::array<std::string_view, 4> order = {"pass", "warn", "fail", "error"};
  for (size_t k = 0; k < order.size(); ++k)
    if (v == order[k]) return static_cast<int>(k);
  return 0;
}

// A saved compare result with at most max_rows rows, the rule above read from its JSON rows; every other
// key as it is.
json trim_compare_rows(const json& result, size_t max_rows) {
  const json& rows = result["rows"];
  std::string first_name;
  if (const auto fd = result.find("first_divergence"); fd != result.end() && fd->is_object())
    first_name = fd->value("name", "");
  const std::vector<size_t> kept_rows = worst_rows(rows.size(), max_rows, [&](size_t i) {
    const json& row = rows[i];
    if (!row.is_object()) return std::tuple{false, 0, -1.0};
    const bool first = !first_name.empty() && row.value("name", "") == first_name;
    int v = 0;
    if (const auto it = row.find("verdict"); it != row.end() && it->is_string()) v = verdict_rank(it->get<std::string>());
    double r = -1;  // the JSON encoding: a number, or the strings "Infinity" / "-Infinity" / "NaN"
    if (const auto it = row.find("noise_ratio"); it != row.end()) {
      if (it->is_number()) r = it->get<double>();
      else if (it->is_string() && *it == "Infinity") r = std::numeric_limits<double>::infinity();
    }
    return std::tuple{first, v, r};
  });
  json out = json::object();
  for (const auto& [k, v] : result.items()) {
    if (k == "rows") continue;
    out[k] = v;
  }
  json kept = json::array();
  for (size_t i : kept_rows) kept.push_back(rows[i]);
  out["rows"] = std::move(kept);
  mark_trimmed(out, max_rows, rows.size());
  return out;
}

}  // namespace

json compare_report_for_html(const CompareReport& report, const HtmlReportOptions& options) {
  const RowList& rows = report.result.rows;
  if (options.max_rows == 0 || rows.size() <= options.max_rows) return compare_report_to_json(report);
  const std::optional<FirstDivergence>& fd = report.findings.analysis.first_divergence;
  const std::string first_name = fd ? fd->name : std::string();
  const std::vector<size_t> kept = worst_rows(rows.size(), options.max_rows, [&](size_t i) {
    const CompareRow& row = rows[i];
    const bool first = !first_name.empty() && row.golden->name == first_name;
    const double ratio = row.noise_ratio;  // as its JSON spelling reads back: NaN and -inf as -1
    const double r = std::isnan(ratio) || ratio == -std::numeric_limits<double>::infinity() ? -1.0 : ratio;
    return std::tuple{first, verdict_rank(verdict_name(row.verdict)), r};
  });
  json out = compare_report_to_json(report, kept);
  mark_trimmed(out, options.max_rows, rows.size());
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
    if (options.max_rows > 0 && r.value("schema", "").rfind("parity.compare/", 0) == 0 && rows != r.end() &&
        rows->is_array() && rows->size() > options.max_rows)
      data += trim_compare_rows(r, options.max_rows).dump(-1, ' ', false, json::error_handler_t::replace);
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
