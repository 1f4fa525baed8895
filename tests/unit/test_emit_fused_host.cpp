// Fused kernels end to end on the host target: each case compiles one small model twice
// through stitchc's library path (build_library, --target host) — once one kernel per op, once
// with a hand-built fused group — runs both on the same random inputs (never zeros) and requires
// the fused outputs to equal the unfused ones: bitwise where the fused kernel performs the same
// operations in the same order, else within fp32 tolerance (rtol 1e-5, atol 1e-6).
#include <catch2/catch.hpp>

#include "planner/legality_internal.h"
#include "planner/plan_common.h"
#include "test_emit_fused_support.h"

using namespace stitch;
using namespace stitch::test;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr double kRtol = 1e-5, kAtol = 1e-6;

// `m` through the pipeline in `precision`, the passes `disabled` skipped.
Graph compiled_in(const ModelBuilder& m, Precision precision,
                  const std::set<std::string>& disabled = {}) {
  Graph g = load_onnx(m.write());
  PipelineOptions options;
  options.precision.precision = precision;
  options.disabled = disabled;
  run_pipeline(g, options);
  return g;
}

std::vector<int32_t> all_nodes(const Graph& g) {
  std::vector<int32_t> nodes;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    nodes.push_back(static_cast<int32_t>(n));
  return nodes;
}

std::vector<std::vector<float>> random_inputs(const Graph& g, unsigned seed,
                                              bool positive = false) {
  std::vector<std::vector<float>> inputs;
  for (TensorId t : g.inputs)
    inputs.push_back(
        random_values(static_cast<size_t>(g.tensor(t).elements()), seed++, 0.25f, 2.0f, !positive));
  return inputs;
}

// Runs the per-op plan and `fused` on the same inputs; compares.
void check_fused_equals_unfused(const Graph& g, const FusionGroup& fused, const std::string& tag,
                                double rtol, double atol, bool positive = false) {
  const auto inputs = random_inputs(g, 17, positive);
  const auto unfused =
      run_on_host(g, plan_one_kernel_per_op(g, DeviceParams{}), inputs, tag + "-unfused");
  const FusionPlan plan = plan_with(g, fused);
  const auto fused_out = run_on_host(g, plan, inputs, tag + "-fused");
  require_close(unfused, fused_out, rtol, atol);
}

// The Regional group legality makes of `nodes` with `mapping` imposed; it must cover `rows` rows
// of `length` and keep its cached rows where `cache` says.
FusionGroup regional(const Graph& g, std::vector<int32_t> nodes, int64_t rows, int64_t length,
                     ThreadMapping mapping, const DeviceParams& device = DeviceParams{}) {
  FusionGroup group = legal_group(g, std::move(nodes), with_row_mapping(mapping), device);
  const auto& spec = std::get<RegionalSpec>(group.spec);
  REQUIRE(spec.rows == rows);
  REQUIRE(spec.row_length == length);
  REQUIRE(group.mapping == mapping);
  return group;
}

// The device stitchc plans for with --target host: a cooperative grid fits the CUDA emulation's
// resident blocks (kHostTargetMultiprocessors), not an H100's.
DeviceParams host_device() {
  DeviceParams device;
  device.cooperative_sm_count = kHostTargetMultiprocessors;
  return device;
}

// The group the planner's legality makes of `nodes` (it must accept them) for `device`.
FusionGroup planned_group(const Graph& g, const std::vector<int32_t>& nodes,
                          const DeviceParams& device = DeviceParams{}) {
  return legal_group(g, nodes, {}, device);
}

ModelBuilder expanded_layer_norm(int64_t rows, int64_t length) {
  ModelBuilder m(13);
  m.input("x", kFloat, {rows, length}).input("g", kFloat, {length}).input("b", kFloat, {length});
  m.output("y");
  m.initializer_f32("two", {}, {2.0f});
  m.initializer_f32("eps", {}, {1e-5f});
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"d2"});
  test::set_attr_ints(m.node("ReduceMean", {"d2"}, {"var"}), "axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"sd"});
  m.node("Div", {"d", "sd"}, {"n"});
  m.node("Mul", {"n", "g"}, {"ng"});
  m.node("Add", {"ng", "b"}, {"y"});
  return m;
}

} // namespace

