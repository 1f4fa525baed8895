// Golden checks on the reduction kernels (kernel_reduction.cpp) and the mappings the planner
// picks for them (reduction_mapping.cpp), and on what the normalizations (lowered to
// reductions and pointwise ops by lower-composites) become under the fusing planner: each case
// compiles a one-node model through the pipeline, the planner and the emitter, and looks for
// the lines of generated source that matter.
#include <catch2/catch.hpp>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/memory_plan.h"
#include "planner/planner.h"
#include "planner/reduction_mapping.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt32 = onnx::TensorProto::INT32;

struct Compiled {
  Graph graph;
  FusionPlan plan;
  std::string source; // every group's source, concatenated
};

Compiled compile(const ModelBuilder& m) {
  Compiled c;
  c.graph = load_onnx(m.write());
  run_pipeline(c.graph, {});
  c.plan = plan_one_kernel_per_op(c.graph, DeviceParams{});
  MemoryPlan memory = plan_memory(c.graph, c.plan);
  GeneratedModel model = emit_model(c.graph, c.plan, memory, "cuda");
  for (const GeneratedFile& f : model.groups)
    c.source += f.text;
  return c;
}

// The same under the default (ilp) planner: composites are lowered, so their kernels are fused.
Compiled compile_fused(const ModelBuilder& m) {
  Compiled c;
  c.graph = load_onnx(m.write());
  run_pipeline(c.graph, {});
  PlannerOptions options;
  options.planner = "ilp";
  c.plan = plan_fusion(c.graph, options);
  MemoryPlan memory = plan_memory(c.graph, c.plan);
  GeneratedModel model = emit_model(c.graph, c.plan, memory, "cuda");
  for (const GeneratedFile& f : model.groups)
    c.source += f.text;
  return c;
}

// x[dims] -> op -> y, with the axes (if any) as an int64 initializer.
ModelBuilder reduce_model(const std::string& op, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& axes, int opset = 18, int keepdims = 1) {
  ModelBuilder m(opset);
  m.input("x", kFloat, dims).output("y");
  std::vector<std::string> inputs = {"x"};
  if (!axes.empty()) {
    m.initializer_i64("axes", {static_cast<int64_t>(axes.size())}, axes);
    inputs.push_back("axes");
  }
  test::set_attr_int(m.node(op, inputs, {"y"}), "keepdims", keepdims);
  return m;
}

const FusionGroup& only_kernel(const Compiled& c) {
  REQUIRE(c.plan.groups.size() == 1);
  return c.plan.groups[0];
}

} // namespace

TEST_CASE("A row reduction of short rows gets a warp per row and a shuffle reduction",
          "[emitter]") {
  // Proves: contiguous trailing rows of 512 use WarpPerRow, accumulate in fp32 with a fixed
  // stride, combine by warp butterfly, and one lane writes the row's result.
  Compiled c = compile(reduce_model("ReduceSum", {2048, 512}, {1}, 13, 0));
  CHECK(only_kernel(c).mapping == ThreadMapping::WarpPerRow);
  CHECK_THAT(c.source, Catch::Contains("for (int64_t k = lane; k < length; k += 32) {"));
  CHECK_THAT(c.source, Catch::Contains("acc += v;"));
  CHECK_THAT(c.source,
             Catch::Contains("acc = stitch::rows::warp_allreduce(acc, stitch::rows::Sum{});"));
  CHECK_THAT(c.source, Catch::Contains("if (lane == 0) y[line] = acc;"));
  CHECK_THAT(c.source, !Catch::Contains("atomic"));
}

TEST_CASE("A long row gets a block per row and a block reduction", "[emitter]") {
  // Proves: rows past 1024 elements use BlockPerRow with a block-wide shuffle + shared-memory
  // reduction; the NaN-propagating max functor is used, starting from -inf.
  Compiled c = compile(reduce_model("ReduceMax", {16, 8192}, {-1}));
  const FusionGroup& g = only_kernel(c);
  CHECK(g.mapping == ThreadMapping::BlockPerRow);
  CHECK(g.launch.block[0] == 1024);
  CHECK(g.launch.grid[0] == 16);
  CHECK_THAT(c.source, Catch::Contains("float acc = stitch::rows::lowest<float>();"));
  CHECK_THAT(c.source, Catch::Contains("for (int64_t k = thread; k < length; k += 1024) {"));
  CHECK_THAT(c.source,
             Catch::Contains("acc = stitch::rows::block_allreduce(acc, stitch::rows::Max{});"));
  CHECK_THAT(c.source, Catch::Contains("if (thread == 0) y[line] = acc;"));
}

