// `parity compare --msprobe-csv / --msprobe-xlsx`: the rows in msprobe's compare_result layout
// (report/msprobe_table.h), as the CSV pandas' to_csv writes for msprobe and as the xlsx its to_excel
// writes (one sheet "Sheet1"; msprobe's "part_<i>" sheets past its 1,048,500 rows a sheet). The xlsx is
// written by libxlsxwriter in its constant-memory mode: one row is held at a time.
#include <xlsxwriter.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "parity/csv_cell.h"
#include "parity/utf8.h"
#include "parity/compare_report.h"
#include "report/msprobe_table.h"

namespace parity::report {

namespace {

// msprobe's CompareConst.MAX_EXCEL_LENGTH: a longer table is cut into sheets part_0, part_1, ...
constexpr size_t kMaxSheetRows = 1048500;

std::string csv_cell(const MsprobeCell& c) {
  return c.kind == MsprobeCell::Kind::kText ? csv_escape(c.text) : c.text;
}

Status xlsx_status(lxw_error err, const std::string& path, const char* what) {
  if (err == LXW_NO_ERROR) return Status::OK();
  return Status::IOError(path + ": cannot write xlsx (" + what + "): " + lxw_strerror(err));
}

// A text cell of at most Excel's 32,767 characters, well-formed UTF-8 (libxlsxwriter refuses others).
std::string xlsx_text(const std::string& s) {
  std::string t = is_well_formed_utf8(s) ? s : well_formed_utf8(s);
  constexpr size_t kMaxChars = 32767;
  if (t.size() > kMaxChars) {
    size_t cut = kMaxChars;
    while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    t.resize(cut);
  }
  return t;
}

lxw_error write_xlsx_cell(lxw_worksheet* ws, lxw_row_t r, lxw_col_t c, const MsprobeCell& cell) {
  switch (cell.kind) {
    case MsprobeCell::Kind::kNumber:
      // Excel has no infinity: msprobe's to_excel leaves it to openpyxl, which writes the text "inf".
      if (std::isinf(cell.value)) return worksheet_write_string(ws, r, c, cell.value > 0 ? "inf" : "-inf", nullptr);
      return worksheet_write_number(ws, r, c, cell.value, nullptr);
    case MsprobeCell::Kind::kBool: return worksheet_write_boolean(ws, r, c, cell.flag ? 1 : 0, nullptr);
    case MsprobeCell::Kind::kText:
    case MsprobeCell::Kind::kNumText: break;
  }
  return worksheet_write_string(ws, r, c, xlsx_text(cell.text).c_str(), nullptr);
}

// Rows [begin, end) of the table into a new sheet, under the header.
Status write_sheet(lxw_workbook* wb, const std::string& name, const MsprobeTable& table, size_t begin, size_t end,
                   const std::string& path) {
  lxw_worksheet* ws = workbook_add_worksheet(wb, name.c_str());
  if (ws == nullptr) return Status::IOError(path + ": cannot add sheet '" + name + "'");
  const std::vector<std::string>& header = table.header();
  for (size_t c = 0; c < header.size(); ++c) {
    PARITY_RETURN_NOT_OK(xlsx_status(worksheet_write_string(ws, 0, static_cast<lxw_col_t>(c), header[c].c_str(), nullptr),
                                     path, "header"));
  }
  std::vector<MsprobeCell> cells;
  for (size_t i = begin; i < end; ++i) {
    table.row(i, cells);
    const auto r = static_cast<lxw_row_t>(i - begin + 1);
    for (size_t c = 0; c < cells.size(); ++c) {
      PARITY_RETURN_NOT_OK(xlsx_status(write_xlsx_cell(ws, r, static_cast<lxw_col_t>(c), cells[c]), path, "a cell"));
    }
  }
  return Status::OK();
}

Status write_sheets(lxw_workbook* wb, const MsprobeTable& table, const std::string& path) {
  const size_t n = table.size();
  if (n < kMaxSheetRows) return write_sheet(wb, "Sheet1", table, 0, n, path);
  // msprobe's save_excel: ceil(n / max) sheets of ceil(n / sheets) rows.
  const size_t sheets = (n + kMaxSheetRows - 1) / kMaxSheetRows;
  const size_t per_sheet = (n + sheets - 1) / sheets;
  for (size_t s = 0; s < sheets; ++s) {
    PARITY_RETURN_NOT_OK(
        write_sheet(wb, "part_" + std::to_string(s), table, s * per_sheet, std::min(n, (s + 1) * per_sheet), path));
  }
  return Status::OK();
}

}  // namespace

Status write_msprobe_csv(const CompareResult& result, const RecordSource& golden, const RecordSource& target,
                         std::FILE* out) {
  const MsprobeTable table(result, golden, target);
  std::string line;
  for (const std::string& h : table.header()) line += (line.empty() ? "" : ",") + csv_escape(h);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), out);
  std::vector<MsprobeCell> cells;
  for (size_t i = 0; i < table.size(); ++i) {
    table.row(i, cells);
    line.clear();
    for (size_t c = 0; c < cells.size(); ++c) line += (c ? "," : "") + csv_cell(cells[c]);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  }
  return std::ferror(out) != 0 ? Status::IOError("error writing the msprobe CSV") : Status::OK();
}

Status write_msprobe_xlsx(const CompareResult& result, const RecordSource& golden, const RecordSource& target,
                          const std::string& path) {
  const MsprobeTable table(result, golden, target);
  // Written beside the file and renamed onto it: a reader or a killed run never sees half a workbook.
  const std::string partial = path + ".partial";
  // Tried first, so that a path that cannot be written is our one clear message (libxlsxwriter would
  // print its own to stderr when it closes the workbook).
  if (std::FILE* f = std::fopen(partial.c_str(), "wb"); f != nullptr) {
    std::fclose(f);
  } else {
    return Status::IOError(path + ": cannot write xlsx: " + std::strerror(errno));
  }
  lxw_workbook_options options = {};
  options.constant_memory = LXW_TRUE;  // rows go to disk as written: a million rows never sit in memory
  lxw_workbook* wb = workbook_new_opt(partial.c_str(), &options);
  if (wb == nullptr) return Status::IOError(path + ": cannot create xlsx: " + std::strerror(errno));
  // The layout's name and version, where a workbook has room for them without a column msprobe lacks.
  lxw_doc_properties properties = {};
  std::string comments = std::string(schemas::kCompareMsprobe.id) + ": msprobe 26.2.0's compare_result layout, by parity";
  properties.comments = comments.data();
  Status st = xlsx_status(workbook_set_properties(wb, &properties), path, "properties");
  if (st.ok()) st = write_sheets(wb, table, path);
  const lxw_error closed = workbook_close(wb);  // writes the file; frees the workbook either way
  if (st.ok()) st = xlsx_status(closed, path, "closing");
  if (st.ok() && std::rename(partial.c_str(), path.c_str()) != 0)
    st = Status::IOError(path + ": cannot write xlsx: " + std::strerror(errno));
  if (!st.ok()) std::remove(partial.c_str());
  return st;
}

}  // namespace parity::report
