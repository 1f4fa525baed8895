// Pass pipeline tests: folding of exporter shape chains, identity removal, views, dead
// code, pass options, and the verifier between passes.
#include <catch2/catch.hpp>

#include <sstream>

#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "graph/verify.h"
#include "model_builder.h"

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
