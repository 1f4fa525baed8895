// Shape rule tests for the Reduction category (shape_rules_reduction.cpp): reduce axes from
// attribute or input by opset, keepdims, and the normalizations' operand checks.
#include <catch2/catch.hpp>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("ReduceSum from opset 13 reads axes from input 1 and keeps dims", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::ReduceSum, {t.input(DType::Float32, {2, 3, 4}), t.ints1({-1, 0})});
  t.infer();
  CHECK(t.out().shape == Shape{1, 3, 1});
}

TEST_CASE("ReduceMean before opset 18 reads the axes attribute", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::ReduceMean, {t.input(DType::Float32, {2, 3, 4})});
  set(n, "axes", Ints{1});
  set(n, "keepdims", int64_t{0});
  t.infer();
  CHECK(t.out().shape == Shape{2, 4});
}

TEST_CASE("ReduceMean from opset 18 refuses the axes attribute", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 18;
  set(t.node(OpKind::ReduceMean, {t.input(DType::Float32, {2, 3})}), "axes", Ints{1});
  REQUIRE_REFUSED(t, "as input 1");
}

TEST_CASE("empty axes reduce everything unless noop_with_empty_axes", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 18;
  t.node(OpKind::ReduceMax, {t.input(DType::Float32, {2, 3})});
  t.infer();
  CHECK(t.out().shape == Shape{1, 1});
  NodeUnderTest noop;
  noop.opset = 18;
  set(noop.node(OpKind::ReduceMax, {noop.input(DType::Float32, {2, 3})}), "noop_with_empty_axes",
      int64_t{1});
  noop.infer();
  CHECK(noop.out().shape == Shape{2, 3});
}

TEST_CASE("a reduce axis out of range or repeated is refused", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::ReduceSum, {t.input(DType::Float32, {2, 3}), t.ints1({2})});
  REQUIRE_REFUSED(t, "out of range");
  NodeUnderTest r;
  r.opset = 13;
  r.node(OpKind::ReduceSum, {r.input(DType::Float32, {2, 3}), r.ints1({1, -1})});
  REQUIRE_REFUSED(r, "twice");
}

TEST_CASE("an attribute of the wrong kind is refused", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::ArgMax, {t.input(DType::Float32, {2, 3})}), "axis", 1.0);
  REQUIRE_REFUSED(t, "attribute 'axis' must be an int");
}

TEST_CASE("ArgMax produces int64 without the reduced axis when keepdims=0", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::ArgMax, {t.input(DType::Float32, {2, 3, 4})});
  set(n, "axis", int64_t{1});
  set(n, "keepdims", int64_t{0});
  t.infer();
  CHECK(t.out().dtype == DType::Int64);
  CHECK(t.out().shape == Shape{2, 4});
}

TEST_CASE("CumSum needs a constant axis in range", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::CumSum, {t.input(DType::Float32, {2, 3}), t.ints({}, {2})});
  REQUIRE_REFUSED(t, "out of range");
}

TEST_CASE("Softmax before opset 13 accepts axis == rank, from 13 it does not", "[shape_rules]") {
  NodeUnderTest old;
  old.opset = 11;
  set(old.node(OpKind::Softmax, {old.input(DType::Float32, {2, 3})}), "axis", int64_t{2});
  old.infer();
  CHECK(old.out().shape == Shape{2, 3});
  NodeUnderTest now;
  now.opset = 13;
  set(now.node(OpKind::Softmax, {now.input(DType::Float32, {2, 3})}), "axis", int64_t{2});
  REQUIRE_REFUSED(now, "out of range");
}

TEST_CASE("LayerNormalization's statistics keep leading dims in the stash type", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::LayerNormalization,
                   {t.input(DType::Float16, {2, 5, 8}), t.input(DType::Float16, {8})}, 3);
  set(n, "axis", int64_t{-1});
  t.infer();
  CHECK(t.out(0).dtype == DType::Float16);
  CHECK(t.out(0).shape == Shape{2, 5, 8});
  CHECK(t.out(1).dtype == DType::Float32);
  CHECK(t.out(1).shape == Shape{2, 5, 1});
  CHECK(t.out(2).shape == Shape{2, 5, 1});
}

TEST_CASE("GroupNormalization's scale is per group in opset 18 and per channel in 21",
          "[shape_rules]") {
  NodeUnderTest t18;
  t18.opset = 18;
  set(t18.node(OpKind::GroupNormalization,
               {t18.input(DType::Float32, {1, 6, 4}), t18.input(DType::Float32, {2}),
                t18.input(DType::Float32, {2})}),
      "num_groups", int64_t{2});
  t18.infer();
  CHECK(t18.out().shape == Shape{1, 6, 4});
  NodeUnderTest t21;
  t21.opset = 21;
  set(t21.node(OpKind::GroupNormalization,
               {t21.input(DType::Float32, {1, 6, 4}), t21.input(DType::Float32, {2}),
                t21.input(DType::Float32, {2})}),
      "num_groups", int64_t{2});
  REQUIRE_REFUSED(t21, "shape [6]");
}

TEST_CASE("GroupNormalization refuses channels not divisible by num_groups", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 21;
  set(t.node(OpKind::GroupNormalization,
             {t.input(DType::Float32, {1, 6, 4}), t.input(DType::Float32, {6}),
              t.input(DType::Float32, {6})}),
      "num_groups", int64_t{4});
  REQUIRE_REFUSED(t, "not divisible");
}

TEST_CASE("RMSNormalization needs opset 23", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 22;
  t.node(OpKind::RMSNormalization, {t.input(DType::Float32, {2, 8}), t.input(DType::Float32, {8})});
  REQUIRE_REFUSED(t, "opset 23");
}

TEST_CASE("GlobalAveragePool keeps N and C and sets spatial dims to 1", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::GlobalAveragePool, {t.input(DType::Float32, {2, 3, 7, 5})});
  t.infer();
  CHECK(t.out().shape == Shape{2, 3, 1, 1});
}
