// Constant folding evaluator tests: each case builds one node over constant inputs, runs its
// shape rule and then its host evaluator from the op table, and checks the values against
// hand-computed (numpy-equivalent) results.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

// ---- Elementwise ----

TEST_CASE("integer Add broadcasts and keeps int32", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Add,
         {t.ints({2, 1}, {10, 20}, DType::Int32), t.ints({3}, {1, 2, 3}, DType::Int32)});
  REQUIRE(t.fold().size() == 1);
  CHECK(t.out().dtype == DType::Int32);
  CHECK(t.out_ints() == Ints{11, 12, 13, 21, 22, 23});
}

TEST_CASE("integer Div truncates toward zero", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Div, {t.ints1({-7, 7, -7}), t.ints1({2, -2, -2})});
  t.fold();
  CHECK(t.out_ints() == Ints{-3, -3, 3});
}

TEST_CASE("integer Div by zero declines to fold", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Div, {t.ints1({1, 2}), t.ints1({1, 0})});
  CHECK(t.fold().empty());
}

TEST_CASE("Mod follows the divisor's sign unless fmod=1", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Mod, {t.ints1({-7, 7, -7, 7}), t.ints1({3, -3, -3, 3})});
  t.fold();
  CHECK(t.out_ints() == Ints{2, -2, -1, 1});
  NodeUnderTest f;
  set(f.node(OpKind::Mod, {f.ints1({-7, 7}), f.ints1({3, -3})}), "fmod", int64_t{1});
  f.fold();
  CHECK(f.out_ints() == Ints{-1, 1});
  NodeUnderTest real;
  set(real.node(OpKind::Mod, {real.floats({2}, {-7.5, 7.5}), real.floats({2}, {2, 2})}), "fmod",
      int64_t{1});
  real.fold();
  CHECK(real.out_floats() == Doubles{-1.5, 1.5});
}

TEST_CASE("float ops round to the output dtype on store", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Mul,
         {t.floats({2}, {1.5, -2.0}, DType::Float16), t.floats({}, {3.0}, DType::Float16)});
  t.fold();
  CHECK(t.out().dtype == DType::Float16);
  CHECK(t.out_floats() == Doubles{4.5, -6.0});
}

TEST_CASE("integer Pow is exact and a float exponent truncates", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Pow, {t.ints1({3, -2, 7}), t.ints1({4, 3, 0})});
  t.fold();
  CHECK(t.out_ints() == Ints{81, -8, 1});
  NodeUnderTest f;
  f.node(OpKind::Pow, {f.ints1({2, 10}), f.floats({2}, {0.5, 0.5})});
  f.fold();
  CHECK(f.out_ints() == Ints{1, 3});
}

TEST_CASE("comparisons and Where fold to bool and the chosen values", "[fold]") {
  NodeUnderTest c;
  c.node(OpKind::Greater, {c.floats({3}, {1, 5, 3}), c.floats({}, {3})});
  c.fold();
  CHECK(c.out().dtype == DType::Bool);
  CHECK(c.out_ints() == Ints{0, 1, 0});
  NodeUnderTest w;
  w.node(OpKind::Where, {w.ints({2, 1}, {1, 0}, DType::Bool), w.ints1({1, 2}), w.ints({}, {-1})});
  w.fold();
  CHECK(w.out_ints() == Ints{1, 2, -1, -1});
}

TEST_CASE("Max and Min over several inputs broadcast", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Max, {t.ints1({1, 9}), t.ints({2, 1}, {5, 0}), t.ints({}, {2})});
  t.fold();
  CHECK(t.out_ints() == Ints{5, 9, 2, 9});
}

TEST_CASE("Clip with an omitted min clips only from above", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Clip, {t.ints1({-5, 3, 9}), kNoTensor, t.ints({}, {4})});
  t.fold();
  CHECK(t.out_ints() == Ints{-5, 3, 4});
}

