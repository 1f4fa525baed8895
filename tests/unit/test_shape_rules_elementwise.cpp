// Shape rule tests for the Elementwise and Broadcast categories (shape_rules_elementwise.cpp):
// each case builds one node by hand, runs its rule from the op table and checks the inferred
// outputs, or that a bad model is refused with a user error naming the node.
#include <catch2/catch.hpp>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("unary keeps the input's dtype and shape", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Abs, {t.input(DType::Int32, {2, 3})});
  t.infer();
  CHECK(t.out().typed);
  CHECK(t.out().dtype == DType::Int32);
  CHECK(t.out().shape == Shape{2, 3});
}

TEST_CASE("a float-only unary op refuses an integer input", "[shape_rules]") {
  // Exp on int64 is not an ONNX type combination.
  NodeUnderTest t;
  t.node(OpKind::Exp, {t.input(DType::Int64, {4})});
  REQUIRE_REFUSED(t, "floating-point");
}

TEST_CASE("Gelu is refused below opset 20", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 19;
  t.node(OpKind::Gelu, {t.input(DType::Float32, {4})});
  REQUIRE_REFUSED(t, "opset 20");
}

TEST_CASE("IsNaN produces bool and Not requires bool", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::IsNaN, {t.input(DType::Float16, {5})});
  t.infer();
  CHECK(t.out().dtype == DType::Bool);
  NodeUnderTest n;
  n.node(OpKind::Not, {n.input(DType::Float32, {5})});
  REQUIRE_REFUSED(n, "bool");
}

TEST_CASE("binary ops broadcast numpy-style", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Add, {t.input(DType::Float32, {2, 1, 3}), t.input(DType::Float32, {4, 1})});
  t.infer();
  CHECK(t.out().shape == Shape{2, 4, 3});
}

TEST_CASE("incompatible broadcast shapes are refused with both shapes", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Mul, {t.input(DType::Float32, {2, 3}), t.input(DType::Float32, {4})});
  REQUIRE_REFUSED(t, "[2,3], [4]");
}

TEST_CASE("Sum broadcasts any number of inputs", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Sum, {t.input(DType::Float32, {3, 1}), t.input(DType::Float32, {1, 4}),
                       t.input(DType::Float32, {2, 1, 1})});
  t.infer();
  CHECK(t.out().shape == Shape{2, 3, 4});
}

TEST_CASE("binary ops refuse mixed dtypes", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Sub, {t.input(DType::Float32, {2}), t.input(DType::Int64, {2})});
  REQUIRE_REFUSED(t, "same type");
}

TEST_CASE("Pow takes the base's dtype with any exponent dtype", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Pow, {t.input(DType::Float16, {3}), t.input(DType::Int32, {})});
  t.infer();
  CHECK(t.out().dtype == DType::Float16);
  CHECK(t.out().shape == Shape{3});
}

TEST_CASE("comparisons produce bool and logical ops require bool", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Less, {t.input(DType::Int64, {3}), t.input(DType::Int64, {2, 1})});
  t.infer();
  CHECK(t.out().dtype == DType::Bool);
  CHECK(t.out().shape == Shape{2, 3});
  NodeUnderTest l;
  l.node(OpKind::And, {l.input(DType::Bool, {3}), l.input(DType::Int64, {3})});
  REQUIRE_REFUSED(l, "bool");
}

TEST_CASE("Where broadcasts all three inputs and takes X's dtype", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Where,
         {t.input(DType::Bool, {2, 1}), t.input(DType::Int32, {3}), t.input(DType::Int32, {1})});
  t.infer();
  CHECK(t.out().dtype == DType::Int32);
  CHECK(t.out().shape == Shape{2, 3});
}

TEST_CASE("PRelu's slope may not grow X", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::PRelu, {t.input(DType::Float32, {3}), t.input(DType::Float32, {2, 3})});
  REQUIRE_REFUSED(t, "does not broadcast to X");
}

TEST_CASE("Expand broadcasts both ways with a constant shape", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Expand, {t.input(DType::Float32, {3, 1}), t.ints1({2, 1, 4})});
  t.infer();
  CHECK(t.out().shape == Shape{2, 3, 4});
}

TEST_CASE("Expand refuses a shape computed at run time", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Expand, {t.input(DType::Float32, {3, 1}), t.input(DType::Int64, {2})});
  REQUIRE_REFUSED(t, "must be a constant");
}

TEST_CASE("Cast sets the target dtype and refuses strings", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::Cast, {t.input(DType::Float32, {2})}), "to", int64_t{7});
  t.infer();
  CHECK(t.out().dtype == DType::Int64);
  NodeUnderTest s;
  set(s.node(OpKind::Cast, {s.input(DType::Float32, {2})}), "to", int64_t{8});
  REQUIRE_REFUSED(s, "STRING");
}

TEST_CASE("CastLike takes the second input's dtype", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::CastLike, {t.input(DType::Float32, {2, 2}), t.input(DType::Float16, {})});
  t.infer();
  CHECK(t.out().dtype == DType::Float16);
  CHECK(t.out().shape == Shape{2, 2});
}

TEST_CASE("Clip from opset 11 refuses a non-scalar bound", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Clip, {t.input(DType::Float32, {4}), t.input(DType::Float32, {2})});
  REQUIRE_REFUSED(t, "scalar");
}

TEST_CASE("BatchNormalization refuses training mode", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 15;
  auto c = [&] { return t.input(DType::Float32, {3}); };
  Node& n =
      t.node(OpKind::BatchNormalization, {t.input(DType::Float32, {2, 3, 4}), c(), c(), c(), c()});
  set(n, "training_mode", int64_t{1});
  REQUIRE_REFUSED(t, "training_mode=1");
}

TEST_CASE("BatchNormalization in inference keeps X's shape and checks channel vectors",
          "[shape_rules]") {
  NodeUnderTest t;
  auto c = [&] { return t.input(DType::Float32, {3}); };
  t.node(OpKind::BatchNormalization, {t.input(DType::Float32, {2, 3, 4}), c(), c(), c(), c()});
  t.infer();
  CHECK(t.out().shape == Shape{2, 3, 4});
  NodeUnderTest bad;
  auto w = [&] { return bad.input(DType::Float32, {4}); };
  bad.node(OpKind::BatchNormalization, {bad.input(DType::Float32, {2, 3, 4}), w(), w(), w(), w()});
  REQUIRE_REFUSED(bad, "shape [3]");
}
