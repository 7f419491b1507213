// parity/interned_shape.h — an immutable shape stored once per process, held by a pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>

#include "parity/tensor.h"

namespace parity {

// A listed record's shape repeats like its texts: a thousand-rank capture holds the same few hundred
// shapes in every rank and on both sides. As a std::vector it is 24 bytes and a heap block in every
// record; interned (parity/intern_pool.h), each distinct shape is stored once and a field is one pointer
// (docs/architecture.md "Memory: records point, texts are interned").
//
// Reads as a const Shape (implicit conversion and the read-only members record code uses); assigning a
// shape interns it. Equal shapes are one address.
class InternedShape {
 public:
  InternedShape() noexcept : s_(&empty_shape()) {}
  InternedShape(const Shape& shape) : s_(intern(shape)) {}  // NOLINT(implicit): reads like a Shape
  InternedShape(std::initializer_list<int64_t> dims) : InternedShape(Shape(dims)) {}

  const Shape& vec() const noexcept { return *s_; }
  operator const Shape&() const noexcept { return *s_; }  // NOLINT(implicit)

  bool empty() const noexcept { return s_->empty(); }
  size_t size() const noexcept { return s_->size(); }
  int64_t operator[](size_t i) const noexcept { return (*s_)[i]; }
  Shape::const_iterator begin() const noexcept { return s_->begin(); }
  Shape::const_iterator end() const noexcept { return s_->end(); }
  int64_t front() const noexcept { return s_->front(); }
  int64_t back() const noexcept { return s_->back(); }

  friend bool operator==(const InternedShape& a, const InternedShape& b) noexcept { return a.s_ == b.s_; }
  friend bool operator==(const InternedShape& a, const Shape& b) noexcept { return *a.s_ == b; }

 private:
  static const Shape& empty_shape() noexcept;
  static const Shape* intern(const Shape& shape);

  const Shape* s_;
};

}  // namespace parity
