// Golden checks on the movement kernels (kernel_movement*.cpp) and their mappings
// (planner/movement_mapping.cpp): each case compiles a one-node model through the pipeline,
// the planner and the emitter, and looks for the lines of generated source that matter.
#include <catch2/catch.hpp>

#include <set>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/memory_plan.h"
#include "planner/movement_mapping.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kInt32 = onnx::TensorProto::INT32;

struct Compiled {
  Graph graph;
  FusionPlan plan;
  std::string source; // every group's source, concatenated
};

Compiled compile(const ModelBuilder& m, const std::set<std::string>& disabled = {}) {
  Compiled c;
  c.graph = load_onnx(m.write());
  PipelineOptions options;
  options.disabled = disabled;
  run_pipeline(c.graph, options);
  c.plan = plan_one_kernel_per_op(c.graph, DeviceParams{});
  MemoryPlan memory = plan_memory(c.graph, c.plan);
  GeneratedModel model = emit_model(c.graph, c.plan, memory, "cuda");
  for (const GeneratedFile& f : model.groups)
    c.source += f.text;
  return c;
}

ModelBuilder transpose_model(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  ModelBuilder m;
  m.input("x", kFloat, dims).output("y");
  test::set_attr_ints(m.node("Transpose", {"x"}, {"y"}), "perm", perm);
  return m;
}

// The launch plan_movement_launch gives the model's only node.
FusionGroup planned_group(const Compiled& c) {
  REQUIRE(c.plan.groups.size() == 1);
  FusionGroup group = c.plan.groups[0];
  plan_movement_launch(c.graph, c.graph.nodes[0], DeviceParams{}, group);
  return group;
}

} // namespace

// ---- Permuted copies ----

TEST_CASE("canonical_permutation drops size-1 axes and merges axes that stay adjacent",
          "[emitter]") {
  // Swapping the last two axes of [1,8,64,32] is a batch of 8 transposes of 64x32.
  PermutedCopy a = canonical_permutation({1, 8, 64, 32}, {0, 1, 3, 2});
  CHECK(a.dims == Shape{8, 64, 32});
  CHECK(a.perm == std::vector<int64_t>{0, 2, 1});
  // [0,3,1,2]: input axes 1 and 2 stay adjacent and become one axis of 12.
  PermutedCopy b = canonical_permutation({2, 3, 4, 5}, {0, 3, 1, 2});
  CHECK(b.dims == Shape{2, 12, 5});
  CHECK(b.perm == std::vector<int64_t>{0, 2, 1});
  // An identity in disguise is a rank-1 copy.
  PermutedCopy c = canonical_permutation({4, 1, 6}, {1, 0, 2});
  CHECK(c.dims == Shape{24});
}

TEST_CASE("a transpose of the two minor axes goes through a padded shared-memory tile",
          "[emitter]") {
  Compiled c = compile(transpose_model({2, 64, 48}, {0, 2, 1}));
  // 32x33 floats: the extra column keeps the column reads free of bank conflicts.
  CHECK_THAT(c.source, Catch::Contains("STITCH_SHARED_2D(float, tile, 32, 33);"));
  // Grid-stride over tiles: correct under any grid, the flat one included.
  CHECK_THAT(c.source, Catch::Contains("for (int64_t t = blockIdx.x; t < 8; t += gridDim.x)"));
  CHECK_THAT(c.source, Catch::Contains("tile[y][column] = in[in_base + y * 48 + column];"));
  CHECK_THAT(c.source, Catch::Contains("out[out_base + x * 64 + along] = tile[along][x];"));
  CHECK_THAT(c.source,
             Catch::Contains("__syncthreads(); // the tile is refilled only after every write"));
  // The plan launches one block per tile.
  FusionGroup group = planned_group(c);
  CHECK(group.launch.grid[0] == 8);
  CHECK(group.launch.block[0] == 256);
}

TEST_CASE("perm [0,2,1,3] moves whole head-dim vectors through the tile", "[emitter]") {
  Compiled c = compile(transpose_model({2, 64, 16, 8}, {0, 2, 1, 3}));
  // 32 positions of S by 4 positions of H, 8 elements each: 32-element rows on both sides.
  CHECK_THAT(c.source, Catch::Contains("STITCH_SHARED_2D(float, tile, 32, 33);"));
  CHECK_THAT(c.source, Catch::Contains("const int64_t y = along / 8, lane = along % 8;"));
  CHECK_THAT(c.source, Catch::Contains("= tile[y][x * 8 + lane];"));
}

