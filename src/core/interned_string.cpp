// The process-wide pool of interned texts (parity/interned_string.h).
#include "parity/interned_string.h"

#include <array>
#include <mutex>
#include <unordered_set>

namespace parity {

namespace {

struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
};
struct TextEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
};

// Texts are spread over shards by hash, each with its own lock, so the listing threads rarely wait on
// one another. An unordered_set's elements never move (rehashing relinks nodes), so the address handed
// out stays valid for the life of the process.
struct Shard {
  std::mutex mutex;
  std::unordered_set<std::string, TextHash, TextEqual> texts;
  size_t characters = 0;
};
constexpr size_t kShards = 64;

std::array<Shard, kShards>& shards() {
  static auto* pool = new std::array<Shard, kShards>();  // never destroyed: texts outlive static objects
  return *pool;
}

}  // namespace

const std::string& InternedString::empty_text() noexcept {
  static const std::string* empty = new std::string();  // never destroyed, like the pool: a record in a
  return *empty;                                        // static object may still be read at exit
}

const std::string* InternedString::intern(std::string_view text) {
  if (text.empty()) return &empty_text();
  const size_t hash = TextHash()(text);
  Shard& shard = shards()[hash % kShards];
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.texts.find(text);
  if (it == shard.texts.end()) {
    it = shard.texts.emplace(text).first;
    shard.characters += text.size();
  }
  return &*it;
}

std::string InternedString::concat(std::string_view a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + b.size());
  return s.append(a).append(b);
}

InternedString::PoolSize InternedString::pool_size() {
  PoolSize size;
  for (Shard& shard : shards()) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    size.texts += shard.texts.size();
    size.characters += shard.characters;
  }
  return size;
}

}  // namespace parity
