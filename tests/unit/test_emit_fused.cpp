// Golden checks on fused kernels (kernel_fused*.cpp): each case builds a small model, has
// legality make one group of its nodes (its spec, with a thread mapping imposed where the case
// wants one), and looks for the lines of generated source that matter; and a spec the emitter
// cannot print is an internal error naming the group.
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
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(std::holds_alternative<LocalSpec>(group.spec));
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
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(std::get<LocalSpec>(group.spec).vector_width == 4);
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
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(group.mapping == ThreadMapping::WarpPerRow);
  REQUIRE(std::get<RegionalSpec>(group.spec).cache == RowCache::Registers);
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
  // thread of 1024) stages x in exactly the dynamic shared memory its one cached row needs, and
  // combines with block reductions; on a device whose shared memory cannot hold the row, every
  // pass reads global memory instead.
  Graph g = load_graph(expanded_layer_norm(2, 10000));
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(group.mapping == ThreadMapping::BlockPerRow);
  REQUIRE(group.launch.block[0] == 1024);
  CHECK(group.launch.dynamic_shared_bytes == 10000 * 4);
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("STITCH_DYNAMIC_SHARED(unsigned char, row_bytes);"));
  CHECK_THAT(src, Catch::Contains("float* const row0 = reinterpret_cast<float*>(row_bytes + 0);"));
  CHECK_THAT(src, Catch::Contains("row0[k] = x0;"));
  CHECK_THAT(src, Catch::Contains("for (int64_t k = thread; k < length; k += 1024) {"));
  CHECK_THAT(src, Catch::Contains("stitch::rows::block_allreduce(acc0, stitch::rows::Sum{})"));
  DeviceParams small;
  small.max_shared_per_block = 16 * 1024;
  FusionGroup uncached_group = legal_group(g, all_nodes(g), {}, small);
  CHECK(uncached_group.launch.dynamic_shared_bytes == 0);
  std::string uncached = emit_sources(g, plan_with(g, uncached_group));
  CHECK_THAT(uncached, !Catch::Contains("row_bytes"));
  CHECK_THAT(uncached, Catch::Contains("each pass reads its inputs from global memory"));
}

TEST_CASE("fused Independent parts branch on the block index", "[emitter][fused]") {
  // Proves: two unrelated parts (pointwise, and a row reduction with its own warp-per-row
  // mapping) share one launch, each on the blocks its own kernel would have, indexed from the
  // part's first block.
  Graph g = independent_parts_graph();
  FusionGroup group = legal_group(g, all_nodes(g));
  const auto& spec = std::get<IndependentSpec>(group.spec);
  REQUIRE(spec.parts.size() == 2);
  REQUIRE(std::holds_alternative<LocalSpec>(spec.parts[0].body));
  CHECK(std::get<RegionalSpec>(spec.parts[1].body).mapping == ThreadMapping::WarpPerRow);
  const int64_t first = spec.parts[0].blocks;
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains(fmt::format("if (blockIdx.x < {})", first)));
  CHECK_THAT(src, Catch::Contains("else {"));
  CHECK_THAT(src,
             Catch::Contains(fmt::format("const unsigned part_block = blockIdx.x - {};", first)));
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
  FusionGroup group = legal_group(g, all_nodes(g));
  REQUIRE(std::holds_alternative<ColumnSpec>(group.spec));
  std::string src = emit_sources(g, plan_with(g, group));
  CHECK_THAT(src, Catch::Contains("STITCH_LAUNCH_COOPERATIVE(stitch_g0_global"));
  CHECK_THAT(src, Catch::Contains("scratch[blockIdx.x * columns + c] = acc;"));
  CHECK_THAT(src, Catch::Contains("for (int64_t b = 0; b < blocks; ++b) acc = "
                                  "stitch::rows::Sum{}(acc, scratch[b * columns + c]);"));
  CHECK_THAT(src, Catch::Contains("stitch_grid_sync();"));
  CHECK_THAT(src, !Catch::Contains("atomic"));
}

TEST_CASE("a spec the emitter cannot print is an internal error naming the group",
          "[emitter][fused]") {
  // Proves: code generation never refuses a spec as the user's fault: a Global group planned
  // without its cooperative launch, or a Regional spec whose rows do not fit its block, are
  // compiler bugs (InternalError, "internal compiler error") naming the group, its kind and why.
  Graph g = load_graph(expanded_layer_norm(8, 32));
  FusionGroup regional = legal_group(g, all_nodes(g));
  std::get<RegionalSpec>(regional.spec).block = 48; // not whole warps
  try {
    emit_sources(g, plan_with(g, regional));
    FAIL("a broken spec was printed");
  } catch (const InternalError& e) {
    CHECK_THAT(e.what(), Catch::Contains("internal compiler error") &&
                             Catch::Contains("group 0 (regional spec") &&
                             Catch::Contains("needs whole warps"));
  }
  ModelBuilder m(13);
  m.input("x", kFloat, {300, 24}).output("y");
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {0});
  m.node("Sub", {"x", "mean"}, {"y"});
  Graph column = load_graph(m);
  FusionGroup global = legal_group(column, all_nodes(column));
  global.launch.cooperative = false;
  CHECK_THROWS_AS(emit_sources(column, plan_with(column, global)), InternalError);
  CHECK_THROWS_WITH(emit_sources(column, plan_with(column, global)),
                    Catch::Contains("(column spec") && Catch::Contains("cooperative launch"));
}