TEST_CASE("unary float ops: Sigmoid, Round half to even, Relu", "[fold]") {
  NodeUnderTest s;
  s.node(OpKind::Sigmoid, {s.floats({1}, {0.0}, DType::Float64)});
  s.fold();
  CHECK(s.out_floats() == Doubles{0.5});
  NodeUnderTest r;
  r.node(OpKind::Round, {r.floats({4}, {0.5, 1.5, 2.5, -2.5})});
  r.fold();
  CHECK(r.out_floats() == Doubles{0, 2, 2, -2});
  NodeUnderTest relu;
  relu.node(OpKind::Relu, {relu.ints1({-3, 4})});
  relu.fold();
  CHECK(relu.out_ints() == Ints{0, 4});
}

TEST_CASE("Cast truncates floats toward zero and saturates", "[fold]") {
  NodeUnderTest t;
  set(t.node(OpKind::Cast, {t.floats({3}, {-2.7, 2.7, 1e10})}), "to", int64_t{6}); // int32
  t.fold();
  CHECK(t.out().dtype == DType::Int32);
  CHECK(t.out_ints() == Ints{-2, 2, std::numeric_limits<int32_t>::max()});
}

TEST_CASE("CastLike converts integers to the other input's float type", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::CastLike, {t.ints1({3, -1}), t.floats({}, {0}, DType::Float16)});
  t.fold();
  CHECK(t.out().dtype == DType::Float16);
  CHECK(t.out_floats() == Doubles{3, -1});
}

// ---- Reductions ----

TEST_CASE("ReduceSum over axis 1 without keepdims", "[fold]") {
  NodeUnderTest t;
  t.opset = 13;
  set(t.node(OpKind::ReduceSum, {t.ints({2, 3}, {1, 2, 3, 4, 5, 6}), t.ints1({1})}), "keepdims",
      int64_t{0});
  t.fold();
  CHECK(t.out().shape == Shape{2});
  CHECK(t.out_ints() == Ints{6, 15});
}

TEST_CASE("ReduceMean, ReduceMax, ReduceProd over all axes", "[fold]") {
  NodeUnderTest m;
  m.node(OpKind::ReduceMean, {m.floats({2, 2}, {1, 2, 3, 6})});
  m.fold();
  CHECK(m.out_floats() == Doubles{3});
  NodeUnderTest x;
  set(x.node(OpKind::ReduceMax, {x.floats({2, 2}, {1, 7, 3, 6})}), "axes", Ints{0});
  x.fold();
  CHECK(x.out_floats() == Doubles{3, 7});
  NodeUnderTest p;
  p.node(OpKind::ReduceProd, {p.ints1({2, 3, 4})});
  p.fold();
  CHECK(p.out_ints() == Ints{24});
}

TEST_CASE("ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum fold by the reduction table",
          "[fold]") {
  // Proves: each element's term (|v|, v*v) and the finish (sqrt, log) come from
  // reductions.def: [-3, 4] gives L1 7, L2 5, SumSquare 25, and LogSum of [1, e-1] gives 1.
  auto fold_one = [](OpKind op, const Doubles& values) {
    NodeUnderTest t;
    t.node(op, {t.floats({2}, values)});
    t.fold();
    return t.out_floats();
  };
  CHECK(fold_one(OpKind::ReduceL1, {-3, 4}) == Doubles{7});
  CHECK(fold_one(OpKind::ReduceL2, {-3, 4}) == Doubles{5});
  CHECK(fold_one(OpKind::ReduceSumSquare, {-3, 4}) == Doubles{25});
  const Doubles log_sum = fold_one(OpKind::ReduceLogSum, {1, std::exp(1.0) - 1});
  REQUIRE(log_sum.size() == 1);
  CHECK(log_sum[0] == Approx(1.0));
}

TEST_CASE("ReduceSum with noop_with_empty_axes passes the input through", "[fold]") {
  NodeUnderTest t;
  t.opset = 13;
  set(t.node(OpKind::ReduceSum, {t.ints1({4, 5})}), "noop_with_empty_axes", int64_t{1});
  t.fold();
  CHECK(t.out_ints() == Ints{4, 5});
}

