// lower-composites and canonicalize: each composite becomes primitives (names kept, numerics
// two-pass and max-subtracted), and a composite op and the chain an exporter expands it into
// end up as structurally identical graphs after the pipeline.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/plan_common.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

Graph compile(const ModelBuilder& m) {
  Graph g = load_onnx(m.write());
  run_pipeline(g, {});
  return g;
}

std::vector<OpKind> ops(const Graph& g) {
  std::vector<OpKind> r;
  for (const Node& n : g.nodes)
    r.push_back(n.op);
  return r;
}

// The graph with every name left out: per node its op, where each operand comes from (a node's
// output, a graph input, or a constant's type, shape and values), the reduced axes of a
// reduction, and Gelu's approximation.
std::vector<std::string> structure(const Graph& g) {
  std::vector<std::string> lines;
  const auto producers = g.producers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    std::string line(op_name(node.op));
    const bool reduction = op_category(node.op) == OpCategory::Reduction &&
                           node.op != OpKind::ArgMax && node.op != OpKind::ArgMin;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      TensorId t = node.inputs[k];
      if (reduction && k == 1) continue; // axes: compared as the reduced axes below
      if (t == kNoTensor) {
        line += " -";
        continue;
      }
      const Tensor& x = g.tensor(t);
      int32_t p = producers[t];
      if (p >= 0) {
        line += fmt::format(" n{}.{}", p,
                            std::find(g.nodes[p].outputs.begin(), g.nodes[p].outputs.end(), t) -
                                g.nodes[p].outputs.begin());
      } else if (auto in = std::find(g.inputs.begin(), g.inputs.end(), t); in != g.inputs.end()) {
        line += fmt::format(" in{}", in - g.inputs.begin());
      } else {
        line += fmt::format(" {}{}{{{:.6g}}}", dtype_name(x.dtype), shape_to_string(x.shape),
                            fmt::join(constant_as_double(x), ","));
      }
    }
    if (reduction) {
      ReduceParams r = read_reduce_params(NodeContext(g, node));
      line += fmt::format(" reduce[{}] keepdims={}", fmt::join(r.reduced, ","), r.keepdims);
    }
    if (node.op == OpKind::Gelu)
      line += " " + NodeContext(g, node).attr_string("approximate", "none");
    lines.push_back(line);
  }
  return lines;
}

ModelBuilder with_scale_bias(int opset) {
  ModelBuilder m(opset);
  m.input("x", kFloat, {2, 5, 16}).output("y");
  std::vector<float> w(16), b(16);
  for (int i = 0; i < 16; ++i) {
    w[i] = 0.5f + 0.1f * i;
    b[i] = -0.25f + 0.05f * i;
  }
  m.initializer_f32("w", {16}, w).initializer_f32("b", {16}, b);
  return m;
}

// torch's LayerNorm as it exports it below opset 17.
ModelBuilder torch_layer_norm() {
  ModelBuilder m = with_scale_bias(17);
  m.initializer_f32("two", {}, {2.0f}).initializer_f32("eps", {}, {1e-5f});
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"sq"});
  test::set_attr_ints(m.node("ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"std"});
  m.node("Div", {"d", "std"}, {"n"});
  m.node("Mul", {"n", "w"}, {"nw"});
  m.node("Add", {"nw", "b"}, {"y"});
  return m;
}

} // namespace

TEST_CASE("LayerNormalization and torch's expanded LayerNorm are the same graph",
          "[passes][lower]") {
  // Proves: the lowered op and the exporter's chain (Pow 2 respelled x*x) meet in one form.
  ModelBuilder op = with_scale_bias(17);
  test::set_attr_float(op.node("LayerNormalization", {"x", "w", "b"}, {"y"}, "ln"), "epsilon",
                       1e-5f);
  Graph lowered = compile(op), expanded = compile(torch_layer_norm());
  CHECK(ops(lowered) == std::vector<OpKind>{OpKind::ReduceMean, OpKind::Sub, OpKind::Mul,
                                            OpKind::ReduceMean, OpKind::Add, OpKind::Sqrt,
                                            OpKind::Div, OpKind::Mul, OpKind::Add});
  CHECK(structure(lowered) == structure(expanded));
}