TEST_CASE("fused Local on the host equals per-op, bitwise, with broadcasts and two outputs",
          "[emitter][fused][host]") {
  // Proves: a pointwise DAG with a broadcast bias [37] and a column scale [4,1], whose
  // intermediate is also a graph output, gives the per-op results bit for bit.
  ModelBuilder m;
  m.input("x", kFloat, {4, 37}).input("b", kFloat, {37}).input("c", kFloat, {4, 1});
  m.output("xs").output("y");
  m.initializer_f32("s", {}, {0.125f});
  m.node("Mul", {"x", "s"}, {"xs"});
  m.node("Add", {"xs", "b"}, {"xb"});
  m.node("Mul", {"xb", "c"}, {"xc"});
  m.node("Sigmoid", {"xc"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(group.outputs.size() == 2);
  check_fused_equals_unfused(g, group, "local", 0, 0);
}

TEST_CASE("fused Local with 16-byte vectors and a tail on the host equals per-op, bitwise",
          "[emitter][fused][host]") {
  // Proves: the vector body and the scalar tail (135 = 33 * 4 + 3 elements) together cover
  // every element once, with a scalar operand broadcast into every lane.
  ModelBuilder m;
  m.input("x", kFloat, {5, 27}).input("z", kFloat, {5, 27}).input("k", kFloat, {1}).output("y");
  m.node("Add", {"x", "z"}, {"s"});
  m.node("Mul", {"s", "k"}, {"sk"});
  m.node("Tanh", {"sk"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(std::get<LocalSpec>(group.spec).vector_width == 4);
  check_fused_equals_unfused(g, group, "local-vec", 0, 0);
}

TEST_CASE("fused Regional expanded LayerNorm on the host, warp per row with a tail",
          "[emitter][fused][host]") {
  // Proves: the nine-node LayerNorm over rows of 100 (not a multiple of 32) as one warp-per-row
  // kernel with the row in registers equals the per-op kernels.
  Graph g = load_graph(expanded_layer_norm(24, 100));
  check_fused_equals_unfused(g, regional(g, all_nodes(g), 24, 100, ThreadMapping::WarpPerRow),
                             "layernorm-warp", kRtol, kAtol);
}

TEST_CASE("fused Regional expanded LayerNorm on the host, block per long row",
          "[emitter][fused][host]") {
  // Proves: a block per row of 3000 elements (4 per thread of 768, in registers), and of 10003
  // elements (10 per thread of 1024, a ragged tail) with the row in shared memory and with no
  // cache at all (every pass reads global memory), equal the per-op kernels.
  Graph g = load_graph(expanded_layer_norm(3, 3000));
  FusionGroup registers = regional(g, all_nodes(g), 3, 3000, ThreadMapping::BlockPerRow);
  CHECK(std::get<RegionalSpec>(registers.spec).cache == RowCache::Registers);
  check_fused_equals_unfused(g, registers, "layernorm-block-registers", kRtol, kAtol);
  Graph long_rows = load_graph(expanded_layer_norm(3, 10003));
  FusionGroup shared =
      regional(long_rows, all_nodes(long_rows), 3, 10003, ThreadMapping::BlockPerRow);
  CHECK(std::get<RegionalSpec>(shared.spec).cache == RowCache::Shared);
  check_fused_equals_unfused(long_rows, shared, "layernorm-block-shared", kRtol, kAtol);
  DeviceParams small; // too little shared memory for the row: every pass reads it again
  small.max_shared_per_block = 16 * 1024;
  FusionGroup none =
      regional(long_rows, all_nodes(long_rows), 3, 10003, ThreadMapping::BlockPerRow, small);
  CHECK(std::get<RegionalSpec>(none.spec).cache == RowCache::None);
  check_fused_equals_unfused(long_rows, none, "layernorm-block-none", kRtol, kAtol);
}

TEST_CASE("fused Regional softmax with scale and mask on the host", "[emitter][fused][host]") {
  // Proves: x * 0.125 + mask (broadcast over heads and query rows) followed by Softmax (lowered
  // to ReduceMax, Sub, Exp, ReduceSum, Div) is one kernel over rows of 40, equal to the per-op
  // kernels.
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 3, 5, 40}).input("mask", kFloat, {2, 1, 1, 40}).output("y");
  m.initializer_f32("scale", {}, {0.125f});
  m.node("Mul", {"x", "scale"}, {"xs"});
  m.node("Add", {"xs", "mask"}, {"xm"});
  test::set_attr_int(m.node("Softmax", {"xm"}, {"y"}), "axis", -1);
  Graph g = load_graph(m);
  check_fused_equals_unfused(g, regional(g, all_nodes(g), 30, 40, ThreadMapping::WarpPerRow),
                             "softmax-mask", kRtol, kAtol);
}

TEST_CASE("fused Regional expanded softmax on the host", "[emitter][fused][host]") {
  // Proves: x * scale -> ReduceMax -> Sub -> Exp -> ReduceSum -> Div, with keepdims per-row
  // values broadcast back along the row, equals the per-op kernels.
  ModelBuilder m(11);
  m.input("x", kFloat, {6, 50}).output("y");
  m.initializer_f32("scale", {}, {0.5f});
  m.node("Mul", {"x", "scale"}, {"xs"});
  test::set_attr_ints(m.node("ReduceMax", {"xs"}, {"mx"}), "axes", {1});
  m.node("Sub", {"xs", "mx"}, {"d"});
  m.node("Exp", {"d"}, {"e"});
  test::set_attr_ints(m.node("ReduceSum", {"e"}, {"se"}), "axes", {1});
  m.node("Div", {"e", "se"}, {"y"});
  Graph g = load_graph(m);
  check_fused_equals_unfused(g, regional(g, all_nodes(g), 6, 50, ThreadMapping::WarpPerRow),
                             "softmax-expanded", kRtol, kAtol);
}

TEST_CASE("fused Regional LayerNormalization op with consumers and per-row outputs on the host",
          "[emitter][fused][host]") {
  // Proves: a LayerNormalization node (lowered) followed by Relu and a residual Add, also
  // writing its Mean output per row, is one kernel equal to the per-op kernels.
  ModelBuilder m(17);
  m.input("x", kFloat, {8, 96})
      .input("w", kFloat, {96})
      .input("bias", kFloat, {96})
      .input("res", kFloat, {8, 96});
  m.output("y").output("mean");
  m.node("LayerNormalization", {"x", "w", "bias"}, {"ln", "mean"});
  m.node("Relu", {"ln"}, {"r"});
  m.node("Add", {"r", "res"}, {"y"});
  Graph g = load_graph(m);
  check_fused_equals_unfused(g, regional(g, all_nodes(g), 8, 96, ThreadMapping::WarpPerRow),
                             "layernorm-op", kRtol, kAtol);
}

TEST_CASE("fused Independent parts on the host equal per-op", "[emitter][fused][host]") {
  // Proves: a pointwise part and a row-reduction part launched together on disjoint blocks both
  // produce the per-op results.
  Graph g = independent_parts_graph();
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(std::holds_alternative<IndependentSpec>(group.spec));
  check_fused_equals_unfused(g, group, "independent", kRtol, kAtol);
}

TEST_CASE("fused Global column mean and broadcast consumer on the host", "[emitter][fused][host]") {
  // Proves: a column mean over 300 rows split across the cooperative blocks, combined in block
  // order after a grid barrier, and the consumer x - mean after a second one, equal the per-op
  // results (positive inputs keep the reordered sums well conditioned).
  ModelBuilder m(13);
  m.input("x", kFloat, {300, 24}).output("y").output("mean");
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {0});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Mul", {"d", "d"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = legal_group(g, all_nodes(g), {}, host_device());
  REQUIRE(std::holds_alternative<ColumnSpec>(group.spec));
  REQUIRE(group.launch.grid[0] > 1);
  check_fused_equals_unfused(g, group, "global", kRtol, kAtol, true);
}

TEST_CASE("planned Regional group with per-row mask arithmetic on the host",
          "[emitter][fused][host]") {
  // Proves: pointwise nodes whose results are per-row ([2,16] and [2,16,1] in the row space
  // [2,16,64]) are evaluated once per row, reading per-row inputs (a [2,16] mask, a [16,1] bias
  // broadcast into the result) and per-row values (a keepdims=0 max), as the planner groups
  // them with the row reductions; equal to the per-op kernels, bitwise.
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 16, 64}).input("mask", kFloat, {2, 16}).input("w", kFloat, {16, 1});
  m.output("d").output("bias").output("s").output("q");
  m.initializer_f32("one", {}, {1.0f});
  m.initializer_f32("big", {}, {-10000.0f});
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Sub", {"one", "mask"}, {"inv"});
  m.node("Mul", {"inv", "big"}, {"bias"});
  m.node("Add", {"mean", "w"}, {"s"});
  auto& max = m.node("ReduceMax", {"x"}, {"r"});
  test::set_attr_ints(max, "axes", {-1});
  test::set_attr_int(max, "keepdims", 0);
  m.node("Mul", {"r", "mask"}, {"q"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g));
  CHECK(group.scheme == StitchScheme::Regional);
  CHECK(group.rows == 32);
  CHECK(group.row_length == 64);
  check_fused_equals_unfused(g, group, "per-row-mask", 0, 0);
}

TEST_CASE("planned Regional global pools with their producer and consumers on the host",
          "[emitter][fused][host]") {
  // Proves: GlobalAveragePool and GlobalMaxPool over NCHW are row reductions over H*W (rows =
  // N*C = 16, row_length = 25) in one Regional group with the Relu before them and a per-row
  // scale after, equal to the per-op kernels.
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 8, 5, 5}).input("scale", kFloat, {1, 8, 1, 1});
  m.output("avg").output("max");
  m.node("Relu", {"x"}, {"r"});
  m.node("GlobalAveragePool", {"r"}, {"pooled"});
  m.node("Mul", {"pooled", "scale"}, {"avg"});
  m.node("GlobalMaxPool", {"r"}, {"max"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g));
  CHECK(group.scheme == StitchScheme::Regional);
  CHECK(group.rows == 16);
  CHECK(group.row_length == 25);
  check_fused_equals_unfused(g, group, "global-pools", kRtol, kAtol);
}

TEST_CASE("planned Global column mean with consumers on the host", "[emitter][fused][host]") {
  // Proves: the planner's Global group (its grid, its scratch of (grid + 1) x columns fp32
  // accumulators, placed by the memory plan) compiles and equals the per-op kernels. Planned
  // for the host target's emulated device (4 multiprocessors, host_config.h): a cooperative
  // grid sized for an H100's 132 SMs cannot be resident there.
  ModelBuilder m(13);
  m.input("x", kFloat, {512, 48}).output("y").output("mean");
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {0});
  m.node("Div", {"x", "mean"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g), host_device());
  CHECK(group.scheme == StitchScheme::Global);
  CHECK(group.launch.cooperative);
  CHECK(group.scratch_bytes == (group.launch.grid[0] + 1) * 48 * 4);
  check_fused_equals_unfused(g, group, "planned-global", kRtol, kAtol, true);
}

