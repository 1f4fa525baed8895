// Golden checks on fused kernels (kernel_fused*.cpp): each case builds a small model, fuses some
// of its nodes by hand into one group of a given scheme, and looks for the lines of generated
// source that matter; and the refusals, each with its reason.
#include <catch2/catch.hpp>

#include "test_emit_fused_support.h"

using namespace stitch;
using namespace stitch::test;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// y = relu(x * 0.125 + b): x [4,37], b [37].
ModelBuilder scale_bias_relu() {
  ModelBuilder m;
  m.input("x", kFloat, {4, 37}).input("b", kFloat, {37}).output("y");
  m.initializer_f32("s", {}, {0.125f});
  m.node("Mul", {"x", "s"}, {"xs"});
  m.node("Add", {"xs", "b"}, {"xb"});
  m.node("Relu", {"xb"}, {"y"});
  return m;
}

// The expanded LayerNorm: (x - mean) / sqrt(var + eps) * g + b over rows of `length`.
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

std::vector<int32_t> all_nodes(const Graph& g) {
  std::vector<int32_t> nodes;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    nodes.push_back(static_cast<int32_t>(n));
  return nodes;
}

} // namespace

TEST_CASE("fused Local chain: one loop, registers between nodes, literal scalar",
          "[emitter][fused]") {
  // Proves: three pointwise nodes become one grid-stride loop that loads x and the broadcast
  // bias once per element, passes values in registers, inlines the scalar constant, and stores
  // only the group output.
  Graph g = load_graph(scale_bias_relu());
  FusionGroup group = fused_group(g, all_nodes(g), StitchScheme::Local, ThreadMapping::Flat,
                                  flat_launch(4 * 37, 1, DeviceParams{}));
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("__global__ void __launch_bounds__(256) stitch_g0_local("));
  CHECK_THAT(src, Catch::Contains("const float t0 = stitch::ops::mul(x0, 0.125f);"));
  CHECK_THAT(src, Catch::Contains("const float x1 = in1[c1];"));
  CHECK_THAT(src, Catch::Contains("const float t1 = stitch::ops::add(t0, x1);"));
  CHECK_THAT(src, Catch::Contains("out0[i] = t2;"));
  CHECK_THAT(src, Catch::Contains("STITCH_LAUNCH(stitch_g0_local"));
}

TEST_CASE("fused Local with vector width 4 evaluates each lane and keeps a scalar tail",
          "[emitter][fused]") {
  // Proves: same-shape inputs get float4 loads, the chain is evaluated once per lane, and the
  // last n % 4 elements go through the scalar loop.
  ModelBuilder m;
  m.input("x", kFloat, {5, 27}).input("z", kFloat, {5, 27}).output("y");
  m.node("Add", {"x", "z"}, {"s"});
  m.node("Tanh", {"s"}, {"y"});
  Graph g = load_graph(m);
  FusionGroup group = fused_group(g, all_nodes(g), StitchScheme::Local, ThreadMapping::Flat,
                                  flat_launch(135, 4, DeviceParams{}));
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("const float4 x0 = reinterpret_cast<const float4*>(in0)[v];"));
  CHECK_THAT(src, Catch::Contains("const float t0 = stitch::ops::add(x0.w, x1.w);"));
  CHECK_THAT(src, Catch::Contains("r0.w = t1;"));
  CHECK_THAT(src, Catch::Contains("for (int64_t i = n / 4 * 4 + first; i < n; i += stride)"));
}

TEST_CASE("fused Regional LayerNorm: row in registers, three passes, per-row math between",
          "[emitter][fused]") {
  // Proves: the expanded LayerNorm is one warp-per-row kernel that reads x once into registers,
  // reduces the mean, then the squared deviations (Pow 2 respelled d * d by canonicalize),
  // computes var + eps and sqrt once per row, and writes y in the last pass.
  Graph g = load_graph(expanded_layer_norm(64, 100));
  FusionGroup group =
      fused_group(g, all_nodes(g), StitchScheme::Regional, ThreadMapping::WarpPerRow,
                  row_launch(64, 100, ThreadMapping::WarpPerRow, DeviceParams{}));
  group.rows = 64;
  group.row_length = 100;
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("stitch_g0_regional("));
  CHECK_THAT(src, Catch::Contains("float row0[4];"));
  CHECK_THAT(src, Catch::Contains("row0[j] = x0;"));
  CHECK_THAT(src,
             Catch::Contains("acc0 = stitch::rows::warp_allreduce(acc0, stitch::rows::Sum{});"));
  CHECK_THAT(src, Catch::Contains("const float r0 = acc0 / 100.0f;"));
  CHECK_THAT(src, Catch::Contains("const float x0 = row0[j];"));
  CHECK_THAT(src, Catch::Contains("const float t1 = stitch::ops::mul(t0, t0);"));
  CHECK_THAT(src, Catch::Contains("const float r2 = stitch::ops::add(r1, 9.99999975e-06f);"));
  CHECK_THAT(src, Catch::Contains("const float r3 = stitch::ops::sqrt_(r2);"));
  CHECK_THAT(src, Catch::Contains("// Pass 2: the full-row outputs."));
  CHECK_THAT(src, Catch::Contains("out0[base + k] = "));
  CHECK_THAT(src, !Catch::Contains("atomic"));
}