TEST_CASE("the lowered LayerNorm is planned as one Regional kernel", "[passes][lower][planner]") {
  // Proves: the planner stitches the lowered chain, both reductions and the pointwise steps.
  ModelBuilder op = with_scale_bias(17);
  op.node("LayerNormalization", {"x", "w", "b"}, {"y"}, "ln");
  Graph g = compile(op);
  PlannerOptions options;
  options.planner = "ilp";
  FusionPlan plan = plan_fusion(g, options);
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].scheme == StitchScheme::Regional);
}

TEST_CASE("Softmax and its expanded chain are the same graph", "[passes][lower]") {
  // Proves: softmax lowers max-subtracted (ReduceMax, Sub, Exp, ReduceSum, Div), as the
  // spec's expansion writes it.
  ModelBuilder op(17);
  op.input("x", kFloat, {2, 3, 8}).output("y");
  test::set_attr_int(op.node("Softmax", {"x"}, {"y"}, "sm"), "axis", -1);
  ModelBuilder chain(17);
  chain.input("x", kFloat, {2, 3, 8}).output("y").initializer_i64("axes", {1}, {-1});
  test::set_attr_ints(chain.node("ReduceMax", {"x"}, {"max"}), "axes", {2});
  chain.node("Sub", {"x", "max"}, {"shifted"});
  chain.node("Exp", {"shifted"}, {"e"});
  chain.node("ReduceSum", {"e", "axes"}, {"sum"});
  chain.node("Div", {"e", "sum"}, {"y"});
  Graph lowered = compile(op);
  CHECK(ops(lowered) == std::vector<OpKind>{OpKind::ReduceMax, OpKind::Sub, OpKind::Exp,
                                            OpKind::ReduceSum, OpKind::Div});
  CHECK(structure(lowered) == structure(compile(chain)));
  // The composite's output keeps its tensor name; the new nodes are named after it.
  CHECK(lowered.tensor(lowered.outputs[0]).name == "y");
  CHECK(lowered.nodes[0].name == "sm/ReduceMax");
}

TEST_CASE("Softmax before opset 13 normalizes the trailing axes from axis", "[passes][lower]") {
  // Proves: the coerce-to-2-D semantics: rows are all axes from `axis` on.
  ModelBuilder op(11);
  op.input("x", kFloat, {2, 3, 4}).output("y");
  op.node("LogSoftmax", {"x"}, {"y"});
  Graph g = compile(op);
  REQUIRE(g.nodes[0].op == OpKind::ReduceMax);
  CHECK(read_reduce_params(NodeContext(g, g.nodes[0])).reduced ==
        std::vector<bool>{false, true, true});
  CHECK(g.nodes.back().op == OpKind::Sub);
}

TEST_CASE("LayerNormalization's Mean and InvStdDev outputs keep their names", "[passes][lower]") {
  // Proves: the optional statistics outputs are the ReduceMean's and a Reciprocal's results.
  ModelBuilder op = with_scale_bias(17);
  op.output("mean").output("inv");
  op.node("LayerNormalization", {"x", "w", "b"}, {"y", "mean", "inv"}, "ln");
  Graph g = compile(op);
  const auto producers = g.producers();
  for (TensorId out : g.outputs) {
    const std::string& name = g.tensor(out).name;
    REQUIRE(producers[out] >= 0);
    OpKind op_kind = g.nodes[producers[out]].op;
    if (name == "mean") CHECK(op_kind == OpKind::ReduceMean);
    if (name == "inv") CHECK(op_kind == OpKind::Reciprocal);
    if (name == "y") CHECK(op_kind == OpKind::Add);
  }
  CHECK(g.nodes[0].name == "ln/ReduceMean");
}

