// Shape rule tests for the Movement category (shape_rules_movement.cpp): Reshape and its kin,
// Transpose, Concat/Split, Slice, the gathers and scatters, Tile, Pad, View and Dropout.
#include <catch2/catch.hpp>

#include <limits>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("Transpose reverses axes by default and refuses a non-permutation", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Transpose, {t.input(DType::Float32, {2, 3, 4})});
  t.infer();
  CHECK(t.out().shape == Shape{4, 3, 2});
  NodeUnderTest bad;
  set(bad.node(OpKind::Transpose, {bad.input(DType::Float32, {2, 3, 4})}), "perm", Ints{0, 0, 1});
  REQUIRE_REFUSED(bad, "not a permutation");
}

TEST_CASE("Reshape copies 0 dims and infers -1", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Reshape, {t.input(DType::Float32, {2, 3, 4}), t.ints1({0, -1})});
  t.infer();
  CHECK(t.out().shape == Shape{2, 12});
}

TEST_CASE("Reshape with allowzero keeps a literal 0", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 14;
  set(t.node(OpKind::Reshape, {t.input(DType::Float32, {0, 3}), t.ints1({3, 0})}), "allowzero",
      int64_t{1});
  t.infer();
  CHECK(t.out().shape == Shape{3, 0});
}

TEST_CASE("Reshape refuses a different element count and a second -1", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Reshape, {t.input(DType::Float32, {2, 3}), t.ints1({4, 2})});
  REQUIRE_REFUSED(t, "6 elements");
  NodeUnderTest two;
  two.node(OpKind::Reshape, {two.input(DType::Float32, {2, 3}), two.ints1({-1, -1})});
  REQUIRE_REFUSED(two, "more than one -1");
}

TEST_CASE("Reshape refuses a shape whose product overflows", "[shape_rules]") {
  // A model controls the requested dims; the product must not wrap.
  NodeUnderTest t;
  int64_t big = int64_t{1} << 40;
  t.node(OpKind::Reshape, {t.input(DType::Float32, {2, 3}), t.ints1({big, big, -1})});
  REQUIRE_REFUSED(t, "overflows");
}

TEST_CASE("Flatten accepts axis == rank and negative axes", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::Flatten, {t.input(DType::Float32, {2, 3, 4})}), "axis", int64_t{3});
  t.infer();
  CHECK(t.out().shape == Shape{24, 1});
  NodeUnderTest neg;
  set(neg.node(OpKind::Flatten, {neg.input(DType::Float32, {2, 3, 4})}), "axis", int64_t{-1});
  neg.infer();
  CHECK(neg.out().shape == Shape{6, 4});
}

TEST_CASE("Squeeze without axes removes every 1 and refuses squeezing a larger dim",
          "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::Squeeze, {t.input(DType::Float32, {1, 3, 1, 2})});
  t.infer();
  CHECK(t.out().shape == Shape{3, 2});
  NodeUnderTest bad;
  bad.opset = 13;
  bad.node(OpKind::Squeeze, {bad.input(DType::Float32, {1, 3}), bad.ints1({1})});
  REQUIRE_REFUSED(bad, "cannot squeeze axis 1");
}

TEST_CASE("Unsqueeze reads axes from the attribute before 13 and the input from 13",
          "[shape_rules]") {
  NodeUnderTest old;
  old.opset = 11;
  set(old.node(OpKind::Unsqueeze, {old.input(DType::Float32, {3, 4})}), "axes", Ints{0, -1});
  old.infer();
  CHECK(old.out().shape == Shape{1, 3, 4, 1});
  NodeUnderTest now;
  now.opset = 13;
  now.node(OpKind::Unsqueeze, {now.input(DType::Float32, {3, 4}), now.ints1({1})});
  now.infer();
  CHECK(now.out().shape == Shape{3, 1, 4});
}

TEST_CASE("Concat sums the axis and refuses other mismatched dims", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::Concat, {t.input(DType::Float32, {2, 3}), t.input(DType::Float32, {2, 5})}),
      "axis", int64_t{-1});
  t.infer();
  CHECK(t.out().shape == Shape{2, 8});
  NodeUnderTest bad;
  set(bad.node(OpKind::Concat,
               {bad.input(DType::Float32, {2, 3}), bad.input(DType::Float32, {4, 3})}),
      "axis", int64_t{1});
  REQUIRE_REFUSED(bad, "does not match");
}

TEST_CASE("Split with num_outputs makes the last chunk smaller", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 18;
  set(t.node(OpKind::Split, {t.input(DType::Float32, {5, 2})}, 3), "num_outputs", int64_t{3});
  t.infer();
  CHECK(t.out(0).shape == Shape{2, 2});
  CHECK(t.out(1).shape == Shape{2, 2});
  CHECK(t.out(2).shape == Shape{1, 2});
}

TEST_CASE("Split sizes must sum to the axis", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::Split, {t.input(DType::Float32, {6}), t.ints1({2, 3})}, 2);
  REQUIRE_REFUSED(t, "sum to 5");
}