TEST_CASE("fused Regional long row in shared memory with a block per row", "[emitter][fused]") {
  // Proves: a block-per-row group whose row does not fit the registers (10000 elements, 10 per
  // thread of 1024) stages x in the dynamic shared memory the plan reserved, and combines with
  // block reductions; without the reservation every pass reads global memory.
  Graph g = load_graph(expanded_layer_norm(2, 10000));
  LaunchConfig launch = row_launch(2, 10000, ThreadMapping::BlockPerRow, DeviceParams{});
  REQUIRE(launch.block[0] == 1024);
  launch.dynamic_shared_bytes = 10000 * 4;
  FusionGroup group =
      fused_group(g, all_nodes(g), StitchScheme::Regional, ThreadMapping::BlockPerRow, launch);
  group.rows = 2;
  group.row_length = 10000;
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("STITCH_DYNAMIC_SHARED(unsigned char, row_bytes);"));
  CHECK_THAT(src, Catch::Contains("float* const row0 = reinterpret_cast<float*>(row_bytes + 0);"));
  CHECK_THAT(src, Catch::Contains("row0[k] = x0;"));
  CHECK_THAT(src, Catch::Contains("for (int64_t k = thread; k < length; k += 1024) {"));
  CHECK_THAT(src, Catch::Contains("stitch::rows::block_allreduce(acc0, stitch::rows::Sum{})"));
  group.launch.dynamic_shared_bytes = 0;
  std::string uncached = emit_sources(g, plan_with(g, group));
  CHECK_THAT(uncached, !Catch::Contains("row_bytes"));
  CHECK_THAT(uncached, Catch::Contains("each pass reads its inputs from global memory"));
}

TEST_CASE("fused Independent parts branch on the block index", "[emitter][fused]") {
  // Proves: two unrelated parts (pointwise, and a row reduction) share one launch, each on its
  // own range of blocks, indexed from the part's first block.
  Graph g = independent_parts_graph();
  LaunchConfig launch = row_launch(7, 45, ThreadMapping::WarpPerRow, DeviceParams{});
  launch.grid = {5, 1, 1};
  FusionGroup group =
      fused_group(g, all_nodes(g), StitchScheme::Independent, ThreadMapping::WarpPerRow, launch);
  group.parts = {nodes_writing(g, {"na", "y"}), nodes_writing(g, {"s"})};
  group.part_blocks = {2, 3};
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("if (blockIdx.x < 2)"));
  CHECK_THAT(src, Catch::Contains("else {"));
  CHECK_THAT(src, Catch::Contains("const unsigned part_block = blockIdx.x - 2;"));
  CHECK_THAT(src, Catch::Contains(
                      "const int64_t first = int64_t(part_block) * blockDim.x + threadIdx.x;"));
  CHECK_THAT(
      src,
      Catch::Contains(
          "const int64_t first_line = (int64_t(part_block) * blockDim.x + threadIdx.x) / 32;"));
}

TEST_CASE("fused Global: partials, grid barriers, fixed-order finish", "[emitter][fused]") {
  // Proves: a column mean and its broadcast consumer are one cooperative kernel with two
  // grid-wide barriers, the partials combined in block order without atomics.
  ModelBuilder m(13);
  m.input("x", kFloat, {300, 24}).output("y");
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {0});
  m.node("Sub", {"x", "mean"}, {"y"});
  Graph g = load_graph(m);
  LaunchConfig launch = flat_launch(300 * 24, 1, DeviceParams{});
  launch.grid = {4, 1, 1};
  launch.block = {64, 1, 1};
  launch.cooperative = true;
  FusionGroup group =
      fused_group(g, all_nodes(g), StitchScheme::Global, ThreadMapping::Flat, launch);
  group.rows = 300;
  group.row_length = 24;
  group.scratch_bytes = 5 * 24 * 4;
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("STITCH_LAUNCH_COOPERATIVE(stitch_g0_global"));
  CHECK_THAT(src, Catch::Contains("scratch[blockIdx.x * columns + c] = acc;"));
  CHECK_THAT(src, Catch::Contains("for (int64_t b = 0; b < blocks; ++b) acc = "
                                  "stitch::rows::Sum{}(acc, scratch[b * columns + c]);"));
  CHECK_THAT(src, Catch::Contains("stitch_grid_sync();"));
  CHECK_THAT(src, !Catch::Contains("atomic"));
}

TEST_CASE("fused groups refuse what their scheme cannot do, with the reason", "[emitter][fused]") {
  // Proves: a reduction in a Local group, a Regional row op over other axes, and a Global group
  // without a cooperative launch are user errors naming the group and the reason.
  Graph g = load_graph(expanded_layer_norm(8, 32));
  FusionGroup local = fused_group(g, all_nodes(g), StitchScheme::Local, ThreadMapping::Flat,
                                  flat_launch(256, 1, DeviceParams{}));
  CHECK_THROWS_WITH(emit_sources(g, plan_with(g, local)),
                    Catch::Contains("fused group 0 (local)") &&
                        Catch::Contains("is not pointwise"));
  FusionGroup regional =
      fused_group(g, all_nodes(g), StitchScheme::Regional, ThreadMapping::WarpPerRow,
                  row_launch(8, 32, ThreadMapping::WarpPerRow, DeviceParams{}));
  regional.rows = 16; // not the rows the reductions work on
  regional.row_length = 16;
  CHECK_THROWS_WITH(emit_sources(g, plan_with(g, regional)),
                    Catch::Contains("(regional)") &&
                        Catch::Contains("no trailing axes of [8,32] hold rows of 16 elements"));
  FusionGroup global = fused_group(g, all_nodes(g), StitchScheme::Global, ThreadMapping::Flat,
                                   flat_launch(256, 1, DeviceParams{}));
  CHECK_THROWS_WITH(emit_sources(g, plan_with(g, global)),
                    Catch::Contains("needs a cooperative launch"));
}