TEST_CASE("RMSNormalization and the expanded rsqrt chain are the same graph", "[passes][lower]") {
  // Proves: x * Reciprocal(Sqrt(v)) is respelled x / Sqrt(v), the form the lowering writes.
  ModelBuilder op = with_scale_bias(23);
  op.node("RMSNormalization", {"x", "w"}, {"y"}, "rms");
  ModelBuilder chain = with_scale_bias(23);
  chain.initializer_f32("two", {}, {2.0f})
      .initializer_f32("eps", {}, {1e-5f})
      .initializer_i64("axes", {1}, {-1});
  chain.node("Pow", {"x", "two"}, {"sq"});
  chain.node("ReduceMean", {"sq", "axes"}, {"ms"});
  chain.node("Add", {"ms", "eps"}, {"mse"});
  chain.node("Sqrt", {"mse"}, {"rms"});
  chain.node("Reciprocal", {"rms"}, {"inv"});
  chain.node("Mul", {"x", "inv"}, {"n"});
  chain.node("Mul", {"n", "w"}, {"y"});
  CHECK(structure(compile(op)) == structure(compile(chain)));
}

TEST_CASE("erf GELU chains become Gelu", "[passes][lower]") {
  // Proves: torch's x/1.41421 form and the x*0.5-first, x*0.70711 form both become the
  // Gelu op, the same graph as Gelu(approximate="none").
  ModelBuilder op(20);
  op.input("x", kFloat, {4, 8}).output("y");
  op.node("Gelu", {"x"}, {"y"});
  ModelBuilder torch(20);
  torch.input("x", kFloat, {4, 8}).output("y");
  torch.initializer_f32("sqrt2", {}, {1.4142135f})
      .initializer_f32("one", {}, {1.0f})
      .initializer_f32("half", {}, {0.5f});
  torch.node("Div", {"x", "sqrt2"}, {"u"});
  torch.node("Erf", {"u"}, {"e"});
  torch.node("Add", {"e", "one"}, {"p"});
  torch.node("Mul", {"x", "p"}, {"xp"});
  torch.node("Mul", {"xp", "half"}, {"y"});
  ModelBuilder hf(20);
  hf.input("x", kFloat, {4, 8}).output("y");
  hf.initializer_f32("r", {}, {0.70710677f})
      .initializer_f32("one", {}, {1.0f})
      .initializer_f32("half", {}, {0.5f});
  hf.node("Mul", {"x", "half"}, {"h"});
  hf.node("Mul", {"x", "r"}, {"u"});
  hf.node("Erf", {"u"}, {"e"});
  hf.node("Add", {"one", "e"}, {"p"});
  hf.node("Mul", {"h", "p"}, {"y"});
  const auto want = structure(compile(op));
  CHECK(want == std::vector<std::string>{"Gelu in0 none"});
  CHECK(structure(compile(torch)) == want);
  CHECK(structure(compile(hf)) == want);
}

TEST_CASE("tanh GELU chains become Gelu with approximate=tanh", "[passes][lower]") {
  // Proves: GPT-2's gelu_new (Pow 3) and the spec's expansion (Sum, x*x*x) become the tanh
  // Gelu, the op cuBLASLt applies as a GEMM epilogue.
  ModelBuilder op(20);
  op.input("x", kFloat, {4, 8}).output("y");
  test::set_attr_string(op.node("Gelu", {"x"}, {"y"}), "approximate", "tanh");
  ModelBuilder gpt2(20);
  gpt2.input("x", kFloat, {4, 8}).output("y");
  gpt2.initializer_f32("half", {}, {0.5f})
      .initializer_f32("three", {}, {3.0f})
      .initializer_f32("c", {}, {0.044715f});
  gpt2.initializer_f32("k", {}, {0.7978845608f}).initializer_f32("one", {}, {1.0f});
  gpt2.node("Mul", {"x", "half"}, {"h"});
  gpt2.node("Pow", {"x", "three"}, {"cube"});
  gpt2.node("Mul", {"cube", "c"}, {"cc"});
  gpt2.node("Add", {"x", "cc"}, {"s"});
  gpt2.node("Mul", {"s", "k"}, {"w"});
  gpt2.node("Tanh", {"w"}, {"t"});
  gpt2.node("Add", {"t", "one"}, {"p"});
  gpt2.node("Mul", {"h", "p"}, {"y"});
  ModelBuilder spec(20);
  spec.input("x", kFloat, {4, 8}).output("y");
  spec.initializer_f32("half", {}, {0.5f}).initializer_f32("c", {}, {0.044715f});
  spec.initializer_f32("k", {}, {0.7978845608f}).initializer_f32("one", {}, {1.0f});
  spec.node("Mul", {"x", "x"}, {"sq"});
  spec.node("Mul", {"sq", "x"}, {"cube"});
  spec.node("Mul", {"c", "cube"}, {"cc"});
  spec.node("Sum", {"x", "cc"}, {"s"});
  spec.node("Mul", {"k", "s"}, {"w"});
  spec.node("Tanh", {"w"}, {"t"});
  spec.node("Sum", {"one", "t"}, {"p"});
  spec.node("Mul", {"half", "x"}, {"h"});
  spec.node("Mul", {"h", "p"}, {"y"});
  const auto want = structure(compile(op));
  CHECK(want == std::vector<std::string>{"Gelu in0 tanh"});
  CHECK(structure(compile(gpt2)) == want);
  CHECK(structure(compile(spec)) == want);
}

