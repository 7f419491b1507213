// The process-wide pool of interned shapes (parity/interned_shape.h).
#include "parity/interned_shape.h"

#include "parity/intern_pool.h"
#include "parity/hash_combine.h"

namespace parity {

namespace {

struct ShapeHash {
  size_t operator()(const Shape& s) const noexcept {
    size_t h = s.size();
    for (int64_t d : s) h = hash_combine(h, std::hash<int64_t>()(d));
    return h;
  }
};
using ShapePool = InternPool<Shape, ShapeHash, std::equal_to<Shape>>;

ShapePool& pool() {
  static auto* shapes = new ShapePool();  // never destroyed: shapes outlive static objects
  return *shapes;
}

}  // namespace

const Shape& InternedShape::empty_shape() noexcept {
  static const Shape* empty = new Shape();  // never destroyed, like the pool
  return *empty;
}

const Shape* InternedShape::intern(const Shape& shape) {
  if (shape.empty()) return &empty_shape();
  return pool().intern(shape);
}

}  // namespace parity
