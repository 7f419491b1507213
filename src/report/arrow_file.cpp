// An Arrow IPC file, written as the format's specification lays it out
// (https://arrow.apache.org/docs/format/Columnar.html, "IPC File Format" and "Encapsulated message format"):
//
//   "ARROW1" 0 0 | schema message | record batch message ... | end-of-stream | footer | footer size | "ARROW1"
//
// A message is 0xFFFFFFFF, the metadata's size (int32, padded so the body starts on 8 bytes), the
// metadata (a flatbuffer Message), then the body: each column's buffers in schema order — validity
// bitmap (empty when the column has no null), then offsets and bytes (utf8) or values (int64, float64,
// bool bitmap) — each starting on 8 bytes. The footer (a flatbuffer Footer) repeats the schema and says
// where each record batch lies, so a reader can map the file and seek to any batch.
#include "report/arrow_file.h"

#include <bit>
#include <cassert>
#include <cerrno>
#include <climits>
#include <cstring>

#include "flatbuffers/flatbuffers.h"
#include "parity/utf8.h"

namespace parity::report {

static_assert(std::endian::native == std::endian::little, "the Arrow file is written little-endian, as this host");

namespace {

namespace fb = flatbuffers;

struct Table {};  // any flatbuffer table, for offsets of tables built without generated code
using TableOffset = fb::Offset<Table>;

// A table field's slot: 4 + 2 × its position in the table's declaration in the .fbs file.
constexpr fb::voffset_t slot(int field) { return static_cast<fb::voffset_t>(4 + 2 * field); }

// Values from Arrow's Schema.fbs and Message.fbs.
constexpr int16_t kMetadataV5 = 4;       // enum MetadataVersion { V1, V2, V3, V4, V5 }
constexpr int16_t kPrecisionDouble = 2;  // enum Precision { HALF, SINGLE, DOUBLE }
constexpr uint8_t kHeaderSchema = 1, kHeaderRecordBatch = 3;  // union MessageHeader { Schema, DictionaryBatch, RecordBatch, ... }

// union Type { Null, Int, FloatingPoint, Binary, Utf8, Bool, ... }: its members are numbered from 1.
uint8_t type_id(CellType type) {
  switch (type) {
    case CellType::kInt: return 2;
    case CellType::kReal: return 3;
    case CellType::kText: return 5;
    case CellType::kBool: return 6;
  }
  return 0;
}

// Structs of Message.fbs, laid out as flatbuffers lays out structs (8-byte aligned).
struct FieldNode {
  int64_t length, null_count;
};
struct Buffer {
  int64_t offset, length;
};
static_assert(sizeof(FieldNode) == 16 && sizeof(Buffer) == 16);

size_t round_up8(size_t n) { return (n + 7) & ~size_t{7}; }

TableOffset end_table(fb::FlatBufferBuilder& b, fb::uoffset_t start) { return TableOffset(b.EndTable(start)); }

// table Int { bitWidth: int; is_signed: bool; } | table FloatingPoint { precision: Precision; } | Utf8 {} | Bool {}
TableOffset type_table(fb::FlatBufferBuilder& b, CellType type) {
  const fb::uoffset_t start = b.StartTable();
  if (type == CellType::kInt) {
    b.AddElement<int32_t>(slot(0), 64, 0);
    b.AddElement<uint8_t>(slot(1), 1, 0);
  } else if (type == CellType::kReal) {
    b.AddElement<int16_t>(slot(0), kPrecisionDouble, 0);
  }
  return end_table(b, start);
}

// table Field { name: string; nullable: bool; type: Type; dictionary: DictionaryEncoding; children: [Field]; ... }
TableOffset field_table(fb::FlatBufferBuilder& b, const Column& column) {
  const auto name = b.CreateString(column.name);
  const TableOffset type = type_table(b, column.type);
  const auto children = b.CreateVector(std::vector<TableOffset>{});  // readers require the (empty) list
  const fb::uoffset_t start = b.StartTable();
  b.AddOffset(slot(0), name);
  b.AddElement<uint8_t>(slot(1), 1, 0);
  b.AddElement<uint8_t>(slot(2), type_id(column.type), 0);  // the union's type field
  b.AddOffset(slot(3), type);
  b.AddOffset(slot(5), children);
  return end_table(b, start);
}

// table KeyValue { key: string; value: string; }
TableOffset key_value_table(fb::FlatBufferBuilder& b, const std::string& key, const std::string& value) {
  const auto k = b.CreateString(key), v = b.CreateString(value);
  const fb::uoffset_t start = b.StartTable();
  b.AddOffset(slot(0), k);
  b.AddOffset(slot(1), v);
  return end_table(b, start);
}

// table Schema { endianness: Endianness; fields: [Field]; custom_metadata: [KeyValue]; features: [Feature]; }
TableOffset schema_table(fb::FlatBufferBuilder& b, const std::vector<Column>& columns,
                         const ArrowFileWriter::Metadata& metadata) {
  std::vector<TableOffset> fields, pairs;
  for (const Column& c : columns) fields.push_back(field_table(b, c));
  for (const auto& [key, value] : metadata) pairs.push_back(key_value_table(b, key, value));
  const auto field_list = b.CreateVector(fields);
  const auto pair_list = b.CreateVector(pairs);
  const fb::uoffset_t start = b.StartTable();
  b.AddElement<int16_t>(slot(0), 0, 0);  // Little
  b.AddOffset(slot(1), field_list);
  b.AddOffset(slot(2), pair_list);
  return end_table(b, start);
}

// table Message { version: MetadataVersion; header: MessageHeader; bodyLength: long; custom_metadata: [KeyValue]; }
void finish_message(fb::FlatBufferBuilder& b, uint8_t header_type, TableOffset header, int64_t body_length) {
  const fb::uoffset_t start = b.StartTable();
  b.AddElement<int16_t>(slot(0), kMetadataV5, 0);
  b.AddElement<uint8_t>(slot(1), header_type, 0);
  b.AddOffset(slot(2), header);
  b.AddElement<int64_t>(slot(3), body_length, 0);
  b.Finish(end_table(b, start));
}

// A utf8 column must hold well-formed UTF-8 (readers check it); a name from other people's files may
// not be: stray bytes become U+FFFD, as in the CSV and the JSON.
void append_utf8(std::string& out, const std::string& text) {
  if (is_well_formed_utf8(text)) {
    out += text;
  } else {
    out += well_formed_utf8(text);
  }
}

constexpr char kMagic[8] = {'A', 'R', 'R', 'O', 'W', '1', 0, 0};

}  // namespace

ArrowFileWriter::ArrowFileWriter(std::FILE* out, std::span<const Column> columns, Metadata metadata,
                                 int64_t rows_per_batch)
    : out_(out),
      columns_(columns.begin(), columns.end()),
      metadata_(std::move(metadata)),
      rows_per_batch_(rows_per_batch > 0 ? rows_per_batch : 1),
      data_(columns_.size()) {
  write_bytes(kMagic, sizeof(kMagic));
  fb::FlatBufferBuilder b;
  b.ForceDefaults(true);
  finish_message(b, kHeaderSchema, schema_table(b, columns_, metadata_), 0);
  write_message(b.GetBufferPointer(), b.GetSize(), {}, 0, false);
}

void ArrowFileWriter::append_row(std::span<const Cell> cells) {
  assert(cells.size() == columns_.size());
  if (rows_ > 0 && text_would_overflow(cells)) write_batch();
  for (size_t i = 0; i < columns_.size(); ++i) append_cell(data_[i], columns_[i].type, cells[i], rows_);
  if (++rows_ == rows_per_batch_) write_batch();
}

// utf8 offsets are int32: a batch whose text would pass 2 GiB in a column ends before this row (3 bytes
// a byte: a stray byte becomes the 3-byte U+FFFD).
bool ArrowFileWriter::text_would_overflow(std::span<const Cell> cells) const {
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto* text = std::get_if<std::string>(&cells[i]);
    if (text != nullptr && data_[i].text.size() + 3 * text->size() > size_t{INT32_MAX}) return true;
  }
  return false;
}

