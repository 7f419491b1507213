// src/report/result_stream.cpp — a saved result read for a report without holding its text or its
// whole tree (load_result_json, load_result_for_report in parity/html_report.h).
//
// A saved comparison is mostly its "rows" (200,000 rows are ~560 MB of JSON), and a report embeds at most
// HtmlReportOptions::max_rows of them. Reading the text whole and parsing it into one tree took 4.8× the
// file's size. Here nlohmann's SAX parser reads the file through a stream: every value except the elements
// of the top-level "rows" array is built into the tree as json::parse builds it, and each row is built
// alone and offered to a bounded WorstRowsSelection (report/report_rows.h). Memory is the kept rows plus
// the rest of the document, whatever the size of the file.
//
// The rule needs the schema and the first divergence's name, and the file may hold either after "rows"
// ("schema" sorts after "rows" in what compare writes; a result written by another tool may put
// "first_divergence" there too). The first read ranks with what is known when "rows" starts; when the
// rest of the file contradicts that (rows were dropped, but the result is no comparison or names another
// first divergence), the file is read again with what the first read learnt.
#include <cstddef>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/html_report.h"
#include "parity/json_depth.h"
#include "parity/regular_file.h"
#include "report/report_rows.h"
#include "report/tree_index.h"

namespace parity {

namespace {

using nlohmann::json;
using report_rows::WorstRowsSelection;

// A JSON value built from SAX events the way nlohmann's own DOM parser builds it: one stack entry per
// open container, `element_` the object member a key has just created.
class TreeBuilder {
 public:
  template <typename Value>
  void value(Value&& v) {
    place(json(std::forward<Value>(v)));
  }
  void open(json::value_t type) { stack_.push_back(place(json(type))); }
  void key(const std::string& k) { element_ = &(*stack_.back())[k]; }
  void close() { stack_.pop_back(); }
  const json& root() const { return root_; }
  json take() { return std::exchange(root_, json()); }

 private:
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    *element_ = std::move(v);
    return element_;
  }

  json root_;
  std::vector<json*> stack_;
  json* element_ = nullptr;
};

// How one read chooses the elements of a top-level "rows" array.
struct RowsPlan {
  size_t max_rows = 0;                               // 0: keep every row
  std::optional<std::string> first_divergence_name;  // none: the name read before "rows", if any
};

// What one read of a result file gives.
struct ReadPass {
  json doc;                           // "rows", when an array, holds the kept rows only
  json tree_index;                    // "report_tree" of every row, when rows were dropped
  size_t rows_total = 0;              // elements of the top-level "rows" array
  size_t rows_kept = 0;
  std::string first_divergence_name;  // the name the kept rows were ranked by
};

// The handler json::sax_parse drives over a result file (nlohmann's SAX interface).
class ResultSax {
 public:
  ResultSax(RowsPlan plan, std::streambuf* input) : plan_(std::move(plan)), input_(input) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(json::number_integer_t v) { return value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(v); }
  bool number_float(json::number_float_t v, const std::string& /*text*/) { return value(v); }
  bool string(std::string& v) { return value(std::move(v)); }
  bool binary(json::binary_t& v) { return value(std::move(v)); }
  bool start_object(std::size_t /*size*/) { return open(json::value_t::object); }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*size*/) { return open(json::value_t::array); }
  bool end_array() { return close(); }
  bool key(std::string& k);
  bool parse_error(std::size_t /*byte*/, const std::string& /*token*/, const json::exception& e) {
    problem_ = std::string("not valid JSON (") + e.what() + ")";
    return false;
  }

  // Why the parse stopped, when a handler call returned false.
  const std::string& problem() const { return problem_; }
  ReadPass finish();

 private:
  // Containers open while directly inside the top-level "rows" array: the document and the array.
  static constexpr size_t kRowsDepth = 2;

  template <typename Value>
  bool value(Value&& v) {
    if (in_rows_ && depth_ == kRowsDepth) add_row(json(std::forward<Value>(v)));  // a scalar row
    else if (in_rows_) row_.value(std::forward<Value>(v));
    else doc_.value(std::forward<Value>(v));
    rows_next_ = false;
    return true;
  }
  bool open(json::value_t type);
  bool close();
  void start_rows();
  void add_row(json row) {
    if (index_rows_) tree_index_.add(row);
    selection_->add(std::move(row));
  }

  RowsPlan plan_;
  std::streambuf* input_;  // for the byte offset in the depth message
  TreeBuilder doc_;        // the document without the rows' elements
  TreeBuilder row_;        // the row being read
  std::optional<WorstRowsSelection> selection_;
  report_rows::TreeIndexBuilder tree_index_;  // every row, for the model tree of a trimmed result
  bool index_rows_ = false;                   // rows may be dropped: index each one
  size_t depth_ = 0;          // containers open; nlohmann's parser does not recurse, the trees built here
                              // must not get deeper than kMaxJsonDepth (their copy and dump recurse)
  bool rows_next_ = false;    // the last key was the document's "rows"
  bool in_rows_ = false;      // inside the document's "rows" array
  bool rows_array_ = false;   // the document's (last) "rows" is an array
  std::string problem_;
};

