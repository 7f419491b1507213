// src/sources/layout_stages.h — records present on several pipeline stages (docs/layout.md "PP stages"):
// a module without a layer number that every stage holds — the stage's own root, a module wrapping its
// layers — records on each stage what that stage received and sent. Which copy stands for the unpipelined
// model's record, and the stage boundaries checked instead: what stage s received is what stage s−1 sent.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "parity/source.h"
#include "parity/status.h"

namespace parity::layout {

struct StageCopy {
  size_t record = 0;  // index into the inner source's records
  int pp = 0;         // its PP stage
};

// Of the copies of one logical record on several PP stages, those of the stage that stands for the model:
// the first stage's for what enters the model (forward inputs, the gradients of inputs), the last stage's
// for what leaves it (forward outputs, the gradients of outputs); for a parameter (tied embeddings), the
// first stage's, the others kept as copies that must agree. The other copies are returned in `boundary`.
// `first` and `last`: the first and last stages holding any record of the record's module.
std::vector<StageCopy> stage_representatives(const RecordList& records, const std::vector<StageCopy>& copies, int first,
                                             int last, std::vector<StageCopy>& boundary);

// Pairs each boundary copy with the record the neighbouring stage holds of the same tensor — stage s's
// forward input with stage s−1's forward output, stage s−1's gradient of its output with stage s's gradient
// of its input, a parameter's copy with the first stage's — and checks that they are the same values
// (statistics when neither has data, else the tensors bit for bit). A pair that differs, or a copy
// without its partner, is a problem naming both records and the layout file.
// `all`: every record with its stage (the partners are looked up among them).
void check_stage_boundaries(const RecordSource& inner, const std::vector<StageCopy>& boundary,
                            const std::vector<StageCopy>& all, const std::string& layout_file,
                            std::vector<Status>& problems);

}  // namespace parity::layout