// Row `row` of a column: its validity bit, then its value — a text's bytes and end offset, 8 bytes of
// int64 / float64 (zeros for a null), or a bit of the bool bitmap.
void ArrowFileWriter::append_cell(ColumnData& d, CellType type, const Cell& cell, int64_t row) {
  const auto bit = static_cast<uint8_t>(1u << (row % 8));
  if (row % 8 == 0) {
    d.validity.push_back(0);
    if (type == CellType::kBool) d.fixed.push_back(0);
  }
  const bool present = !std::holds_alternative<std::monostate>(cell);
  if (present) d.validity.back() |= bit;
  d.nulls += present ? 0 : 1;
  switch (type) {
    case CellType::kText:
      if (present) append_utf8(d.text, std::get<std::string>(cell));
      d.offsets.push_back(static_cast<int32_t>(d.text.size()));
      break;
    case CellType::kInt:
    case CellType::kReal: {
      uint8_t bytes[8] = {};
      if (present && type == CellType::kInt) std::memcpy(bytes, &std::get<int64_t>(cell), 8);
      if (present && type == CellType::kReal) std::memcpy(bytes, &std::get<double>(cell), 8);
      d.fixed.insert(d.fixed.end(), bytes, bytes + 8);
      break;
    }
    case CellType::kBool:
      if (present && std::get<bool>(cell)) d.fixed.back() |= bit;
      break;
  }
}