TEST_CASE("Slice clamps out-of-range bounds and handles negative steps", "[shape_rules]") {
  NodeUnderTest t;
  const int64_t kMax = std::numeric_limits<int64_t>::max(),
                kMin = std::numeric_limits<int64_t>::min();
  t.node(OpKind::Slice, {t.input(DType::Float32, {10, 10, 10}), t.ints1({-1, 2, kMin}),
                         t.ints1({-1000, kMax, kMax}), t.ints1({0, 1, 2}), t.ints1({-2, 3, kMin})});
  t.infer();
  // axis 0: 9 down to 0 by 2 -> 5; axis 1: 2..10 by 3 -> 3; axis 2 (a negative step):
  // start clamps to 0 and end to 9, so nothing is selected.
  CHECK(t.out().shape == Shape{5, 3, 0});
}

TEST_CASE("Slice before opset 10 reads attributes", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 9;
  Node& n = t.node(OpKind::Slice, {t.input(DType::Float32, {4, 6})});
  set(n, "starts", Ints{1});
  set(n, "ends", Ints{-1});
  set(n, "axes", Ints{1});
  t.infer();
  CHECK(t.out().shape == Shape{4, 4});
}

TEST_CASE("Slice refuses a zero step", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Slice,
         {t.input(DType::Float32, {4}), t.ints1({0}), t.ints1({4}), t.ints1({0}), t.ints1({0})});
  REQUIRE_REFUSED(t, "0 for axis 0");
}

TEST_CASE("Gather inserts the indices' shape at the axis", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::Gather, {t.input(DType::Float32, {5, 6, 7}), t.input(DType::Int64, {2, 3})}),
      "axis", int64_t{1});
  t.infer();
  CHECK(t.out().shape == Shape{5, 2, 3, 7});
}

TEST_CASE("Gather refuses a constant index out of range", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Gather, {t.input(DType::Float32, {5}), t.ints1({-6})});
  REQUIRE_REFUSED(t, "index -6 in indices is out of range for axis 0 of size 5");
}

TEST_CASE("GatherElements refuses indices larger than data off the axis", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::GatherElements, {t.input(DType::Float32, {3, 2}), t.input(DType::Int64, {2, 4})});
  REQUIRE_REFUSED(t, "larger than data");
}

TEST_CASE("GatherND with batch_dims drops the indexed dims", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::GatherND,
             {t.input(DType::Float32, {2, 3, 4, 5}), t.input(DType::Int64, {2, 7, 2})}),
      "batch_dims", int64_t{1});
  t.infer();
  CHECK(t.out().shape == Shape{2, 7, 5});
}

TEST_CASE("ScatterND requires updates of the scattered shape", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::ScatterND, {t.input(DType::Float32, {4, 5}), t.input(DType::Int64, {3, 1}),
                             t.input(DType::Float32, {3, 4})});
  REQUIRE_REFUSED(t, "updates must have shape [3,5]");
}

TEST_CASE("Tile multiplies each dim by its repeat", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Tile, {t.input(DType::Float32, {2, 3}), t.ints1({3, 0})});
  t.infer();
  CHECK(t.out().shape == Shape{6, 0});
}

TEST_CASE("Pad with axes and negative pads", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 18;
  t.node(OpKind::Pad,
         {t.input(DType::Float32, {4, 5, 6}), t.ints1({1, -2, 3, 0}), kNoTensor, t.ints1({2, 0})});
  t.infer();
  // axis 2: 6 + 1 + 3; axis 0: 4 - 2 + 0.
  CHECK(t.out().shape == Shape{2, 5, 10});
}

TEST_CASE("Pad refuses pads that remove more than the axis holds", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Pad, {t.input(DType::Float32, {4}), t.ints1({-3, -2})});
  REQUIRE_REFUSED(t, "remove more than");
}

TEST_CASE("Pad refuses wrap mode before opset 19", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 18;
  set(t.node(OpKind::Pad, {t.input(DType::Float32, {4}), t.ints1({1, 1})}), "mode",
      std::string("wrap"));
  REQUIRE_REFUSED(t, "attribute 'mode'");
}

TEST_CASE("View keeps the element count", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::View, {t.input(DType::Float32, {2, 6})}), "shape", Ints{3, 4});
  t.infer();
  CHECK(t.out().shape == Shape{3, 4});
  NodeUnderTest bad;
  set(bad.node(OpKind::View, {bad.input(DType::Float32, {2, 6})}), "shape", Ints{5});
  REQUIRE_REFUSED(bad, "changes the element count");
}

TEST_CASE("Dropout's mask is bool and training mode is refused", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Dropout, {t.input(DType::Float16, {3})}, 2);
  t.infer();
  CHECK(t.out(1).dtype == DType::Bool);
  NodeUnderTest train;
  train.node(OpKind::Dropout,
             {train.input(DType::Float32, {3}), kNoTensor, train.ints({}, {1}, DType::Bool)});
  REQUIRE_REFUSED(train, "training_mode=true");
}
