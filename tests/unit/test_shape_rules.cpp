// Shape rule tests: each case builds one node by hand, runs its rule from the op table and
// checks the inferred outputs, or that a bad model is refused with a user error naming
// the node.
#include <catch2/catch.hpp>

#include <limits>

#include "graph/constant.h"
#include "graph/shape_rules.h"

using namespace stitch;

namespace {

// A one-node graph under construction.
struct NodeUnderTest {
  Graph graph;
  int opset = 17;

  TensorId input(DType dtype, Shape shape) {
    Tensor t;
    t.name = "in" + std::to_string(graph.tensors.size());
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.typed = true;
    return graph.add_tensor(std::move(t));
  }
  TensorId ints(Shape shape, const std::vector<int64_t>& values, DType dtype = DType::Int64) {
    TensorId id = input(dtype, std::move(shape));
    graph.tensor(id).constant = make_constant_from_int64(dtype, values);
    return id;
  }
  TensorId floats(Shape shape, const std::vector<double>& values, DType dtype = DType::Float32) {
    TensorId id = input(dtype, std::move(shape));
    graph.tensor(id).constant = make_constant_from_double(dtype, values);
    return id;
  }
  TensorId ints1(const std::vector<int64_t>& v) {
    return ints({static_cast<int64_t>(v.size())}, v);
  }

  Node& node(OpKind op, std::vector<TensorId> inputs, int outputs = 1) {
    Node n;
    n.op = op;
    n.name = "node_under_test";
    n.inputs = std::move(inputs);
    n.opset = opset;
    for (int i = 0; i < outputs; ++i) {
      Tensor t;
      t.name = "out" + std::to_string(i);
      n.outputs.push_back(graph.add_tensor(std::move(t)));
    }
    graph.nodes.push_back(std::move(n));
    return graph.nodes.back();
  }
  void infer() {
    InferContext ctx(graph, graph.nodes.back());
    shape_rule(graph.nodes.back().op)(ctx);
  }
  const Tensor& out(int i = 0) { return graph.tensor(graph.nodes.back().outputs[i]); }
};

void set(Node& n, const std::string& name, Attribute::Value v) {
  n.attrs[name] = Attribute{std::move(v)};
}
using Ints = std::vector<int64_t>;

} // namespace

// Every refusal is a UserError whose message names the node.
#define REQUIRE_REFUSED(t, fragment)                                                               \
  do {                                                                                             \
    REQUIRE_THROWS_AS((t).infer(), UserError);                                                     \
    REQUIRE_THROWS_WITH((t).infer(),                                                               \
                        Catch::Contains("node 'node_under_test'") && Catch::Contains(fragment));   \
  } while (0)

// ---- Elementwise and Broadcast ----

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

// ---- Reduction ----

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

// ---- Movement ----

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
  REQUIRE_REFUSED(t, "out of range");
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

TEST_CASE("DepthToSpace and SpaceToDepth move channels into blocks and back", "[shape_rules]") {
  NodeUnderTest d;
  set(d.node(OpKind::DepthToSpace, {d.input(DType::Float32, {1, 8, 2, 3})}), "blocksize",
      int64_t{2});
  d.infer();
  CHECK(d.out().shape == Shape{1, 2, 4, 6});
  NodeUnderTest s;
  set(s.node(OpKind::SpaceToDepth, {s.input(DType::Float32, {1, 2, 4, 5})}), "blocksize",
      int64_t{2});
  REQUIRE_REFUSED(s, "divisible by blocksize");
}

TEST_CASE("Resize with scales floors in * scale", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::Resize,
         {t.input(DType::Float32, {1, 3, 5, 7}), kNoTensor, t.floats({4}, {1.0, 1.0, 1.5, 0.6})});
  t.infer();
  CHECK(t.out().shape == Shape{1, 3, 7, 4});
}

TEST_CASE("Resize with sizes and not_larger keeps the aspect ratio", "[shape_rules]") {
  // The ONNX test resize_downsample_sizes_nearest_not_larger: [1,1,2,4] to at most [1,3].
  NodeUnderTest t;
  t.opset = 19;
  Node& n = t.node(OpKind::Resize,
                   {t.input(DType::Float32, {1, 1, 2, 4}), kNoTensor, kNoTensor, t.ints1({1, 3})});
  set(n, "axes", Ints{2, 3});
  set(n, "keep_aspect_ratio_policy", std::string("not_larger"));
  t.infer();
  CHECK(t.out().shape == Shape{1, 1, 1, 2});
}

TEST_CASE("Resize refuses both scales and sizes", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::Resize, {t.input(DType::Float32, {1, 1, 2, 2}), kNoTensor,
                          t.floats({4}, {1, 1, 2, 2}), t.ints1({1, 1, 4, 4})});
  REQUIRE_REFUSED(t, "exactly one of scales and sizes");
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

