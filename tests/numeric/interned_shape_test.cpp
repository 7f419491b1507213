// InternedShape: one pool entry per distinct shape, equal shapes at one address, read like a Shape.
#include <gtest/gtest.h>

#include <omp.h>

#include <set>
#include <vector>

#include "parity/interned_shape.h"

namespace parity {
namespace {

TEST(InternedShape, EqualShapesShareOneAddressAndReadAsTheShape) {
  Shape built = {2, 16};
  built.push_back(64);
  const InternedShape a = built;
  const InternedShape b = {2, 16, 64};
  EXPECT_EQ(&a.vec(), &b.vec());
  EXPECT_EQ(a, b);
  built[0] = 7;  // the pool holds its own copy
  EXPECT_EQ(a, (Shape{2, 16, 64}));
  EXPECT_FALSE(a == InternedShape({2, 16}));
  const Shape& ref = a;
  EXPECT_EQ(ref.size(), 3u);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(a[2], 64);
  EXPECT_EQ(a.front(), 2);
  EXPECT_EQ(a.back(), 64);
  EXPECT_EQ(std::vector<int64_t>(a.begin(), a.end()), ref);
  EXPECT_EQ(shape_to_string(a), "[2, 16, 64]");
}

TEST(InternedShape, TheEmptyShapeIsOneValueAndNoPoolEntry) {
  const InternedShape none, empty = Shape{};
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(&none.vec(), &empty.vec());
  EXPECT_EQ(none, empty);
}

// Listing runs on every thread: each thread interning the same shapes gets the same addresses.
TEST(InternedShape, ThreadsInterningTheSameShapesAgree) {
  constexpr int kShapes = 500;
  std::vector<std::vector<const Shape*>> seen(4, std::vector<const Shape*>(kShapes));
#pragma omp parallel for num_threads(4)
  for (int t = 0; t < 4; ++t)
    for (int k = 0; k < kShapes; ++k) seen[t][k] = &InternedShape({k, 3, 7}).vec();
  std::set<const Shape*> distinct(seen[0].begin(), seen[0].end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kShapes));
  for (int t = 1; t < 4; ++t) EXPECT_EQ(seen[t], seen[0]);
}

}  // namespace
}  // namespace parity
