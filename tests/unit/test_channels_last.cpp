// The channels-last pass and the Conv groups that read and write through its Transposes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// x -> Conv -> Relu -> Mul(per-channel scale) -> Conv -> Add(the Relu) -> Relu, read by a
// GlobalAveragePool (output y) and a MaxPool (output z).
ModelBuilder residual_block(int opset) {
  ModelBuilder m(opset);
  m.input("x", kFloat, {2, 4, 6, 6}).output("y").output("z");
  std::vector<float> w1(8 * 4 * 9), w2(8 * 8 * 9), b(8), scale(8);
  for (size_t i = 0; i < w1.size(); ++i)
    w1[i] = static_cast<float>((i * 7 % 13) - 6) / 16.0f;
  for (size_t i = 0; i < w2.size(); ++i)
    w2[i] = static_cast<float>((i * 5 % 11) - 5) / 16.0f;
  for (size_t i = 0; i < 8; ++i) {
    b[i] = static_cast<float>(i) / 8.0f - 0.5f;
    scale[i] = 1.0f + static_cast<float>(i) / 4.0f;
  }
  m.initializer_f32("w1", {8, 4, 3, 3}, w1).initializer_f32("b1", {8}, b);
  m.initializer_f32("w2", {8, 8, 3, 3}, w2).initializer_f32("b2", {8}, b);
  m.initializer_f32("scale", {8, 1, 1}, scale);
  test::set_attr_ints(m.node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  m.node("Mul", {"r1", "scale"}, {"m"});
  test::set_attr_ints(m.node("Conv", {"m", "w2", "b2"}, {"c2"}), "pads", {1, 1, 1, 1});
  m.node("Add", {"c2", "r1"}, {"a"});
  m.node("Relu", {"a"}, {"r2"});
  m.node("GlobalAveragePool", {"r2"}, {"y"});
  test::set_attr_ints(m.node("MaxPool", {"r2"}, {"z"}), "kernel_shape", {2, 2});
  return m;
}

Graph compile(const ModelBuilder& m, Precision precision) {
  Graph g = load_onnx(m.write());
  PipelineOptions options;
  options.precision.precision = precision;
  run_pipeline(g, options);
  return g;
}

const Node* producer_of(const Graph& g, TensorId t) {
  for (const Node& n : g.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), t) != n.outputs.end()) return &n;
  return nullptr;
}

std::vector<const Node*> nodes_of(const Graph& g, OpKind op) {
  std::vector<const Node*> found;
  for (const Node& n : g.nodes)
    if (n.op == op) found.push_back(&n);
  return found;
}

std::vector<int64_t> perm_of(const Graph& g, const Node* n) {
  REQUIRE(n != nullptr);
  REQUIRE(n->op == OpKind::Transpose);
  return read_perm(NodeContext(g, *n));
}

} // namespace

