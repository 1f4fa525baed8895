// Golden checks on generated pointwise kernels: vectorized bodies, broadcast indices,
// attribute parameters, and model strings confined to escaped comments.
#include <catch2/catch.hpp>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

GeneratedModel generate(const ModelBuilder& m) {
  Graph g = load_onnx(m.write());
  run_pipeline(g, {});
  FusionPlan plan = plan_one_kernel_per_op(g, DeviceParams{});
  MemoryPlan memory = plan_memory(g, plan);
  return emit_model(g, plan, memory, "host");
}

std::string all_sources(const GeneratedModel& gm) {
  std::string s;
  for (const GeneratedFile& f : gm.groups)
    s += f.text;
  return s + gm.launcher.text;
}

} // namespace

TEST_CASE("a same-shape pointwise op gets a 16-byte vector body and a scalar tail", "[emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {4, 10}).output("y");
  m.node("Relu", {"x"}, {"y"});
  std::string src = generate(m).groups.at(0).text;
  CHECK_THAT(src, Catch::Contains("const float4 x0 = reinterpret_cast<const float4*>(in0)[v];"));
  CHECK_THAT(src, Catch::Contains("r.w = stitch::ops::relu(v0);"));
  CHECK_THAT(src, Catch::Contains("for (int64_t i = n / 4 * 4 + first; i < n; i += stride)"));
}

TEST_CASE("a broadcast operand is indexed from the output coordinates", "[emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {2, 3, 4}).input("b", kFloat, {3, 1}).output("y");
  m.node("Add", {"x", "b"}, {"y"});
  std::string src = generate(m).groups.at(0).text;
  CHECK_THAT(src, Catch::Contains("const int64_t c2 = rest % 4; rest /= 4;"));
  CHECK_THAT(src, Catch::Contains("const float v1 = in1[c1];"));
  CHECK_THAT(src, !Catch::Contains("float4")); // broadcast: no vector body
}

TEST_CASE("attributes become literal arguments with ONNX defaults", "[emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {8}).output("y").output("z");
  test::set_attr_float(m.node("LeakyRelu", {"x"}, {"y"}), "alpha", 0.25f);
  m.node("LeakyRelu", {"x"}, {"z"});
  std::string src = all_sources(generate(m));
  CHECK_THAT(src, Catch::Contains("stitch::ops::leaky_relu(v0, 0.25f)"));
  CHECK_THAT(src, Catch::Contains("stitch::ops::leaky_relu(v0, 0.01f)"));
}

namespace {

// Every line holding model text is a // comment, and none ends in a backslash (which would
// splice the next line into the comment).
void check_model_text_in_comments_only(const std::string& src) {
  int lines_with_model_text = 0;
  size_t start = 0;
  while (start < src.size()) {
    size_t end = src.find('\n', start);
    std::string line = src.substr(start, end - start);
    if (line.find("system(") != std::string::npos ||
        line.find("/etc/passwd") != std::string::npos) {
      ++lines_with_model_text;
      CHECK(line.substr(line.find_first_not_of(' '), 2) == "//");
    }
    CHECK((line.empty() || line.back() != '\\'));
    start = end + 1;
  }
  CHECK(lines_with_model_text > 0);
}

// A node and tensors named to break out of a comment or a string literal.
const std::string kEvil = "*/ system(\"x\"); /*\n#include </etc/passwd>\\";

} // namespace

TEST_CASE("model strings reach generated code only as escaped comments", "[emitter]") {
  const std::string& evil = kEvil;
  ModelBuilder m;
  m.input(evil + "in", kFloat, {4}).output(evil + "out");
  m.node("Neg", {evil + "in"}, {evil + "out"}, evil);
  GeneratedModel gm = generate(m);
  check_model_text_in_comments_only(all_sources(gm));
  // The names travel in the embedded blob instead.
  CHECK(gm.blob.find(evil + "in") != std::string::npos);
}

TEST_CASE("model strings stay in comments through fused groups and library epilogues",
          "[emitter]") {
  // The same names through the ILP's groups: a Conv with its Relu (a cuDNN epilogue), and a
  // residual add, Relu and global pool stitched to a Linear layer (a Global group).
  const std::string& evil = kEvil;
  ModelBuilder m(13);
  m.input(evil + "x", kFloat, {1, 4, 6, 6}).output(evil + "y");
  m.initializer_f32(evil + "w", {4, 4, 3, 3}, std::vector<float>(144, 0.1f));
  m.initializer_f32(evil + "b", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  m.initializer_f32(evil + "fc", {3, 4}, std::vector<float>(12, 0.5f));
  auto& conv1 = m.node("Conv", {evil + "x", evil + "w", evil + "b"}, {evil + "c1"}, evil + "conv1");
  test::set_attr_ints(conv1, "pads", {1, 1, 1, 1});
  m.node("Relu", {evil + "c1"}, {evil + "r1"}, evil + "relu1");
  auto& conv2 = m.node("Conv", {evil + "r1", evil + "w", evil + "b"}, {evil + "c"}, evil + "conv2");
  test::set_attr_ints(conv2, "pads", {1, 1, 1, 1});
  m.node("Add", {evil + "c", evil + "x"}, {evil + "s"}, evil + "add");
  m.node("Relu", {evil + "s"}, {evil + "r"}, evil + "relu");
  m.node("GlobalAveragePool", {evil + "r"}, {evil + "p"}, evil + "pool");
  m.node("Flatten", {evil + "p"}, {evil + "f"}, evil + "flatten");
  test::set_attr_int(m.node("Gemm", {evil + "f", evil + "fc"}, {evil + "y"}, evil + "gemm"),
                     "transB", 1);
  Graph g = load_onnx(m.write());
  run_pipeline(g, {});
  PlannerOptions options;
  options.device.cooperative_sm_count = kHostTargetMultiprocessors;
  FusionPlan plan = plan_fusion(g, options);
  bool conv_epilogue = false, global = false;
  for (const FusionGroup& group : plan.groups) {
    conv_epilogue =
        conv_epilogue || (group.kind == GroupKind::ConvLibrary && group.nodes.size() > 1);
    global = global || group.scheme == StitchScheme::Global;
  }
  CHECK(conv_epilogue);
  CHECK(global);
  GeneratedModel gm = emit_model(g, plan, plan_memory(g, plan), "host");
  check_model_text_in_comments_only(all_sources(gm));
}