TEST_CASE("a small transpose gathers one element per thread", "[emitter]") {
  Compiled c = compile(transpose_model({2, 3, 4}, {2, 1, 0}));
  CHECK_THAT(c.source, !Catch::Contains("STITCH_SHARED_2D"));
  CHECK_THAT(c.source, Catch::Contains("out[i] = in[c0 + c1 * 4 + c2 * 12];"));
  CHECK(planned_group(c).launch.grid[0] == 1); // the flat launch stays
}

TEST_CASE("DepthToSpace is the transpose of a 6-D view", "[emitter]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 8, 2, 3}).output("y");
  test::set_attr_int(m.node("DepthToSpace", {"x"}, {"y"}), "blocksize", 2);
  Compiled c = compile(m);
  PermutedCopy copy = node_permutation(c.graph, c.graph.nodes[0]);
  // DCR: [b, b, C/b^2, H, W] -> [C/b^2, H, b, W, b], with N = 1 dropped and C/b^2, H
  // merged: [2, 2, 4, 3] with perm [2, 0, 3, 1].
  CHECK(copy.dims == Shape{2, 2, 4, 3});
  CHECK(copy.perm == std::vector<int64_t>{2, 0, 3, 1});
}

// ---- Copies with compile-time positions ----

TEST_CASE("Concat picks the input from the position along the concatenated row", "[emitter]") {
  ModelBuilder m;
  m.input("a", kFloat, {2, 3, 4}).input("b", kFloat, {2, 5, 4}).output("y");
  test::set_attr_int(m.node("Concat", {"a", "b"}, {"y"}), "axis", 1);
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("const int64_t row = i / 32, along = i % 32;"));
  CHECK_THAT(src, Catch::Contains("if (along < 12) out[i] = in0[row * 12 + along];"));
  CHECK_THAT(src, Catch::Contains("else out[i] = in1[row * 20 + along - 12];"));
}

TEST_CASE("Split writes every output from one kernel over the input", "[emitter]") {
  ModelBuilder m(18);
  m.input("x", kFloat, {2, 6}).output("a").output("b").output("c");
  onnx::NodeProto& n = m.node("Split", {"x"}, {"a", "b", "c"});
  test::set_attr_int(n, "axis", 1);
  test::set_attr_int(n, "num_outputs", 3);
  // movement-as-remappings would make the Split three Slices.
  Compiled c = compile(m, {"movement-as-remappings"});
  CHECK_THAT(c.source,
             Catch::Contains(
                 "float* __restrict__ out0, float* __restrict__ out1, float* __restrict__ out2"));
  CHECK_THAT(c.source, Catch::Contains("if (along < 2) out0[row * 2 + along] = value;"));
  CHECK_THAT(c.source, Catch::Contains(
                           "else if (along >= 2 && along < 4) out1[row * 2 + along - 2] = value;"));
  CHECK_THAT(c.source, Catch::Contains("else out2[row * 2 + along - 4] = value;"));
  CHECK(planned_group(c).launch.grid[0] == 1);
}

TEST_CASE("Slice with a negative step reads backwards from its clamped start", "[emitter]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {4, 10}).output("y");
  m.initializer_i64("starts", {1}, {-1}).initializer_i64("ends", {1}, {-100});
  m.initializer_i64("axes", {1}, {1}).initializer_i64("steps", {1}, {-3});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  std::string src = compile(m).source;
  // Columns 9, 6, 3, 0 of each row.
  CHECK_THAT(src, Catch::Contains("out[i] = in[9 + c0 * 10 + c1 * (-3)];"));
}

TEST_CASE("Pad maps output coordinates back by mode, after negative pads crop", "[emitter]") {
  ModelBuilder m(18);
  m.input("x", kFloat, {3, 5}).output("y");
  m.initializer_i64("pads", {4}, {0, -1, 0, 3});
  onnx::NodeProto& n = m.node("Pad", {"x", "pads"}, {"y"});
  test::set_attr_string(n, "mode", "reflect");
  std::string src = compile(m).source;
  // Axis 1 loses its first element, then the 4 left are reflected on the right.
  CHECK_THAT(src, Catch::Contains("const int64_t x1 = stitch::movement::reflect_index(c1, 4);"));
  CHECK_THAT(src, Catch::Contains("out[i] = in[c0 * 5 + (x1 + 1)];"));
}

TEST_CASE("constant Pad writes the fill value outside the input", "[emitter]") {
  ModelBuilder m(18);
  m.input("x", kFloat, {3, 5}).output("y");
  m.initializer_i64("pads", {4}, {1, 2, 0, 0});
  m.initializer_f32("value", {}, {1.5f});
  m.node("Pad", {"x", "pads", "value"}, {"y"});
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains(
                      "if (x0 < 0 || x0 >= 3 || x1 < 0 || x1 >= 5) { out[i] = 1.5f; continue; }"));
}