TEST_CASE("channels-last: float16 convolutions read and write NHWC through Transposes",
          "[passes][channels-last]") {
  for (int opset : {13, 18}) {
    INFO("opset " << opset);
    const Graph g = compile(residual_block(opset), Precision::Fp16);
    const std::vector<int64_t> to_first = {0, 3, 1, 2}, to_last = {0, 2, 3, 1};
    const auto convs = nodes_of(g, OpKind::Conv);
    REQUIRE(convs.size() == 2);
    for (const Node* conv : convs) {
      CHECK(perm_of(g, producer_of(g, conv->inputs[0])) == to_first);
      const Node* w = producer_of(g, conv->inputs[1]);
      CHECK(perm_of(g, w) == to_first);
      // The filter is stored [out, kh, kw, in].
      const Tensor& stored = g.tensor(w->inputs[0]);
      CHECK(stored.is_constant());
      CHECK(stored.shape[3] == g.tensor(conv->inputs[1]).shape[1]);
      CHECK(g.tensor(conv->outputs[0]).shape == Shape{2, 8, 6, 6});
    }
    // Relu, Mul and Add compute on [N, H, W, C]; Mul's scale is stored [1, 1, 1, C].
    for (OpKind op : {OpKind::Relu, OpKind::Mul, OpKind::Add})
      for (const Node* n : nodes_of(g, op))
        CHECK(g.tensor(n->outputs[0]).shape == Shape{2, 6, 6, 8});
    const Node* mul = nodes_of(g, OpKind::Mul).at(0);
    const TensorId scale = g.tensor(mul->inputs[0]).is_constant() ? mul->inputs[0] : mul->inputs[1];
    CHECK(g.tensor(scale).shape == Shape{1, 1, 1, 8});
    const std::vector<double> values = constant_as_double(g.tensor(scale));
    CHECK(values[3] == Approx(1.75).epsilon(1e-3));
    // The pool is a ReduceMean over the stored spatial axes; its [N, 1, 1, C] result is a view.
    CHECK(nodes_of(g, OpKind::GlobalAveragePool).empty());
    REQUIRE(nodes_of(g, OpKind::ReduceMean).size() == 1);
    CHECK(read_reduce_params(NodeContext(g, *nodes_of(g, OpKind::ReduceMean)[0])).reduced ==
          std::vector<bool>{false, true, true, false});
    // MaxPool pools the NHWC tensor viewed as [N, 1, H, W, C], the channels one more spatial
    // axis of window 1; its result is viewed back as [N, H, W, C].
    const Node* pool = nodes_of(g, OpKind::MaxPool).at(0);
    CHECK(g.tensor(pool->inputs[0]).shape == Shape{2, 1, 6, 6, 8});
    CHECK(g.tensor(pool->outputs[0]).shape == Shape{2, 1, 5, 5, 8});
    CHECK(NodeContext(g, *pool).attr_ints("kernel_shape") == std::vector<int64_t>{2, 2, 1});
    CHECK(NodeContext(g, *pool).attr_ints("pads") == std::vector<int64_t>(6, 0));
    CHECK(g.tensor(pool->inputs[0]).view_of != kNoTensor);
    // The Transposes: three per Conv, X's copy to NHWC, the pooled result back to NCHW (the
    // graph output z).
    CHECK(nodes_of(g, OpKind::Transpose).size() == 8);
    int to_last_count = 0;
    for (const Node* t : nodes_of(g, OpKind::Transpose))
      to_last_count += perm_of(g, t) == to_last;
    CHECK(to_last_count == 3);
  }
}

TEST_CASE("channels-last: exact float32 keeps channels-first; tf32 takes channels-last",
          "[passes][channels-last]") {
  CHECK(nodes_of(compile(residual_block(17), Precision::Fp32), OpKind::Transpose).empty());
  CHECK(nodes_of(compile(residual_block(17), Precision::Tf32), OpKind::Transpose).size() == 8);
  PipelineOptions options;
  options.precision.precision = Precision::Fp16;
  options.disabled.insert("channels-last");
  Graph g = load_onnx(residual_block(17).write());
  run_pipeline(g, options);
  CHECK(nodes_of(g, OpKind::Transpose).empty());
}

TEST_CASE("channels-last: each Conv's group reads and writes through its three Transposes",
          "[planner][channels-last]") {
  const Graph g = compile(residual_block(17), Precision::Fp16);
  const std::string planner = GENERATE(as<std::string>{}, "ilp", "greedy");
  INFO("planner " << planner);
  PlannerOptions options;
  options.planner = planner;
  const FusionPlan plan = plan_fusion(g, options);
  int convs = 0, residuals = 0;
  for (const FusionGroup& group : plan.groups) {
    const auto* spec = std::get_if<ConvSpec>(&group.spec);
    if (spec == nullptr) continue;
    ++convs;
    CHECK(spec->channels_last);
    CHECK(spec->layout_x >= 0);
    CHECK(spec->layout_w >= 0);
    CHECK(spec->layout_result >= 0);
    CHECK(g.tensor(spec->x).shape == Shape{2, 6, 6, 8}); // the first's 4 channels padded to 8
    CHECK(g.tensor(spec->result).shape == Shape{2, 6, 6, 8});
    residuals += spec->residual != kNoTensor;
  }
  CHECK(convs == 2);
  CHECK(residuals == 1); // the second Conv takes the Add of the first Relu and the last Relu
}