TEST_CASE("Non-contiguous reduced axes get one thread per output with a permuted index",
          "[emitter]") {
  // Proves: reducing axes {0, 2} of [4,5,6] is a flat mapping over the 5 outputs whose inner
  // loop decomposes k over the reduced axes (strides 30 and 1).
  Compiled c = compile(reduce_model("ReduceMean", {4, 5, 6}, {0, 2}));
  CHECK(only_kernel(c).mapping == ThreadMapping::Flat);
  CHECK_THAT(c.source, Catch::Contains("const int64_t base = line * 6;"));
  CHECK_THAT(c.source, Catch::Contains("const float v = x[base + (k / 6) * 30 + k % 6];"));
  CHECK_THAT(c.source, Catch::Contains("y[line] = acc / 24.0f;"));
}

TEST_CASE("A column reduction keeps consecutive threads on consecutive outputs", "[emitter]") {
  // Proves: reducing axis 0 of [1000, 64] maps a thread to each of the 64 outputs and strides
  // through the column, so a warp's loads are contiguous.
  Compiled c = compile(reduce_model("ReduceSum", {1000, 64}, {0}, 13));
  CHECK(only_kernel(c).mapping == ThreadMapping::Flat);
  CHECK_THAT(c.source, Catch::Contains("const int64_t base = line;"));
  CHECK_THAT(c.source, Catch::Contains("x[base + k * 64]"));
}

TEST_CASE("Reducing over an empty axis writes the identity", "[emitter]") {
  // Proves: an empty reduced axis leaves the inner loop empty, so ReduceProd writes its
  // identity 1 and ReduceLogSumExp log(0) + 0 = -inf for every output.
  Compiled prod = compile(reduce_model("ReduceProd", {2, 0, 4}, {1}));
  CHECK_THAT(prod.source, Catch::Contains("const int64_t length = 0;"));
  CHECK_THAT(prod.source, Catch::Contains("float acc = 1.0f;"));
  Compiled lse = compile(reduce_model("ReduceLogSumExp", {2, 0, 4}, {1}));
  CHECK_THAT(lse.source,
             Catch::Contains("const float shift = stitch::rows::finite_or_zero(line_max);"));
  CHECK_THAT(lse.source, Catch::Contains("y[line] = shift + stitch::rows::log_of(sum);"));
}

TEST_CASE("reduction_space drops size-1 axes and merges neighbours", "[emitter][planner]") {
  // Proves: [4,1,6,8] reducing {2,3} is 4 rows of 48; reducing {0,2} of [2,3,4,5] keeps the
  // permuted layout (several reduced dims, no single stride).
  Compiled rows = compile(reduce_model("ReduceSum", {4, 1, 6, 8}, {2, 3}, 13));
  ReductionSpace s = reduction_space(rows.graph, rows.graph.nodes[0]);
  CHECK(s.dims == Shape{4, 48});
  CHECK(s.rows());
  CHECK(s.lines == 4);
  CHECK(s.length == 48);
  Compiled mixed = compile(reduce_model("ReduceSum", {2, 3, 4, 5}, {0, 2}, 13));
  ReductionSpace m = reduction_space(mixed.graph, mixed.graph.nodes[0]);
  CHECK(m.dims == Shape{2, 3, 4, 5});
  CHECK_FALSE(m.single_block());
  CHECK(m.lines == 15);
  CHECK(m.length == 8);
}