TEST_CASE("Trilu compares column - row with the constant k", "[emitter]") {
  ModelBuilder m(14);
  m.input("x", kFloat, {2, 4, 5}).output("y");
  m.initializer_i64("k", {}, {-1});
  test::set_attr_int(m.node("Trilu", {"x", "k"}, {"y"}), "upper", 0);
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("const int64_t diagonal = -1LL;"));
  CHECK_THAT(src, Catch::Contains("out[i] = column - row <= diagonal ? in[i] : 0.0f;"));
}

// ---- Run-time indices ----

TEST_CASE("Gather wraps negative indices and writes zero for out-of-range ones", "[emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {5, 4}).input("idx", kInt32, {3}).output("y");
  m.node("Gather", {"x", "idx"}, {"y"});
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("const int32_t* __restrict__ indices"));
  CHECK_THAT(src,
             Catch::Contains("const int64_t index = stitch::movement::wrap_index(indices[j], 5);"));
  CHECK_THAT(src, Catch::Contains("out[i] = index < 0 ? 0.0f : data[(o * 5 + index) * 4 + p];"));
}

TEST_CASE("GatherND with batch_dims offsets each row by its batch", "[emitter]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 3, 4}).input("idx", kInt64, {2, 5, 1}).output("y");
  test::set_attr_int(m.node("GatherND", {"x", "idx"}, {"y"}), "batch_dims", 1);
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("const int64_t k0 = stitch::movement::wrap_index(index[0], 3);"));
  CHECK_THAT(src, Catch::Contains("out[i] = k0 < 0 ? 0.0f : data[row / 5 * 12 + k0 * 4 + s];"));
}

TEST_CASE("ScatterND copies, then applies conflicting updates in row order", "[emitter]") {
  ModelBuilder m(18);
  m.input("x", kFloat, {4, 3}).input("idx", kInt64, {5, 1}).input("u", kFloat, {5, 3}).output("y");
  test::set_attr_string(m.node("ScatterND", {"x", "idx", "u"}, {"y"}), "reduction", "add");
  Compiled c = compile(m);
  const std::string& src = c.source;
  CHECK_THAT(src, Catch::Contains("stitch_g0_scatternd_copy"));
  // A block per update row; an earlier row addressing the same slice applies this one.
  CHECK_THAT(src, Catch::Contains("for (int64_t u = blockIdx.x; u < 5; u += gridDim.x)"));
  CHECK_THAT(src, Catch::Contains("if (__syncthreads_or(earlier)) continue;"));
  CHECK_THAT(src, Catch::Contains("value = stitch::movement::scatter_combine(value, updates[v * 3 "
                                  "+ s], stitch::movement::ScatterReduction::Add);"));
  // Both kernels launch in order from the group function.
  CHECK(src.find("STITCH_LAUNCH(stitch_g0_scatternd_copy") <
        src.find("STITCH_LAUNCH(stitch_g0_scatternd_update"));
  FusionGroup group = planned_group(c);
  CHECK(group.mapping == ThreadMapping::BlockPerRow);
  CHECK(group.launch.grid[0] == 5);
}

TEST_CASE("ScatterND with constant distinct indices needs no ordering scan", "[emitter]") {
  ModelBuilder m(16);
  m.input("x", kFloat, {4, 3}).input("u", kFloat, {2, 3}).output("y");
  m.initializer_i64("idx", {2, 1}, {3, -4});
  m.node("ScatterND", {"x", "idx", "u"}, {"y"});
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("out[target + s] = updates[i];"));
  CHECK_THAT(src, !Catch::Contains("earlier"));
}

// ---- Resize and TopK ----

TEST_CASE("Range too long to fold is generated on the device", "[emitter]") {
  // 70M floats are past the folding limit (256 MiB), so the node stays.
  ModelBuilder m(11);
  m.output("y");
  m.initializer_f32("start", {}, {0.5f})
      .initializer_f32("limit", {}, {7.0e7f})
      .initializer_f32("delta", {}, {1.0f});
  m.node("Range", {"start", "limit", "delta"}, {"y"});
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("out[i] = float(0.5 + double(i) * 1.0);"));
}

