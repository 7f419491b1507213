// A directory of tensor files as one RecordSource (sources/directory_source.cpp).
#pragma once

#include <filesystem>
#include <memory>

#include "parity/source.h"

namespace parity::sources {

// Walks `root` recursively (sorted by relative path; symlinked directories are not followed, to avoid
// cycles), opens every file that a single-file format's probe accepts (only `only`'s, when given) and
// lists their records: a one-tensor-per-file format's record is named by the relative path
// ("sub/a.npy"), other records "relpath:name" ("sub/w.safetensors:layer.0.weight"). Files of other
// types are skipped; a file of ours that cannot be read is a problem(), never fatal.
Result<std::unique_ptr<RecordSource>> open_directory_source(const std::filesystem::path& root,
                                                            const FormatSpec* only = nullptr);

// Wraps `inner`, keeping only the record named `key` ("file.safetensors:key" paths).
Result<std::unique_ptr<RecordSource>> select_record(std::unique_ptr<RecordSource> inner, const std::string& key);

}  // namespace parity::sources
