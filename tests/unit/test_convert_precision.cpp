// convert-precision (--precision fp16|bf16): weights converted once, the float32 islands of
// convert_precision.h (sums, Pow/Exp/Log, statistics, index math), Casts at the boundaries,
// the model's input and output types, graphs without float32 left alone, a second run a no-op,
// and the driver's flags.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "driver/driver.h"
#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/convert_precision.h"
#include "graph/error.h"
#include "graph/fold_constants.h"
#include "graph/infer_context.h"
#include "graph/infer_shapes.h"
#include "graph/pipeline.h"
#include "graph/shape_rules.h"
#include "graph/verify.h"
#include "model_builder.h"
#include "test_emit_fused_support.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kHalf = onnx::TensorProto::FLOAT16;
constexpr int kInt64 = onnx::TensorProto::INT64;

// The graph as convert-precision sees it in the pipeline (typed, folded), before the pass.
Graph loaded(const ModelBuilder& m) {
  Graph g = load_onnx(m.write());
  infer_shapes(g);
  fold_constants(g);
  return g;
}

// Every node's shape rule accepts its operands' types again and gives the types the graph
// holds, and the verifier passes: the converted graph is consistent.
void check_consistent(const Graph& converted) {
  verify_graph(converted, "convert-precision");
  Graph g = converted;
  for (Node& node : g.nodes) {
    std::vector<DType> had;
    for (TensorId t : node.outputs)
      had.push_back(t == kNoTensor ? DType::Bool : g.tensor(t).dtype);
    InferContext ctx(g, node);
    REQUIRE_NOTHROW(shape_rule(node.op)(ctx));
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.outputs[i] != kNoTensor) CHECK(g.tensor(node.outputs[i]).dtype == had[i]);
  }
}

Graph converted(const ModelBuilder& m, Precision p = Precision::Fp16,
                IoPrecision io = IoPrecision::Model) {
  Graph g = loaded(m);
  REQUIRE(convert_precision(g, {p, io}));
  check_consistent(g);
  return g;
}

const Node& node_writing(const Graph& g, const std::string& tensor) {
  for (const Node& n : g.nodes)
    for (TensorId t : n.outputs)
      if (t != kNoTensor && g.tensor(t).name == tensor) return n;
  FAIL("no node writes " << tensor);
  return g.nodes.front();
}

DType dtype_of(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors)
    if (t.name == name) return t.dtype;
  FAIL("no tensor " << name);
  return DType::Bool;
}

int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes)
    n += node.op == op;
  return n;
}

// The float32 weight W read by two MatMuls, then a Relu: y = relu(x W) + x W.
ModelBuilder shared_weight_model() {
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 4}).output("y");
  m.initializer_f32("W", {4, 4}, {1.0f / 3, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  m.node("MatMul", {"x", "W"}, {"a"});
  m.node("MatMul", {"x", "W"}, {"b"});
  m.node("Relu", {"a"}, {"r"});
  m.node("Add", {"r", "b"}, {"y"});
  return m;
}

// torch's hand-written LayerNorm over the last axis, after a MatMul.
ModelBuilder exporter_layer_norm_model() {
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 8}).output("y");
  std::vector<float> w(64, 0.125f), ones(8, 1.0f), zeros(8, 0.0f);
  m.initializer_f32("W", {8, 8}, w);
  m.initializer_f32("two", {}, {2.0f});
  m.initializer_f32("eps", {}, {1e-12f}); // BERT's: zero in float16
  m.initializer_f32("gamma", {8}, ones).initializer_f32("beta", {8}, zeros);
  m.initializer_i64("axes", {1}, {-1});
  m.node("MatMul", {"x", "W"}, {"h"});
  m.node("ReduceMean", {"h", "axes"}, {"mean"});
  m.node("Sub", {"h", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"sq"});
  m.node("ReduceMean", {"sq", "axes"}, {"var"});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"std"});
  m.node("Div", {"d", "std"}, {"n"});
  m.node("Mul", {"n", "gamma"}, {"s"});
  m.node("Add", {"s", "beta"}, {"y"});
  return m;
}

} // namespace