TEST_CASE("bilinear Resize loops over two taps per resized axis only", "[emitter]") {
  ModelBuilder m(19);
  m.input("x", kFloat, {1, 2, 4, 4}).output("y");
  m.initializer_f32("roi", {0}, {}).initializer_f32("scales", {4}, {1, 1, 2, 2});
  test::set_attr_string(m.node("Resize", {"x", "roi", "scales"}, {"y"}), "mode", "linear");
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains(
                      "const double x2 = stitch::movement::resize_coordinate(c2, "
                      "stitch::movement::ResizeCoordinates::HalfPixel, 2.0, 4, 8, 0.0, 1.0);"));
  CHECK_THAT(src, !Catch::Contains("const double x1"));
  CHECK_THAT(src, Catch::Contains("for (int t3 = 0; t3 < 2; ++t3)"));
  CHECK_THAT(src,
             Catch::Contains("sum += w2[t2] * w3[t3] * float(in[base + k2[t2] * 4 + k3[t3]]);"));
}

TEST_CASE("nearest Resize rounds by nearest_mode", "[emitter]") {
  ModelBuilder m(19);
  m.input("x", kFloat, {1, 1, 2, 2}).output("y");
  m.initializer_f32("roi", {0}, {}).initializer_f32("scales", {4}, {1, 1, 3, 3});
  onnx::NodeProto& n = m.node("Resize", {"x", "roi", "scales"}, {"y"});
  test::set_attr_string(n, "coordinate_transformation_mode", "asymmetric");
  test::set_attr_string(n, "nearest_mode", "ceil");
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("stitch::movement::ResizeNearest::Ceil, 2);"));
  CHECK_THAT(src, Catch::Contains("out[i] = in[k2 * 2 + k3];"));
}

TEST_CASE("antialiased Resize widens the filter on downsampled axes only", "[emitter]") {
  ModelBuilder m(19);
  m.input("x", kFloat, {1, 1, 8, 4}).output("y");
  m.initializer_f32("roi", {0}, {}).initializer_f32("scales", {4}, {1, 1, 0.5f, 2});
  onnx::NodeProto& n = m.node("Resize", {"x", "roi", "scales"}, {"y"});
  test::set_attr_string(n, "mode", "linear");
  test::set_attr_int(n, "antialias", 1);
  std::string src = compile(m).source;
  // Scale 1/2: the tent spans 4 inputs; the upsampled axis keeps its 2 taps.
  CHECK_THAT(
      src,
      Catch::Contains(
          "stitch::movement::resize_antialias_taps(x2, 8, 0.5, false, -0.75, false, 4, k2, w2);"));
  CHECK_THAT(src, Catch::Contains("stitch::movement::resize_linear_taps(x3, 4, k3, w3);"));
  CHECK_THAT(src, Catch::Contains("for (int t2 = 0; t2 < 4; ++t2)"));
}

TEST_CASE("TopK sorts each row in shared memory with a block per row", "[emitter]") {
  ModelBuilder m(11);
  m.input("x", kFloat, {3, 5, 6}).output("v").output("i");
  m.initializer_i64("k", {1}, {2});
  test::set_attr_int(m.node("TopK", {"x", "k"}, {"v", "i"}), "axis", 1);
  Compiled c = compile(m);
  // Rows of 5 along axis 1 (stride 6), padded to a buffer of 8.
  CHECK_THAT(c.source, Catch::Contains("STITCH_SHARED(float, keys, 8);"));
  CHECK_THAT(c.source,
             Catch::Contains("for (int64_t row = blockIdx.x; row < 18; row += gridDim.x)"));
  CHECK_THAT(c.source, Catch::Contains("stitch::sort::block_top_k<true, 8>(x, 5, 6, 2, values + "
                                       "out_offset, indices + out_offset, 6, keys, slots);"));
  FusionGroup group = planned_group(c);
  CHECK(group.mapping == ThreadMapping::BlockPerRow);
  CHECK(group.launch.grid[0] == 18);
  CHECK(group.launch.block[0] == 32);
}

TEST_CASE("TopK streams long rows through the buffer, or counts ranks for a large k", "[emitter]") {
  ModelBuilder m(11);
  m.input("x", kFloat, {2, 5000}).output("v").output("i").output("v2").output("i2");
  m.initializer_i64("k", {1}, {10}).initializer_i64("k2", {1}, {4000});
  m.node("TopK", {"x", "k"}, {"v", "i"});
  test::set_attr_int(m.node("TopK", {"x", "k2"}, {"v2", "i2"}), "largest", 0);
  std::string src = compile(m).source;
  CHECK_THAT(src, Catch::Contains("stitch::sort::block_top_k<true, 2048>(x, 5000, 1, 10,"));
  CHECK_THAT(src, Catch::Contains("stitch::sort::block_top_k_by_rank<false>(x, 5000, 1, 4000,"));
}