// ---- Gemm, Conv, Opaque ----

TEST_CASE("MatMul drops the axes added to 1-D operands", "[shape_rules]") {
  NodeUnderTest vm;
  vm.node(OpKind::MatMul, {vm.input(DType::Float32, {3}), vm.input(DType::Float32, {2, 3, 4})});
  vm.infer();
  CHECK(vm.out().shape == Shape{2, 4});
  NodeUnderTest mv;
  mv.node(OpKind::MatMul, {mv.input(DType::Float32, {5, 3}), mv.input(DType::Float32, {3})});
  mv.infer();
  CHECK(mv.out().shape == Shape{5});
  NodeUnderTest vv;
  vv.node(OpKind::MatMul, {vv.input(DType::Float32, {3}), vv.input(DType::Float32, {3})});
  vv.infer();
  CHECK(vv.out().shape.empty());
}

TEST_CASE("MatMul broadcasts batch dims and refuses mismatched inner dims", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::MatMul,
         {t.input(DType::Float32, {2, 1, 4, 3}), t.input(DType::Float32, {5, 3, 6})});
  t.infer();
  CHECK(t.out().shape == Shape{2, 5, 4, 6});
  NodeUnderTest bad;
  bad.node(OpKind::MatMul, {bad.input(DType::Float32, {4, 3}), bad.input(DType::Float32, {4, 3})});
  REQUIRE_REFUSED(bad, "inner dimensions");
}

TEST_CASE("Gemm honours transA and transB and checks C", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::Gemm, {t.input(DType::Float32, {3, 4}), t.input(DType::Float32, {5, 3}),
                                  t.input(DType::Float32, {5})});
  set(n, "transA", int64_t{1});
  set(n, "transB", int64_t{1});
  t.infer();
  CHECK(t.out().shape == Shape{4, 5});
  NodeUnderTest bad;
  bad.node(OpKind::Gemm, {bad.input(DType::Float32, {3, 4}), bad.input(DType::Float32, {4, 5}),
                          bad.input(DType::Float32, {3, 1, 5})});
  REQUIRE_REFUSED(bad, "C of shape");
}

namespace {
Shape einsum_shape(const std::string& equation, std::vector<Shape> shapes) {
  NodeUnderTest t;
  std::vector<TensorId> inputs;
  for (Shape& s : shapes)
    inputs.push_back(t.input(DType::Float32, s));
  set(t.node(OpKind::Einsum, inputs), "equation", equation);
  t.infer();
  return t.out().shape;
}
} // namespace

TEST_CASE("Einsum infers explicit, implicit and ellipsis outputs", "[shape_rules]") {
  CHECK(einsum_shape("ij,jk->ik", {{2, 3}, {3, 4}}) == Shape{2, 4});
  CHECK(einsum_shape("ij,jk", {{2, 3}, {3, 4}}) == Shape{2, 4});
  CHECK(einsum_shape("ba,ab", {{2, 3}, {3, 2}}).empty());
  CHECK(einsum_shape("...ii ->...i", {{3, 5, 5}}) == Shape{3, 5});
  CHECK(einsum_shape("ij,...", {{2, 3}, {4}}) == Shape{4, 2, 3});
  CHECK(einsum_shape("...i,...i->...", {{2, 1, 3}, {4, 3}}) == Shape{2, 4});
  CHECK(einsum_shape("bij,bjk->bik", {{7, 2, 3}, {7, 3, 4}}) == Shape{7, 2, 4});
}

TEST_CASE("Einsum refuses malformed equations", "[shape_rules]") {
  auto refused = [](const std::string& eq, std::vector<Shape> shapes, const char* fragment) {
    NodeUnderTest t;
    std::vector<TensorId> inputs;
    for (Shape& s : shapes)
      inputs.push_back(t.input(DType::Float32, s));
    set(t.node(OpKind::Einsum, inputs), "equation", eq);
    REQUIRE_REFUSED(t, fragment);
  };
  refused("ij,jk->iz", {{2, 3}, {3, 4}}, "output label 'z'");
  refused("i.j", {{2, 3}}, "not one \"...\"");
  refused("ij", {{2, 3}, {3}}, "1 operand terms for 2 inputs");
  refused("ij,jk", {{2, 3}, {4, 5}}, "label 'j'");
  refused("ijk", {{2, 3}}, "does not fit");
  refused("i->i->i", {{2}}, "more than one");
  refused("i#", {{2, 3}}, "invalid character");
  refused("...i->i", {{2, 3}}, "drops the");
}

TEST_CASE("Conv applies pads, strides and dilations", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::Conv,
                   {t.input(DType::Float32, {1, 4, 10, 9}), t.input(DType::Float32, {8, 2, 3, 3})});
  set(n, "group", int64_t{2});
  set(n, "pads", Ints{1, 0, 1, 0});
  set(n, "strides", Ints{2, 1});
  set(n, "dilations", Ints{1, 2});
  t.infer();
  // H: (10 + 2 - 3) / 2 + 1 = 5; W: (9 - 5) / 1 + 1 = 5.
  CHECK(t.out().shape == Shape{1, 8, 5, 5});
}