TEST_CASE("convert-precision converts each float32 weight once, rounding to nearest even",
          "[precision]") {
  // Proves: a weight read by two GEMMs becomes one float16 constant with float_to_half's bits,
  // and the GEMMs and the Relu between them compute in float16.
  Graph g = converted(shared_weight_model());
  int halves = 0;
  for (const Tensor& t : g.tensors) {
    if (!t.is_constant() || t.dtype != DType::Float16) continue;
    ++halves;
    uint16_t first;
    std::memcpy(&first, t.constant->bytes.data(), 2);
    CHECK(first == float_to_half(1.0f / 3));
  }
  CHECK(halves == 1);
  for (const Tensor& t : g.tensors)
    CHECK_FALSE((t.is_constant() && t.dtype == DType::Float32));
  CHECK(dtype_of(g, "a") == DType::Float16);
  CHECK(dtype_of(g, "r") == DType::Float16);
}

TEST_CASE("convert-precision keeps the model's input and output types unless io is reduced",
          "[precision]") {
  // Proves: by default a Cast to float16 follows the input and one to float32 precedes the
  // output, which keeps its name; with IoPrecision::Reduced both are float16 and no Cast is
  // left.
  Graph kept = converted(shared_weight_model());
  CHECK(kept.tensor(kept.inputs[0]).dtype == DType::Float32);
  CHECK(kept.tensor(kept.outputs[0]).dtype == DType::Float32);
  CHECK(kept.tensor(kept.outputs[0]).name == "y");
  CHECK(node_writing(kept, "y").op == OpKind::Cast);
  CHECK(count_op(kept, OpKind::Cast) == 2);

  Graph reduced = converted(shared_weight_model(), Precision::Bf16, IoPrecision::Reduced);
  CHECK(reduced.tensor(reduced.inputs[0]).dtype == DType::BFloat16);
  CHECK(reduced.tensor(reduced.outputs[0]).dtype == DType::BFloat16);
  CHECK(reduced.tensor(reduced.outputs[0]).name == "y");
  CHECK(count_op(reduced, OpKind::Cast) == 0);
  CHECK(reduced.declared_outputs.begin()->second.onnx_elem_type == 0); // undeclared stays so
}

TEST_CASE("convert-precision keeps an exporter's LayerNorm statistics in float32", "[precision]") {
  // Proves: mean, x - mean as the variance reads it, the squares, the variance, var + eps
  // (1e-12, zero in float16) and its square root are float32; the normalized value is
  // computed from them in float32 and stored in float16 for the scale and shift.
  Graph g = converted(exporter_layer_norm_model());
  for (const char* name : {"mean", "d", "sq", "var", "ve", "std", "n"})
    CHECK(dtype_of(g, name) == DType::Float32);
  CHECK(dtype_of(g, "eps") == DType::Float32);
  CHECK(dtype_of(g, "h") == DType::Float16);
  CHECK(dtype_of(g, "s") == DType::Float16);
  // The division reads the unrounded deviation; the scale reads the rounded quotient.
  const Node& div = node_writing(g, "n");
  CHECK(g.tensor(div.inputs[0]).name == "d");
  const Node& mul = node_writing(g, "s");
  CHECK(node_writing(g, g.tensor(mul.inputs[0]).name).op == OpKind::Cast);
}

TEST_CASE("convert-precision keeps a softmax written as Exp, ReduceSum, Div in float32",
          "[precision]") {
  // Proves: Exp and the sum are float32 and so is the quotient, which only a GEMM rounds.
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 8}).output("y");
  m.initializer_f32("W", {8, 8}, std::vector<float>(64, 0.5f));
  m.initializer_i64("axes", {1}, {-1});
  m.node("ReduceMax", {"x", "axes"}, {"max"});
  m.node("Sub", {"x", "max"}, {"shifted"});
  m.node("Exp", {"shifted"}, {"e"});
  m.node("ReduceSum", {"e", "axes"}, {"sum"});
  m.node("Div", {"e", "sum"}, {"p"});
  m.node("MatMul", {"p", "W"}, {"y"});
  Graph g = converted(m);
  CHECK(dtype_of(g, "max") == DType::Float16);
  CHECK(dtype_of(g, "shifted") == DType::Float16);
  for (const char* name : {"e", "sum", "p"})
    CHECK(dtype_of(g, name) == DType::Float32);
  CHECK(g.tensor(node_writing(g, "y/float16").inputs[0]).dtype == DType::Float16);
}

