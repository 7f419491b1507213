// parity/open_source.h — from a path to a RecordSource: the format registry and format detection.
//
// Every format parity reads is one FormatSpec (parity/source.h): the tensor file formats of src/formats
// (parity/formats.h) and the capture-run format of src/dump (parity/dump.h). src/sources/ lists them and
// opens a path with the right one; a plain directory becomes one source over the tensor files in it.
// Adding a format = one file under src/formats/ (or src/dump/) defining a FormatSpec, plus one line in
// src/sources/registry.cpp.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "parity/source.h"
#include "parity/status.h"

namespace parity {

// The registered formats in probe order (src/sources/registry.cpp).
const std::vector<FormatSpec>& registered_formats();

// Open a file or directory as a source: a directory format whose probe accepts it, else a single file
// format by probe, else (for a directory) a recursive directory-of-tensor-files source.
// `format` forces a format by name ("" = detect).
// A path that does not exist but has the form "FILE:KEY" where FILE exists opens FILE and keeps only the
// record named KEY (e.g. "logits.safetensors:logits"). Naming rules: docs/formats.md.
Result<std::unique_ptr<RecordSource>> open_source(const std::filesystem::path& path,
                                                  const std::string& format = "");

// The rank parts of a multi-rank capture at `path` (FormatSpec::rank_parts), from its directory listing
// alone; empty when the path's format (as open_source would pick it) has no rank parts.
std::vector<RankPart> source_rank_parts(const std::filesystem::path& path, const std::string& format = "");

// open_source, keeping only the parts of the given ranks (sorted): the source a process of a group lists
// when the group divides a capture by rank. Unsupported for a format without rank parts.
Result<std::unique_ptr<RecordSource>> open_source_ranks(const std::filesystem::path& path, const std::string& format,
                                                        const std::vector<int>& ranks);

}  // namespace parity
