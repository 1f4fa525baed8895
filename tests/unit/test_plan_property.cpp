// Property tests over random graphs: every plan any planner (none, greedy, ilp) makes of a
// random ONNX model emits for the host target, and every fused plan computes what the
// one-kernel-per-op plan computes. The models (random_graphs.h: random_model) go through the
// driver's path — a real .onnx file, load_onnx, the pass pipeline — and hold tensors of rank 1
// to 4 with length-1 axes, broadcasting pointwise ops, Expand, Cast, reductions over every
// axis position, Softmax, LogSoftmax, LayerNormalization, Transpose, Slice, Concat, Reshape,
// Where and MatMul with transposed operands and results (library calls that read and write
// through the transposes).
//
// Two sweeps:
//   - emission: 2000 single-DAG models (seeds 0-1999); each planner's plan must pass the memory
//     plan and code generation (no UserError, no InternalError). No compiler runs, so a
//     failure names the one small DAG, and the group, that causes it.
//   - results: 40 models of four independent DAGs each (160 DAGs, seeds 10000-10039), each
//     planner's plan compiled for the host target and run on the same random inputs (never
//     zeros); the greedy and ilp plans' outputs must match the per-op plan's (rtol 1e-4,
//     atol 1e-5, NaN equal to NaN). Several DAGs share a model so that one compile checks
//     several of them (a compile costs about 1 s plus 10 ms per group; four DAGs, about 60
//     nodes, keep the ILP's solve well under its time limit), a plan with the same groups as
//     one already run is not compiled again, and a group code generation refuses fails the
//     check and is split into single nodes so that the rest of its plan is still compared.
// A failure names the seed, the planner, and the refused group or the mismatching output
// with the plan's fused groups. About 185 CPU-seconds in all (two cores, host compiles), in six
// cases of at most 50.
//
// Under AddressSanitizer (the test command's sanitizer stage) each sweep takes every
// kSanitizedStride-th seed of its range: there the sweeps look for memory errors in the planner,
// the emitter and the generated kernels, which a third of the seeds exercise at three times the
// cost per seed; the unsanitized build checks every seed's results.
#include <catch2/catch.hpp>

#include "plan_agreement.h"
#include "random_graphs.h"

using namespace stitch;
using namespace stitch::test;

namespace {

constexpr int kDagsPerModel = 4;

#if defined(__SANITIZE_ADDRESS__)
constexpr uint32_t kSeedStride = 3;
#else
constexpr uint32_t kSeedStride = 1;
#endif

// The model of `seed` with `components` DAGs after the passes; a model the pipeline refuses
// is a bug of the generator (or of the frontend) and fails the check.
bool load_random_model(uint32_t seed, int components, Graph& g,
                       int float_type = onnx::TensorProto::FLOAT) {
  try {
    g = load_graph(random_model(seed, components, float_type));
    return true;
  } catch (const std::exception& e) {
    FAIL_CHECK("seed " << seed << ": the random model does not load: " << e.what());
    return false;
  }
}

// Library calls of `plan` that read an operand or write their result through a Transpose.
int absorbed_layouts(const FusionPlan& plan) {
  int count = 0;
  for (const FusionGroup& group : plan.groups)
    if (const auto* gemm = std::get_if<GemmSpec>(&group.spec))
      count += (gemm->layout_a >= 0) + (gemm->layout_b >= 0) + (gemm->layout_result >= 0);
  return count;
}

// Returns how many transposes the ilp plans absorbed into library calls.
int check_emission(uint32_t first, uint32_t last, int float_type = onnx::TensorProto::FLOAT) {
  int layouts = 0;
  for (uint32_t seed = first; seed < last; seed += kSeedStride) {
    Graph g;
    if (!load_random_model(seed, 1, g, float_type)) continue;
    for (const std::string& planner : all_planners()) {
      FusionPlan plan = plan_for_host(g, planner);
      if (planner == "ilp") layouts += absorbed_layouts(plan);
      INFO("seed " << seed << ", planner " << planner << ", plan:\n" << describe_plan(g, plan));
      check_emits(g, std::move(plan));
    }
  }
  return layouts;
}

void check_results(uint32_t first, uint32_t last, int float_type = onnx::TensorProto::FLOAT,
                   PlanTolerance tolerance = {}) {
  int models = 0, compiled = 0, layouts = 0;
  for (uint32_t seed = first; seed < last; seed += kSeedStride, ++models) {
    Graph g;
    if (!load_random_model(seed, kDagsPerModel, g, float_type)) continue;
    layouts += absorbed_layouts(plan_for_host(g, "ilp"));
    compiled += check_planners_agree(g, seed, "seed " + std::to_string(seed), tolerance);
  }
  // Most fused plans differ from the per-op plan, and so are compiled and compared; some read
  // or write through transposes in their library calls.
  CHECK(compiled >= 2 * models);
  // (A property of the whole seed range, which only the unsanitized build sweeps.)
  if (kSeedStride == 1) CHECK(layouts > 0);
}

} // namespace

// Proves: no planner makes a plan of a random DAG that code generation refuses.
TEST_CASE("plan property: every plan of a random DAG emits, seeds 0-999", "[planner][property]") {
  check_emission(0, 1000);
}
TEST_CASE("plan property: every plan of a random DAG emits, seeds 1000-1999",
          "[planner][property]") {
  // The ilp plans read or write through many transposes in their library calls.
  CHECK(check_emission(1000, 2000) >= 50 / static_cast<int>(kSeedStride));
}

// Proves: the greedy and ilp plans of random DAGs compute what the per-op plan computes.
TEST_CASE("plan property: fused plans compute what per-op plans compute, seeds 10000-10009",
          "[planner][property]") {
  check_results(10000, 10010);
}
TEST_CASE("plan property: fused plans compute what per-op plans compute, seeds 10010-10019",
          "[planner][property]") {
  check_results(10010, 10020);
}
TEST_CASE("plan property: fused plans compute what per-op plans compute, seeds 10020-10029",
          "[planner][property]") {
  check_results(10020, 10030);
}
TEST_CASE("plan property: fused plans compute what per-op plans compute, seeds 10030-10039",
          "[planner][property]") {
  check_results(10030, 10040);
}

// The same in float16 and bfloat16 (float32 inputs cast to the type first, outputs cast back):
// every kernel kind and stitching scheme stores the 2-byte type and rounds each node's result
// once, so fused and per-op plans differ only where a reduction adds in another order. The
// tolerances are 8 units in the last place of the type (2^-8 for float16's 11-bit significand,
// 2^-5 for bfloat16's 8 bits), with an absolute floor for values that cancel.
TEST_CASE("plan property: every plan of a random float16 or bfloat16 DAG emits",
          "[planner][property][half]") {
  check_emission(20000, 20400, onnx::TensorProto::FLOAT16);
  check_emission(30000, 30400, onnx::TensorProto::BFLOAT16);
}
TEST_CASE("plan property: fused plans compute what per-op plans compute in float16",
          "[planner][property][half]") {
  check_results(20000, 20008, onnx::TensorProto::FLOAT16, {0x1p-8, 0x1p-8});
}
TEST_CASE("plan property: fused plans compute what per-op plans compute in bfloat16",
          "[planner][property][half]") {
  check_results(30000, 30008, onnx::TensorProto::BFLOAT16, {0x1p-5, 0x1p-5});
}
