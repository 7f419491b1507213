// load_results_for_report (parity/html_report.h): the results `parity report` draws, read in order; an
// unreadable or missing file is named and left out, the rest still read; progress counts their bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "parity/html_report.h"
#include "parity/schemas.h"
#include "temp_dir.h"

namespace parity {
namespace {

struct CountingProgress final : ProgressSink {
  int64_t total = -1, done = 0;
  bool ended = false;
  void begin(const char*, int64_t t, const char*) override { total = t; }
  void advance(int64_t n) override { done += n; }
  void end() override { ended = true; }
};

void write_file(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(ReportResults, AnUnreadableFileIsNamedAndTheOthersAreRead) {
  parity_test::TempDir d;
  const std::string overflow = std::string(R"({"schema": ")") + schemas::kOverflow.id + R"(", "origins": []})";
  write_file(d / "a.json", overflow);
  write_file(d / "bad.json", "{bad");
  write_file(d / "b.json", overflow);
  const std::vector<std::string> paths = {(d / "a.json").string(), (d / "bad.json").string(),
                                          (d / "missing.json").string(), (d / "b.json").string()};
  CountingProgress progress;
  const ReportResults r = load_results_for_report(paths, 0, &progress);

  ASSERT_EQ(r.documents.size(), 2u);
  EXPECT_EQ(r.origins, (std::vector<std::string>{paths[0], paths[3]}));
  EXPECT_EQ(r.documents[1]["schema"], schemas::kOverflow.id);
  ASSERT_EQ(r.unreadable.size(), 2u);
  EXPECT_NE(r.unreadable[0].message().find("bad.json"), std::string::npos) << r.unreadable[0].message();
  EXPECT_NE(r.unreadable[1].message().find("missing.json"), std::string::npos) << r.unreadable[1].message();

  const std::vector<ReportInput> inputs = r.inputs();
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[1].origin, paths[3]);
  EXPECT_EQ(inputs[1].result, &r.documents[1]);

  const int64_t bytes = 2 * static_cast<int64_t>(overflow.size()) + 4;  // the missing file has no size
  EXPECT_EQ(progress.total, bytes);
  EXPECT_EQ(progress.done, bytes);
  EXPECT_TRUE(progress.ended);
}

}  // namespace
}  // namespace parity
