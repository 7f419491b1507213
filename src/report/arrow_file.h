// report/arrow_file.h — a writer of Arrow IPC files (the Arrow columnar format's "file format", also called
// Feather v2: https://arrow.apache.org/docs/format/Columnar.html#ipc-file-format), batch by batch: a table
// of any length is written in the memory of one batch. pyarrow, polars, pandas (via pyarrow), DuckDB and
// R's arrow read it.
// Columns of four types, each nullable: utf8 (text), int64, float64 (double), bool — report/compare_columns.h's
// CellType. The flatbuffer metadata is built with libflatbuffers' builder, without generated code; the
// field slots used are those of Arrow's Schema.fbs, Message.fbs and File.fbs (metadata version V5).
// Text cells are written as well-formed UTF-8 (a stray byte becomes U+FFFD), as the format requires.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parity/status.h"
#include "report/compare_columns.h"

namespace parity::report {

class ArrowFileWriter {
 public:
  using Metadata = std::vector<std::pair<std::string, std::string>>;

  // Writes the file's magic and its schema: `columns` in order, and `metadata` as the schema's
  // custom_metadata (key, value) pairs. `rows_per_batch` bounds the memory held (one batch of cells).
  ArrowFileWriter(std::FILE* out, std::span<const Column> columns, Metadata metadata, int64_t rows_per_batch = 16384);

  // One row: a cell a column, of the column's type or empty (a null).
  void append_row(std::span<const Cell> cells);

  // Writes the last batch, the end-of-stream marker and the footer; the file is complete after it.
  // Fails when a write failed (the stream's error flag).
  Status finish();

 private:
  struct ColumnData {
    std::vector<uint8_t> validity;  // bit i (LSB first) set where row i has a value
    int64_t nulls = 0;
    std::vector<int32_t> offsets{0};  // text: where each value ends in `text`
    std::string text;
    std::vector<uint8_t> fixed;       // int64 / float64 values, or the bool bitmap
  };
  // Arrow's File.fbs struct Block (where a record batch lies in the file), laid out as flatbuffers lays
  // out that struct, so the footer takes the list as it is.
  struct alignas(8) Block {
    int64_t offset;
    int32_t metadata_length, padding;
    int64_t body_length;
  };

  bool text_would_overflow(std::span<const Cell> cells) const;
  static void append_cell(ColumnData& d, CellType type, const Cell& cell, int64_t row);
  void write_batch();
  void write_message(const uint8_t* metadata, size_t size, const std::vector<std::pair<const void*, size_t>>& body,
                     int64_t body_length, bool record);
  void write_bytes(const void* p, size_t n);
  void write_padding(size_t n);

  std::FILE* out_;
  std::vector<Column> columns_;
  Metadata metadata_;
  int64_t rows_per_batch_;
  int64_t rows_ = 0;  // in the batch being built
  std::vector<ColumnData> data_;
  std::vector<Block> batches_;
  int64_t position_ = 0;  // bytes written
};

}  // namespace parity::report
