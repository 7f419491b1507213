// src/curves/read_parity_run.cpp — the scalars a parity capture logged with `cap.log(...)`, read
// through read_run_info (by a group of processes: each reads its share of the ranks), one series per
// metric and rank (docs/dump-format.md).
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "curves/readers.h"
#include "parity/run_info.h"

namespace parity::curves::detail {

Status read_parity_run(const std::filesystem::path& path, const ProcessGroup* group, CurveRun& run) {
  PARITY_ASSIGN_OR_RETURN(RunInfo info, read_run_info(path, group));
  for (const Status& p : info.problems) run.problems.push_back(p);
  SeriesBuilder b;
  for (const dump::ScalarRecord& rec : info.scalars) {
    nlohmann::json values = nlohmann::json::parse(rec.json, nullptr, /*allow_exceptions=*/false);
    if (values.is_discarded() || !values.is_object()) {
      run.problems.push_back(Status::Corrupt(fmt::format(
          "{}: rank {} step {}: scalars record is not a JSON object", path.string(), rec.rank, rec.step)));
      continue;
    }
    for (auto it = values.begin(); it != values.end(); ++it) {
      double v;
      if (it->is_number()) v = it->get<double>();
      else if (it->is_string() && parse_number(it->get_ref<const std::string&>(), v) && !std::isfinite(v)) {}
      else if (it->is_null()) v = std::nan("");  // a non-finite value written as null
      else continue;
      b.add(it.key(), rec.rank, rec.step, v);
    }
  }
  b.finish(run);
  return Status::OK();
}

}  // namespace parity::curves::detail