TEST_CASE("channels-last: a ConvTranspose reads and writes NHWC in its library group",
          "[planner][channels-last]") {
  // A Conv before it keeps the activation between them channels-last (alone, a ConvTranspose
  // this small is cheaper channels-first by the cost model: its transforms cost less than
  // transposing the graph's input and output).
  ModelBuilder m(17);
  m.input("x0", kFloat, {1, 6, 5, 5}).output("y");
  std::vector<float> w(6 * 2 * 3 * 3), b(4), w0(6 * 6), b0(6);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((i * 3 % 7) - 3) / 8.0f;
  for (size_t i = 0; i < w0.size(); ++i)
    w0[i] = static_cast<float>((i * 5 % 9) - 4) / 8.0f;
  m.initializer_f32("w", {6, 2, 3, 3}, w).initializer_f32("b", {4}, b);
  m.initializer_f32("w0", {6, 6, 1, 1}, w0).initializer_f32("b0", {6}, b0);
  m.node("Conv", {"x0", "w0", "b0"}, {"x"});
  auto& up = m.node("ConvTranspose", {"x", "w", "b"}, {"u"});
  test::set_attr_ints(up, "strides", {2, 2});
  test::set_attr_int(up, "group", 2);
  m.node("Relu", {"u"}, {"y"});
  const Graph g = compile(m, Precision::Bf16);
  const Node* conv = nodes_of(g, OpKind::ConvTranspose).at(0);
  const Node* w_first = producer_of(g, conv->inputs[1]);
  CHECK(perm_of(g, w_first) == std::vector<int64_t>{0, 3, 1, 2});
  CHECK(g.tensor(w_first->inputs[0]).shape == Shape{6, 3, 3, 2}); // [in, kh, kw, out / groups]
  CHECK(g.tensor(nodes_of(g, OpKind::Relu).at(0)->outputs[0]).shape == Shape{1, 11, 11, 4});
  PlannerOptions options;
  options.planner = "ilp";
  const FusionPlan plan = plan_fusion(g, options);
  int found = 0;
  for (const FusionGroup& group : plan.groups)
    if (const auto* spec = std::get_if<ConvSpec>(&group.spec); spec && spec->transpose) {
      ++found;
      CHECK(spec->channels_last);
    }
  CHECK(found == 1);
}

TEST_CASE("channels-last: a reduction over all axes with an omitted axes input moves too",
          "[passes][channels-last]") {
  ModelBuilder m(18);
  m.input("x", kFloat, {1, 3, 5, 4}).output("y");
  std::vector<float> w(2 * 3 * 9, 0.25f);
  m.initializer_f32("w", {2, 3, 3, 3}, w);
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("ReduceMean", {"c", ""}, {"y"});
  const Graph g = compile(m, Precision::Fp16);
  const Node* mean = nodes_of(g, OpKind::ReduceMean).at(0);
  CHECK(g.tensor(mean->inputs[0]).shape == Shape{1, 3, 2, 2}); // the stored NHWC result
  CHECK(g.tensor(mean->outputs[0]).shape == Shape{1, 1, 1, 1});
}