TEST_CASE("a GELU-like chain whose intermediate is read elsewhere stays", "[passes][lower]") {
  // Proves: values read outside the chain are not folded into a Gelu.
  ModelBuilder m(20);
  m.input("x", kFloat, {4, 8}).output("y").output("e");
  m.initializer_f32("sqrt2", {}, {1.4142135f})
      .initializer_f32("one", {}, {1.0f})
      .initializer_f32("half", {}, {0.5f});
  m.node("Div", {"x", "sqrt2"}, {"u"});
  m.node("Erf", {"u"}, {"e"});
  m.node("Add", {"e", "one"}, {"p"});
  m.node("Mul", {"x", "p"}, {"xp"});
  m.node("Mul", {"xp", "half"}, {"y"});
  const std::vector<OpKind> kinds = ops(compile(m));
  CHECK(std::count(kinds.begin(), kinds.end(), OpKind::Gelu) == 0);
  CHECK(kinds.size() == 5);
}

TEST_CASE("BatchNormalization with constant statistics is one Mul and one Add", "[passes][lower]") {
  // Proves: scale / sqrt(var + eps) and B - mean * scale / sqrt(var + eps) are folded per
  // channel and broadcast as [C, 1, 1].
  ModelBuilder m(15);
  m.input("x", kFloat, {1, 2, 3, 3}).output("y");
  m.initializer_f32("s", {2}, {2.0f, 0.5f}).initializer_f32("b", {2}, {1.0f, -1.0f});
  m.initializer_f32("mean", {2}, {0.5f, 2.0f}).initializer_f32("var", {2}, {4.0f, 0.25f});
  test::set_attr_float(m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}, "bn"),
                       "epsilon", 0.0f);
  Graph g = compile(m);
  REQUIRE(ops(g) == std::vector<OpKind>{OpKind::Mul, OpKind::Add});
  const Tensor& factor = g.tensor(g.nodes[0].inputs[1]);
  const Tensor& shift = g.tensor(g.nodes[1].inputs[1]);
  CHECK(factor.shape == Shape{2, 1, 1});
  CHECK(constant_as_double(factor) == std::vector<double>{1.0, 1.0}); // 2/2, 0.5/0.5
  CHECK(constant_as_double(shift) == std::vector<double>{0.5, -3.0}); // 1 - 0.5, -1 - 2
}

TEST_CASE("InstanceNormalization and GroupNormalization lower to two-pass statistics",
          "[passes][lower]") {
  // Proves: the variance is the mean of squared deviations (never E[x^2] - E[x]^2), over the
  // spatial axes for instances and over [N, G, C/G * D] for groups.
  ModelBuilder in(17);
  in.input("x", kFloat, {2, 4, 3, 3}).output("y");
  in.initializer_f32("s", {4}, {1, 2, 3, 4}).initializer_f32("b", {4}, {0, 1, 0, 1});
  in.node("InstanceNormalization", {"x", "s", "b"}, {"y"});
  Graph g = compile(in);
  CHECK(ops(g) == std::vector<OpKind>{OpKind::ReduceMean, OpKind::Sub, OpKind::Mul,
                                      OpKind::ReduceMean, OpKind::Add, OpKind::Sqrt, OpKind::Div,
                                      OpKind::Mul, OpKind::Add});
  CHECK(read_reduce_params(NodeContext(g, g.nodes[0])).reduced ==
        std::vector<bool>{false, false, true, true});
  CHECK(g.tensor(g.nodes[7].inputs[1]).shape == Shape{4, 1, 1});

  for (int opset : {18, 21}) {
    ModelBuilder gn(opset);
    gn.input("x", kFloat, {2, 4, 3, 3}).output("y");
    int64_t params = opset == 18 ? 2 : 4;
    gn.initializer_f32("s", {params}, std::vector<float>(params, 1.5f));
    gn.initializer_f32("b", {params}, std::vector<float>(params, 0.5f));
    test::set_attr_int(gn.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 2);
    Graph h = compile(gn);
    int reductions = 0;
    for (const Node& n : h.nodes) {
      CHECK(n.op != OpKind::GroupNormalization);
      if (n.op != OpKind::ReduceMean) continue;
      ++reductions;
      CHECK(h.tensor(n.inputs[0]).shape == Shape{2, 2, 18});
    }
    CHECK(reductions == 2);
  }
}

