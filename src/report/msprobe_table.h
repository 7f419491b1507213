// report/msprobe_table.h — a comparison laid out as msprobe's compare_result table (mindstudio-probe
// 26.2.0: its CompareConst headers of modes "all", "summary" and "md5"), so that scripts written against
// msprobe's compare_result_*.csv / .xlsx read parity's unchanged. The CSV and the xlsx writer
// (compare_msprobe.cpp) spell the same cells; docs/compare-json.md "msprobe" says which parity value
// fills each column and where the definitions differ.
#pragma once

#include <string>
#include <vector>

#include "parity/compare.h"
#include "parity/source.h"

namespace parity::report {

// msprobe's dump mode the table is laid out for: "all" (tensor data), "summary" (statistics), "md5".
enum class MsprobeMode { kTensor, kStatistics, kMd5 };

// One cell, with how msprobe's own files hold it: kText and kNumText are strings in the xlsx, kNumber a
// number, kBool a boolean. In the CSV every kind is its `text` (kText quoted as RFC 4180 needs).
// kNumText is a number msprobe keeps as text (the statistics differences): never formula-guarded.
struct MsprobeCell {
  enum class Kind { kText, kNumber, kNumText, kBool };
  Kind kind = Kind::kText;
  std::string text;   // the CSV spelling (Python's repr for numbers, " inf" for infinities as msprobe)
  double value = 0;   // kNumber
  bool flag = false;  // kBool
};

// The rows of a result in msprobe's layout: each compared pair, then (as msprobe lists its NPU entries
// without a bench match) each target record left unmatched, all in target execution order.
class MsprobeTable {
 public:
  MsprobeTable(const CompareResult& result, const RecordSource& golden, const RecordSource& target);
  MsprobeMode mode() const { return mode_; }
  const std::vector<std::string>& header() const { return header_; }
  size_t size() const { return items_.size(); }
  // Row i's cells in header() order, into `cells` (cleared first).
  void row(size_t i, std::vector<MsprobeCell>& cells) const;

 private:
  struct Item {
    const CompareRow* row;  // null for an unmatched target record
    const Record* target;
  };
  const RecordSource& golden_;
  const RecordSource& target_;
  MsprobeMode mode_;
  std::vector<std::string> header_;
  std::vector<Item> items_;
};

// Python's repr() of a float (what pandas writes for a float cell): "0.5", "1.0", "1e-05", "nan", "inf".
std::string python_float(double v);

}  // namespace parity::report
