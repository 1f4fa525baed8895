// Pass pipeline tests: folding of exporter shape chains, identity removal, views, dead
// code, pass options, and the verifier between passes.
#include <catch2/catch.hpp>

#include <limits>
#include <set>
#include <sstream>

#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/error.h"
#include "graph/infer_context.h"
#include "graph/pipeline.h"
#include "graph/verify.h"
#include "model_builder.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes)
    n += node.op == op;
  return n;
}

Graph compile(const ModelBuilder& m, const PipelineOptions& opts = {}) {
  Graph g = load_onnx(m.write());
  run_pipeline(g, opts);
  return g;
}

// x[B,S,8] -> Shape -> Gather(0), Gather(1) -> Unsqueeze -> Concat(b, s, 2, 4) -> Reshape
ModelBuilder shape_chain_model() {
  ModelBuilder m(17);
  m.input("x", kFloat, {2, 3, 8}).output("y");
  m.initializer_i64("i0", {}, {0}).initializer_i64("i1", {}, {1}).initializer_i64("ax", {1}, {0});
  m.initializer_i64("tail", {2}, {2, 4});
  m.node("Shape", {"x"}, {"shape"});
  m.node("Gather", {"shape", "i0"}, {"b"});
  m.node("Gather", {"shape", "i1"}, {"s"});
  m.node("Unsqueeze", {"b", "ax"}, {"b1"});
  m.node("Unsqueeze", {"s", "ax"}, {"s1"});
  test::set_attr_int(m.node("Concat", {"b1", "s1", "tail"}, {"newshape"}), "axis", 0);
  m.node("Reshape", {"x", "newshape"}, {"r"});
  m.node("Relu", {"r"}, {"y"});
  return m;
}

} // namespace

TEST_CASE("Shape->Gather->Unsqueeze->Concat->Reshape folds to a view", "[passes]") {
  // Proves that exporter shape chains leave no run-time shape computation behind.
  Graph g = compile(shape_chain_model());
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].op == OpKind::View);
  CHECK(g.nodes[1].op == OpKind::Relu);
  const Tensor& r = g.tensor(g.nodes[0].outputs[0]);
  CHECK(r.shape == Shape{2, 3, 2, 4});
  CHECK(r.view_of == g.inputs[0]);
}

TEST_CASE("disabling fold-constants keeps the shape computation", "[passes]") {
  PipelineOptions opts;
  opts.disabled = {"fold-constants"};
  Graph g = compile(shape_chain_model(), opts);
  CHECK(count_op(g, OpKind::Shape) == 1);
  CHECK(count_op(g, OpKind::Concat) == 1);
  // The reshape still became a view, with the shape known from value propagation.
  CHECK(g.tensor(g.nodes.back().inputs[0]).shape == Shape{2, 3, 2, 4});
}

TEST_CASE("Identity and Dropout disappear and a graph output keeps its name", "[passes]") {
  ModelBuilder m;
  m.input("x", kFloat, {4}).output("y").output("z");
  m.node("Identity", {"x"}, {"a"});
  m.node("Dropout", {"a"}, {"b", "mask"});
  m.node("Relu", {"b"}, {"y"});
  m.node("Identity", {"y"}, {"z"});
  Graph g = compile(m);
  CHECK(count_op(g, OpKind::Identity) == 0);
  CHECK(count_op(g, OpKind::Dropout) == 0);
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.tensor(g.nodes[0].inputs[0]).name == "x"); // Relu reads the input directly
  CHECK(g.tensor(g.outputs[1]).name == "z");
  CHECK(g.tensor(g.outputs[1]).view_of == g.outputs[0]);
}

TEST_CASE("Reshape Flatten Squeeze and Unsqueeze become views", "[passes]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 1, 6}).output("y");
  m.initializer_i64("shape", {2}, {3, 4}).initializer_i64("sq", {1}, {1});
  m.initializer_i64("usq", {1}, {0});
  m.node("Reshape", {"x", "shape"}, {"a"});
  test::set_attr_int(m.node("Flatten", {"a"}, {"b"}), "axis", 0);
  m.node("Unsqueeze", {"b", "usq"}, {"c"});
  m.node("Squeeze", {"c", "usq"}, {"d"});
  m.node("Relu", {"d"}, {"y"});
  Graph g = compile(m);
  CHECK(count_op(g, OpKind::View) == 4);
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::View) continue;
    CHECK(g.tensor(n.outputs[0]).view_of == n.inputs[0]);
  }
  CHECK(g.tensor(g.outputs[0]).shape == Shape{1, 12});
}

TEST_CASE("nodes that reach no output are removed", "[passes]") {
  ModelBuilder m;
  m.input("x", kFloat, {4}).output("y");
  m.node("Exp", {"x"}, {"unused"});
  m.node("Relu", {"x"}, {"y"});
  Graph g = compile(m);
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op == OpKind::Relu);
}

TEST_CASE("constant subgraphs fold to their values", "[passes]") {
  // Proves float folding through elementwise ops gives exact values.
  ModelBuilder m;
  m.input("x", kFloat, {3}).output("y");
  m.initializer_f32("a", {3}, {1, 2, 3}).initializer_f32("b", {3}, {10, 20, 30});
  m.node("Mul", {"a", "b"}, {"ab"});
  m.node("Add", {"x", "ab"}, {"y"});
  Graph g = compile(m);
  REQUIRE(g.nodes.size() == 1);
  const Tensor& ab = g.tensor(g.nodes[0].inputs[1]);
  REQUIRE(ab.is_constant());
  CHECK(constant_as_double(ab) == std::vector<double>{10, 40, 90});
}

