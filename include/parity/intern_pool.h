// parity/intern_pool.h — a process-wide, thread-safe set of immutable values handed out by address: the
// store behind InternedString (parity/interned_string.h) and InternedShape (parity/interned_shape.h).
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <unordered_set>

namespace parity {

// Values are spread over shards by hash, each with its own lock, so the listing threads rarely wait on one
// another. An unordered_set's elements never move (rehashing relinks nodes), so an address handed out
// stays valid as long as the pool; the pools are never destroyed (a record in a static object may still be
// read at exit). Hash and Equal may be transparent, to look a value up by a view of it.
template <typename T, typename Hash, typename Equal>
class InternPool {
 public:
  // The pool's copy of `key`, added on first use.
  template <typename Key>
  const T* intern(const Key& key) {
    Shard& shard = shards_[Hash()(key) % kShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.values.find(key);
    if (it == shard.values.end()) it = shard.values.emplace(key).first;
    return &*it;
  }

  // Calls f(value) for every value held (for measurements and tests).
  template <typename F>
  void for_each(F&& f) {
    for (Shard& shard : shards_) {
      std::lock_guard<std::mutex> lock(shard.mutex);
      for (const T& v : shard.values) f(v);
    }
  }

 private:
  static constexpr size_t kShards = 64;
  struct Shard {
    std::mutex mutex;
    std::unordered_set<T, Hash, Equal> values;
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace parity