TEST_CASE("a Global group planned for an H100 runs on a device of fewer SMs, its grid sized when "
          "the model is created",
          "[emitter][fused][host]") {
  // Proves: the cooperative grid is the device's, not the plan's: a column mean planned for an
  // H100 SXM (132 SMs: a grid the host target's 4 emulated SMs cannot keep resident, whose
  // launch would fail) runs there, and on one emulated SM, with the blocks each keeps resident;
  // the kernel splits its rows among the blocks it gets and equals the per-op kernels.
  ModelBuilder m(13);
  m.input("x", kFloat, {2048, 40}).output("y").output("mean");
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {0});
  m.node("Div", {"x", "mean"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g), DeviceParams{});
  REQUIRE(group.scheme == StitchScheme::Global);
  CHECK(group.launch.grid[0] > 4 * 8); // more than 4 emulated SMs keep resident
  check_fused_equals_unfused(g, group, "global-h100-grid", kRtol, kAtol, true);
  const ScopedEnv one_sm("STITCH_HOST_SM_COUNT", "1");
  check_fused_equals_unfused(g, group, "global-one-sm", kRtol, kAtol, true);
}

TEST_CASE("a kernel needing more shared memory than the device grants fails when the model is "
          "created",
          "[emitter][fused][host]") {
  // Proves: a block per row of 16384 floats kept in shared memory (64 KiB, opted in) loads on a
  // device that grants it, and on one that grants a block 60 KiB (STITCH_HOST_MAX_SHARED_KIB),
  // stitch_model_create fails with a message naming the group, the kernel, the bytes and the
  // device's limit, instead of the first run failing.
  Graph g = load_graph(expanded_layer_norm(2, 16384));
  FusionGroup group = regional(g, all_nodes(g), 2, 16384, ThreadMapping::BlockPerRow);
  REQUIRE(std::get<RegionalSpec>(group.spec).cache == RowCache::Shared);
  REQUIRE(group.launch.dynamic_shared_bytes > 48 * 1024);
  const FusionPlan plan = plan_with(g, group);
  CHECK(model_create_error_on_host(g, plan, "shared-granted").empty());
  const ScopedEnv sixty_kib("STITCH_HOST_MAX_SHARED_KIB", "60");
  const std::string error = model_create_error_on_host(g, plan, "shared-refused");
  INFO(error);
  CHECK(error.find("stitch_model_create: group ") == 0);
  CHECK(error.find(fmt::format("needs {} bytes of dynamic shared memory",
                               group.launch.dynamic_shared_bytes)) != std::string::npos);
  CHECK(error.find("at most 61440") != std::string::npos);
}

// ---- Global around a matrix-vector product (kernel_fused_gemv.cpp) ----

TEST_CASE("planned Global group: pooled rows into a Linear layer and its consumer on the host",
          "[emitter][fused][host]") {
  // Proves: a Relu, a GlobalAveragePool (rows of 5x5), a Flatten view and a one-row Gemm
  // (W [12,16] constant with transB, alpha 0.5, beta 2 times a bias) and a Tanh after it are one
  // cooperative Global group: the pooled vector through scratch and a grid barrier, then a
  // warp per output reading W in 16-byte vectors. The pooled values are also a graph output
  // (written from scratch). Equal to the per-op plan (cuBLASLt's GEMM on the host target)
  // within fp32 tolerance; planned for the host target's emulated device.
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 16, 5, 5}).output("y").output("pooled");
  m.initializer_f32("w", {12, 16}, random_values(12 * 16, 5, 0.25f, 2.0f, true));
  m.initializer_f32("bias", {12}, random_values(12, 6, 0.25f, 2.0f, true));
  m.node("Relu", {"x"}, {"r"});
  m.node("GlobalAveragePool", {"r"}, {"pooled"});
  m.node("Flatten", {"pooled"}, {"flat"});
  auto& gemm = m.node("Gemm", {"flat", "w", "bias"}, {"fc"});
  test::set_attr_int(gemm, "transB", 1);
  test::set_attr_float(gemm, "alpha", 0.5f);
  test::set_attr_float(gemm, "beta", 2.0f);
  m.node("Tanh", {"fc"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g), host_device());
  CHECK(group.scheme == StitchScheme::Global);
  CHECK(group.launch.cooperative);
  CHECK(group.launch.vector_width == 4);
  CHECK(group.scratch_bytes == 16 * 4);
  CHECK(group.outputs.size() == 2);
  check_fused_equals_unfused(g, group, "row-gemv-linear", kRtol, kAtol);
}

TEST_CASE("planned Global group: row maxima into a MatMul, a thread per output, on the host",
          "[emitter][fused][host]") {
  // Proves: a Mul by a per-row scale and a ReduceMax over the last axis (24 rows of 40) feed a
  // MatMul with B [24,10] as a graph input ([K,N]: a thread per output, scalar loads) and an
  // Add of a bias row and a Sigmoid after it, in one Global group equal to the per-op plan.
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 24, 40}).input("scale", kFloat, {1, 24, 1});
  m.input("b", kFloat, {24, 10}).input("shift", kFloat, {10}).output("y");
  m.node("Mul", {"x", "scale"}, {"xs"});
  auto& max = m.node("ReduceMax", {"xs"}, {"maxima"});
  test::set_attr_ints(max, "axes", {-1});
  test::set_attr_int(max, "keepdims", 0);
  m.node("MatMul", {"maxima", "b"}, {"product"});
  m.node("Add", {"product", "shift"}, {"shifted"});
  m.node("Sigmoid", {"shifted"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g), host_device());
  CHECK(group.scheme == StitchScheme::Global);
  CHECK(group.rows == 24);
  CHECK(group.row_length == 40);
  CHECK(group.launch.vector_width == 1);
  check_fused_equals_unfused(g, group, "row-gemv-matmul", kRtol, kAtol);
}

// ---- cuDNN convolution epilogues (library_calls.cpp) ----

TEST_CASE("planned convolution epilogues: residual add and Relu, bitwise as the separate ops",
          "[emitter][fused][host]") {
  // Proves: a strided Conv with a bias, the residual add of a graph input and a Relu are one
  // library call (stitch_library_conv_epilogue) whose result equals the per-op plan bitwise;
  // and so is a Conv with only its residual add (the identity activation).
  for (bool relu : {true, false}) {
    INFO("relu " << relu);
    ModelBuilder m(13);
    m.input("x", kFloat, {2, 6, 9, 9}).input("skip", kFloat, {2, 4, 5, 5});
    m.initializer_f32("w", {4, 6, 3, 3}, random_values(4 * 6 * 9, 8, 0.25f, 2.0f, true));
    m.initializer_f32("bias", {4}, random_values(4, 9, 0.25f, 2.0f, true));
    m.output("y");
    auto& conv = m.node("Conv", {"x", "w", "bias"}, {"c"});
    test::set_attr_ints(conv, "strides", {2, 2});
    test::set_attr_ints(conv, "pads", {1, 1, 1, 1});
    m.node("Add", {"skip", "c"}, {relu ? "s" : "y"});
    if (relu) m.node("Relu", {"s"}, {"y"});
    Graph g = load_graph(m);
    FusionGroup group = planned_group(g, all_nodes(g));
    CHECK(group.kind == GroupKind::ConvLibrary);
    CHECK(group.nodes.size() == (relu ? 3u : 2u));
    check_fused_equals_unfused(g, group, relu ? "conv-add-relu" : "conv-add", 0, 0);
  }
}

