// parity/verdict.h — the words of a judgement, shared by every layer that judges or reports one.
//
// A compared pair (compare.h), a training curve (curves.h) and an evaluation (eval.h) all end in a
// Verdict; matching says how a pair was found (MatchKind), the rounding-noise model how far it is from
// rounding (NoiseClass, noise.h), compare what was measured (CompareMode). They live here, in core,
// below all of those modules, so that each can use them without depending on compare. The *_name
// spellings are the words every output (terminal, CSV, JSON) uses.
#pragma once

#include <cstdint>

namespace parity {

enum class Verdict : uint8_t {
  kPass,
  kWarn,
  kFail,
  kError,    // the pair could not be compared (shape mismatch, non-finite mismatch, unreadable tensor)
};
const char* verdict_name(Verdict v);  // "pass" | "warn" | "fail" | "error"

// How the target record was paired with the golden one.
enum class MatchKind : uint8_t { kExact, kMapped, kAligned };
const char* match_kind_name(MatchKind m);  // "exact" | "mapped" | "aligned"

// Order-aligned pairs below this confidence (parity/matching.h PairMatch) are weak evidence: they can
// warn but never fail a run on their own, and they locate nothing (apply_verdict_policy, local error).
inline constexpr double kStrongPairingConfidence = 0.75;

// Noise-model class of a row (docs/judgement.md); kUnknown until the analysis pass classifies it.
enum class NoiseClass : uint8_t { kUnknown, kNoise, kElevated, kStructural };
const char* noise_class_name(NoiseClass c);  // "unknown" | "noise" | "elevated" | "structural"

// What was compared for a pair: the richest thing both sides have.
enum class CompareMode : uint8_t { kTensor, kStatistics, kChecksum, kNone };
const char* compare_mode_name(CompareMode m);  // "tensor" | "statistics" | "checksum" | "none"

}  // namespace parity