TEST_CASE("lowered Softmax keeps a short row in registers and subtracts the maximum", "[emitter]") {
  // Proves: Softmax, lowered to ReduceMax, Sub, Exp, ReduceSum, Div, is planned as one
  // warp-per-row Regional kernel that reads the row once into registers, reduces the max by
  // warp shuffles, then the sum of exp(x - max), and divides in the last pass.
  ModelBuilder m(13);
  m.input("x", kFloat, {4096, 1000}).output("y");
  m.node("Softmax", {"x"}, {"y"});
  Compiled c = compile_fused(m);
  CHECK(only_kernel(c).scheme == StitchScheme::Regional);
  CHECK(only_kernel(c).mapping == ThreadMapping::WarpPerRow);
  CHECK_THAT(c.source, Catch::Contains("float row0[32];"));
  CHECK_THAT(c.source,
             Catch::Contains("acc0 = stitch::rows::warp_allreduce(acc0, stitch::rows::Max{});"));
  CHECK_THAT(c.source, Catch::Contains("const float t0 = stitch::ops::sub(x0, r0);"));
  CHECK_THAT(c.source, Catch::Contains("const float t1 = stitch::ops::exp_(t0);"));
  CHECK_THAT(c.source, Catch::Contains("const float t2 = stitch::ops::div(t1, r1);"));
}

TEST_CASE("lowered LogSoftmax over a middle axis strides through the axis", "[emitter]") {
  // Proves: opset-13 LogSoftmax on axis 1 of [3,4,5] lowers to reductions whose lines are
  // 5 apart (flat mapping), and ends in x - max - log(sum).
  ModelBuilder m(13);
  m.input("x", kFloat, {3, 4, 5}).output("y");
  test::set_attr_int(m.node("LogSoftmax", {"x"}, {"y"}), "axis", 1);
  Compiled c = compile_fused(m);
  CHECK_THAT(c.source,
             Catch::Contains(
                 "node 'LogSoftmax_1/ReduceMax' (ReduceMax): float32[3,1,5] <- float32[3,4,5]"));
  CHECK_THAT(c.source, Catch::Contains("const int64_t base = (line / 5) * 20 + line % 5;"));
  CHECK_THAT(
      c.source,
      Catch::Contains(
          "node 'LogSoftmax_1/Sub_1' (Sub): float32[3,4,5] <- float32[3,4,5], float32[3,1,5]"));
}

TEST_CASE("lowered Softmax before opset 13 normalizes the trailing axes from axis", "[emitter]") {
  // Proves: opset-11 softmax with axis 1 on [2,3,40] normalizes rows of 3 * 40 = 120.
  ModelBuilder m(11);
  m.input("x", kFloat, {2, 3, 40}).output("y");
  m.node("Softmax", {"x"}, {"y"});
  Compiled c = compile_fused(m);
  CHECK(only_kernel(c).scheme == StitchScheme::Regional);
  CHECK_THAT(c.source, Catch::Contains("const int64_t lines = 2;"));
  CHECK_THAT(c.source, Catch::Contains("const int64_t length = 120;"));
}

TEST_CASE("lowered LayerNormalization of a long row stages it in shared memory", "[emitter]") {
  // Proves: a 10240-element row (10 per thread of a 1024-thread block) is one Regional
  // kernel that stages the row in dynamic shared memory, and the variance is two-pass: the
  // mean, then the mean of the squared deviations from it.
  ModelBuilder m(17);
  m.input("x", kFloat, {8, 10240}).input("w", kFloat, {10240}).input("b", kFloat, {10240});
  m.output("y");
  m.node("LayerNormalization", {"x", "w", "b"}, {"y"});
  Compiled c = compile_fused(m);
  const FusionGroup& g = only_kernel(c);
  CHECK(g.scheme == StitchScheme::Regional);
  CHECK(g.mapping == ThreadMapping::BlockPerRow);
  CHECK(g.launch.dynamic_shared_bytes >= 10240 * 4);
  CHECK_THAT(c.source, Catch::Contains("STITCH_DYNAMIC_SHARED(unsigned char, row_bytes);"));
  CHECK_THAT(c.source, Catch::Contains("const float r0 = acc0 / 10240.0f;"));
  CHECK_THAT(c.source, Catch::Contains("const float t0 = stitch::ops::sub(x0, r0);"));
  CHECK_THAT(c.source, Catch::Contains("const float t1 = stitch::ops::mul(t0, t0);"));
  CHECK_THAT(c.source, Catch::Contains("const float r2 = stitch::ops::add(r1, 9.99999975e-06f);"));
  CHECK_THAT(c.source, Catch::Contains("const float t1 = stitch::ops::div(t0, r3);"));
}

