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
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/process_group.h"
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

// How a group of processes divides multi-rank captures by rank (docs/cli.md "Many processes"): the ranks
// each process lists and measures, contiguous, balanced by the bytes of every source's parts.
struct RankShares {
  std::vector<std::vector<int>> ranks;  // by process number, each sorted
};

// The shares of `processes` processes over the ranks of any of the sources (a rank's bytes are those of
// all sources); nullopt when a source has no rank parts (it is not a multi-rank capture).
std::optional<RankShares> plan_rank_shares(const std::vector<std::vector<RankPart>>& sources, int processes);

// The sources of one command (a path and a forced format, "" = detect, each), opened as the processes of
// `group` need them (nullptr or one process: whole). When every source is a multi-rank capture, the
// group has several processes and each of them gets at least one rank, the ranks are divided
// (plan_rank_shares) and each process other than 0 opens only its own ranks' parts, so it lists and maps
// only those; process 0 opens everything (its analyses need the whole picture). Otherwise `shares` is
// empty and every process opens everything (the pipelines then split the rows by bytes). The commands
// pass `shares` on to their pipelines.
struct DividedSources {
  std::vector<std::unique_ptr<RecordSource>> sources;  // one per path; empty when one could not be opened
  Status status;       // why a source could not be opened (its error, naming the path)
  size_t failed = 0;   // which one, when status is not OK
  std::optional<RankShares> shares;
};
DividedSources open_divided_sources(const std::vector<std::pair<std::string, std::string>>& paths_and_formats,
                                    const ProcessGroup* group);

}  // namespace parity