TEST_CASE("pass options are checked", "[passes]") {
  PipelineOptions opts;
  opts.disabled = {"infer-shapes"};
  CHECK_THROWS_WITH(check_pipeline_options(opts), Catch::Contains("is required"));
  opts.disabled = {"no-such-pass"};
  CHECK_THROWS_WITH(check_pipeline_options(opts), Catch::Contains("unknown pass 'no-such-pass'"));
}

TEST_CASE("print-after prints the graph after the named pass", "[passes]") {
  std::ostringstream out;
  PipelineOptions opts;
  opts.print_after = {"make-views"};
  opts.print_to = &out;
  compile(shape_chain_model(), opts);
  CHECK_THAT(out.str(), Catch::Contains("after make-views"));
  CHECK_THAT(out.str(), Catch::Contains("= View(%'x')"));
  CHECK_THAT(out.str(), !Catch::Contains("after fold-constants"));
}

TEST_CASE("a declared output shape that disagrees with inference is refused", "[passes]") {
  ModelBuilder m;
  m.input("x", kFloat, {2, 3}).output("y", kFloat, {3, 2}, true);
  m.node("Relu", {"x"}, {"y"});
  CHECK_THROWS_WITH(compile(m), Catch::Contains("declared with shape [3,2] but computes [2,3]"));
}

TEST_CASE("the verifier reports a node reading a value before it is produced", "[passes]") {
  Graph g = load_onnx(shape_chain_model().write());
  run_pipeline(g, {});
  std::swap(g.nodes[0], g.nodes[1]);
  CHECK_THROWS_AS(verify_graph(g, "a broken pass"), InternalError);
}

namespace {

// GPT-2's tied embedding: W [50,16] read by a Gather (the token embedding) and, transposed,
// by the LM head's MatMul of [1,5,16] hidden states.
ModelBuilder tied_embedding_model(bool shared) {
  ModelBuilder m(17);
  m.input("ids", onnx::TensorProto::INT64, {1, 5}).input("h", kFloat, {1, 5, 16}).output("logits");
  std::vector<float> w(50 * 16);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
  m.initializer_f32("wte", {50, 16}, w);
  m.node("Transpose", {"wte"}, {"wte_t"});
  if (shared) {
    m.output("embedded");
    m.node("Gather", {"wte", "ids"}, {"embedded"});
  }
  m.node("MatMul", {"h", "wte_t"}, {"logits"});
  return m;
}

} // namespace

TEST_CASE("a shared weight read transposed by a MatMul is not stored twice", "[passes]") {
  // Proves: folding Transpose(W) for the LM head would copy the tied embedding; instead the
  // MatMul becomes a Gemm reading W with transB between views, and W is the one [50,16]
  // constant left. An unshared W folds as before (its transposed copy is the only one).
  Graph g = compile(tied_embedding_model(true));
  CHECK(count_op(g, OpKind::Transpose) == 0);
  CHECK(count_op(g, OpKind::MatMul) == 0);
  REQUIRE(count_op(g, OpKind::Gemm) == 1);
  CHECK(count_op(g, OpKind::View) == 2); // A flattened to [5,16], the product back to [1,5,50]
  for (const Node& node : g.nodes) {
    if (node.op != OpKind::Gemm) continue;
    CHECK(std::get<int64_t>(node.attrs.at("transB").value) == 1);
    CHECK(g.tensor(node.inputs[0]).shape == Shape{5, 16});
    CHECK(g.tensor(node.inputs[1]).name == "wte");
    CHECK(g.tensor(node.outputs[0]).shape == Shape{5, 50});
  }
  int64_t transposed_constants = 0;
  for (const Node& node : g.nodes)
    for (TensorId t : node.inputs)
      transposed_constants +=
          t != kNoTensor && g.tensor(t).is_constant() && g.tensor(t).shape == Shape{16, 50};
  CHECK(transposed_constants == 0);

  Graph unshared = compile(tied_embedding_model(false));
  CHECK(count_op(unshared, OpKind::MatMul) == 1);
  CHECK(count_op(unshared, OpKind::Gemm) == 0);
}

namespace {

// Attention's three projections of x [2,4,8] as exporters write Linear layers (MatMul, then a
// bias Add), each split into heads of 4 and transposed; `k_out` makes K's product a graph
// output too (it is then read by more than its bias Add).
ModelBuilder qkv_model(bool k_out) {
  ModelBuilder m(17);
  m.input("x", kFloat, {2, 4, 8}).output("q").output("k").output("v");
  if (k_out) m.output("kp");
  const int64_t widths[] = {8, 4, 4};
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string p = names[i];
    const int64_t n = widths[i];
    std::vector<float> w(static_cast<size_t>(8 * n)), b(static_cast<size_t>(n));
    for (size_t j = 0; j < w.size(); ++j)
      w[j] = static_cast<float>(100 * i + static_cast<int>(j));
    for (size_t j = 0; j < b.size(); ++j)
      b[j] = static_cast<float>(-1 - 10 * i - static_cast<int>(j));
    m.initializer_f32("w" + p, {8, n}, w).initializer_f32("b" + p, {n}, b);
    m.initializer_i64("s" + p, {4}, {2, 4, n / 4, 4});
    m.node("MatMul", {"x", "w" + p}, {p + "p"});
    m.node("Add", {p + "p", "b" + p}, {p + "b"});
    m.node("Reshape", {p + "b", "s" + p}, {p + "h"});
    test::set_attr_ints(m.node("Transpose", {p + "h"}, {p}), "perm", {0, 2, 1, 3});
  }
  return m;
}

