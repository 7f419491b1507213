// The process-wide pool of interned texts (parity/interned_string.h).
#include "parity/interned_string.h"

#include "parity/intern_pool.h"

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
using TextPool = InternPool<std::string, TextHash, TextEqual>;

TextPool& pool() {
  static auto* texts = new TextPool();  // never destroyed: texts outlive static objects
  return *texts;
}

}  // namespace

const std::string& InternedString::empty_text() noexcept {
  static const std::string* empty = new std::string();  // never destroyed, like the pool: a record in a
  return *empty;                                        // static object may still be read at exit
}

const std::string* InternedString::intern(std::string_view text) {
  if (text.empty()) return &empty_text();
  return pool().intern(text);
}

std::string InternedString::concat(std::string_view a, std::string_view b) {
  std::string s;
  s.reserve(a.size() + b.size());
  return s.append(a).append(b);
}

InternedString::PoolSize InternedString::pool_size() {
  PoolSize size;
  pool().for_each([&size](const std::string& text) {
    ++size.texts;
    size.characters += text.size();
  });
  return size;
}

}  // namespace parity