// ---- Local around a window op (kernel_fused_window.cpp) ----

TEST_CASE("planned window group: depthwise Conv with producers and consumers on the host",
          "[emitter][fused][host]") {
  // Proves: a depthwise Conv (group = channels, W [6,1,3,3]) with stride 2, dilation 2 on the
  // last axis and asymmetric pads, its two pointwise producers (one reading a per-channel
  // scale, so each tap computes its input coordinates) recomputed at every tap, and two
  // consumers (one reading a per-channel shift), is one planned Local group whose results
  // equal the per-op plan's (cuDNN's convolution on the host target) within fp32 tolerance.
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 6, 9, 11}).input("scale", kFloat, {1, 6, 1, 1});
  m.input("w", kFloat, {6, 1, 3, 3}).input("bias", kFloat, {6}).input("shift", kFloat, {6, 1, 1});
  m.output("y");
  m.node("Mul", {"x", "scale"}, {"xs"});
  m.node("Relu", {"xs"}, {"r"});
  auto& conv = m.node("Conv", {"r", "w", "bias"}, {"c"});
  test::set_attr_int(conv, "group", 6);
  test::set_attr_ints(conv, "strides", {2, 2});
  test::set_attr_ints(conv, "dilations", {1, 2});
  test::set_attr_ints(conv, "pads", {1, 0, 2, 1});
  m.node("Add", {"c", "shift"}, {"cs"});
  m.node("Tanh", {"cs"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g));
  CHECK(group.kind == GroupKind::Kernel);
  CHECK(group.scheme == StitchScheme::Local);
  CHECK(group.outputs.size() == 1);
  check_fused_equals_unfused(g, group, "window-dwconv", kRtol, kAtol);
}

TEST_CASE("planned window group: 1-D depthwise Conv, SAME_UPPER, no bias, two outputs, on the host",
          "[emitter][fused][host]") {
  // Proves: one spatial axis, auto_pad SAME_UPPER with a stride, no bias input, and the
  // window's own result written besides its consumer's. (Pads of one each side: the per-op
  // reference, cuDNN's convolution, takes symmetric pads only.)
  ModelBuilder m(13);
  m.input("x", kFloat, {3, 4, 17}).input("w", kFloat, {4, 1, 3});
  m.output("c").output("y");
  m.node("Sigmoid", {"x"}, {"s"});
  auto& conv = m.node("Conv", {"s", "w"}, {"c"});
  test::set_attr_int(conv, "group", 4);
  test::set_attr_string(conv, "auto_pad", "SAME_UPPER");
  test::set_attr_ints(conv, "strides", {2});
  m.node("Neg", {"c"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g));
  CHECK(group.scheme == StitchScheme::Local);
  CHECK(group.outputs.size() == 2);
  check_fused_equals_unfused(g, group, "window-dwconv-1d", kRtol, kAtol);
}

TEST_CASE(
    "planned window group: MaxPool with ceil_mode, a broadcast producer and a consumer, bitwise",
    "[emitter][fused][host]") {
  // Proves: a MaxPool (3x3, stride 2, pads, ceil_mode: the last window hangs past the end)
  // over a producer that subtracts a row [11] (each tap computes its coordinates) and before a
  // per-channel scale gives the per-op results bit for bit: the same values, compared in the
  // same order.
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 3, 8, 11}).input("row", kFloat, {11}).input("k", kFloat, {1, 3, 1, 1});
  m.output("y");
  m.node("Sub", {"x", "row"}, {"d"});
  auto& pool = m.node("MaxPool", {"d"}, {"p"});
  test::set_attr_ints(pool, "kernel_shape", {3, 3});
  test::set_attr_ints(pool, "strides", {2, 2});
  test::set_attr_ints(pool, "pads", {1, 1, 0, 0});
  test::set_attr_int(pool, "ceil_mode", 1);
  m.node("Mul", {"p", "k"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g));
  CHECK(group.scheme == StitchScheme::Local);
  check_fused_equals_unfused(g, group, "window-maxpool", 0, 0);
}