TEST_CASE("lowered LayerNormalization writes Mean and InvStdDev once per row", "[emitter]") {
  // Proves: the optional statistics outputs are per-row values of the one Regional kernel,
  // written by the row's first thread.
  ModelBuilder m(17);
  m.input("x", kFloat, {64, 256})
      .input("w", kFloat, {256})
      .output("y")
      .output("mean")
      .output("inv");
  m.node("LayerNormalization", {"x", "w"}, {"y", "mean", "inv"});
  Compiled c = compile_fused(m);
  CHECK(only_kernel(c).scheme == StitchScheme::Regional);
  CHECK_THAT(c.source, Catch::Contains("if (thread == 0) out0[line] = r0;"));
  CHECK_THAT(c.source, Catch::Contains("if (thread == 0) out2[line] = r4;"));
}

TEST_CASE("lowered GroupNormalization normalizes [N, G, C/G * D] rows", "[emitter]") {
  // Proves: opset-21 GroupNormalization of [2,8,4,4] with 4 groups is one Regional kernel
  // over 8 rows of 32, and a Local kernel applying the per-channel scale and bias.
  ModelBuilder m(21);
  m.input("x", kFloat, {2, 8, 4, 4}).input("s", kFloat, {8}).input("b", kFloat, {8}).output("y");
  test::set_attr_int(m.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 4);
  Compiled c = compile_fused(m);
  CHECK_THAT(c.source, Catch::Contains("// Fused group 1 (Regional): 8 rows of 32 elements"));
  CHECK_THAT(c.source, Catch::Contains("node 'GroupNormalization_1/Mul_1' (Mul): float32[2,8,4,4] "
                                       "<- float32[2,8,4,4], float32[8,1,1]"));
}

TEST_CASE("ArgMax with select_last_index breaks ties toward the last index", "[emitter]") {
  // Proves: the pair functor carries the tie rule, and the result is the index.
  ModelBuilder m(13);
  m.input("x", kFloat, {256, 300}).output("y");
  auto& n = m.node("ArgMax", {"x"}, {"y"});
  test::set_attr_int(n, "axis", 1);
  test::set_attr_int(n, "select_last_index", 1);
  Compiled c = compile(m);
  CHECK_THAT(c.source, Catch::Contains("best = stitch::rows::ArgBest<true, true>{}(best, "
                                       "stitch::rows::ArgPair<float>{x[base + k], k});"));
  CHECK_THAT(c.source, Catch::Contains("y[line] = best.index;"));
}

TEST_CASE("CumSum along rows scans 32 elements at a time per warp", "[emitter]") {
  // Proves: a reversed exclusive running sum over rows of 100 int32 uses the warp scan with
  // the positions mirrored, accumulating in 64 bits.
  ModelBuilder m(14);
  m.input("x", kInt32, {64, 100}).output("y");
  m.initializer_i64("axis", {}, {1});
  auto& n = m.node("CumSum", {"x", "axis"}, {"y"});
  test::set_attr_int(n, "exclusive", 1);
  test::set_attr_int(n, "reverse", 1);
  Compiled c = compile(m);
  CHECK(only_kernel(c).mapping == ThreadMapping::WarpPerRow);
  CHECK_THAT(c.source, Catch::Contains("const int64_t k = length - 1 - (chunk + lane);"));
  CHECK_THAT(c.source, Catch::Contains("stitch::rows::warp_scan_chunk(v, carry, true);"));
  CHECK_THAT(c.source, Catch::Contains("stitch::ops::cast_to<int32_t>(s)"));
}

TEST_CASE("lowered BatchNormalization is one Mul and one Add per channel", "[emitter]") {
  // Proves: inference BatchNormalization with run-time statistics computes the per-channel
  // factor and shift in one small kernel and applies them as x * s + b' broadcast from [3,1,1].
  ModelBuilder m(15);
  m.input("x", kFloat, {2, 3, 4, 5});
  for (const char* name : {"s", "b", "mean", "var"})
    m.input(name, kFloat, {3});
  m.output("y");
  m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"});
  Compiled c = compile_fused(m);
  CHECK_THAT(c.source, Catch::Contains("node 'BatchNormalization_1/Mul_1' (Mul): float32[2,3,4,5] "
                                       "<- float32[2,3,4,5], float32[3,1,1]"));
  CHECK_THAT(c.source, Catch::Contains("node 'BatchNormalization_1/Add_1' (Add): float32[2,3,4,5] "
                                       "<- float32[2,3,4,5], float32[3,1,1]"));
}