// A chain of Transposes is one Transpose of the composed permutation (a head split followed by
// a key transpose becomes the one layout a GEMM reads in place); a chain that undoes itself
// disappears, and the first Transpose stays for its other reader.
TEST_CASE("canonicalize composes chained Transposes", "[passes][canonicalize]") {
  ModelBuilder m(17);
  m.input("k", kFloat, {2, 16, 4, 8}).output("kt").output("back").output("heads_out");
  test::set_attr_ints(m.node("Transpose", {"k"}, {"heads"}), "perm", {0, 2, 1, 3});
  test::set_attr_ints(m.node("Transpose", {"heads"}, {"kt"}), "perm", {0, 1, 3, 2});
  test::set_attr_ints(m.node("Transpose", {"heads"}, {"back"}), "perm", {0, 2, 1, 3});
  m.node("Relu", {"heads"}, {"heads_out"});
  Graph g = compile(m);
  std::vector<std::vector<int64_t>> perms;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::Transpose) perms.push_back(read_perm(NodeContext(g, n)));
  // heads [0,2,1,3] for the Relu; kt = k's axes [0,2,3,1]; back is k itself (an identity).
  CHECK(perms == std::vector<std::vector<int64_t>>{{0, 2, 1, 3}, {0, 2, 3, 1}});
  CHECK(g.tensor(g.outputs[1]).shape == Shape{2, 16, 4, 8});
  CHECK(g.tensor(g.outputs[0]).shape == Shape{2, 4, 8, 16});
}

TEST_CASE("RotaryEmbedding lowers to remappings and arithmetic the ILP runs as one kernel",
          "[passes][lower]") {
  // Proves: a RotaryEmbedding (4-D, caches per batch and position, half and interleaved forms,
  // a partial rotary dimension) becomes Slices, Mul, Sub, Add, Concat and the head Transposes,
  // which the ILP plans as one generated kernel; the output keeps its name. (The interleaved
  // form pairs real and imaginary parts through reshapes, views that no fused group reads
  // through yet: its chain is four kernels.)
  for (int interleaved : {0, 1}) {
    INFO("interleaved " << interleaved);
    ModelBuilder m(23);
    m.input("x", kFloat, {2, 4, 6, 8})
        .input("cos", kFloat, {2, 6, 3})
        .input("sin", kFloat, {2, 6, 3});
    m.output("y");
    auto& node = m.node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"});
    test::set_attr_int(node, "interleaved", interleaved);
    test::set_attr_int(node, "rotary_embedding_dim", 6);
    Graph g = compile(m);
    for (const Node& n : g.nodes)
      CHECK(n.op != OpKind::RotaryEmbedding);
    CHECK(g.tensor(g.outputs[0]).name == "y");
    CHECK(g.tensor(g.outputs[0]).shape == Shape{2, 4, 6, 8});
    PlannerOptions ilp;
    ilp.planner = "ilp";
    const FusionPlan plan = plan_fusion(g, ilp);
    int kernels = 0;
    for (const FusionGroup& group : plan.groups)
      kernels += group.kind != GroupKind::Alias;
    CHECK(kernels == (interleaved ? 4 : 1));
  }
}