TEST_CASE("planned window group: AveragePool counting the pad, bitwise", "[emitter][fused][host]") {
  // Proves: AveragePool with count_include_pad and strides sums its producer's values in the
  // single-op kernel's order and divides by the same count: bit for bit.
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 5, 10, 7}).output("y");
  m.node("Exp", {"x"}, {"e"});
  auto& pool = m.node("AveragePool", {"e"}, {"a"});
  test::set_attr_ints(pool, "kernel_shape", {2, 3});
  test::set_attr_ints(pool, "strides", {2, 1});
  test::set_attr_ints(pool, "pads", {1, 1, 1, 1});
  test::set_attr_int(pool, "count_include_pad", 1);
  m.node("Sqrt", {"a"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = planned_group(g, all_nodes(g));
  CHECK(group.scheme == StitchScheme::Local);
  check_fused_equals_unfused(g, group, "window-avgpool", 0, 0);
}

TEST_CASE("planned Independent parts keep the blocks the plan gives them, on the host",
          "[emitter][fused][host]") {
  // Proves: the planner's Independent group (a pointwise part and a row-reduction part) gives
  // each part the blocks its own kernel would have, and the emitter lays them out in that
  // order without choosing a split of its own; the results equal the per-op kernels'.
  Graph g = independent_parts_graph();
  FusionGroup group = planned_group(g, all_nodes(g));
  REQUIRE(group.scheme == StitchScheme::Independent);
  REQUIRE(group.part_blocks.size() == 2);
  CHECK(group.part_blocks[0] + group.part_blocks[1] == group.launch.grid[0]);
  check_fused_equals_unfused(g, group, "planned-independent", kRtol, kAtol);
}

namespace {

// Rotary embedding as exporters write it: the head transpose, rotate_half (two Slices, Neg,
// Concat) and x * cos + rotate_half(x) * sin, on [batch, sequence, heads, dim] input.
ModelBuilder rotary_model() {
  ModelBuilder m(17);
  m.input("x", kFloat, {2, 8, 3, 16}).input("cos", kFloat, {8, 16}).input("sin", kFloat, {8, 16});
  m.output("y");
  m.initializer_i64("zero", {1}, {0});
  m.initializer_i64("half", {1}, {8});
  m.initializer_i64("end", {1}, {16});
  m.initializer_i64("last", {1}, {3});
  test::set_attr_ints(m.node("Transpose", {"x"}, {"q"}), "perm", {0, 2, 1, 3});
  m.node("Slice", {"q", "zero", "half", "last"}, {"q1"});
  m.node("Slice", {"q", "half", "end", "last"}, {"q2"});
  m.node("Neg", {"q2"}, {"nq2"});
  set_attr_int(m.node("Concat", {"nq2", "q1"}, {"rot"}), "axis", -1);
  m.node("Mul", {"q", "cos"}, {"qc"});
  m.node("Mul", {"rot", "sin"}, {"rs"});
  m.node("Add", {"qc", "rs"}, {"y"});
  return m;
}

} // namespace

TEST_CASE("fused Local reads through rotary embedding's transpose, slices and concat on the host",
          "[emitter][fused][host]") {
  // Proves: a Local group holding the Transpose, both Slices and the Concat (index remappings
  // its consumers read through, each Concat part on the elements it covers) computes what one
  // kernel per op does, bit for bit.
  Graph g = load_graph(rotary_model());
  FusionGroup group = legal_group(g, all_nodes(g));
  const auto& spec = std::get<LocalSpec>(group.spec);
  REQUIRE(spec.moves.size() == 4);
  REQUIRE(spec.vector_width == 1);
  REQUIRE(group.outputs == std::vector<TensorId>{g.outputs[0]});
  check_fused_equals_unfused(g, group, "rotary", 0, 0);
}

TEST_CASE("fused Local reads through a reversed strided slice and a three-part concat and writes "
          "through a transpose on the host",
          "[emitter][fused][host]") {
  // Proves: a Slice with steps of -2 on two axes, a Concat whose parts are that slice, a view
  // of another group's result and an input (an empty operand in between covers nothing),
  // values cast to integers and back, and a Transpose after the last pointwise node (the
  // iteration is the transposed shape, the operand read at permuted coordinates) give the
  // per-op results bit for bit.
  ModelBuilder m(17);
  m.input("a", kFloat, {6, 10}).input("b", kFloat, {1, 5}).input("c", kFloat, {2, 5});
  m.input("e", kFloat, {0, 5});
  m.output("y");
  m.initializer_i64("starts", {2}, {5, 9});
  m.initializer_i64("ends", {2}, {-100, -100});
  m.initializer_i64("axes", {2}, {0, 1});
  m.initializer_i64("steps", {2}, {-2, -2});
  m.initializer_i64("shape", {3}, {1, 2, 5});
  m.node("Slice", {"a", "starts", "ends", "axes", "steps"}, {"s"}); // [3,5]: rows 5,3,1
  m.node("Expand", {"b", "shape"}, {"bx"});                         // [1,2,5]
  m.node("Relu", {"c"}, {"rc"});                                    // [2,5]
  m.node("Add", {"rc", "bx"}, {"q"});                               // [1,2,5]
  m.initializer_i64("flat", {2}, {2, 5});
  m.node("Reshape", {"q", "flat"}, {"qf"});                                  // a view, outside
  set_attr_int(m.node("Concat", {"s", "e", "qf", "c"}, {"cat"}), "axis", 0); // [7,5]
  set_attr_int(m.node("Cast", {"cat"}, {"ci"}), "to", onnx::TensorProto::INT32);
  set_attr_int(m.node("Cast", {"ci"}, {"cf"}), "to", kFloat);
  m.node("Mul", {"cat", "cf"}, {"p"});
  test::set_attr_ints(m.node("Transpose", {"p"}, {"y"}), "perm", {1, 0}); // [5,7]
  Graph g = load_graph(m);
  // The group: the Slice and what follows the view; the Expand, Relu and Add run per op.
  std::vector<int32_t> after;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const OpKind op = g.nodes[n].op;
    if (op == OpKind::Slice || op == OpKind::Concat || op == OpKind::Cast || op == OpKind::Mul ||
        op == OpKind::Transpose)
      after.push_back(static_cast<int32_t>(n));
  }
  FusionGroup group = legal_group(g, after);
  REQUIRE(std::get<LocalSpec>(group.spec).moves.size() == 3); // Slice, Concat, Transpose
  check_fused_equals_unfused(g, group, "remapped", 0, 0);
}

TEST_CASE("fused Local reads through constant Pads (before, after, a fill value, a legacy "
          "opset) on the host",
          "[emitter][fused][host]") {
  // Proves: a Pad of constant mode on one axis is an index remapping (its operand inside, the
  // fill value outside) that its consumers and producers share a kernel with: a Transpose, a
  // Pad with pads before and after and a fill of -2.5, a Pad at opset 7 (pads an attribute)
  // and the pointwise nodes around them give the per-op results bit for bit; a Pad on two
  // axes, one that crops, and a reflect Pad stay kernels of their own.
  for (int opset : {7, 18}) {
    INFO("opset " << opset);
    ModelBuilder m(opset);
    m.input("x", kFloat, {2, 3, 5}).input("b", kFloat, {2, 5, 8}).output("y");
    test::set_attr_ints(m.node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1}); // [2,5,3]
    m.node("Exp", {"t"}, {"e"});
    if (opset < 11) {
      test::set_attr_ints(m.node("Pad", {"e"}, {"p"}), "pads", {0, 0, 1, 0, 0, 4});
    } else {
      m.initializer_i64("pads", {6}, {0, 0, 1, 0, 0, 4});
      m.initializer_f32("fill", {}, {-2.5f});
      m.node("Pad", {"e", "pads", "fill"}, {"p"}); // [2,5,8]
    }
    m.node("Mul", {"p", "b"}, {"y"});
    Graph g = load_graph(m);
    std::vector<int32_t> nodes = all_nodes(g);
    FusionGroup group = legal_group(g, nodes);
    const auto& spec = std::get<LocalSpec>(group.spec);
    REQUIRE(spec.moves.size() == 2); // the Transpose and the Pad
    CHECK(spec.moves[1].fills);
    CHECK(spec.moves[1].axis == 2);
    check_fused_equals_unfused(g, group, opset < 11 ? "pad-legacy" : "pad-fill", 0, 0);
  }
  ModelBuilder m(18);
  m.input("x", kFloat, {4, 5}).output("a").output("c").output("r");
  m.initializer_i64("two_axes", {4}, {1, 0, 0, 1});
  m.initializer_i64("crop", {4}, {0, -1, 0, 2});
  m.initializer_i64("reflect", {4}, {0, 1, 0, 1});
  m.node("Pad", {"x", "two_axes"}, {"a"});
  m.node("Pad", {"x", "crop"}, {"c"});
  test::set_attr_string(m.node("Pad", {"x", "reflect"}, {"r"}), "mode", "reflect");
  Graph g = load_graph(m);
  for (const Node& node : g.nodes)
    CHECK_FALSE(legality::remapping_op(g, node));
}