TEST_CASE("ReduceMean before opset 18 reads negative axes from the attribute", "[fold]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::ReduceMean, {t.floats({2, 3}, {1, 2, 3, 4, 5, 6})});
  set(n, "axes", Ints{-1});
  set(n, "keepdims", int64_t{0});
  t.fold();
  CHECK(t.out().shape == Shape{2});
  CHECK(t.out_floats() == Doubles{2, 5});
}

// ---- Movement ----

TEST_CASE("Expand repeats along broadcast axes", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Expand, {t.ints({2, 1}, {1, 2}), t.ints1({2, 3})});
  t.fold();
  CHECK(t.out_ints() == Ints{1, 1, 1, 2, 2, 2});
}

TEST_CASE("Transpose permutes element order", "[fold]") {
  NodeUnderTest t;
  set(t.node(OpKind::Transpose, {t.floats({2, 3}, {0, 1, 2, 3, 4, 5})}), "perm", Ints{1, 0});
  t.fold();
  CHECK(t.out_floats() == Doubles{0, 3, 1, 4, 2, 5});
}

TEST_CASE("Concat interleaves blocks along an inner axis", "[fold]") {
  NodeUnderTest t;
  set(t.node(OpKind::Concat, {t.ints({2, 1}, {1, 2}), t.ints({2, 2}, {10, 11, 20, 21})}), "axis",
      int64_t{1});
  t.fold();
  CHECK(t.out_ints() == Ints{1, 10, 11, 2, 20, 21});
}

TEST_CASE("Split gives each output its slice of the axis", "[fold]") {
  NodeUnderTest t;
  t.opset = 13;
  set(t.node(OpKind::Split, {t.ints({2, 3}, {0, 1, 2, 3, 4, 5}), t.ints1({1, 2})}, 2), "axis",
      int64_t{1});
  REQUIRE(t.fold().size() == 2);
  CHECK(t.out_ints(0) == Ints{0, 3});
  CHECK(t.out_ints(1) == Ints{1, 2, 4, 5});
}

TEST_CASE("Slice with a negative step reverses", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Slice, {t.ints1({0, 1, 2, 3, 4, 5}), t.ints1({-1}), t.ints1({-100}), t.ints1({0}),
                         t.ints1({-2})});
  t.fold();
  CHECK(t.out_ints() == Ints{5, 3, 1});
}

TEST_CASE("Slice of an inner axis with clamped bounds", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Slice,
         {t.ints({2, 3}, {0, 1, 2, 3, 4, 5}), t.ints1({1}), t.ints1({1000}), t.ints1({1})});
  t.fold();
  CHECK(t.out_ints() == Ints{1, 2, 4, 5});
}

TEST_CASE("Slice before opset 10 folds from its attributes", "[fold]") {
  NodeUnderTest t;
  t.opset = 9;
  Node& n = t.node(OpKind::Slice, {t.ints({2, 3}, {0, 1, 2, 3, 4, 5})});
  set(n, "starts", Ints{1});
  set(n, "ends", Ints{100});
  set(n, "axes", Ints{-1});
  t.fold();
  CHECK(t.out().shape == Shape{2, 2});
  CHECK(t.out_ints() == Ints{1, 2, 4, 5});
}

TEST_CASE("Gather takes negative indices from the end", "[fold]") {
  NodeUnderTest t;
  set(t.node(OpKind::Gather, {t.ints({2, 3}, {0, 1, 2, 3, 4, 5}), t.ints1({-1, 0})}), "axis",
      int64_t{1});
  t.fold();
  CHECK(t.out_ints() == Ints{2, 0, 5, 3});
}

TEST_CASE("Gather with an out-of-range constant index is a user error, not a bad read", "[fold]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::Gather, {t.ints1({1, 2, 3}), t.ints1({3})});
  // Run the evaluator directly (the rule would refuse first): it must check by itself.
  t.graph.tensor(n.outputs[0]).dtype = DType::Int64;
  t.graph.tensor(n.outputs[0]).shape = {1};
  t.graph.tensor(n.outputs[0]).typed = true;
  REQUIRE_THROWS_AS(fold_function(OpKind::Gather)(t.graph, n), UserError);
  REQUIRE_THROWS_WITH(fold_function(OpKind::Gather)(t.graph, n),
                      "node 'node_under_test' (Gather): index 3 in indices is out of range "
                      "for axis 0 of size 3");
}

