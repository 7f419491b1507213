// tests/report/arrow_file_test.cpp — the Arrow IPC file's framing, read back with flatbuffers' generic
// table accessors (no Arrow library): magic at both ends, messages on 8-byte boundaries, a schema message
// then one record batch per `rows_per_batch` rows with their lengths and null counts, the end-of-stream
// marker, a footer that points at each batch; a failed write is an error. tests/python/test_compare_arrow.py
// reads whole files with pyarrow.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "report/arrow_file.h"
#include "temp_dir.h"

using namespace parity;
using namespace parity::report;

namespace {

constexpr flatbuffers::voffset_t slot(int field) { return static_cast<flatbuffers::voffset_t>(4 + 2 * field); }

template <typename T>
T read_at(const std::string& bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

const Column kColumns[] = {{"t", CellType::kText}, {"i", CellType::kInt}, {"r", CellType::kReal}, {"b", CellType::kBool}};

std::string write_rows(const std::vector<std::vector<Cell>>& rows, int64_t rows_per_batch) {
  parity_test::TempDir dir;
  const std::string path = (dir.path() / "t.arrow").string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ArrowFileWriter writer(f, kColumns, {{"parity.schema", "test/1"}}, rows_per_batch);
  for (const auto& row : rows) writer.append_row(row);
  EXPECT_TRUE(writer.finish().ok());
  std::fclose(f);
  std::FILE* in = std::fopen(path.c_str(), "rb");
  std::string bytes;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), in)) > 0;) bytes.append(buf, n);
  std::fclose(in);
  return bytes;
}

struct Message {
  size_t offset;
  uint8_t header_type;
  const flatbuffers::Table* header;
  int64_t body_length;
};

}  // namespace

TEST(ArrowFile, MessagesBatchesAndFooterAreWhereTheFormatSays) {
  const std::vector<std::vector<Cell>> rows = {{std::string("a"), int64_t{1}, 1.5, true},
                                               {std::string(""), Cell(), Cell(), false},
                                               {std::string("ccc"), int64_t{-3}, Cell(), Cell()}};
  const std::string bytes = write_rows(rows, 2);
  ASSERT_GE(bytes.size(), 16u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("ARROW1\0\0", 8));
  EXPECT_EQ(bytes.substr(bytes.size() - 6), "ARROW1");

  std::vector<Message> messages;
  size_t at = 8;
  while (true) {
    ASSERT_EQ(at % 8, 0u);
    ASSERT_EQ(read_at<uint32_t>(bytes, at), 0xFFFFFFFFu);
    const int32_t size = read_at<int32_t>(bytes, at + 4);
    if (size == 0) break;  // end of stream
    ASSERT_EQ((8 + size) % 8, 0);
    const auto* message = flatbuffers::GetRoot<flatbuffers::Table>(bytes.data() + at + 8);
    EXPECT_EQ(message->GetField<int16_t>(slot(0), -1), 4);  // V5
    messages.push_back({at, message->GetField<uint8_t>(slot(1), 0),
                        message->GetPointer<const flatbuffers::Table*>(slot(2)), message->GetField<int64_t>(slot(3), -1)});
    at += 8 + static_cast<size_t>(size) + static_cast<size_t>(messages.back().body_length);
  }
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].header_type, 1);  // Schema
  EXPECT_EQ(messages[0].body_length, 0);
  const auto* fields = messages[0].header->GetPointer<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>>*>(slot(1));
  ASSERT_EQ(fields->size(), 4u);
  EXPECT_EQ(fields->Get(2)->GetPointer<const flatbuffers::String*>(slot(0))->str(), "r");
  EXPECT_EQ(fields->Get(2)->GetField<uint8_t>(slot(2), 0), 3);  // FloatingPoint
  struct Node { int64_t length, null_count; };
  const int64_t lengths[] = {2, 1};
  const int64_t nulls[][4] = {{0, 1, 1, 0}, {0, 0, 1, 1}};
  for (int b = 0; b < 2; ++b) {
    const Message& m = messages[1 + b];
    EXPECT_EQ(m.header_type, 3);  // RecordBatch
    EXPECT_EQ(m.header->GetField<int64_t>(slot(0), -1), lengths[b]);
    const auto* nodes = m.header->GetPointer<const flatbuffers::Vector<uint8_t>*>(slot(1));
    ASSERT_EQ(nodes->size(), 4u);  // a vector of structs counts structs; data() is their bytes
    for (int c = 0; c < 4; ++c) {
      Node node;
      std::memcpy(&node, nodes->data() + c * sizeof(Node), sizeof(Node));
      EXPECT_EQ(node.length, lengths[b]);
      EXPECT_EQ(node.null_count, nulls[b][c]) << "batch " << b << " column " << c;
    }
  }
  // The footer, between the end-of-stream marker and its size, lists both batches.
  const int32_t footer_size = read_at<int32_t>(bytes, bytes.size() - 10);
  EXPECT_EQ(at + 8 + static_cast<size_t>(footer_size) + 10, bytes.size());
  const auto* footer = flatbuffers::GetRoot<flatbuffers::Table>(bytes.data() + at + 8);
  const auto* blocks = footer->GetPointer<const flatbuffers::Vector<uint8_t>*>(slot(3));
  ASSERT_EQ(blocks->size(), 2u);
  for (int b = 0; b < 2; ++b) {
    int64_t offset;
    std::memcpy(&offset, blocks->data() + b * 24, 8);
    EXPECT_EQ(static_cast<size_t>(offset), messages[1 + b].offset);
  }
}

TEST(ArrowFile, NoRowsIsASchemaAndAnEmptyFooter) {
  const std::string bytes = write_rows({}, 16);
  EXPECT_EQ(bytes.substr(bytes.size() - 6), "ARROW1");
  const int32_t footer_size = read_at<int32_t>(bytes, bytes.size() - 10);
  const auto* footer = flatbuffers::GetRoot<flatbuffers::Table>(bytes.data() + bytes.size() - 10 - footer_size);
  EXPECT_EQ(footer->GetPointer<const flatbuffers::Vector<uint8_t>*>(slot(3))->size(), 0u);
}

TEST(ArrowFile, AFailedWriteIsAnError) {
  std::FILE* f = std::fopen("/dev/full", "wb");
  if (f == nullptr) GTEST_SKIP() << "no /dev/full";
  ArrowFileWriter writer(f, kColumns, {});
  for (int i = 0; i < 10000; ++i) writer.append_row(std::vector<Cell>{std::string(100, 'x'), int64_t{i}, 0.5, true});
  const Status st = writer.finish();
  std::fclose(f);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Arrow file"), std::string::npos);
}