TEST_CASE("fused Local reads through Trilus (upper from a constant diagonal, lower without one) "
          "on the host",
          "[emitter][fused][host]") {
  // Proves: a Trilu whose diagonal the plan knows is an index remapping (its operand inside the
  // band of the last two axes, 0 outside) that shares a kernel with a Transpose before it and
  // pointwise nodes around it: an upper Trilu from k = -1 of a transposed Exp and a lower one
  // without k give the per-op results bit for bit; a Trilu whose k is a model input stays a
  // kernel of its own.
  ModelBuilder m(14);
  m.input("x", kFloat, {2, 5, 7}).input("b", kFloat, {2, 7, 5}).output("y");
  test::set_attr_ints(m.node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1}); // [2,7,5]
  m.node("Exp", {"t"}, {"e"});
  m.initializer_i64("k", {}, {-1});
  m.node("Trilu", {"e", "k"}, {"u"});
  set_attr_int(m.node("Trilu", {"b"}, {"l"}), "upper", 0);
  m.node("Add", {"u", "l"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = legal_group(g, all_nodes(g));
  const auto& spec = std::get<LocalSpec>(group.spec);
  REQUIRE(spec.moves.size() == 3); // the Transpose and the Trilus
  CHECK(spec.moves[1].band);
  CHECK(spec.moves[1].upper);
  CHECK(spec.moves[1].diagonal.to_string() == "-1");
  CHECK_FALSE(spec.moves[2].upper);
  CHECK(spec.moves[2].diagonal.to_string() == "0");
  check_fused_equals_unfused(g, group, "trilu", 0, 0);

  ModelBuilder runtime(14);
  runtime.input("x", kFloat, {4, 4}).input("k", onnx::TensorProto::INT64, {}).output("y");
  runtime.node("Trilu", {"x", "k"}, {"y"});
  Graph rg = load_graph(runtime);
  CHECK_FALSE(legality::remapping_op(rg, rg.nodes[0]));
}

TEST_CASE("merged gate and up projections on the host equal the separate MatMuls, bitwise",
          "[emitter][fused][host]") {
  // Proves: merge-matmuls' one MatMul over [Wg | Wu] and the Slices its SiLU-gated product
  // reads through give what the two MatMuls give (each output element the same dot product),
  // planned by the ILP and one kernel per op.
  ModelBuilder m(17);
  m.input("x", kFloat, {3, 5, 8}).output("y");
  m.initializer_f32("wg", {8, 12}, random_values(96, 5, 0.25f, 2.0f, true));
  m.initializer_f32("wu", {8, 12}, random_values(96, 6, 0.25f, 2.0f, true));
  m.node("MatMul", {"x", "wg"}, {"gate"});
  m.node("MatMul", {"x", "wu"}, {"up"});
  m.node("Sigmoid", {"gate"}, {"sg"});
  m.node("Mul", {"gate", "sg"}, {"silu"});
  m.node("Mul", {"silu", "up"}, {"y"});
  Graph merged = load_graph(m);
  Graph separate = compiled_in(m, Precision::Fp32, {"merge-matmuls"});
  int matmuls = 0;
  for (const Node& node : merged.nodes)
    matmuls += node.op == OpKind::MatMul;
  REQUIRE(matmuls == 1);
  const auto inputs = random_inputs(merged, 29);
  const auto want = run_on_host(separate, plan_one_kernel_per_op(separate, DeviceParams{}), inputs,
                                "gate-up-separate");
  PlannerOptions ilp;
  ilp.planner = "ilp";
  require_close(want,
                run_on_host(merged, plan_one_kernel_per_op(merged, DeviceParams{}), inputs,
                            "gate-up-merged-per-op"),
                0, 0);
  require_close(want, run_on_host(merged, plan_fusion(merged, ilp), inputs, "gate-up-merged-ilp"),
                0, 0);
}

TEST_CASE("a half MatMul over zero-padded columns on the host equals the unaligned one, bitwise",
          "[emitter][fused][host]") {
  // Proves: align-gemm-columns' MatMul over W [64, 8195] padded to 8200 columns, its bias Add
  // over the padded row and the Slice back to 8195 columns (read through by the Relu after it)
  // give what the unaligned MatMul gives in float16, planned by the ILP; a weight under 1 MiB
  // or a float32 one is left as it is.
  ModelBuilder m(17);
  m.input("x", kFloat, {3, 5, 64}).output("y");
  m.initializer_f32("w", {64, 8195}, random_values(64 * 8195, 7, 0.25f, 2.0f, true));
  m.initializer_f32("b", {8195}, random_values(8195, 8, 0.25f, 2.0f, true));
  m.node("MatMul", {"x", "w"}, {"p"});
  m.node("Add", {"p", "b"}, {"a"});
  m.node("Relu", {"a"}, {"y"});
  auto weight_columns = [](const Graph& g) {
    for (const Node& node : g.nodes)
      if (node.op == OpKind::MatMul) return g.tensor(node.inputs[1]).shape.back();
    return int64_t{0};
  };
  Graph aligned = compiled_in(m, Precision::Fp16),
        unaligned = compiled_in(m, Precision::Fp16, {"align-gemm-columns"});
  REQUIRE(weight_columns(aligned) == 8200);
  REQUIRE(weight_columns(unaligned) == 8195);
  CHECK(weight_columns(compiled_in(m, Precision::Fp32)) == 8195);
  PlannerOptions ilp;
  ilp.planner = "ilp";
  const auto inputs = random_inputs(aligned, 31);
  require_close(run_on_host(unaligned, plan_fusion(unaligned, ilp), inputs, "unaligned-columns"),
                run_on_host(aligned, plan_fusion(aligned, ilp), inputs, "aligned-columns"), 0, 0);
  // A tied LM head's spelling: Gemm(x, E, transB=1) with a bias C; E [8195, 64] gets zero rows.
  ModelBuilder head(17);
  head.input("x", kFloat, {15, 64}).output("y");
  head.initializer_f32("e", {8195, 64}, random_values(64 * 8195, 17, 0.25f, 2.0f, true));
  head.initializer_f32("c", {8195}, random_values(8195, 18, 0.25f, 2.0f, true));
  test::set_attr_int(head.node("Gemm", {"x", "e", "c"}, {"g"}), "transB", 1);
  head.node("Relu", {"g"}, {"y"});
  Graph head_aligned = compiled_in(head, Precision::Fp16),
        head_unaligned = compiled_in(head, Precision::Fp16, {"align-gemm-columns"});
  int gemms = 0;
  for (const Node& node : head_aligned.nodes)
    if (node.op == OpKind::Gemm) {
      ++gemms;
      CHECK(head_aligned.tensor(node.inputs[1]).shape == Shape{8200, 64});
      CHECK(head_aligned.tensor(node.inputs[2]).shape == Shape{8200});
    }
  REQUIRE(gemms == 1);
  const auto head_inputs = random_inputs(head_aligned, 43);
  require_close(
      run_on_host(head_unaligned, plan_fusion(head_unaligned, ilp), head_inputs, "head-unaligned"),
      run_on_host(head_aligned, plan_fusion(head_aligned, ilp), head_inputs, "head-aligned"), 0, 0);
  ModelBuilder small(17);
  small.input("x", kFloat, {3, 64}).output("y");
  small.initializer_f32("w", {64, 4095}, random_values(64 * 4095, 9, 0.25f, 2.0f, true));
  small.node("MatMul", {"x", "w"}, {"y"});
  CHECK(weight_columns(compiled_in(small, Precision::Fp16)) == 4095);
}

TEST_CASE("float16 pools of channels-last tensors on the host equal the channels-first pools, "
          "bitwise",
          "[emitter][fused][host]") {
  // Proves: a MaxPool (3x3, stride 2, pads, ceil_mode) and an AveragePool (count_include_pad)
  // between float16 convolutions, which channels-last turns into pools of [N, 1, H, W, C]
  // views (window 1 on the channels), give what they give on the channels-first tensors:
  // every output element the same fold of the same taps. Also fold-residual-bias's one bias
  // for a Conv sum, within float16 rounding of the partial sums it no longer makes.
  ModelBuilder m(17);
  m.input("x", kFloat, {2, 3, 13, 11}).output("y");
  m.initializer_f32("w1", {8, 3, 3, 3}, random_values(8 * 27, 11, 0.25f, 1.0f, true));
  m.initializer_f32("b1", {8}, random_values(8, 12, 0.25f, 1.0f, true));
  m.initializer_f32("w2", {8, 8, 1, 1}, random_values(64, 13, 0.25f, 1.0f, true));
  m.initializer_f32("b2", {8}, random_values(8, 14, 0.25f, 1.0f, true));
  m.initializer_f32("w3", {8, 8, 1, 1}, random_values(64, 15, 0.25f, 1.0f, true));
  m.initializer_f32("b3", {8}, random_values(8, 16, 0.25f, 1.0f, true));
  test::set_attr_ints(m.node("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"});
  auto& max = m.node("MaxPool", {"r1"}, {"p1"});
  test::set_attr_ints(max, "kernel_shape", {3, 3});
  test::set_attr_ints(max, "strides", {2, 2});
  test::set_attr_ints(max, "pads", {1, 0, 1, 1});
  test::set_attr_int(max, "ceil_mode", 1);
  m.node("Conv", {"p1", "w2", "b2"}, {"c2"});
  m.node("Conv", {"p1", "w3", "b3"}, {"c3"});
  m.node("Add", {"c2", "c3"}, {"s"});
  auto& average = m.node("AveragePool", {"s"}, {"y"});
  test::set_attr_ints(average, "kernel_shape", {2, 2});
  test::set_attr_ints(average, "strides", {2, 2});
  test::set_attr_ints(average, "pads", {1, 1, 0, 0});
  test::set_attr_int(average, "count_include_pad", 1);
  Graph last = compiled_in(m, Precision::Fp16, {"fold-residual-bias"}),
        first = compiled_in(m, Precision::Fp16, {"channels-last", "fold-residual-bias"});
  int windows = 0;
  for (const Node& node : last.nodes)
    if (node.op == OpKind::MaxPool || node.op == OpKind::AveragePool)
      windows += last.tensor(node.inputs[0]).shape.size() == 5;
  REQUIRE(windows == 2);
  PlannerOptions ilp;
  ilp.planner = "ilp";
  const auto inputs = random_inputs(last, 37);
  const auto want = run_on_host(first, plan_fusion(first, ilp), inputs, "pools-channels-first");
  require_close(want, run_on_host(last, plan_fusion(last, ilp), inputs, "pools-channels-last"), 0,
                0);
  Graph folded = compiled_in(m, Precision::Fp16);
  int unbiased = 0;
  for (const Node& node : folded.nodes)
    unbiased += node.op == OpKind::Conv && node.inputs.size() == 2;
  CHECK(unbiased == 1);
  require_close(want, run_on_host(folded, plan_fusion(folded, ilp), inputs, "pools-folded-bias"),
                2e-3, 2e-3);
}

TEST_CASE("merged Gemm and MatMul siblings on the host equal the separate products",
          "[emitter][fused][host]") {
  // Proves: merge-matmuls rewrites Gemm siblings (transB with a bias C, plain without) as
  // MatMul + Add and merges them with a MatMul sibling into one MatMul over the weights side by
  // side (the transposed one transposed at compile time); the results equal the separate
  // Gemms and MatMul.
  ModelBuilder m(17);
  m.input("x", kFloat, {6, 8}).output("q").output("k").output("v");
  m.initializer_f32("wq", {12, 8}, random_values(96, 21, 0.25f, 2.0f, true)); // [N, K]
  m.initializer_f32("bq", {12}, random_values(12, 22, 0.25f, 2.0f, true));
  m.initializer_f32("wk", {8, 4}, random_values(32, 23, 0.25f, 2.0f, true));
  m.initializer_f32("wv", {8, 4}, random_values(32, 24, 0.25f, 2.0f, true));
  test::set_attr_int(m.node("Gemm", {"x", "wq", "bq"}, {"q"}), "transB", 1);
  m.node("Gemm", {"x", "wk"}, {"k"});
  m.node("MatMul", {"x", "wv"}, {"v"});
  Graph merged = load_graph(m);
  Graph separate = compiled_in(m, Precision::Fp32, {"merge-matmuls"});
  int products = 0;
  for (const Node& node : merged.nodes)
    if (node.op == OpKind::MatMul || node.op == OpKind::Gemm) {
      ++products;
      CHECK(merged.tensor(node.inputs[1]).shape == Shape{8, 20});
    }
  REQUIRE(products == 1);
  const auto inputs = random_inputs(merged, 41);
  PlannerOptions ilp;
  ilp.planner = "ilp";
  require_close(run_on_host(separate, plan_fusion(separate, ilp), inputs, "gemm-siblings-separate"),
                run_on_host(merged, plan_fusion(merged, ilp), inputs, "gemm-siblings-merged"),
                kRtol, kAtol);
}

TEST_CASE("grouped-query scores without the repeated keys on the host equal the repeat, bitwise",
          "[emitter][fused][host]") {
  // Proves: fold-repeated-heads' one product per key head (Q viewed as [2,2,3*5,4]) gives the
  // scores the MatMul of the repeated keys gives (each element the same dot product).
  ModelBuilder m(17);
  m.input("q", kFloat, {2, 6, 5, 4}).input("k", kFloat, {2, 2, 5, 4}).output("scores");
  m.initializer_i64("axis", {1}, {2});
  m.initializer_i64("repeat", {5}, {2, 2, 3, 5, 4});
  m.initializer_i64("merged", {4}, {2, 6, 5, 4});
  m.node("Unsqueeze", {"k", "axis"}, {"k1"});
  m.node("Expand", {"k1", "repeat"}, {"ke"});
  m.node("Reshape", {"ke", "merged"}, {"kr"});
  test::set_attr_ints(m.node("Transpose", {"kr"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"scores"});
  Graph folded = load_graph(m);
  Graph repeated = compiled_in(m, Precision::Fp32, {"fold-repeated-heads"});
  int expands = 0;
  for (const Node& node : folded.nodes)
    expands += node.op == OpKind::Expand;
  REQUIRE(expands == 0);
  const auto inputs = random_inputs(folded, 41);
  PlannerOptions ilp;
  ilp.planner = "ilp";
  require_close(run_on_host(repeated, plan_fusion(repeated, ilp), inputs, "gqa-repeated"),
                run_on_host(folded, plan_fusion(folded, ilp), inputs, "gqa-folded"), 0, 0);
}

TEST_CASE("planned Regional group looks up embedding rows for its Adds and LayerNorm on the host",
          "[emitter][fused][host]") {
  // Proves: Gathers whose result rows are rows of their tables join the Regional group of the
  // Adds and the LayerNorm after them: word ids with a negative index and indices out of range
  // (zero rows), a two-row type table, a table gathered on axis 1 (a batch of tables), and
  // indices computed in the group (a Cast, one per row); the ILP plan is that one kernel, and
  // it equals the per-op kernels bitwise.
  ModelBuilder m(13);
  m.input("ids", onnx::TensorProto::INT64, {2, 8})
      .input("types", onnx::TensorProto::INT64, {2, 8})
      .input("pid", onnx::TensorProto::INT64, {8})
      .input("idf", kFloat, {2, 8})
      .input("ptab", kFloat, {2, 10, 64});
  m.output("sum").output("y");
  m.initializer_f32("wtab", {50, 64}, random_values(50 * 64, 3));
  m.initializer_f32("ttab", {2, 64}, random_values(2 * 64, 4));
  m.initializer_f32("ctab", {4, 64}, random_values(4 * 64, 5));
  m.initializer_f32("gamma", {64}, random_values(64, 6));
  m.initializer_f32("beta", {64}, random_values(64, 7));
  m.initializer_f32("two", {}, {2.0f});
  m.initializer_f32("eps", {}, {1e-5f});
  m.node("Gather", {"wtab", "ids"}, {"w"});
  m.node("Gather", {"ttab", "types"}, {"t"});
  test::set_attr_int(m.node("Gather", {"ptab", "pid"}, {"p"}), "axis", 1);
  test::set_attr_int(m.node("Cast", {"idf"}, {"ci"}), "to", onnx::TensorProto::INT64);
  m.node("Gather", {"ctab", "ci"}, {"c"});
  m.node("Add", {"w", "t"}, {"s1"});
  m.node("Add", {"s1", "p"}, {"s2"});
  m.node("Add", {"s2", "c"}, {"sum"});
  test::set_attr_ints(m.node("ReduceMean", {"sum"}, {"mean"}), "axes", {-1});
  m.node("Sub", {"sum", "mean"}, {"d"});
  m.node("Pow", {"d", "two"}, {"d2"});
  test::set_attr_ints(m.node("ReduceMean", {"d2"}, {"var"}), "axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"sd"});
  m.node("Div", {"d", "sd"}, {"n"});
  m.node("Mul", {"n", "gamma"}, {"ng"});
  m.node("Add", {"ng", "beta"}, {"y"});
  Graph g = load_graph(m);

  FusionGroup group = planned_group(g, all_nodes(g));
  REQUIRE(group.scheme == StitchScheme::Regional);
  const auto& spec = std::get<RegionalSpec>(group.spec);
  CHECK(spec.rows == 16);
  CHECK(spec.row_length == 64);
  REQUIRE(spec.gathers.size() == 4);
  int in_group = 0;
  for (const RegionalSpec::GatherRow& gather : spec.gathers)
    in_group += gather.indices_in_group;
  CHECK(in_group == 1);
  PlannerOptions ilp;
  ilp.planner = "ilp";
  const FusionPlan plan = plan_fusion(g, ilp);
  int kernels = 0;
  std::string groups;
  for (const FusionGroup& planned : plan.groups) {
    kernels += planned.kind != GroupKind::Alias;
    groups += "[";
    for (int32_t n : planned.nodes)
      groups += " " + g.nodes[n].name;
    groups += " ] ";
  }
  for (const RejectedFusion& r : plan.rejected)
    groups += "; rejected: " + r.reason;
  INFO("the plan's groups: " << groups);
  CHECK(kernels == 1);

  const std::vector<int64_t> ids = {0, 49, -1, -50, 50, 7, 13, 2, 3, 1000, 21, -51, 8, 9, 40, 0};
  const std::vector<int64_t> types = {0, 1, 1, 0, -1, 0, 1, 2, 0, 0, 1, 1, -2, 0, 1, 0};
  const std::vector<int64_t> pid = {9, 0, -1, 3, 4, 10, 6, 2};
  const std::vector<float> idf = random_values(16, 8, 0.25f, 4.5f);
  const std::vector<float> ptab = random_values(2 * 10 * 64, 9);
  const std::vector<HostBytes> inputs = {as_bytes(ids), as_bytes(types), as_bytes(pid),
                                         as_bytes(idf), as_bytes(ptab)};
  const auto unfused =
      run_bytes_on_host(g, plan_one_kernel_per_op(g, DeviceParams{}), inputs, "lookup-unfused");
  const auto fused = run_bytes_on_host(g, plan_with(g, group), inputs, "lookup-fused");
  const auto planned = run_bytes_on_host(g, plan, inputs, "lookup-ilp");
  REQUIRE(unfused.size() == 2);
  for (size_t o = 0; o < unfused.size(); ++o) {
    INFO("output " << o);
    CHECK(fused[o].bytes == unfused[o].bytes);
    CHECK(planned[o].bytes == unfused[o].bytes);
  }
  // The sum against the lookups done here: a negative index counts from the end, one out of
  // range reads a row of zeros.
  auto row = [](const std::vector<float>& table, int64_t rows, int64_t index, int64_t k) {
    if (index < 0) index += rows;
    return index < 0 || index >= rows ? 0.0f : table[static_cast<size_t>(index * 64 + k)];
  };
  const std::vector<float> wtab = random_values(50 * 64, 3), ttab = random_values(2 * 64, 4),
                           ctab = random_values(4 * 64, 5);
  std::vector<float> want(16 * 64);
  for (int64_t r = 0; r < 16; ++r) {
    const int64_t b = r / 8, s = r % 8;
    int64_t p = pid[static_cast<size_t>(s)];
    if (p < 0) p += 10;
    for (int64_t k = 0; k < 64; ++k) {
      const float positional =
          p < 0 || p >= 10 ? 0.0f : ptab[static_cast<size_t>((b * 10 + p) * 64 + k)];
      want[static_cast<size_t>(r * 64 + k)] =
          row(wtab, 50, ids[static_cast<size_t>(r)], k) +
          row(ttab, 2, types[static_cast<size_t>(r)], k) + positional +
          row(ctab, 4, static_cast<int64_t>(idf[static_cast<size_t>(r)]), k);
    }
  }
  std::vector<float> sum(want.size());
  REQUIRE(unfused[0].bytes.size() == sum.size() * sizeof(float));
  std::memcpy(sum.data(), unfused[0].bytes.data(), unfused[0].bytes.size());
  require_close({want}, {sum}, 1e-6, 1e-6);
}

TEST_CASE("movement as slices and views on the host equals the gathers and the split, bitwise",
          "[emitter][fused][host]") {
  // Proves: movement-as-remappings' Slices and Reshapes compute what the Gathers and the Split
  // did: a first token (Gather of index 0 on axis 1), a stepped Gather with a negative index, a
  // GatherND of every (b, s) pair in order, a Split into three parts read by pointwise ops, and
  // a Tile of two axes.
  ModelBuilder m(13);
  m.input("h", kFloat, {2, 5, 4}).input("m", kFloat, {2, 3});
  m.output("first").output("stepped").output("pairs").output("gated").output("rest");
  m.output("tiled");
  m.initializer_i64("repeats", {3}, {3, 1, 2});
  m.node("Tile", {"h", "repeats"}, {"t"});
  m.node("Abs", {"t"}, {"tiled"});
  m.initializer_i64("split", {3}, {2, 2, 1});
  test::set_attr_int(m.node("Split", {"h", "split"}, {"p0", "p1", "p2"}), "axis", 1);
  m.node("Sigmoid", {"p0"}, {"s0"});
  m.node("Mul", {"s0", "p1"}, {"gated"});
  m.node("Neg", {"p2"}, {"rest"});
  m.initializer_i64("zero", {}, {0});
  m.initializer_i64("odd", {2}, {-4, 3});
  m.initializer_i64("bs", {2, 1, 3, 2}, {0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2});
  m.initializer_f32("one", {}, {1.0f});
  test::set_attr_int(m.node("Gather", {"h", "zero"}, {"g0"}), "axis", 1);
  m.node("Add", {"g0", "one"}, {"first"});
  test::set_attr_int(m.node("Gather", {"h", "odd"}, {"g1"}), "axis", 1);
  m.node("Mul", {"g1", "g1"}, {"stepped"});
  m.node("GatherND", {"m", "bs"}, {"g2"});
  m.node("Sub", {"g2", "one"}, {"pairs"});
  const Graph sliced = compiled_in(m, Precision::Fp32);
  const Graph gathers = compiled_in(m, Precision::Fp32, {"movement-as-remappings"});
  int left = 0;
  for (const Node& node : sliced.nodes)
    left += node.op == OpKind::Gather || node.op == OpKind::GatherND || node.op == OpKind::Split ||
            node.op == OpKind::Tile;
  CHECK(left == 0);
  const auto inputs = random_inputs(sliced, 51);
  PlannerOptions ilp;
  ilp.planner = "ilp";
  require_close(run_on_host(gathers, plan_fusion(gathers, ilp), inputs, "constant-gathers"),
                run_on_host(sliced, plan_fusion(sliced, ilp), inputs, "constant-slices"), 0, 0);
}