bool ResultSax::key(std::string& k) {
  if (in_rows_) {
    row_.key(k);
    return true;
  }
  doc_.key(k);
  rows_next_ = depth_ == 1 && k == "rows";
  // A repeated "rows" replaces the earlier one, as it does in json::parse.
  if (rows_next_) {
    rows_array_ = false;
    selection_.reset();
    tree_index_ = report_rows::TreeIndexBuilder();
  }
  return true;
}

bool ResultSax::open(json::value_t type) {
  if (++depth_ > kMaxJsonDepth) {
    // The message json_depth_problem gives for the same text: the '[' or '{' just read is at offset - 1.
    const auto offset = static_cast<long long>(input_->pubseekoff(0, std::ios::cur, std::ios::in));
    problem_ = "JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
               std::to_string(offset > 0 ? offset - 1 : 0) + ")";
    return false;
  }
  if (std::exchange(rows_next_, false) && type == json::value_t::array) {
    start_rows();
    return true;
  }
  if (in_rows_) row_.open(type);
  else doc_.open(type);
  return true;
}

bool ResultSax::close() {
  --depth_;
  if (!in_rows_) {
    doc_.close();
    return true;
  }
  if (depth_ < kRowsDepth) {  // the "rows" array itself ends
    in_rows_ = false;
    return true;
  }
  row_.close();
  if (depth_ == kRowsDepth) add_row(row_.take());  // a row is complete
  return true;
}

// The selection for the rows that start now, from the plan or from what the document said before them.
void ResultSax::start_rows() {
  in_rows_ = true;
  rows_array_ = true;
  size_t max_rows = plan_.max_rows;
  std::string first_name;
  if (plan_.first_divergence_name) {
    first_name = *plan_.first_divergence_name;
  } else {
    first_name = report_rows::first_divergence_name(doc_.root());
    // A schema already read that is not a comparison's: its rows are never trimmed, keep them all.
    if (doc_.root().contains("schema") && !report_rows::is_compare_result(doc_.root())) max_rows = 0;
  }
  selection_.emplace(max_rows, std::move(first_name));
  index_rows_ = max_rows > 0;
}

ReadPass ResultSax::finish() {
  ReadPass pass;
  pass.doc = doc_.take();
  if (rows_array_) {
    pass.rows_total = selection_->seen();
    pass.rows_kept = selection_->kept();
    pass.first_divergence_name = selection_->first_divergence_name();
    std::vector<size_t> kept;
    pass.doc["rows"] = selection_->take_rows(&kept);
    if (pass.rows_kept < pass.rows_total) pass.tree_index = tree_index_.take(kept);
  }
  return pass;
}

// Read buffer of the file stream: fewer read calls than the default 8 KiB over a file of hundreds of MB.
constexpr size_t kReadBuffer = 1 << 20;

// One read of the file: errors name it.
Result<ReadPass> read_pass(const std::string& path, RowsPlan plan) {
  std::vector<char> buffer(kReadBuffer);
  std::ifstream in;
  in.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  in.open(path, std::ios::binary);
  if (!in) return Status::IOError(path + ": cannot open result file");
  ResultSax sax(std::move(plan), in.rdbuf());
  if (!json::sax_parse(in, &sax)) return Status::Invalid(path + ": " + sax.problem());
  return sax.finish();
}

// Whether the rows a read kept are the ones the rule keeps, judged on the whole document.
bool selection_holds(const ReadPass& pass) {
  if (pass.rows_kept == pass.rows_total) return true;  // nothing dropped: these are the file's rows
  return report_rows::is_compare_result(pass.doc) &&
         report_rows::first_divergence_name(pass.doc) == pass.first_divergence_name;
}

}  // namespace

Result<json> load_result_for_report(const std::string& path, size_t max_rows) {
  // A FIFO would block the open until a writer comes, and could not be read twice.
  PARITY_RETURN_NOT_OK(check_regular_file(path));
  PARITY_ASSIGN_OR_RETURN(ReadPass pass, read_pass(path, RowsPlan{max_rows, std::nullopt}));
  PARITY_RETURN_NOT_OK(validate_result(pass.doc).WithContext(path));
  if (!selection_holds(pass)) {
    // The end of the file overturned what the rows were ranked by: read again knowing it.
    const RowsPlan plan = report_rows::is_compare_result(pass.doc)
                              ? RowsPlan{max_rows, report_rows::first_divergence_name(pass.doc)}
                              : RowsPlan{0, std::nullopt};
    pass = ReadPass{};  // the first read's rows go before the second read keeps its own
    PARITY_ASSIGN_OR_RETURN(pass, read_pass(path, plan));
    PARITY_RETURN_NOT_OK(validate_result(pass.doc).WithContext(path));
    if (!selection_holds(pass)) return Status::IOError(path + ": the file changed while it was read");
  }
  if (pass.rows_kept < pass.rows_total) {
    report_rows::mark_trimmed(pass.doc, pass.rows_kept, pass.rows_total);
    pass.doc["report_tree"] = std::move(pass.tree_index);
  }
  return std::move(pass.doc);
}

Result<json> load_result_json(const std::string& path) { return load_result_for_report(path, 0); }

}  // namespace parity