// table RecordBatch { length: long; nodes: [FieldNode]; buffers: [Buffer]; ... }
void ArrowFileWriter::write_batch() {
  std::vector<FieldNode> nodes;
  std::vector<Buffer> buffers;
  std::vector<std::pair<const void*, size_t>> body;
  int64_t body_length = 0;
  auto add = [&](const void* p, size_t n) {
    buffers.push_back({body_length, static_cast<int64_t>(n)});
    body.emplace_back(p, n);
    body_length += static_cast<int64_t>(round_up8(n));
  };
  for (size_t i = 0; i < columns_.size(); ++i) {
    const ColumnData& d = data_[i];
    nodes.push_back({rows_, d.nulls});
    add(d.validity.data(), d.nulls > 0 ? d.validity.size() : 0);
    if (columns_[i].type == CellType::kText) {
      add(d.offsets.data(), d.offsets.size() * sizeof(int32_t));
      add(d.text.data(), d.text.size());
    } else {
      add(d.fixed.data(), d.fixed.size());
    }
  }
  fb::FlatBufferBuilder b;
  b.ForceDefaults(true);
  const auto node_list = b.CreateVectorOfStructs(nodes.data(), nodes.size());
  const auto buffer_list = b.CreateVectorOfStructs(buffers.data(), buffers.size());
  const fb::uoffset_t start = b.StartTable();
  b.AddElement<int64_t>(slot(0), rows_, 0);
  b.AddOffset(slot(1), node_list);
  b.AddOffset(slot(2), buffer_list);
  finish_message(b, kHeaderRecordBatch, end_table(b, start), body_length);
  write_message(b.GetBufferPointer(), b.GetSize(), body, body_length, true);
  rows_ = 0;
  for (ColumnData& d : data_) d = ColumnData{};
}

void ArrowFileWriter::write_message(const uint8_t* metadata, size_t size,
                                    const std::vector<std::pair<const void*, size_t>>& body, int64_t body_length,
                                    bool record) {
  const int64_t offset = position_;
  const uint32_t continuation = 0xFFFFFFFFu;
  const int32_t padded = static_cast<int32_t>(round_up8(8 + size) - 8);  // the body starts on 8 bytes
  write_bytes(&continuation, 4);
  write_bytes(&padded, 4);
  write_bytes(metadata, size);
  write_padding(static_cast<size_t>(padded) - size);
  for (const auto& [p, n] : body) {
    write_bytes(p, n);
    write_padding(round_up8(n) - n);
  }
  if (record) batches_.push_back({offset, 8 + padded, 0, body_length});
}

void ArrowFileWriter::write_bytes(const void* p, size_t n) {
  if (n == 0) return;
  std::fwrite(p, 1, n, out_);
  position_ += static_cast<int64_t>(n);
}

void ArrowFileWriter::write_padding(size_t n) {
  static constexpr uint8_t kZeros[8] = {};
  write_bytes(kZeros, n);
}

// table Footer { version: MetadataVersion; schema: Schema; dictionaries: [Block]; recordBatches: [Block]; }
Status ArrowFileWriter::finish() {
  static_assert(sizeof(Block) == 24, "File.fbs struct Block: 8 + 4 + 4 (padding) + 8 bytes");
  if (rows_ > 0) write_batch();
  const uint32_t end_of_stream[2] = {0xFFFFFFFFu, 0};
  write_bytes(end_of_stream, sizeof(end_of_stream));

  fb::FlatBufferBuilder b;
  b.ForceDefaults(true);
  const TableOffset schema = schema_table(b, columns_, metadata_);
  const auto dictionaries = b.CreateVectorOfStructs<Block>(nullptr, 0);
  const auto record_batches = b.CreateVectorOfStructs(batches_.data(), batches_.size());
  const fb::uoffset_t start = b.StartTable();
  b.AddElement<int16_t>(slot(0), kMetadataV5, 0);
  b.AddOffset(slot(1), schema);
  b.AddOffset(slot(2), dictionaries);
  b.AddOffset(slot(3), record_batches);
  b.Finish(end_table(b, start));
  const int32_t footer_size = static_cast<int32_t>(b.GetSize());
  write_bytes(b.GetBufferPointer(), b.GetSize());
  write_bytes(&footer_size, 4);
  write_bytes(kMagic, 6);
  if (std::fflush(out_) != 0 || std::ferror(out_) != 0)
    return Status::IOError(std::string("error while writing the Arrow file: ") + std::strerror(errno));
  return Status::OK();
}

}  // namespace parity::report