TEST_CASE("convert-precision keeps index math and masks made from integers in float32",
          "[precision]") {
  // Proves: Cast(int64 -> float32) and what is computed from it alone stay float32 (float16
  // holds integers exactly only to 2048), a mask added to activations is added in float32 and
  // the sum stored in float16; the graph stays consistent.
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 4}).input("pos", kInt64, {2, 4}).output("y");
  m.initializer_f32("scale", {}, {0.5f});
  m.initializer_f32("W", {4, 4}, std::vector<float>(16, 0.25f));
  test::set_attr_int(m.node("Cast", {"pos"}, {"posf"}), "to", kFloat);
  m.node("Mul", {"posf", "scale"}, {"scaled"});
  m.node("MatMul", {"x", "W"}, {"h"});
  m.node("Add", {"h", "scaled"}, {"sum"});
  m.node("Relu", {"sum"}, {"y"});
  Graph g = converted(m);
  CHECK(dtype_of(g, "posf") == DType::Float32);
  CHECK(dtype_of(g, "scaled") == DType::Float32);
  CHECK(dtype_of(g, "sum") == DType::Float32); // computed in float32 ...
  const Node& relu = node_writing(g, "y/float16");
  CHECK(g.tensor(relu.inputs[0]).dtype == DType::Float16); // ... stored in float16
}

TEST_CASE("convert-precision leaves integer graphs and float16 models alone", "[precision]") {
  // Proves: a graph without float32 values is not changed at all.
  ModelBuilder ints(17);
  ints.input("a", kInt64, {4}).input("b", kInt64, {4}).output("c");
  ints.node("Add", {"a", "b"}, {"c"});
  Graph g = loaded(ints);
  CHECK_FALSE(convert_precision(g, {Precision::Fp16, IoPrecision::Reduced}));
  CHECK(g.tensor(g.outputs[0]).dtype == DType::Int64);

  ModelBuilder half(18);
  half.input("x", kHalf, {2, 8}).output("y");
  half.initializer_i64("axes", {1}, {-1});
  half.node("ReduceMean", {"x", "axes"}, {"m"});
  half.node("Sub", {"x", "m"}, {"y"});
  Graph h = loaded(half);
  const size_t nodes = h.nodes.size();
  CHECK_FALSE(convert_precision(h, {Precision::Fp16, IoPrecision::Model}));
  CHECK(h.nodes.size() == nodes);
  CHECK(dtype_of(h, "m") == DType::Float16);
}

TEST_CASE("convert-precision does nothing for fp32 and tf32, and nothing the second time",
          "[precision]") {
  // Proves: fp32 and tf32 leave the graph as the model has it; a converted graph converted
  // again is unchanged (the Casts it made are recognised as conversions).
  Graph g = loaded(exporter_layer_norm_model());
  CHECK_FALSE(convert_precision(g, {Precision::Fp32, IoPrecision::Model}));
  CHECK_FALSE(convert_precision(g, {Precision::Tf32, IoPrecision::Model}));
  for (Precision p : {Precision::Fp16, Precision::Bf16})
    for (IoPrecision io : {IoPrecision::Model, IoPrecision::Reduced})
      for (auto model : {exporter_layer_norm_model(), shared_weight_model()}) {
        Graph once = converted(model, p, io);
        const size_t nodes = once.nodes.size(), tensors = once.tensors.size();
        CHECK_FALSE(convert_precision(once, {p, io}));
        CHECK(once.nodes.size() == nodes);
        CHECK(once.tensors.size() == tensors);
      }
}

TEST_CASE("the pipeline lowers a float16 LayerNormalization with float32 statistics",
          "[precision]") {
  // Proves: a single-op LayerNormalization converted to float16 is lowered with its mean and
  // variance in float32 (stash_type), and every pass after the conversion verifies.
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 8}).output("y");
  m.initializer_f32("gamma", {8}, std::vector<float>(8, 1.0f));
  m.initializer_f32("beta", {8}, std::vector<float>(8, 0.0f));
  m.node("LayerNormalization", {"x", "gamma", "beta"}, {"y"});
  Graph g = load_onnx(m.write());
  PipelineOptions options;
  options.precision = {Precision::Fp16, IoPrecision::Model};
  run_pipeline(g, options);
  int reductions = 0;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::ReduceMean) {
      ++reductions;
      CHECK(g.tensor(n.outputs[0]).dtype == DType::Float32);
    }
  CHECK(reductions == 2);
  CHECK(g.tensor(g.outputs[0]).dtype == DType::Float32);
}