TEST_CASE("Attention lowers to the scores GEMM, the masked softmax and the output GEMM",
          "[passes][lower]") {
  // Proves: a 3-D grouped-query Attention with a causal mask, past keys and values and every
  // output becomes the head split, Concats of the past, the repeated keys and values (Expand),
  // two MatMuls around a max-subtracted Softmax; present_key, present_value and the scores keep
  // their names and shapes.
  ModelBuilder m(23);
  m.input("q", kFloat, {2, 4, 6 * 8})
      .input("k", kFloat, {2, 4, 2 * 8})
      .input("v", kFloat, {2, 4, 2 * 5})
      .input("mask", onnx::TensorProto::BOOL, {4, 7})
      .input("past_k", kFloat, {2, 2, 3, 8})
      .input("past_v", kFloat, {2, 2, 3, 5});
  m.output("y").output("present_k").output("present_v").output("scores");
  auto& node = m.node("Attention", {"q", "k", "v", "mask", "past_k", "past_v"},
                      {"y", "present_k", "present_v", "scores"});
  test::set_attr_int(node, "q_num_heads", 6);
  test::set_attr_int(node, "kv_num_heads", 2);
  test::set_attr_int(node, "is_causal", 1);
  test::set_attr_int(node, "qk_matmul_output_mode", 1);
  Graph g = compile(m);
  int matmuls = 0, max = 0;
  for (const Node& n : g.nodes) {
    CHECK(n.op != OpKind::Attention);
    matmuls += n.op == OpKind::MatMul;
    max += n.op == OpKind::ReduceMax;
  }
  CHECK(matmuls == 2);
  CHECK(max == 1);
  std::map<std::string, Shape> outputs;
  for (TensorId t : g.outputs)
    outputs[g.tensor(t).name] = g.tensor(t).shape;
  CHECK(outputs.at("y") == Shape{2, 4, 6 * 5});
  CHECK(outputs.at("present_k") == Shape{2, 2, 7, 8});
  CHECK(outputs.at("present_v") == Shape{2, 2, 7, 5});
  CHECK(outputs.at("scores") == Shape{2, 6, 4, 7});
}

TEST_CASE("Attention and RotaryEmbedding refuse malformed inputs naming the node",
          "[passes][lower]") {
  // Proves: heads that do not divide, a missing num_heads, a mask that does not broadcast and
  // an odd rotary dimension are user errors of the shape rules.
  auto fails = [](const ModelBuilder& m, const std::string& words) {
    INFO(words);
    try {
      Graph g = load_onnx(m.write());
      run_pipeline(g, {});
      FAIL("no error");
    } catch (const UserError& e) {
      CHECK_THAT(e.what(), Catch::Contains(words));
    }
  };
  {
    ModelBuilder m(23);
    m.input("q", kFloat, {1, 6, 4, 8})
        .input("k", kFloat, {1, 4, 4, 8})
        .input("v", kFloat, {1, 4, 4, 8});
    m.output("y");
    m.node("Attention", {"q", "k", "v"}, {"y"});
    fails(m, "not a multiple of K's and V's 4");
  }
  {
    ModelBuilder m(23);
    m.input("q", kFloat, {1, 4, 16}).input("k", kFloat, {1, 4, 16}).input("v", kFloat, {1, 4, 16});
    m.output("y");
    m.node("Attention", {"q", "k", "v"}, {"y"});
    fails(m, "need the attributes q_num_heads and kv_num_heads");
  }
  {
    ModelBuilder m(23);
    m.input("q", kFloat, {1, 2, 4, 8})
        .input("k", kFloat, {1, 2, 4, 8})
        .input("v", kFloat, {1, 2, 4, 8});
    m.input("mask", kFloat, {3, 4});
    m.output("y");
    m.node("Attention", {"q", "k", "v", "mask"}, {"y"});
    fails(m, "does not broadcast to the scores");
  }
  {
    ModelBuilder m(23);
    m.input("x", kFloat, {1, 2, 4, 8})
        .input("cos", kFloat, {1, 4, 4})
        .input("sin", kFloat, {1, 4, 4});
    m.output("y");
    test::set_attr_int(m.node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"}),
                       "rotary_embedding_dim", 5);
    fails(m, "must be even");
  }
}

