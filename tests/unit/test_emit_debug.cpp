// Golden checks on the debugging aids of the emitter (emit_model.h EmitOptions): debug taps in
// the launcher, and the test-only planted error. Neither changes a group's kernel.
#include <catch2/catch.hpp>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// x -> Relu -> r -> Exp -> y, one kernel per op.
struct Planned {
  Graph graph;
  FusionPlan plan;
  MemoryPlan memory;
};

Planned planned() {
  ModelBuilder m;
  m.input("x", kFloat, {4, 10}).output("y");
  m.node("Relu", {"x"}, {"r"});
  m.node("Exp", {"r"}, {"y"});
  Planned p;
  p.graph = load_onnx(m.write());
  run_pipeline(p.graph, {});
  p.plan = plan_one_kernel_per_op(p.graph, DeviceParams{});
  p.memory = plan_memory(p.graph, p.plan);
  return p;
}

GeneratedModel generate(const Planned& p, const EmitOptions& options) {
  return emit_model(p.graph, p.plan, p.memory, "host", options);
}

} // namespace

// Proves: with taps, each group's output is copied into its tap buffer right after the group
// runs, in plan order, and the model's tap table lists them (names through the blob); the
// group kernels are the same as without taps.
TEST_CASE("debug taps copy each group's outputs after the group", "[emitter]") {
  const Planned p = planned();
  GeneratedModel plain = generate(p, {});
  EmitOptions options;
  options.debug_taps = true;
  GeneratedModel tapped = generate(p, options);
  REQUIRE(tapped.groups.size() == plain.groups.size());
  for (size_t i = 0; i < plain.groups.size(); ++i)
    CHECK(tapped.groups[i].text == plain.groups[i].text);

  const std::string& launcher = tapped.launcher.text;
  const size_t group0 = launcher.find("stitch_group_0(b, error, error_size)");
  const size_t tap0 = launcher.find("cudaMemcpyAsync(b->taps[0], (b->arena + 0), 160,");
  const size_t group1 = launcher.find("stitch_group_1(b, error, error_size)");
  const size_t tap1 =
      launcher.find("cudaMemcpyAsync(b->taps[1], static_cast<unsigned char*>(b->outputs[0]), 160,");
  REQUIRE(group0 != std::string::npos);
  REQUIRE(tap0 != std::string::npos);
  REQUIRE(group1 != std::string::npos);
  REQUIRE(tap1 != std::string::npos);
  CHECK(group0 < tap0);
  CHECK(tap0 < group1);
  CHECK(group1 < tap1);
  CHECK_THAT(launcher, Catch::Contains("static const stitch_abi_tap taps[] = {"));
  CHECK_THAT(launcher, Catch::Contains("2, taps, // debug taps"));
  CHECK_THAT(plain.launcher.text, Catch::Contains("0, nullptr, // debug taps"));
  CHECK_THAT(plain.launcher.text, !Catch::Contains("b->taps"));
}

// Proves: the planted error is a separate kernel in the chosen group's file, launched right
// after that group, and a group that does not exist is a user error.
TEST_CASE("a planted wrong group is marked test-only and runs after its group", "[emitter]") {
  const Planned p = planned();
  EmitOptions options;
  options.plant_wrong_group = 1;
  GeneratedModel model = generate(p, options);
  CHECK_THAT(model.groups.at(1).text,
             Catch::Contains("TEST ONLY (stitchc --test-plant-wrong-group 1)"));
  CHECK_THAT(model.groups.at(1).text,
             Catch::Contains("out[20] = (v - v == 0.0f) ? v + 1.0f + fabsf(v) : 0.5f;"));
  CHECK_THAT(model.groups.at(0).text, !Catch::Contains("planted"));
  const std::string& launcher = model.launcher.text;
  CHECK(launcher.find("stitch_group_1(b, error, error_size)") <
        launcher.find("stitch_group_1_planted_error(b, error, error_size)"));

  options.plant_wrong_group = 7;
  CHECK_THROWS_WITH(generate(p, options),
                    Catch::Contains("--test-plant-wrong-group 7: the plan has "
                                    "no group 7 with work"));
}
