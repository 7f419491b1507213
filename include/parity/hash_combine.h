// parity/hash_combine.h — folds one more value's hash into a running hash, for the hash of a key of
// several fields (boost's hash_combine: the golden-ratio constant and the shifts spread the bits).
#pragma once

#include <cstddef>

namespace parity {

inline size_t hash_combine(size_t seed, size_t value) noexcept {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace parity
