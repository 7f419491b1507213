// A JSON object file read whole (sources/json_file.h).
#include "sources/json_file.h"

#include <fstream>
#include <sstream>

#include "parity/json_depth.h"
#include "parity/regular_file.h"

namespace parity::sources {

Result<nlohmann::json> read_json_object(const std::filesystem::path& file) {
  PARITY_RETURN_NOT_OK(check_regular_file(file));
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::IOError(file.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (const std::string deep = json_depth_problem(text); !deep.empty()) return Status::Invalid(file.string() + ": " + deep);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Invalid(file.string() + ": not a JSON object");
  return j;
}

}  // namespace parity::sources