namespace {

ModelBuilder einsum_model(const std::string& equation, const std::vector<int64_t>& a,
                          const std::vector<int64_t>& b, bool b_constant, int type = kFloat) {
  ModelBuilder m(17);
  m.input("a", type, a).output("y");
  if (b_constant) {
    std::vector<float> values(static_cast<size_t>(shape_elements(b)));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>(i);
    m.initializer_f32("b", b, values);
  } else {
    m.input("b", type, b);
  }
  test::set_attr_string(m.node("Einsum", {"a", "b"}, {"y"}, "einsum"), "equation", equation);
  return m;
}

} // namespace

TEST_CASE("two-operand Einsums that are matrix products lower to MatMul", "[passes][lower]") {
  // Proves: EinsumDense's "abc,cde->abde" is one MatMul of x and the weight viewed as [c, d*e]
  // (the rows a, b stay apart, as MatMul broadcasts the matrix), the result viewed as
  // [a, b, d, e]; a weight read transposed ("abc,dc->abd") is permuted here, not by a
  // Transpose node; the Keras scores "aecd,abcd->acbe" take their rows from the second
  // operand, so that the product is already in the output's order; the output keeps its name.
  {
    Graph g = compile(einsum_model("abc,cde->abde", {2, 5, 6}, {6, 2, 3}, true));
    REQUIRE(ops(g) == std::vector<OpKind>{OpKind::MatMul, OpKind::View});
    CHECK(g.tensor(g.nodes[0].inputs[1]).shape == Shape{6, 6});
    CHECK(g.tensor(g.nodes[1].outputs[0]).name == "y");
    CHECK(g.tensor(g.nodes[1].outputs[0]).shape == Shape{2, 5, 2, 3});
  }
  {
    Graph g = compile(einsum_model("abc,dc->abd", {2, 5, 3}, {4, 3}, true));
    REQUIRE(ops(g) == std::vector<OpKind>{OpKind::MatMul});
    const Tensor& w = g.tensor(g.nodes[0].inputs[1]);
    CHECK(w.shape == Shape{3, 4});
    CHECK(constant_as_double(w) ==
          std::vector<double>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}); // [4, 3] transposed
  }
  {
    Graph g = compile(einsum_model("aecd,abcd->acbe", {2, 7, 4, 8}, {2, 5, 4, 8}, false));
    REQUIRE(!g.nodes.empty());
    CHECK(g.nodes.back().op == OpKind::MatMul);
    const std::vector<OpKind> kinds = ops(g);
    CHECK(std::count(kinds.begin(), kinds.end(), OpKind::Einsum) == 0);
    CHECK(g.tensor(g.nodes.back().outputs[0]).shape == Shape{2, 4, 5, 7});
  }
  {
    // No summed label: an outer product per batch, a broadcast Mul; no rows or columns: a
    // dot product per batch, a Mul and a ReduceSum.
    const std::vector<OpKind> outer =
        ops(compile(einsum_model("ab,ac->abc", {2, 3}, {2, 4}, false)));
    CHECK(std::count(outer.begin(), outer.end(), OpKind::Mul) == 1);
    CHECK(std::count(outer.begin(), outer.end(), OpKind::MatMul) == 0);
    const std::vector<OpKind> dot = ops(compile(einsum_model("ab,ab->a", {2, 3}, {2, 3}, false)));
    CHECK(std::count(dot.begin(), dot.end(), OpKind::ReduceSum) == 1);
  }
}

TEST_CASE("Einsums that are no matrix product stay one node", "[passes][lower]") {
  // Proves: a diagonal, a label summed in one operand only, a label broadcast between the
  // operands and integer or float64 operands keep the Einsum (the loop-nest kernel).
  for (const auto& [equation, a, b] :
       std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>>{
           {"aab,bc->ac", {3, 3, 4}, {4, 2}},
           {"abc,cd->ad", {2, 3, 4}, {4, 5}},
           {"ab,ab->ab", {2, 3}, {1, 3}}}) {
    Graph g = compile(einsum_model(equation, a, b, false));
    CHECK(ops(g) == std::vector<OpKind>{OpKind::Einsum});
  }
  Graph g = compile(einsum_model("ab,bc->ac", {2, 3}, {3, 4}, false, onnx::TensorProto::DOUBLE));
  CHECK(ops(g) == std::vector<OpKind>{OpKind::Einsum});
}
