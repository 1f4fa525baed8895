// Golden checks on generated pointwise kernels: vectorized bodies, broadcast indices,
// attribute parameters, and model strings confined to escaped comments.
#include <catch2/catch.hpp>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/pipeline.h"
#include "planner/planner.h"
#include "model_builder.h"

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
  for (const GeneratedFile& f : gm.groups) s += f.text;
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

TEST_CASE("model strings reach generated code only as escaped comments", "[emitter]") {
  // A node and tensors named to break out of a comment or a string literal.
  const std::string evil = "*/ system(\"x\"); /*\n#include </etc/passwd>\\";
  ModelBuilder m;
  m.input(evil + "in", kFloat, {4}).output(evil + "out");
  m.node("Neg", {evil + "in"}, {evil + "out"}, evil);
  GeneratedModel gm = generate(m);
  std::string src = all_sources(gm);
  // Every line holding model text is a // comment, and none ends in a backslash (which
  // would splice the next line into the comment).
  int lines_with_model_text = 0;
  size_t start = 0;
  while (start < src.size()) {
    size_t end = src.find('\n', start);
    std::string line = src.substr(start, end - start);
    if (line.find("system(") != std::string::npos || line.find("/etc/passwd") != std::string::npos) {
      ++lines_with_model_text;
      CHECK(line.substr(line.find_first_not_of(' '), 2) == "//");
    }
    CHECK((line.empty() || line.back() != '\\'));
    start = end + 1;
  }
  CHECK(lines_with_model_text > 0);
  // The names travel in the embedded blob instead.
  CHECK(gm.blob.find(evil + "in") != std::string::npos);
}