TEST_CASE("channels-last: a Conv with unaligned input channels reads them padded with zeros",
          "[passes][channels-last]") {
  // An RGB stem (3 channels) and a grouped Conv after it: the stem's X is padded to 8 float16
  // channels (4 float32 ones under tf32) through a Pad of the channels-last copy, its filter
  // gets zero filters; the grouped Conv keeps its channels.
  for (Precision precision : {Precision::Fp16, Precision::Tf32}) {
    const int64_t lanes = precision == Precision::Fp16 ? 8 : 4;
    for (int opset : {9, 18}) {
      INFO("opset " << opset << " lanes " << lanes);
      ModelBuilder m(opset);
      m.input("x", kFloat, {1, 3, 6, 6}).output("y");
      std::vector<float> w(4 * 3 * 9), wg(4 * 2 * 9);
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = static_cast<float>((i * 7 % 13) + 1) / 16.0f;
      for (size_t i = 0; i < wg.size(); ++i)
        wg[i] = static_cast<float>((i * 5 % 11) - 5) / 16.0f;
      m.initializer_f32("w", {4, 3, 3, 3}, w).initializer_f32("wg", {4, 2, 3, 3}, wg);
      test::set_attr_ints(m.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
      auto& grouped = m.node("Conv", {"c", "wg"}, {"y"});
      test::set_attr_int(grouped, "group", 2);
      const Graph g = compile(m, precision);
      const auto pads = nodes_of(g, OpKind::Pad);
      REQUIRE(pads.size() == 1);
      CHECK(g.tensor(pads[0]->inputs[0]).shape == Shape{1, 6, 6, 3});
      CHECK(g.tensor(pads[0]->outputs[0]).shape == Shape{1, 6, 6, lanes});
      const Node* stem = nullptr;
      for (const Node* conv : nodes_of(g, OpKind::Conv))
        if (NodeContext(g, *conv).attr_int("group", 1) == 1) stem = conv;
      REQUIRE(stem != nullptr);
      CHECK(g.tensor(stem->inputs[0]).shape == Shape{1, lanes, 6, 6});
      CHECK(producer_of(g, producer_of(g, stem->inputs[0])->inputs[0]) == pads[0]);
      // The filter [4, 3, 3, lanes] stored channels-last: channel c of filter k is the model's
      // where c < 3, else 0.
      const Tensor& filter = g.tensor(producer_of(g, stem->inputs[1])->inputs[0]);
      REQUIRE(filter.shape == Shape{4, 3, 3, lanes});
      const std::vector<double> values = constant_as_double(filter);
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t tap = 0; tap < 9; ++tap)
          for (int64_t c = 0; c < lanes; ++c) {
            const double want = c < 3 ? w[static_cast<size_t>((k * 3 + c) * 9 + tap)] : 0.0;
            CHECK(values[static_cast<size_t>((k * 9 + tap) * lanes + c)] ==
                  Approx(want).margin(1e-3));
          }
      const Node* other = nodes_of(g, OpKind::Conv).at(stem == nodes_of(g, OpKind::Conv)[0]);
      CHECK(g.tensor(other->inputs[0]).shape == Shape{1, 4, 6, 6});
      // The planner reads the input, transposes and pads it in one Local kernel.
      PlannerOptions options;
      options.planner = "ilp";
      const FusionPlan plan = plan_fusion(g, options);
      bool found = false;
      for (const FusionGroup& group : plan.groups)
        if (const auto* spec = std::get_if<LocalSpec>(&group.spec))
          for (const MovementRead& move : spec->moves)
            found = found || (move.fills && g.nodes[move.node].op == OpKind::Pad);
      CHECK(found);
    }
  }
}

TEST_CASE("channels-last: a residual add without Relu stays out of cuDNN's identity epilogue",
          "[planner][channels-last]") {
  // cuDNN's fused call with the identity activation ran on an H100 as separate passes for the
  // bias and the residual (cudnnAddTensor); the cost model charges them, so on a large result
  // the residual add of a Conv without Relu after it is a Local kernel, while with a Relu after
  // it (the fused call with Relu) it stays the Conv's epilogue.
  for (bool relu : {false, true}) {
    INFO((relu ? "with" : "without") << " Relu");
    ModelBuilder m(17);
    m.input("x", kFloat, {1, 16, 320, 320}).output("y");
    std::vector<float> w(16 * 16 * 9, 0.125f), b(16, 0.5f);
    m.initializer_f32("w", {16, 16, 3, 3}, w).initializer_f32("b", {16}, b);
    test::set_attr_ints(m.node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
    m.node("Add", {"c", "x"}, {relu ? "a" : "y"});
    if (relu) m.node("Relu", {"a"}, {"y"});
    const Graph g = compile(m, Precision::Fp16);
    PlannerOptions options;
    options.planner = "ilp";
    const FusionPlan plan = plan_fusion(g, options);
    int convs = 0;
    for (const FusionGroup& group : plan.groups)
      if (const auto* spec = std::get_if<ConvSpec>(&group.spec)) {
        ++convs;
        CHECK(spec->channels_last);
        CHECK((spec->residual != kNoTensor) == relu);
        CHECK(spec->relu == relu);
      }
    CHECK(convs == 1);
  }
}
