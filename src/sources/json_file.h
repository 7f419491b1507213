// src/sources/json_file.h — a small JSON file users or tools write beside a run (a layout file, an export
// index), read whole: a regular file, nesting within json_depth's limit, one object. Errors name the file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "parity/status.h"

namespace parity::sources {

Result<nlohmann::json> read_json_object(const std::filesystem::path& file);

}  // namespace parity::sources