const Tensor* constant_of_shape(const Graph& g, const Shape& shape) {
  for (const Node& node : g.nodes)
    for (TensorId t : node.inputs)
      if (t != kNoTensor && g.tensor(t).is_constant() && g.tensor(t).shape == shape)
        return &g.tensor(t);
  return nullptr;
}

} // namespace

TEST_CASE("merge-matmuls makes one MatMul of projections sharing their input", "[passes]") {
  // Proves: Q, K and V's MatMuls become one over the weights side by side ([8, 16]: each row
  // Wq's row, then Wk's, then Wv's) with one bias Add of the three biases; each head-split
  // Reshape becomes a Slice of the merged result viewed as [2, 4, 4, 4] (heads [0,2), [2,3),
  // [3,4)), the Transposes reading them as before.
  Graph g = compile(qkv_model(false));
  CHECK(count_op(g, OpKind::MatMul) == 1);
  CHECK(count_op(g, OpKind::Add) == 1);
  CHECK(count_op(g, OpKind::Slice) == 3);
  CHECK(count_op(g, OpKind::Transpose) == 3);
  CHECK(count_op(g, OpKind::View) == 1);
  const Tensor* w = constant_of_shape(g, {8, 16});
  REQUIRE(w != nullptr);
  std::vector<double> values = constant_as_double(*w);
  CHECK(values[0] == 0);    // Wq[0, 0]
  CHECK(values[8] == 100);  // Wk[0, 0]
  CHECK(values[12] == 200); // Wv[0, 0]
  CHECK(values[16] == 8);   // Wq[1, 0]
  CHECK(values[24] == 104); // Wk[1, 0]
  const Tensor* b = constant_of_shape(g, {16});
  REQUIRE(b != nullptr);
  CHECK(constant_as_double(*b)[8] == -11); // bk[0]
  for (const Node& node : g.nodes) {
    if (node.op != OpKind::Slice) continue;
    CHECK(g.tensor(node.inputs[0]).shape == Shape{2, 4, 4, 4});
  }
  // --disable-pass keeps the three.
  PipelineOptions off;
  off.disabled.insert("merge-matmuls");
  CHECK(count_op(compile(qkv_model(false), off), OpKind::MatMul) == 3);
}

TEST_CASE("merge-matmuls keeps the biases apart when a product is read elsewhere", "[passes]") {
  // Proves: with K's product also a graph output, the Adds stay (reading last-axis Slices of
  // the merged product [2,4,16]); the MatMuls are still merged.
  Graph g = compile(qkv_model(true));
  CHECK(count_op(g, OpKind::MatMul) == 1);
  CHECK(count_op(g, OpKind::Add) == 3);
  int last_axis_slices = 0;
  for (const Node& node : g.nodes)
    last_axis_slices +=
        node.op == OpKind::Slice && g.tensor(node.inputs[0]).shape == Shape{2, 4, 16};
  CHECK(last_axis_slices == 3);
}

TEST_CASE("merge-matmuls turns a Split of Q, K and V read by head splits into head slices",
          "[passes]") {
  // Proves: one projection [2,4,24] split on its last axis into Q, K, V of 8 (opset 13, the
  // sizes an input, and opset 18 by num_outputs), each read only by a head split into [2,4,2,4],
  // becomes three Slices of the projection viewed as [2,4,6,4] (heads [0,2), [2,4), [4,6));
  // a Split with a result read by anything else, or not on the last axis, stays (for
  // movement-as-remappings, here disabled, to make Slices of the projection itself).
  for (int opset : {13, 18}) {
    for (bool other_reader : {false, true}) {
      INFO("opset " << opset << (other_reader ? ", K also read by a Relu" : ""));
      ModelBuilder m(opset);
      m.input("x", kFloat, {2, 4, 24}).output("q").output("k").output("v");
      if (other_reader) m.output("r");
      m.initializer_i64("heads", {4}, {2, 4, 2, 4});
      if (opset < 18) {
        m.initializer_i64("sizes", {3}, {8, 8, 8});
        test::set_attr_int(m.node("Split", {"x", "sizes"}, {"qs", "ks", "vs"}), "axis", -1);
      } else {
        auto& split = m.node("Split", {"x"}, {"qs", "ks", "vs"});
        test::set_attr_int(split, "axis", 2);
        test::set_attr_int(split, "num_outputs", 3);
      }
      for (const std::string t : {"q", "k", "v"})
        m.node("Reshape", {t + "s", "heads"}, {t + "h"});
      for (const std::string t : {"q", "k", "v"})
        test::set_attr_ints(m.node("Transpose", {t + "h"}, {t}), "perm", {0, 2, 1, 3});
      if (other_reader) m.node("Relu", {"ks"}, {"r"});
      PipelineOptions without_remappings;
      without_remappings.disabled.insert("movement-as-remappings");
      Graph g = compile(m, without_remappings);
      if (other_reader) {
        CHECK(count_op(g, OpKind::Split) == 1);
        CHECK(count_op(g, OpKind::Slice) == 0);
        continue;
      }
      CHECK(count_op(g, OpKind::Split) == 0);
      REQUIRE(count_op(g, OpKind::Slice) == 3);
      std::vector<double> starts;
      for (const Node& node : g.nodes) {
        if (node.op != OpKind::Slice) continue;
        CHECK(g.tensor(node.inputs[0]).shape == Shape{2, 4, 6, 4});
        CHECK(g.tensor(node.outputs[0]).shape == Shape{2, 4, 2, 4});
        CHECK(constant_as_double(g.tensor(node.inputs[3])) == std::vector<double>{2}); // heads
        starts.push_back(constant_as_double(g.tensor(node.inputs[1])).at(0));
      }
      std::sort(starts.begin(), starts.end());
      CHECK(starts == std::vector<double>{0, 2, 4});
    }
  }
}

