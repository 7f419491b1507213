// parity/interned_string.h — an immutable string stored once per process, held by a pointer.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace parity {

// A listed record's texts repeat: a 1,000-rank capture names the same 1,000 events, modules and ops in
// every rank, and each side of a comparison lists them again. As std::string fields they were half of
// the memory of a million-row comparison (docs/scaling.md "Where process 0's bytes go"); interned, each
// distinct text is stored once in a process-wide pool and a field is one pointer (8 bytes, copied for
// free, compared for equality by address).
//
// Reads as a const std::string (implicit conversion and the usual read-only members), so code that
// reads a record's name needs no change; assigning any text interns it. The pool is thread-safe (listing
// runs on all threads) and keeps every text for the life of the process: it holds each distinct text
// once, so it grows with the distinct names a process has seen, not with records or runs of the same
// model (docs/architecture.md "Memory: records point, texts are interned").
class InternedString {
 public:
  InternedString() noexcept : s_(&empty_text()) {}
  InternedString(std::string_view text) : s_(intern(text)) {}  // NOLINT(implicit): reads like a string
  InternedString(const std::string& text) : s_(intern(text)) {}  // NOLINT(implicit)
  InternedString(const char* text) : s_(intern(text)) {}  // NOLINT(implicit)

  const std::string& str() const noexcept { return *s_; }
  operator const std::string&() const noexcept { return *s_; }  // NOLINT(implicit)
  operator std::string_view() const noexcept { return *s_; }     // NOLINT(implicit)
  std::string_view view() const noexcept { return *s_; }

  // The read-only members of std::string that record code uses.
  bool empty() const noexcept { return s_->empty(); }
  size_t size() const noexcept { return s_->size(); }
  const char* c_str() const noexcept { return s_->c_str(); }
  const char* data() const noexcept { return s_->data(); }
  std::string::const_iterator begin() const noexcept { return s_->begin(); }
  std::string::const_iterator end() const noexcept { return s_->end(); }
  char operator[](size_t i) const noexcept { return (*s_)[i]; }
  char front() const noexcept { return s_->front(); }
  char back() const noexcept { return s_->back(); }
  size_t find(std::string_view t, size_t pos = 0) const noexcept { return s_->find(t, pos); }
  size_t find(char c, size_t pos = 0) const noexcept { return s_->find(c, pos); }
  size_t rfind(std::string_view t, size_t pos = std::string::npos) const noexcept { return s_->rfind(t, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const noexcept { return s_->rfind(c, pos); }
  std::string substr(size_t pos = 0, size_t n = std::string::npos) const { return s_->substr(pos, n); }
  bool starts_with(std::string_view t) const noexcept { return view().starts_with(t); }
  bool ends_with(std::string_view t) const noexcept { return view().ends_with(t); }
  int compare(std::string_view t) const noexcept { return view().compare(t); }
  void clear() noexcept { s_ = &empty_text(); }

  // One pool entry per distinct text, so equal texts are the same address.
  friend bool operator==(const InternedString& a, const InternedString& b) noexcept { return a.s_ == b.s_; }
  friend bool operator==(const InternedString& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const InternedString& a, const std::string& b) noexcept { return *a.s_ == b; }
  friend bool operator==(const InternedString& a, const char* b) noexcept { return a.view() == b; }
  // Ordered by text, as the strings were.
  friend std::strong_ordering operator<=>(const InternedString& a, const InternedString& b) noexcept {
    return a.s_ == b.s_ ? std::strong_ordering::equal : a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const InternedString& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend std::string operator+(const InternedString& a, std::string_view b) { return concat(a.view(), b); }
  friend std::string operator+(std::string_view a, const InternedString& b) { return concat(a, b.view()); }
  friend std::string operator+(const InternedString& a, const InternedString& b) { return concat(a.view(), b.view()); }
  friend std::string operator+(const InternedString& a, const std::string& b) { return concat(a.view(), b); }
  friend std::string operator+(const std::string& a, const InternedString& b) { return concat(a, b.view()); }
  friend std::string operator+(const InternedString& a, const char* b) { return concat(a.view(), b); }
  friend std::string operator+(const char* a, const InternedString& b) { return concat(a, b.view()); }
  friend std::string operator+(const InternedString& a, char b) { return concat(a.view(), std::string_view(&b, 1)); }
  friend std::ostream& operator<<(std::ostream& os, const InternedString& s) { return os << *s.s_; }

  // The number of distinct texts in the pool and their characters (for tests and measurements).
  struct PoolSize {
    size_t texts = 0;
    size_t characters = 0;
  };
  static PoolSize pool_size();

 private:
  static const std::string& empty_text() noexcept;
  static const std::string* intern(std::string_view text);
  static std::string concat(std::string_view a, std::string_view b);

  const std::string* s_;
};

}  // namespace parity

template <>
struct std::hash<parity::InternedString> {
  size_t operator()(const parity::InternedString& s) const noexcept { return std::hash<std::string_view>()(s.view()); }
};