TEST_CASE("Tile repeats the whole tensor along each axis", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Tile, {t.ints({1, 2}, {1, 2}), t.ints1({2, 2})});
  t.fold();
  CHECK(t.out_ints() == Ints{1, 2, 1, 2, 1, 2, 1, 2});
}

TEST_CASE("Range counts down in integers and up in floats", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Range, {t.ints({}, {10}), t.ints({}, {1}), t.ints({}, {-3})});
  t.fold();
  CHECK(t.out_ints() == Ints{10, 7, 4});
  NodeUnderTest f;
  f.node(OpKind::Range, {f.floats({}, {0}), f.floats({}, {1}), f.floats({}, {0.25})});
  f.fold();
  CHECK(f.out_floats() == Doubles{0, 0.25, 0.5, 0.75});
}

TEST_CASE("Shape folds from the type alone, with start and end", "[fold]") {
  NodeUnderTest t;
  t.opset = 15;
  set(t.node(OpKind::Shape, {t.input(DType::Float32, {2, 3, 4})}), "start", int64_t{1});
  t.fold();
  CHECK(t.out_ints() == Ints{3, 4});
  CHECK(folds_from_types_only(OpKind::Shape));
  CHECK(folds_from_types_only(OpKind::Size));
  CHECK_FALSE(folds_from_types_only(OpKind::Add));
}

TEST_CASE("Size folds to the element count", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Size, {t.input(DType::Float32, {2, 3, 4})});
  t.fold();
  CHECK(t.out_ints() == Ints{24});
}

TEST_CASE("ConstantOfShape repeats its value", "[fold]") {
  NodeUnderTest t;
  TensorId value = t.ints({1}, {7}, DType::Int32);
  set(t.node(OpKind::ConstantOfShape, {t.ints1({2, 2})}), "value", value);
  t.fold();
  CHECK(t.out().dtype == DType::Int32);
  CHECK(t.out_ints() == Ints{7, 7, 7, 7});
  NodeUnderTest d;
  d.node(OpKind::ConstantOfShape, {d.ints1({3})});
  d.fold();
  CHECK(d.out_floats() == Doubles{0, 0, 0});
}

TEST_CASE("Constant folds value_floats to float32", "[fold]") {
  NodeUnderTest t;
  set(t.node(OpKind::Constant, {}), "value_floats", Doubles{1.5, -2});
  t.fold();
  CHECK(t.out().dtype == DType::Float32);
  CHECK(t.out_floats() == Doubles{1.5, -2});
}

TEST_CASE("Constant folds value_int to an int64 scalar", "[fold]") {
  NodeUnderTest t;
  set(t.node(OpKind::Constant, {}), "value_int", int64_t{-7});
  t.fold();
  CHECK(t.out().dtype == DType::Int64);
  CHECK(t.out().shape == Shape{});
  CHECK(t.out_ints() == Ints{-7});
}

TEST_CASE("Reshape folds to the input's bytes, shared", "[fold]") {
  NodeUnderTest t;
  TensorId x = t.ints({2, 3}, {0, 1, 2, 3, 4, 5});
  t.node(OpKind::Reshape, {x, t.ints1({3, 2})});
  FoldResult r = t.fold();
  CHECK(r[0] == t.graph.tensor(x).constant);
  CHECK(t.out().shape == Shape{3, 2});
}

TEST_CASE("Dropout folds its mask to all true", "[fold]") {
  NodeUnderTest t;
  t.node(OpKind::Dropout, {t.floats({2}, {1, 2})}, 2);
  t.fold();
  CHECK(t.out_floats(0) == Doubles{1, 2});
  CHECK(t.out_ints(1) == Ints{1, 1});
}

TEST_CASE("ops without an evaluator use no_fold", "[fold]") {
  CHECK(fold_function(OpKind::MatMul) == &no_fold);
  CHECK(fold_function(OpKind::Add) == &fold_elementwise);
}
