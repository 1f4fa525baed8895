// Shape rule tests for the value generators (shape_rules_generators.cpp): Range, Shape, Size,
// ConstantOfShape and Constant.
#include <catch2/catch.hpp>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("Range counts ceil((limit - start) / delta) elements", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Range, {t.ints({}, {10}), t.ints({}, {1}), t.ints({}, {-3})});
  t.infer();
  CHECK(t.out().shape == Shape{3});
  NodeUnderTest f;
  f.node(OpKind::Range, {f.floats({}, {0.0}), f.floats({}, {1.0}), f.floats({}, {0.25})});
  f.infer();
  CHECK(f.out().dtype == DType::Float32);
  CHECK(f.out().shape == Shape{4});
}

TEST_CASE("Range refuses a zero delta", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Range, {t.ints({}, {0}), t.ints({}, {5}), t.ints({}, {0})});
  REQUIRE_REFUSED(t, "must not be 0");
}

TEST_CASE("Shape honours start and end from opset 15 only", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 15;
  Node& n = t.node(OpKind::Shape, {t.input(DType::Float32, {2, 3, 4})});
  set(n, "start", int64_t{-2});
  set(n, "end", int64_t{100});
  t.infer();
  CHECK(t.out().shape == Shape{2});
  NodeUnderTest old;
  old.opset = 13;
  set(old.node(OpKind::Shape, {old.input(DType::Float32, {2, 3, 4})}), "start", int64_t{1});
  old.infer();
  CHECK(old.out().shape == Shape{3});
}

TEST_CASE("Size is an int64 scalar", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Size, {t.input(DType::Float32, {2, 3})});
  t.infer();
  CHECK(t.out().dtype == DType::Int64);
  CHECK(t.out().shape.empty());
}

TEST_CASE("ConstantOfShape defaults to float32 and follows the value's dtype", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::ConstantOfShape, {t.ints1({2, 3})});
  t.infer();
  CHECK(t.out().dtype == DType::Float32);
  CHECK(t.out().shape == Shape{2, 3});
  NodeUnderTest v;
  TensorId value = v.ints({1}, {7}, DType::Int32);
  set(v.node(OpKind::ConstantOfShape, {v.ints1({4})}), "value", value);
  v.infer();
  CHECK(v.out().dtype == DType::Int32);
}

TEST_CASE("Constant takes its type from whichever value attribute it has", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::Constant, {}), "value_ints", Ints{1, 2, 3});
  t.infer();
  CHECK(t.out().dtype == DType::Int64);
  CHECK(t.out().shape == Shape{3});
  NodeUnderTest v;
  TensorId value = v.floats({2, 2}, {1, 2, 3, 4}, DType::Float16);
  set(v.node(OpKind::Constant, {}), "value", value);
  v.infer();
  CHECK(v.out().dtype == DType::Float16);
  CHECK(v.out().shape == Shape{2, 2});
}

TEST_CASE("Constant refuses strings and more than one value", "[shape_rules]") {
  NodeUnderTest s;
  set(s.node(OpKind::Constant, {}), "value_string", std::string("hi"));
  REQUIRE_REFUSED(s, "string constants");
  NodeUnderTest two;
  Node& n = two.node(OpKind::Constant, {});
  set(n, "value_int", int64_t{1});
  set(n, "value_float", 1.0);
  REQUIRE_REFUSED(two, "exactly one");
}