TEST_CASE("stitchc --precision and --io-precision parse, and bad values are user errors",
          "[precision][driver]") {
  // Proves: the flags reach the pipeline and the planner (tf32), and a bad value or
  // --io-precision reduced without a reduced type is a one-line user error.
  auto parse = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"stitchc", "model.onnx"});
    std::vector<char*> argv;
    for (std::string& a : args)
      argv.push_back(a.data());
    DriverOptions options;
    const int code = parse_command_line(static_cast<int>(argv.size()), argv.data(), options);
    REQUIRE(code == -1);
    return options;
  };
  DriverOptions plain = parse({});
  CHECK(plain.pipeline.precision.precision == Precision::Fp32);
  CHECK_FALSE(plain.planner.tf32);
  DriverOptions bf16 = parse({"--precision", "bf16", "--io-precision", "reduced"});
  CHECK(bf16.pipeline.precision.precision == Precision::Bf16);
  CHECK(bf16.pipeline.precision.io == IoPrecision::Reduced);
  DriverOptions tf32 = parse({"--precision", "tf32"});
  CHECK(tf32.planner.tf32);
  CHECK(tf32.pipeline.precision.precision == Precision::Tf32);
  CHECK_THROWS_WITH(parse({"--precision", "fp8"}),
                    Catch::Contains("--precision 'fp8': expected fp32, tf32, fp16 or bf16"));
  CHECK_THROWS_WITH(parse({"--io-precision", "half"}), Catch::Contains("--io-precision 'half'"));
  CHECK_THROWS_AS(parse({"--io-precision", "reduced"}), UserError);
}

// Proves, end to end on the host target: an exporter's LayerNorm of activations around
// 500 +- 400, whose squared deviations overflow float16 (65504), is finite and accurate under
// --precision fp16 and bf16 because its statistics stay float32 (with every value in float16
// the output is all zeros, relative L2 error 1). Measured: 2.1e-4 (fp16), 1.6e-3 (bf16).
TEST_CASE("convert-precision: fp16 and bf16 keep a LayerNorm of large activations accurate",
          "[precision][host]") {
  constexpr int64_t kRows = 8, kCols = 64;
  ModelBuilder m(18);
  m.input("x", kFloat, {kRows, kCols}).output("y");
  m.initializer_i64("axes", {1}, {-1});
  m.initializer_f32("two", {}, {2.0f}).initializer_f32("eps", {}, {1e-5f});
  m.initializer_f32("gamma", {kCols}, std::vector<float>(kCols, 1.0f));
  m.initializer_f32("beta", {kCols}, std::vector<float>(kCols, 0.0f));
  m.node("ReduceMean", {"x", "axes"}, {"mean"});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"sq"});
  m.node("ReduceMean", {"sq", "axes"}, {"var"});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"std"});
  m.node("Div", {"d", "std"}, {"n"});
  m.node("Mul", {"n", "gamma"}, {"s"});
  m.node("Add", {"s", "beta"}, {"y"});
  std::vector<float> x = test::random_values(kRows * kCols, 7, -1.0f, 1.0f);
  for (float& v : x)
    v = 500.0f + 700.0f * v;
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < kRows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < kCols; ++c)
      mean += x[r * kCols + c] / double(kCols);
    for (int64_t c = 0; c < kCols; ++c)
      var += std::pow(x[r * kCols + c] - mean, 2) / double(kCols);
    for (int64_t c = 0; c < kCols; ++c)
      want[r * kCols + c] = (x[r * kCols + c] - mean) / std::sqrt(var + 1e-5);
  }
  for (auto [precision, aim] :
       {std::pair{Precision::Fp16, 1e-3}, std::pair{Precision::Bf16, 8e-3}}) {
    INFO(precision_name(precision));
    Graph g = load_onnx(m.write());
    PipelineOptions options;
    options.precision = {precision, IoPrecision::Model};
    run_pipeline(g, options);
    PlannerOptions planner;
    planner.device.cooperative_sm_count = kHostTargetMultiprocessors;
    std::vector<std::vector<float>> y = test::run_on_host(
        g, plan_fusion(g, planner), {x}, "precision-" + std::string(precision_name(precision)));
    double err = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      REQUIRE(std::isfinite(y[0][i]));
      err += std::pow(y[0][i] - want[i], 2);
      norm += want[i] * want[i];
    }
    CHECK(std::sqrt(err / norm) <= aim);
  }
}