TEST_CASE("Conv with SAME_UPPER gives ceil(in / stride)", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::Conv,
                   {t.input(DType::Float32, {1, 1, 7, 7}), t.input(DType::Float32, {1, 1, 3, 3})});
  set(n, "auto_pad", std::string("SAME_UPPER"));
  set(n, "strides", Ints{2, 2});
  t.infer();
  CHECK(t.out().shape == Shape{1, 1, 4, 4});
}

TEST_CASE("Conv refuses channels that do not match W and group", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Conv,
         {t.input(DType::Float32, {1, 3, 5, 5}), t.input(DType::Float32, {4, 2, 3, 3})});
  REQUIRE_REFUSED(t, "channels");
}

TEST_CASE("Conv refuses a kernel larger than the padded input", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Conv,
         {t.input(DType::Float32, {1, 1, 2, 2}), t.input(DType::Float32, {1, 1, 3, 3})});
  REQUIRE_REFUSED(t, "smaller than the kernel");
}

TEST_CASE("ConvTranspose grows by stride and honours output_padding and output_shape",
          "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::ConvTranspose,
                   {t.input(DType::Float32, {1, 1, 3, 3}), t.input(DType::Float32, {1, 2, 3, 3})});
  set(n, "strides", Ints{3, 2});
  set(n, "output_padding", Ints{1, 1});
  t.infer();
  // 3 * (3 - 1) + 1 + 3 = 10; 2 * (3 - 1) + 1 + 3 = 8.
  CHECK(t.out().shape == Shape{1, 2, 10, 8});
  NodeUnderTest s;
  Node& m = s.node(OpKind::ConvTranspose,
                   {s.input(DType::Float32, {1, 1, 3, 3}), s.input(DType::Float32, {1, 2, 3, 3})});
  set(m, "strides", Ints{3, 2});
  set(m, "output_shape", Ints{10, 8});
  s.infer();
  CHECK(s.out().shape == Shape{1, 2, 10, 8});
}

TEST_CASE("MaxPool ceil_mode drops a last window starting in the end padding", "[shape_rules]") {
  // ONNX test maxpool_2d_ceil_output_size_reduce_by_one.
  NodeUnderTest t;
  Node& n = t.node(OpKind::MaxPool, {t.input(DType::Float32, {1, 1, 2, 2})}, 2);
  set(n, "kernel_shape", Ints{1, 1});
  set(n, "strides", Ints{2, 2});
  set(n, "ceil_mode", int64_t{1});
  t.infer();
  CHECK(t.out(0).shape == Shape{1, 1, 1, 1});
  CHECK(t.out(1).dtype == DType::Int64);
}

TEST_CASE("AveragePool ceil_mode counts a partial window that starts inside", "[shape_rules]") {
  // ONNX tests averagepool_2d_ceil and averagepool_2d_ceil_last_window_starts_on_pad.
  NodeUnderTest t;
  Node& n = t.node(OpKind::AveragePool, {t.input(DType::Float32, {1, 1, 4, 4})});
  set(n, "kernel_shape", Ints{3, 3});
  set(n, "strides", Ints{2, 2});
  set(n, "ceil_mode", int64_t{1});
  t.infer();
  CHECK(t.out().shape == Shape{1, 1, 2, 2});
  NodeUnderTest p;
  Node& m = p.node(OpKind::AveragePool, {p.input(DType::Float32, {1, 3, 2, 2})});
  set(m, "kernel_shape", Ints{3, 3});
  set(m, "strides", Ints{3, 3});
  set(m, "pads", Ints{1, 1, 1, 1});
  set(m, "ceil_mode", int64_t{1});
  p.infer();
  CHECK(p.out().shape == Shape{1, 3, 1, 1});
}

TEST_CASE("TopK outputs k values and int64 indices and refuses k past the axis", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::TopK, {t.input(DType::Float32, {3, 8}), t.ints1({5})}, 2), "axis", int64_t{1});
  t.infer();
  CHECK(t.out(0).shape == Shape{3, 5});
  CHECK(t.out(1).dtype == DType::Int64);
  NodeUnderTest bad;
  bad.node(OpKind::TopK, {bad.input(DType::Float32, {3, 8}), bad.ints1({9})}, 2);
  REQUIRE_REFUSED(bad, "out of range");
}

TEST_CASE("every op in the table has a shape rule", "[shape_rules]") {
  for (int op = 0; op <= static_cast<int>(OpKind::View); ++op)
    CHECK(shape_rule(static_cast<OpKind>(op)) != nullptr);
}
