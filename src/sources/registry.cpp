// The tensor formats parity reads, in probe order. Adding a format = one file defining a FormatSpec
// (see include/parity/source.h) plus one line here. Directory formats (capture runs) are probed before
// single-file formats; a plain directory is read by the directory source (directory_source.cpp).
#include "parity/dump.h"
#include "parity/formats.h"
#include "parity/open_source.h"
#include "sources/export_source.h"

namespace parity {

const std::vector<FormatSpec>& registered_formats() {
  static const std::vector<FormatSpec> kFormats = {
      dump::run_format_spec(),  // capture runs (src/dump/reader.cpp), a directory format: probed first
      sources::export_format_spec(),  // `parity export` output (index.json), a directory format
      formats::msprobe_format_spec(),  // msprobe dump folders (dump.json): a directory format
      formats::npy_format_spec(),
      formats::npz_format_spec(),
      formats::safetensors_format_spec(),
      formats::torch_pt_format_spec(),
  };
  return kFormats;
}

}  // namespace parity