TEST_CASE("fold-residual-bias adds two convolutions' biases once", "[passes]") {
  // Proves: Add(Conv(x, W1, b1), Conv(x, W2, b2)) keeps one bias, b1 + b2, on the first Conv;
  // the second has none. A Conv result read elsewhere too, or a bias-less operand, leaves the
  // biases where they are; --disable-pass keeps them.
  for (int variant = 0; variant < 3; ++variant) {
    INFO("variant " << variant);
    ModelBuilder m(17);
    m.input("x", kFloat, {1, 2, 5, 5}).output("y");
    std::vector<float> w(3 * 2 * 9, 0.5f);
    m.initializer_f32("w1", {3, 2, 3, 3}, w)
        .initializer_f32("w2", {3, 2, 1, 1}, {1, 2, 3, 4, 5, 6});
    m.initializer_f32("b1", {3}, {1.0f, 2.0f, 3.0f})
        .initializer_f32("b2", {3}, {0.5f, -2.0f, 4.0f});
    test::set_attr_ints(m.node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
    m.node("Conv",
           variant == 2 ? std::vector<std::string>{"x", "w2"}
                        : std::vector<std::string>{"x", "w2", "b2"},
           {"c2"});
    m.node("Add", {"c1", "c2"}, {"y"});
    if (variant == 1) {
      m.output("z");
      m.node("Relu", {"c2"}, {"z"});
    }
    Graph g = compile(m);
    std::vector<const Node*> convs;
    for (const Node& node : g.nodes)
      if (node.op == OpKind::Conv) convs.push_back(&node);
    REQUIRE(convs.size() == 2);
    const Node* first = g.tensor(convs[0]->inputs[1]).shape[2] == 3 ? convs[0] : convs[1];
    const Node* second = first == convs[0] ? convs[1] : convs[0];
    REQUIRE(first->inputs.size() == 3);
    const std::vector<double> bias = constant_as_double(g.tensor(first->inputs[2]));
    if (variant == 0) {
      CHECK(bias == std::vector<double>{1.5, 0.0, 7.0});
      CHECK(second->inputs.size() == 2);
      // Neither result keeps the model's name (its value is not the model's any more).
      CHECK(g.tensor(first->outputs[0]).name == "c1/with_residual_bias");
      CHECK(g.tensor(second->outputs[0]).name == "c2/unbiased");
    } else {
      CHECK(bias == std::vector<double>{1.0, 2.0, 3.0});
      CHECK(second->inputs.size() == 3 - (variant == 2));
    }
  }
}

namespace {

// Grouped-query attention's scores and context as exporters write them: K and V [2,2,5,4]
// repeated for 3 query heads each (Unsqueeze, Expand, Reshape to [2,6,5,4]); the scores
// MatMul(Q, K^T), the context MatMul(P, V) followed by the head merge's Transpose.
ModelBuilder grouped_attention_model() {
  ModelBuilder m(17);
  m.input("q", kFloat, {2, 6, 5, 4})
      .input("k", kFloat, {2, 2, 5, 4})
      .input("v", kFloat, {2, 2, 5, 4});
  m.input("p", kFloat, {2, 6, 5, 5});
  m.output("scores").output("context");
  m.initializer_i64("axis", {1}, {2});
  m.initializer_i64("repeat", {5}, {2, 2, 3, 5, 4});
  m.initializer_i64("merged", {4}, {2, 6, 5, 4});
  for (const std::string x : {"k", "v"}) {
    m.node("Unsqueeze", {x, "axis"}, {x + "1"});
    m.node("Expand", {x + "1", "repeat"}, {x + "e"});
    m.node("Reshape", {x + "e", "merged"}, {x + "r"});
  }
  test::set_attr_ints(m.node("Transpose", {"kr"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"scores"});
  m.node("MatMul", {"p", "vr"}, {"ctx"});
  test::set_attr_ints(m.node("Transpose", {"ctx"}, {"context"}), "perm", {0, 2, 1, 3});
  return m;
}

} // namespace

TEST_CASE("fold-repeated-heads computes grouped-query scores without repeating K", "[passes]") {
  // Proves: the scores become one product per key head, Q viewed as [2,2,15,4] times K^T
  // [2,2,4,5], reshaped back to [2,6,5,5]; the context likewise, P viewed as [2,2,15,5] times V
  // [2,2,5,4], before the head merge's Transpose. Neither Expand is left.
  Graph g = compile(grouped_attention_model());
  CHECK(count_op(g, OpKind::Expand) == 0);
  int scores = 0, context = 0;
  for (const Node& node : g.nodes) {
    if (node.op != OpKind::MatMul) continue;
    const Shape& a = g.tensor(node.inputs[0]).shape;
    if (a == Shape{2, 2, 15, 4}) {
      ++scores;
      CHECK(g.tensor(node.inputs[1]).shape == Shape{2, 2, 4, 5});
      CHECK(g.tensor(node.outputs[0]).shape == Shape{2, 2, 15, 5});
    }
    if (a == Shape{2, 2, 15, 5}) {
      ++context;
      CHECK(g.tensor(node.inputs[1]).shape == Shape{2, 2, 5, 4});
      CHECK(g.tensor(node.outputs[0]).shape == Shape{2, 2, 15, 4});
    }
  }
  CHECK(scores == 1);
  CHECK(context == 1);
  PipelineOptions off;
  off.disabled.insert("fold-repeated-heads");
  CHECK(count_op(compile(grouped_attention_model(), off), OpKind::Expand) == 2);
}

TEST_CASE("movement-as-remappings makes constant-index gathers slices and views", "[passes]") {
  // Proves: a Gather or GatherND whose constant indices pick positions start + step * i becomes
  // a Slice (none when they are the whole axis in order) and a Reshape writing the Gather's own
  // result, which make-views turns into views; indices out of order keep the gather. (Indices
  // out of range are refused by shape inference.)
  struct Case {
    std::string name;
    std::string op;
    std::vector<int64_t> data, index_dims, indices;
    int64_t axis;
    int slices; // Slices expected; -1: the gather stays
  };
  const std::vector<Case> cases = {
      {"first token", "Gather", {2, 5, 4}, {}, {0}, 1, 1},
      {"whole axis in order", "Gather", {6, 1}, {2, 1, 3}, {0, 1, 2, 3, 4, 5}, 0, 0},
      {"negative, stepped", "Gather", {2, 7}, {3}, {-6, 3, 5}, 1, 1},
      {"out of order", "Gather", {2, 7}, {3}, {0, 2, 1}, 1, -1},
      {"tuples in order",
       "GatherND",
       {2, 3},
       {2, 1, 3, 2},
       {0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2},
       0,
       0},
      {"tuples, second row", "GatherND", {2, 3, 4}, {1, 1}, {1}, 0, 1},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    ModelBuilder m(13);
    m.input("x", kFloat, c.data).output("y");
    m.initializer_i64("i", c.index_dims, c.indices);
    auto& node = m.node(c.op, {"x", "i"}, {"y"});
    if (c.op == "Gather") test::set_attr_int(node, "axis", c.axis);
    Graph g = compile(m);
    int gathers = 0, slices = 0;
    for (const Node& n : g.nodes) {
      gathers += n.op == OpKind::Gather || n.op == OpKind::GatherND;
      slices += n.op == OpKind::Slice;
    }
    if (c.slices < 0) {
      CHECK(gathers == 1);
      continue;
    }
    CHECK(gathers == 0);
    CHECK(slices == c.slices);
    CHECK(g.tensor(g.outputs[0]).name == "y");
    PipelineOptions off;
    off.disabled.insert("movement-as-remappings");
    const Graph kept = compile(m, off);
    CHECK(kept.tensor(kept.outputs[0]).shape == g.tensor(g.outputs[0]).shape);
  }
}

TEST_CASE("movement-as-remappings makes a Split one Slice per part", "[passes]") {
  // Proves: a Split (sizes from its split input, or equal parts) becomes one Slice of the axis
  // per output, each writing the output's own tensor; --disable-pass keeps the Split.
  for (bool sizes : {true, false}) {
    INFO("split sizes given: " << sizes);
    ModelBuilder m(13);
    m.input("x", kFloat, {2, 6, 3}).output("a").output("b").output("c");
    std::vector<std::string> inputs = {"x"};
    if (sizes) {
      m.initializer_i64("split", {3}, {1, 2, 3});
      inputs.push_back("split");
    }
    test::set_attr_int(m.node("Split", inputs, {"a", "b", "c"}), "axis", -2);
    Graph g = compile(m);
    CHECK(count_op(g, OpKind::Split) == 0);
    REQUIRE(count_op(g, OpKind::Slice) == 3);
    std::vector<int64_t> starts;
    for (const Node& node : g.nodes)
      if (node.op == OpKind::Slice)
        starts.push_back(constant_as_int64(g.tensor(node.inputs[1]))[0]);
    CHECK(starts == (sizes ? std::vector<int64_t>{0, 1, 3} : std::vector<int64_t>{0, 2, 4}));
    CHECK(g.tensor(g.outputs[1]).name == "b");
    CHECK(g.tensor(g.outputs[2]).shape == (sizes ? Shape{2, 3, 3} : Shape{2, 2, 3}));
    PipelineOptions off;
    off.disabled.insert("movement-as-remappings");
    CHECK(count_op(compile(m, off), OpKind::Split) == 1);
  }
}

TEST_CASE("movement-as-remappings makes a Tile Concats of copies and an Expand", "[passes]") {
  // Proves: a Tile repeating an axis of several elements is a Concat of that many copies of it,
  // one repeating axes of one element an Expand, both when both occur; more than 8 copies keep
  // the Tile.
  struct Case {
    Shape in;
    std::vector<int64_t> repeats;
    int concats, expands, tiles;
  };
  for (const Case& c : std::vector<Case>{{{2, 1, 3}, {2, 4, 1}, 1, 1, 0},
                                         {{2, 3}, {1, 3}, 1, 0, 0},
                                         {{2, 1}, {1, 5}, 0, 1, 0},
                                         {{2, 3}, {9, 1}, 0, 0, 1}}) {
    INFO("repeats " << c.repeats[0] << ", " << c.repeats[1]);
    ModelBuilder m(13);
    m.input("x", kFloat, c.in).output("y");
    m.initializer_i64("repeats", {static_cast<int64_t>(c.repeats.size())}, c.repeats);
    m.node("Tile", {"x", "repeats"}, {"y"});
    Graph g = compile(m);
    CHECK(count_op(g, OpKind::Concat) == c.concats);
    CHECK(count_op(g, OpKind::Expand) == c.expands);
    CHECK(count_op(g, OpKind::Tile) == c.tiles);
    CHECK(g.tensor(g.outputs[0]).name == "y");
  }
}

// Proves: canonicalize gives a Gemm's constant C as the library's epilogue takes it: beta
// folded into its values (beta 1 after), a scalar C a row of N, a full [M, N] C scaled; a C
// the epilogue already takes is left as it is.
TEST_CASE("canonicalize folds a Gemm's beta into its constant C", "[passes]") {
  auto gemm_model = [](std::vector<int64_t> c_shape, std::vector<float> c, double beta) {
    ModelBuilder m(13);
    m.input("a", kFloat, {2, 3}).output("y");
    m.initializer_f32("b", {3, 4}, std::vector<float>(12, 0.5f));
    m.initializer_f32("c", c_shape, c);
    test::set_attr_float(m.node("Gemm", {"a", "b", "c"}, {"y"}), "beta", static_cast<float>(beta));
    return m;
  };
  auto c_of = [](const Graph& g) -> const Tensor& {
    for (const Node& node : g.nodes)
      if (node.op == OpKind::Gemm) return g.tensor(node.inputs[2]);
    FAIL("no Gemm");
    return g.tensors.front();
  };
  auto beta_of = [](const Graph& g) {
    for (const Node& node : g.nodes)
      if (node.op == OpKind::Gemm) return NodeContext(g, node).attr_float("beta", 1.0);
    return -1.0;
  };
  {
    Graph g = compile(gemm_model({4}, {1.0f, -2.0f, 0.25f, 3.0f}, 2.0));
    CHECK(beta_of(g) == 1.0);
    CHECK(c_of(g).shape == Shape{4});
    CHECK(constant_as_double(c_of(g)) == std::vector<double>{2.0, -4.0, 0.5, 6.0});
  }
  {
    Graph g = compile(gemm_model({}, {1.5f}, 1.0)); // a scalar: the row of N
    CHECK(c_of(g).shape == Shape{4});
    CHECK(constant_as_double(c_of(g)) == std::vector<double>{1.5, 1.5, 1.5, 1.5});
  }
  {
    Graph g = compile(gemm_model({2, 4}, std::vector<float>(8, 3.0f), 0.5));
    CHECK(beta_of(g) == 1.0);
    CHECK(c_of(g).shape == Shape{2, 4});
    CHECK(constant_as_double(c_of(g)) == std::vector<double>(8, 1.5));
  }
  {
    Graph g = compile(gemm_model({1, 4}, {1.0f, 2.0f, 3.0f, 4.0f}, 1.0)); // taken as it is
    CHECK(c_of(g).name == "c");
  }
  {
    // beta 0: C is not read, an inf in it included; nothing is folded.
    const float inf = std::numeric_limits<float>::infinity();
    Graph g = compile(gemm_model({4}, {inf, 1.0f, 2.0f, 3.0f}, 0.0));
    CHECK(beta_of(g) == 0.0);
    CHECK(c_of(g).name == "c");
  }
}

// A Linear layer over rows, exported as rows and back (GPT-2's Conv1D): x [2, 3, 8] flattened
// to [6, 8], the product, its result unflattened to [2, 3, 16], then `after` (op, the shape of
// its constant operand, Gelu's approximate or "") node by node.
struct AfterView {
  std::string op;
  std::vector<int64_t> bias; // the constant operand's shape; empty for none
  std::string approximate;
};
ModelBuilder rows_and_back_model(const std::vector<AfterView>& after, bool batch_symbolic = false,
                                 std::vector<int64_t> unflattened = {2, 3, 16}) {
  ModelBuilder m(20);
  if (batch_symbolic)
    m.input("x", kFloat, {-1, 3, 8}, {"batch"});
  else
    m.input("x", kFloat, {2, 3, 8});
  m.output("y");
  m.initializer_i64("rows", {2}, {-1, 8});
  m.initializer_i64("back", {static_cast<int64_t>(unflattened.size())}, unflattened);
  m.initializer_f32("w", {8, 16}, std::vector<float>(128, 0.25f));
  m.node("Reshape", {"x", "rows"}, {"xr"}, "flatten");
  m.node("MatMul", {"xr", "w"}, {"p"}, "product");
  m.node("Reshape", {"p", "back"}, {"v0"}, "unflatten");
  std::string last = "v0";
  for (size_t i = 0; i < after.size(); ++i) {
    const std::string out = i + 1 == after.size() ? "y" : "v" + std::to_string(i + 1);
    const std::string name = "after" + std::to_string(i);
    if (!after[i].bias.empty()) {
      m.initializer_f32(
          "bias" + std::to_string(i), after[i].bias,
          std::vector<float>(static_cast<size_t>(shape_elements(after[i].bias)), 0.5f));
      m.node(after[i].op, {last, "bias" + std::to_string(i)}, {out}, name);
    } else {
      onnx::NodeProto& node = m.node(after[i].op, {last}, {out}, name);
      if (!after[i].approximate.empty())
        test::set_attr_string(node, "approximate", after[i].approximate);
    }
    last = out;
  }
  return m;
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& node : g.nodes)
    if (node.name == name) return node;
  FAIL("no node " << name);
  return g.nodes.front();
}

// Proves: an activation (Relu, tanh Gelu) or bias Add after a product's unflattening View
// moves before it, so that the library call's epilogue can take it, node by node along a
// chain; the moved node's result keeps its name as the View's result; an erf Gelu, a View
// read twice, a bias row along an axis the View splits and a product read elsewhere stay.
TEST_CASE("views-after-epilogues moves a product's activation before its View", "[passes]") {
  {
    Graph g = compile(rows_and_back_model({{"Gelu", {}, "tanh"}}));
    const Node& gelu = node_named(g, "after0");
    const Node& product = node_named(g, "product");
    CHECK(gelu.inputs[0] == product.outputs[0]);
    CHECK(g.tensor(gelu.outputs[0]).shape == Shape{6, 16});
    const Node& view = node_named(g, "unflatten");
    CHECK(view.op == OpKind::View);
    CHECK(view.inputs[0] == gelu.outputs[0]);
    CHECK(g.tensor(view.outputs[0]).name == "y");
    CHECK(g.tensor(view.outputs[0]).view_of == gelu.outputs[0]);
    CHECK(g.tensor(view.outputs[0]).shape == Shape{2, 3, 16});
    // The order stays topological: the Gelu before the View now.
    size_t at_gelu = 0, at_view = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].name == "after0") at_gelu = i;
      if (g.nodes[i].name == "unflatten") at_view = i;
    }
    CHECK(at_gelu < at_view);
    // The plan: the Gelu is the product's epilogue, one call and a view.
    FusionPlan plan = plan_fusion(g, PlannerOptions{});
    int kernels = 0;
    for (const FusionGroup& group : plan.groups) {
      if (group.kind == GroupKind::Alias) continue;
      ++kernels;
      CHECK(group.kind == GroupKind::GemmLibrary);
      CHECK(group.nodes.size() == 2);
    }
    CHECK(kernels == 1);
  }
  {
    // A bias row, then Relu: both move, the Add first.
    Graph g = compile(rows_and_back_model({{"Add", {16}, ""}, {"Relu", {}, ""}}));
    const Node& add = node_named(g, "after0");
    const Node& relu = node_named(g, "after1");
    CHECK(add.inputs[0] == node_named(g, "product").outputs[0]);
    CHECK(relu.inputs[0] == add.outputs[0]);
    CHECK(node_named(g, "unflatten").inputs[0] == relu.outputs[0]);
    CHECK(g.tensor(node_named(g, "unflatten").outputs[0]).name == "y");
    // One call: the product with the bias and Relu as its epilogue.
    FusionPlan plan = plan_fusion(g, PlannerOptions{});
    std::vector<size_t> kernels;
    for (const FusionGroup& group : plan.groups)
      if (group.kind != GroupKind::Alias) kernels.push_back(group.nodes.size());
    CHECK(kernels == std::vector<size_t>{3});
  }
  {
    // A row [1, N] moves too (no wider than the product [6, 16]).
    Graph g = compile(rows_and_back_model({{"Add", {1, 16}, ""}}));
    CHECK(node_named(g, "after0").inputs[0] == node_named(g, "product").outputs[0]);
    CHECK(g.tensor(node_named(g, "after0").outputs[0]).shape == Shape{6, 16});
  }
  {
    // Over a symbolic batch: the moved Gelu's result has the product's dims.
    LoadOptions options;
    options.dims = {{"batch", 1, 16, 4}};
    Graph g =
        load_onnx(rows_and_back_model({{"Gelu", {}, "tanh"}}, true, {-1, 3, 16}).write(), options);
    run_pipeline(g, {});
    const Node& gelu = node_named(g, "after0");
    CHECK(gelu.inputs[0] == node_named(g, "product").outputs[0]);
    CHECK(sym_shape_to_string(g.tensor(gelu.outputs[0]).sym_shape()) ==
          sym_shape_to_string(g.tensor(node_named(g, "product").outputs[0]).sym_shape()));
    CHECK(sym_shape_to_string(g.tensor(node_named(g, "unflatten").outputs[0]).sym_shape()) ==
          "[batch,3,16]");
  }
  auto stays = [](const Graph& g) {
    const Node& view = node_named(g, "unflatten");
    CHECK(view.inputs[0] == node_named(g, "product").outputs[0]);
    CHECK(node_named(g, "after0").inputs[0] == view.outputs[0]);
  };
  // The erf Gelu is no epilogue.
  stays(compile(rows_and_back_model({{"Gelu", {}, "none"}})));
  // A bias row of 4 along an axis the View splits from the product's 16 columns.
  stays(compile(rows_and_back_model({{"Add", {4}, ""}}, false, {2, 3, 4, 4})));
  // A row [1, 1, N]: added to the product [6, 16] it would widen the result to [1, 6, 16].
  stays(compile(rows_and_back_model({{"Add", {1, 1, 16}, ""}})));
  for (const char* read : {"v0", "p"}) {
    // The View's result, or the product, read besides: as a graph output, or by another node.
    ModelBuilder as_output = rows_and_back_model({{"Relu", {}, ""}});
    as_output.output(read);
    stays(compile(as_output));
    ModelBuilder by_node = rows_and_back_model({{"Relu", {}, ""}});
    by_node.node("Neg", {read}, {"elsewhere"}, "elsewhere");
    by_node.output("elsewhere");
    stays(compile(by_node));
  }
  {
    // A product viewed as a scalar, plus a constant: left as it is (no row to take).
    ModelBuilder m(20);
    m.input("x", kFloat, {1, 8}).output("y");
    m.initializer_f32("w", {8, 1}, std::vector<float>(8, 0.25f));
    m.initializer_i64("scalar", {0}, {});
    m.initializer_f32("two", {}, {2.0f});
    m.node("MatMul", {"x", "w"}, {"p"}, "product");
    m.node("Reshape", {"p", "scalar"}, {"v0"}, "unflatten");
    m.node("Add", {"v0", "two"}, {"y"}, "after0");
    stays(compile(m));
  }
  {
    // Disabled, nothing moves.
    PipelineOptions opts;
    opts.disabled.insert("views-after-epilogues");
    stays(compile(rows_and_back_model({{"Gelu", {}, "tanh"}}), opts));
  }
}

