// parity/boxed.h — an optional value kept on the heap.
#pragma once

#include <memory>
#include <optional>
#include <utility>

namespace parity {

// Like std::optional<T>, but the value lives on the heap, so an empty Boxed<T> costs one pointer. For the
// large members of a struct that most instances lack: a CompareRow holds tensor metrics (392 bytes) or
// statistics (232 bytes), rarely both, and a comparison may hold a million rows. Copies copy the value.
template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}  // NOLINT(implicit): as std::optional
  Boxed(const T& v) : p_(std::make_unique<T>(v)) {}  // NOLINT(implicit)
  Boxed(T&& v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT(implicit)
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(const T& v) {
    p_ = std::make_unique<T>(v);
    return *this;
  }
  Boxed& operator=(T&& v) {
    p_ = std::make_unique<T>(std::move(v));
    return *this;
  }
  Boxed& operator=(std::nullopt_t) {
    p_.reset();
    return *this;
  }

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }
  void reset() { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace parity
