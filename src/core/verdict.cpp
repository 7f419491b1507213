// The spelled-out names of the judgement words (parity/verdict.h): what every output (terminal, CSV,
// JSON) says.
#include "parity/verdict.h"

namespace parity {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kWarn: return "warn";
    case Verdict::kFail: return "fail";
    case Verdict::kError: return "error";
  }
  return "error";
}

const char* match_kind_name(MatchKind m) {
  switch (m) {
    case MatchKind::kExact: return "exact";
    case MatchKind::kMapped: return "mapped";
    case MatchKind::kAligned: return "aligned";
  }
  return "exact";
}

const char* noise_class_name(NoiseClass c) {
  switch (c) {
    case NoiseClass::kUnknown: return "unknown";
    case NoiseClass::kNoise: return "noise";
    case NoiseClass::kElevated: return "elevated";
    case NoiseClass::kStructural: return "structural";
  }
  return "unknown";
}

const char* compare_mode_name(CompareMode m) {
  switch (m) {
    case CompareMode::kTensor: return "tensor";
    case CompareMode::kStatistics: return "statistics";
    case CompareMode::kChecksum: return "checksum";
    case CompareMode::kNone: return "none";
  }
  return "none";
}

}  // namespace parity