// Proves: a Conv of one image whose pixels and kernel are 1 x 1 (a squeeze-and-excitation
// block's, after its pool) becomes rows, a Gemm with W as [C', C] transposed and the bias, and
// the pixels back, one matrix per W; two images, a wider image, a group convolution and a
// padded one stay convolutions.
TEST_CASE("canonicalize makes a 1 x 1 convolution of 1 x 1 pixels a Gemm", "[passes]") {
  auto conv_model = [](std::vector<int64_t> x_shape, int64_t group, bool padded) {
    ModelBuilder m(13);
    m.input("x", kFloat, x_shape).output("y");
    const int64_t c = x_shape[1];
    m.initializer_f32("w", {6, c / group, 1, 1},
                      std::vector<float>(static_cast<size_t>(6 * c / group), 0.25f));
    m.initializer_f32("b", {6}, std::vector<float>(6, 0.5f));
    onnx::NodeProto& conv = m.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
    if (group != 1) test::set_attr_int(conv, "group", group);
    if (padded) test::set_attr_ints(conv, "pads", {1, 1, 1, 1});
    return m;
  };
  {
    Graph g = compile(conv_model({1, 4, 1, 1}, 1, false));
    CHECK(count_op(g, OpKind::Conv) == 0);
    REQUIRE(count_op(g, OpKind::Gemm) == 1);
    for (const Node& node : g.nodes)
      if (node.op == OpKind::Gemm) {
        CHECK(node.name == "conv");
        CHECK(NodeContext(g, node).attr_int("transB", 0) == 1);
        CHECK(g.tensor(node.inputs[0]).shape == Shape{1, 4});
        CHECK(g.tensor(node.inputs[1]).shape == Shape{6, 4});
        CHECK(g.tensor(node.inputs[1]).is_constant());
        CHECK(g.tensor(node.inputs[2]).shape == Shape{6});
        CHECK(g.tensor(node.outputs[0]).shape == Shape{1, 6});
      }
    CHECK(count_op(g, OpKind::View) == 2); // the rows and the pixels
    for (TensorId out : g.outputs)
      CHECK(g.tensor(out).shape == Shape{1, 6, 1, 1});
  }
  {
    // Two convolutions of one W: one matrix, the weights stored once.
    ModelBuilder m = conv_model({1, 4, 1, 1}, 1, false);
    m.node("Conv", {"y", "w2"}, {"z"}, "again");
    m.initializer_f32("w2", {6, 6, 1, 1}, std::vector<float>(36, 0.5f));
    m.node("Conv", {"x", "w"}, {"y2"}, "shared");
    m.output("z").output("y2");
    Graph g = compile(m);
    CHECK(count_op(g, OpKind::Conv) == 0);
    std::set<TensorId> matrices;
    for (const Node& node : g.nodes)
      if (node.op == OpKind::Gemm) matrices.insert(node.inputs[1]);
    CHECK(matrices.size() == 2); // w's, read by two Gemms, and w2's
  }
  CHECK(count_op(compile(conv_model({2, 4, 1, 1}, 1, false)), OpKind::Conv) == 1); // N = 2
  CHECK(count_op(compile(conv_model({1, 4, 2, 1}, 1, false)), OpKind::Conv) == 1);
  CHECK(count_op(compile(conv_model({1, 4, 1, 1}, 2, false)), OpKind::Conv) == 1);
  CHECK(count_op(compile(conv_model({1, 4, 1, 1}, 1, true)), OpKind::Conv) == 1);
}
