// Code over symbolic dims (--dim NAME=MIN..MAX): extents as C++ of the symbols, which groups
// legality admits and why it refuses the others, and the indices the kernels read, also where
// the planning binding makes shapes look equal that differ at other values of the symbols.
#include <catch2/catch.hpp>

#include <set>
#include <tuple>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/code_generation_support.h"
#include "planner/cost_model.h"
#include "planner/legality.h"
#include "planner/memory_plan.h"
#include "planner/plan_json.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;
using stitch::test::set_attr_int;
using stitch::test::set_attr_ints;
using stitch::test::set_attr_string;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

Graph symbolic_graph(const ModelBuilder& m, std::vector<SymbolicDim> dims) {
  LoadOptions options;
  options.dims = std::move(dims);
  Graph g = load_onnx(m.write(), options);
  run_pipeline(g, {});
  return g;
}

struct Generated {
  Graph graph;
  FusionPlan plan;
  MemoryPlan memory;
  std::string sources; // every group file, then the launcher
};

Generated generate(const ModelBuilder& m, std::vector<SymbolicDim> dims,
                   const std::string& planner = "ilp") {
  Generated out;
  out.graph = symbolic_graph(m, std::move(dims));
  const Graph& g = out.graph;
  PlannerOptions options;
  options.planner = planner;
  out.plan = plan_fusion(g, options);
  out.memory = plan_memory(g, out.plan);
  GeneratedModel model = emit_model(g, out.plan, out.memory, "host");
  for (const GeneratedFile& f : model.groups)
    out.sources += f.text;
  out.sources += model.launcher.text;
  return out;
}

std::string refusal(const ModelBuilder& m, std::vector<SymbolicDim> dims) {
  Graph g = symbolic_graph(m, std::move(dims));
  try {
    check_code_generation(g);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

SymbolicDim dim(const std::string& name, int64_t min, int64_t max, int64_t typical) {
  return {name, min, max, typical};
}

} // namespace

// Proves: a dim expression prints as int64_t C++ of the symbols' values, the symbols named by
// the caller, floor division, min and max through the runtime's stitch::dims helpers.
TEST_CASE("dim expressions print as C++ of the symbols", "[symbolic][dim_expr]") {
  const DimExpr batch = DimExpr::symbol("batch"), seq = DimExpr::symbol("seq");
  auto code = [](const DimExpr& d) {
    return d.to_code([](const std::string& name) { return name == "batch" ? "sym0" : "sym1"; });
  };
  CHECK(code(DimExpr(64)) == "64");
  CHECK(code(batch * seq * 64) == "(sym0 * sym1 * 64)");
  CHECK(code(seq + 1) == "(sym1 + 1)");
  CHECK(code(DimExpr(2) - seq) == "(-sym1 + 2)");
  CHECK(code(seq) == "sym1");
  CHECK(code(DimExpr::floor_div(seq + 1, 2)) == "stitch::dims::floor_div((sym1 + 1), 2)");
  CHECK(code(DimExpr::min(seq, 64)) == "stitch::dims::min(64, sym1)");
  CHECK(code(DimExpr::ceil_div(seq, 4) * 2) == "(stitch::dims::floor_div((sym1 + 3), 4) * 2)");
}

// Proves: pointwise operands read against a symbolic iteration take the flat index, their fixed
// coordinates, or the leading index times their block; the grid is computed per run from the
// work, capped by the grid at the maxima; the kernel takes the symbols it needs.
TEST_CASE("pointwise kernels index their operands over symbolic dims", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"})
      .input("mask", kFloat, {-1, -1, 1}, {"batch", "seq"})
      .output("y");
  m.initializer_f32("bias", {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  m.node("Add", {"x", "bias"}, {"t"});
  m.node("Mul", {"t", "mask"}, {"y"});
  for (const std::string planner : {"none", "ilp"}) {
    INFO("planner " << planner);
    const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("seq", 1, 100, 50)}, planner);
    CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * sym1 * 8);"));
    CHECK_THAT(g.sources, Catch::Contains("const int64_t c2 = rest % 8; rest /= 8;"));
    CHECK_THAT(g.sources, Catch::Contains("[c2]"));   // the bias: its fixed coordinate
    CHECK_THAT(g.sources, Catch::Contains("[rest]")); // the mask: one value per leading index
    CHECK_THAT(g.sources, Catch::Contains("const int64_t sym0 = b->symbols[0];"));
    CHECK_THAT(g.sources, Catch::Contains("stitch::dims::grid_for(work, 256, "));
    CHECK_THAT(g.sources, !Catch::Contains("c1 =")); // no coordinate of a symbolic axis
  }
}

// Proves: an operand broadcast along a symbolic axis ([1,seq,8] and [batch,1,8] against
// [batch,seq,8]) is read through the symbolic axes' coordinates, divided out per element.
TEST_CASE("operands broadcast along symbolic axes", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"})
      .input("p", kFloat, {1, -1, 8}, {"seq"})
      .input("g", kFloat, {-1, 1, 8}, {"batch"})
      .output("y");
  m.node("Add", {"x", "p"}, {"a"});
  m.node("Mul", {"a", "g"}, {"y"});
  for (const std::string planner : {"none", "ilp"}) {
    INFO("planner " << planner);
    const Generated g = generate(m, {dim("batch", 1, 4, 1), dim("seq", 1, 16, 1)}, planner);
    // Below 2^31 elements at the maxima: the division by the run's seq in 32 bits.
    CHECK_THAT(g.sources, Catch::Contains("const int64_t c1 = stitch::dims::mod32(i_lead, sym1); "
                                          "i_lead = stitch::dims::div32(i_lead, sym1);"));
    CHECK_THAT(g.sources, Catch::Contains("[c2 + c1 * 8]")); // p
    CHECK_THAT(g.sources, Catch::Contains("[c2 + c0 * 8]")); // g
    // Past 2^31 elements at the maxima: in 64 bits.
    const Generated wide =
        generate(m, {dim("batch", 1, 1 << 20, 1), dim("seq", 1, 1 << 12, 1)}, planner);
    CHECK_THAT(wide.sources, Catch::Contains("const int64_t c1 = i_lead % sym1; i_lead /= sym1;"));
  }
}

// Proves: an operand of lower rank broadcast along a symbolic axis ([seq,8] against
// [batch,seq,8]) is read at its own coordinates, its missing leading axes 1 (not at the flat
// index of the leading axes).
TEST_CASE("operands of lower rank broadcast along symbolic axes", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"})
      .input("pos", kFloat, {-1, 8}, {"seq"})
      .output("y");
  m.node("Add", {"x", "pos"}, {"y"});
  for (int64_t planned : {1, 8}) {
    const Generated g = generate(m, {dim("batch", 1, 8, planned), dim("seq", 1, 8, planned)});
    CHECK_THAT(g.sources, Catch::Contains("const float v1 = in1[c2 + c1 * 8];"));
  }
}

// Proves: a value the same for every row (a fixed [64] computed beside a softmax) is never
// written by a row group once per row: planned at one row, where the group would take it, the
// plan keeps it out.
TEST_CASE("a row group writes no fixed output once per row", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 64}, {"batch", "seq"})
      .input("w", kFloat, {64})
      .input("v", kFloat, {64})
      .output("z")
      .output("y");
  m.node("Add", {"w", "v"}, {"y"});
  m.node("Add", {"x", "y"}, {"s"});
  set_attr_int(m.node("Softmax", {"s"}, {"z"}), "axis", -1);
  const Generated g = generate(m, {dim("batch", 1, 8, 1), dim("seq", 1, 8, 1)});
  bool regional = false;
  for (const FusionGroup& group : g.plan.groups) {
    if (!std::holds_alternative<RegionalSpec>(group.spec)) continue;
    regional = true;
    for (TensorId t : group.outputs)
      CHECK(g.graph.tensor(t).name != "y");
  }
  CHECK(regional);
}

// Proves: a Shape of a symbolic input as a graph output (its value changes with the shape) is
// refused, naming the output.
TEST_CASE("an output holding the symbols' values is refused", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1}, {"batch", "seq"}).output("s").output("r");
  m.node("Shape", {"x"}, {"s"});
  m.node("Relu", {"x"}, {"r"});
  CHECK_THAT(refusal(m, {dim("batch", 1, 8, 8), dim("seq", 1, 8, 8)}),
             Catch::Contains("graph output 's' holds [batch,seq], values computed from the "
                             "symbolic dims"));
}

// Proves: at a planning binding of 1, where [1,8] and [batch,8] have one shape, the operand of
// fixed shape is still read through its coordinates (not at the flat index), and no vector
// body reads it whole.
TEST_CASE("a planning binding of 1 does not make shapes equal", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8}, {"batch"}).input("row", kFloat, {1, 8}).output("y");
  m.node("Add", {"x", "row"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 64, 1)}, "none");
  CHECK_THAT(g.sources, Catch::Contains("const float v1 = in1[c1];"));
  CHECK_THAT(g.sources, !Catch::Contains("in1[i]"));
  CHECK_THAT(g.sources, !Catch::Contains("float4"));
}

// Proves: a row group over symbolic rows runs `lines` from the symbols, each row fixed; a
// per-row operand is read at `line`, a shared one at 0 or along the row, also planned at 1.
TEST_CASE("row groups run symbolic rows of a fixed row", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 32}, {"batch", "seq"})
      .input("scale", kFloat, {-1, -1, 1}, {"batch", "seq"})
      .output("y");
  m.initializer_f32("gamma", {32}, std::vector<float>(32, 0.5f));
  set_attr_ints(m.node("ReduceMax", {"x"}, {"max"}), "axes", {-1});
  m.node("Sub", {"x", "max"}, {"shifted"});
  m.node("Mul", {"shifted", "gamma"}, {"g"});
  m.node("Mul", {"g", "scale"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 8, 1), dim("seq", 1, 64, 1)});
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t lines = (sym0 * sym1);  // rows: batch*seq"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t base = line * 32;"));
  CHECK_THAT(g.sources, Catch::Contains("[base + k]"));
  CHECK_THAT(g.sources, Catch::Contains("[k]"));    // gamma, along the row
  CHECK_THAT(g.sources, Catch::Contains("[line]")); // scale, once per row
}

// Proves: a row group looks rows up in a table (an embedding) where the lookup is broadcast
// along some of the rows' axes (positions [1, seq] against [batch, seq]) at the run's row, and
// reads a tensor broadcast so the same way.
TEST_CASE("row groups look up and read rows broadcast along symbolic axes", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("ids", onnx::TensorProto::INT64, {-1, -1}, {"batch", "seq"})
      .input("positions", onnx::TensorProto::INT64, {1, -1}, {"seq"})
      .input("bias", kFloat, {1, -1, 32}, {"seq"})
      .output("y");
  m.initializer_f32("words", {50, 32}, std::vector<float>(1600, 0.5f));
  m.initializer_f32("places", {16, 32}, std::vector<float>(512, 0.25f));
  m.node("Gather", {"words", "ids"}, {"w"});
  m.node("Gather", {"places", "positions"}, {"p"});
  m.node("Add", {"w", "p"}, {"wp"});
  m.node("Add", {"wp", "bias"}, {"x"});
  set_attr_ints(m.node("ReduceMax", {"x"}, {"max"}), "axes", {-1});
  m.node("Sub", {"x", "max"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 8, 8), dim("seq", 1, 16, 16)});
  CHECK_THAT(g.sources, Catch::Contains("_line = line;"));
  CHECK_THAT(g.sources, Catch::Contains("_line = line % sym1;"));
  CHECK_THAT(g.sources, Catch::Contains("[(line % sym1) * 32 + k]")); // the bias
}

// Proves: a pointwise group with movement nodes (a rotary embedding's halves: Slices, Neg,
// Concat along the fixed last axis, times a table broadcast over the batch) runs over symbolic
// dims as one kernel, each element's coordinates taken apart by the run's extents.
TEST_CASE("pointwise groups with movement nodes over symbolic dims", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"})
      .input("cos", kFloat, {-1, 8}, {"seq"})
      .output("y");
  m.initializer_i64("zero", {1}, {0});
  m.initializer_i64("four", {1}, {4});
  m.initializer_i64("eight", {1}, {8});
  m.initializer_i64("last", {1}, {-1});
  m.node("Slice", {"x", "zero", "four", "last"}, {"lo"});
  m.node("Slice", {"x", "four", "eight", "last"}, {"hi"});
  m.node("Neg", {"hi"}, {"nhi"});
  set_attr_int(m.node("Concat", {"nhi", "lo"}, {"rot"}), "axis", -1);
  m.node("Mul", {"rot", "cos"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 8, 8), dim("seq", 1, 64, 64)});
  CHECK(g.plan.groups.size() == 1);
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * sym1 * 8);"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t c1 = stitch::dims::mod32(i_lead, sym1);"));
  CHECK_THAT(g.sources, Catch::Contains("if (c2 < 4)"));
  CHECK_THAT(g.sources, Catch::Contains("in1[c1 * 8 + c2]")); // cos, broadcast over the batch
  CHECK_THAT(g.sources, Catch::Contains("in0[c0 * (sym1 * 8) + c1 * 8 + k0]"));
}

// Proves: a convolution over a symbolic batch passes the run's batch to the library.
TEST_CASE("convolutions take a symbolic batch", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 3, 8, 8}, {"batch"}).output("y");
  m.initializer_f32("w", {4, 3, 3, 3}, std::vector<float>(108, 0.1f));
  m.node("Conv", {"x", "w"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 16, 4)});
  CHECK_THAT(g.sources, Catch::Contains("desc.batch = sym0; // batch"));
  CHECK_THAT(g.sources, Catch::Contains("desc.in_spatial[0] = 8;"));
}

// Proves: a convolution over symbolic spatial extents passes the run's input and output
// extents (the shape rule's expressions) to the library, whose descriptors are cached per
// shape; a residual add and ReLU stay its epilogue.
TEST_CASE("convolutions take symbolic spatial extents", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {1, 3, -1, -1}, {"height", "width"}).output("y");
  m.initializer_f32("w", {4, 3, 3, 3}, std::vector<float>(108, 0.1f));
  m.initializer_f32("b", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"});
  set_attr_ints(conv, "strides", {2, 2});
  set_attr_ints(conv, "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y"});
  const Generated g = generate(m, {dim("height", 1, 64, 20), dim("width", 1, 64, 33)});
  REQUIRE(g.plan.groups.size() == 1);
  const auto* spec = std::get_if<ConvSpec>(&g.plan.groups[0].spec);
  REQUIRE(spec != nullptr);
  CHECK(sym_shape_to_string(spec->out_spatial_dims) == "[floor((height+1)/2),floor((width+1)/2)]");
  CHECK_THAT(g.sources, Catch::Contains("desc.in_spatial[0] = sym0; // height"));
  CHECK_THAT(g.sources, Catch::Contains("desc.out_spatial[1] = stitch::dims::floor_div((sym1 + 1), "
                                        "2); // floor((width+1)/2)"));
  CHECK_THAT(g.sources, Catch::Contains("cached per shape"));
}

// Proves: auto_pad SAME at stride 2 over symbolic extents gives ceil(in / 2) windows; its pads
// are the run's (asymmetric at even sizes), so X is first copied padded into the group's
// scratch, sized at the symbols' maxima, and the call convolves the copy unpadded; a 1 x 1
// SAME Conv at stride 2, whose pads are 0 at every size, and a 3 x 3 one at stride 1 call the
// library directly with fixed symmetric pads.
TEST_CASE("convolutions pad by the run's SAME pads through a padded copy", "[symbolic][emitter]") {
  auto build = [](int64_t kernel, int64_t stride) {
    ModelBuilder m;
    m.input("x", kFloat, {-1, 3, -1, -1}, {"batch", "height", "width"}).output("y");
    m.initializer_f32("w", {4, 3, kernel, kernel},
                      std::vector<float>(static_cast<size_t>(12 * kernel * kernel), 0.1f));
    auto& conv = m.node("Conv", {"x", "w"}, {"y"});
    set_attr_ints(conv, "strides", {stride, stride});
    set_attr_string(conv, "auto_pad", "SAME_UPPER");
    return generate(m, {dim("batch", 1, 4, 2), dim("height", 1, 64, 20), dim("width", 1, 48, 33)});
  };
  const Generated g = build(3, 2);
  REQUIRE(g.plan.groups.size() == 1);
  const auto* spec = std::get_if<ConvSpec>(&g.plan.groups[0].spec);
  REQUIRE(spec != nullptr);
  CHECK(sym_shape_to_string(spec->out_spatial_dims) == "[floor((height+1)/2),floor((width+1)/2)]");
  REQUIRE(spec->pre_pads());
  CHECK(spec->pads == Shape{0, 0});
  // The run's total padding max(0, (ceil(h / 2) - 1) * 2 + 3 - h): 1 at even h, 2 at odd.
  const DimExpr begin = spec->pre_pad_begin[0], end = spec->pre_pad_end[0];
  for (int64_t h : {1, 2, 7, 20, 64}) {
    const SymbolValues v = {{"height", h}};
    CHECK(begin.evaluate(v) == (h % 2 == 0 ? 0 : 1));
    CHECK(end.evaluate(v) == 1);
  }
  // At the maxima: 4 images x 3 channels x (64 + 1) x (48 + 1) floats.
  CHECK(g.plan.groups[0].scratch_bytes == 4 * 3 * 65 * 49 * 4);
  CHECK_THAT(g.sources, Catch::Contains("stitch_g0_conv_pad_x"));
  CHECK_THAT(g.sources, Catch::Contains("the library pads symmetrically"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t count = sym0 * 3 * target0 * target1;"));
  // The begin pads depend on the size: positions before the source are pads too.
  CHECK_THAT(g.sources, Catch::Contains("if (s0 < 0 || s0 >= source0 || s1 < 0 || s1 >= source1) "
                                        "{ padded[i] = 0.0f; continue; } // a pad"));
  CHECK_THAT(g.sources, Catch::Contains("stitch_library_conv(b, &desc, padded, w,"));
  CHECK_THAT(g.sources, Catch::Contains("desc.pads_begin[0] = 0;"));
  // The copy's grid covers the run's padded image once, at most the grid planned at the
  // maxima (4 x 3 x 65 x 49 floats: 150 blocks of 256), not that grid at every size.
  const int64_t planned = (4 * 3 * 65 * 49 + 255) / 256;
  CHECK(spec->pre_pad_blocks == planned);
  CHECK_THAT(g.sources, Catch::Contains("const int64_t work = sym0 * 3 * ("));
  CHECK_THAT(g.sources, Catch::Contains(fmt::format(
                            "grid(stitch::dims::grid_for(work, 256, {}), 1, 1);", planned)));
  CHECK_THAT(g.sources, !Catch::Contains(fmt::format("grid({}, 1, 1)", planned)));

  for (const auto& [kernel, stride, pads] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 2, 0}, {3, 1, 1}}) {
    const Generated direct = build(kernel, stride);
    const auto* s = std::get_if<ConvSpec>(&direct.plan.groups[0].spec);
    REQUIRE(s != nullptr);
    CHECK_FALSE(s->pre_pads());
    CHECK(s->pads == Shape{pads, pads});
    CHECK(direct.plan.groups[0].scratch_bytes == 0);
    CHECK_THAT(direct.sources, !Catch::Contains("_pad_x"));
  }
}

// Proves: explicit pads that differ at the begin and the end over a symbolic extent take the
// padded copy (the symmetric begin pad would give another count of windows at some sizes),
// also where the planning size alone would not show it, and over a symbolic batch with fixed
// spatial extents the copy is sized for the largest batch.
TEST_CASE("asymmetric pads over symbolic dims take a padded copy", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 2, -1}, {"batch", "length"}).output("y");
  m.initializer_f32("w", {2, 2, 3}, std::vector<float>(12, 0.1f));
  auto& conv = m.node("Conv", {"x", "w"}, {"y"});
  set_attr_ints(conv, "strides", {2});
  set_attr_ints(conv, "pads", {0, 1});
  // At length 9 the begin pad alone gives the same 4 windows; at 8 it gives 3 of 4.
  const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("length", 3, 40, 9)});
  const auto* spec = std::get_if<ConvSpec>(&g.plan.groups[0].spec);
  REQUIRE(spec != nullptr);
  REQUIRE(spec->pre_pads());
  CHECK(spec->pre_pad_begin[0].to_string() == "0");
  CHECK(spec->pre_pad_end[0].to_string() == "1");
  CHECK(g.plan.groups[0].scratch_bytes == 4 * 2 * 41 * 4);

  ModelBuilder fixed;
  fixed.input("x", kFloat, {-1, 2, 8}, {"batch"}).output("y");
  fixed.initializer_f32("w", {2, 2, 3}, std::vector<float>(12, 0.1f));
  auto& fixed_conv = fixed.node("Conv", {"x", "w"}, {"y"});
  set_attr_ints(fixed_conv, "strides", {2});
  set_attr_ints(fixed_conv, "pads", {0, 1});
  const Generated f = generate(fixed, {dim("batch", 1, 16, 2)});
  REQUIRE(std::get<ConvSpec>(f.plan.groups[0].spec).pre_pads());
  CHECK(f.plan.groups[0].scratch_bytes == 16 * 2 * 9 * 4);
}

// Proves: a MaxPool over a symbolic batch runs over the run's output elements (the spatial
// axes fixed), and a global average pool is a row reduction over the run's images and channels.
TEST_CASE("pooling windows and global pools take a symbolic batch", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 4, 9, 9}, {"batch"}).output("y").output("g");
  auto& pool = m.node("MaxPool", {"x"}, {"y"});
  set_attr_ints(pool, "kernel_shape", {3, 3});
  set_attr_ints(pool, "strides", {2, 2});
  set_attr_ints(pool, "pads", {1, 1, 1, 1});
  m.node("GlobalAveragePool", {"x"}, {"g"});
  const Generated g = generate(m, {dim("batch", 1, 16, 4)}, "none");
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * 100); // elements of "
                                        "[batch,4,5,5]"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t work = (sym0 * 4);"));
}

// Proves: a window fused with its pointwise neighbours over a symbolic batch reads a
// per-channel operand through its channel coordinate, even at a planning batch of 1, where
// [1,4,9,9] and [batch,4,9,9] have one shape; a window over symbolic spatial axes is refused
// (by shape inference, which says which dim may be symbolic).
TEST_CASE("fused windows over a symbolic batch", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 4, 9, 9}, {"batch"}).output("y");
  m.initializer_f32("scale", {1, 4, 1, 1}, {0.5f, 1.0f, 1.5f, 2.0f});
  m.node("Mul", {"x", "scale"}, {"s"});
  auto& pool = m.node("AveragePool", {"s"}, {"p"});
  set_attr_ints(pool, "kernel_shape", {3, 3});
  set_attr_ints(pool, "pads", {1, 1, 1, 1});
  m.node("Relu", {"p"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 16, 1)});
  REQUIRE(g.plan.groups.size() == 1);
  CHECK(std::holds_alternative<WindowSpec>(g.plan.groups[0].spec));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * 324);  // elements of "
                                        "[batch,4,9,9]"));
  CHECK_THAT(g.sources, Catch::Contains("[a1]"));
}

// Proves: a pooling window over symbolic spatial axes takes its output position apart by the
// run's extents, declared once before the loop, and clamps its taps to the run's input extent;
// a depthwise convolution fused with its activation does too.
TEST_CASE("windows over symbolic spatial axes", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {1, 4, -1, 9}, {"height"}).output("y").output("d");
  auto& pool = m.node("MaxPool", {"x"}, {"y"});
  set_attr_ints(pool, "kernel_shape", {3, 3});
  set_attr_ints(pool, "strides", {2, 2});
  m.initializer_f32("w", {4, 1, 3, 3}, std::vector<float>(36, 0.1f));
  auto& depthwise = m.node("Conv", {"x", "w"}, {"c"});
  set_attr_int(depthwise, "group", 4);
  set_attr_ints(depthwise, "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"d"});
  const Generated g = generate(m, {dim("height", 3, 16, 9)});
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t out_extent0 = (stitch::dims::floor_div((sym0 + 1), "
                             "2) - 1); // floor((height+1)/2)-1: spatial axis 0 of its output"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t o0 = left % out_extent0; left /= "
                                        "out_extent0;"));
  CHECK_THAT(g.sources, Catch::Contains("stitch::window::end_tap(start0, 1, 3, in_extent0)"));
  CHECK_THAT(g.sources, Catch::Contains("x + plane * (in_extent0 * 9)"));
  bool depthwise_window = false;
  for (const FusionGroup& group : g.plan.groups)
    if (const auto* spec = std::get_if<WindowSpec>(&group.spec))
      depthwise_window |= spec->fold == WindowFold::Depthwise;
  CHECK(depthwise_window);
}

// Proves: pooling with auto_pad SAME at stride 2 over a symbolic extent starts its windows at
// the run's begin pad (declared once per thread) and an AveragePool counting its pads counts
// the run's padded extent; the fixed axis keeps literal pads.
TEST_CASE("pooling windows pad by the run's SAME pads", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {1, 4, -1, 9}, {"height"}).output("y").output("a");
  auto& pool = m.node("MaxPool", {"x"}, {"y"});
  set_attr_ints(pool, "kernel_shape", {3, 3});
  set_attr_ints(pool, "strides", {2, 2});
  set_attr_string(pool, "auto_pad", "SAME_UPPER");
  auto& average = m.node("AveragePool", {"x"}, {"a"});
  set_attr_ints(average, "kernel_shape", {3, 3});
  set_attr_ints(average, "strides", {2, 2});
  set_attr_string(average, "auto_pad", "SAME_LOWER");
  set_attr_int(average, "count_include_pad", 1);
  const Generated g = generate(m, {dim("height", 1, 16, 9)});
  CHECK_THAT(g.sources, Catch::Contains("const int64_t pad_begin0 = "));
  CHECK_THAT(g.sources, Catch::Contains("the run's begin pad of spatial axis 0 (SAME)"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t start0 = o0 * 2 - pad_begin0;"));
  // Width 9 at stride 2: 5 windows, 2 pads, split 1 and 1.
  CHECK_THAT(g.sources, Catch::Contains("const int64_t start1 = o1 * 2 - 1;"));
  CHECK_THAT(g.sources, Catch::Contains("stitch::window::taps_inside(start0 + pad_begin0, 1, 3, "
                                        "in_extent0 + pad_begin0 + ("));
  CHECK_THAT(g.sources, Catch::Contains("stitch::window::taps_inside(start1 + 1, 1, 3, 11)"));
}

// Proves: DepthToSpace over symbolic spatial extents copies through its 6-D view of the run's
// extents into extents times the block size; SpaceToDepth of extents that may not be multiples
// of the block size is refused with the reason.
TEST_CASE("depth and space over symbolic spatial extents", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, -1, -1}, {"batch", "height", "width"}).output("y");
  set_attr_int(m.node("DepthToSpace", {"x"}, {"y"}), "blocksize", 2);
  const Generated g =
      generate(m, {dim("batch", 1, 4, 2), dim("height", 1, 16, 5), dim("width", 1, 16, 7)});
  std::string y_dims;
  for (const Tensor& t : g.graph.tensors)
    if (t.name == "y") y_dims = sym_shape_to_string(t.sym_shape());
  CHECK(y_dims == "[batch,2,2*height,2*width]");
  CHECK_THAT(g.sources, Catch::Contains("[batch,2,2,2,height,width] with perm [0,3,4,1,5,2]"));

  ModelBuilder odd;
  odd.input("x", kFloat, {1, 2, -1, 4}, {"height"}).output("y");
  set_attr_int(odd.node("SpaceToDepth", {"x"}, {"y"}), "blocksize", 2);
  CHECK_THROWS_WITH(symbolic_graph(odd, {dim("height", 2, 16, 8)}),
                    Catch::Contains("SpaceToDepth needs spatial axis 0 (height) to be a multiple "
                                    "of the block size 2"));
}

// Proves: a Pad over symbolic axes takes every coordinate from the run's extents, padding and
// cropping the symbolic axes too (its window of the input the run's); a Tile reads every
// coordinate from the run's extents: an axis it keeps (the symbolic batch, also at a planning
// batch of 1) as itself, a repeated one modulo the input's extent, the symbolic axis too; its
// repeats may be computed from the symbols (a class token tiled over the run's batch).
TEST_CASE("pads and tiles over symbolic axes", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 4, 6}, {"batch"}).output("p").output("t");
  m.initializer_i64("pads", {6}, {0, 0, 1, 0, 0, 2});
  m.node("Pad", {"x", "pads"}, {"p"});
  m.initializer_i64("repeats", {3}, {1, 2, 1});
  m.node("Tile", {"x", "repeats"}, {"t"});
  const Generated g = generate(m, {dim("batch", 1, 16, 1)}, "none");
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * 36);  // elements: 36*batch"));
  CHECK_THAT(g.sources, Catch::Contains("out[i] = in[x2 + c1 * 6 + c0 * 24];"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * 48);  // elements: 48*batch"));
  CHECK_THAT(g.sources, Catch::Contains("out[i] = in[c2 + (c1 % 4) * 6 + c0 * 24];"));

  ModelBuilder spatial;
  spatial.input("x", kFloat, {2, -1, 6}, {"length"}).output("p");
  spatial.initializer_i64("pads", {6}, {0, 2, 0, 0, -1, 1});
  auto& reflect = spatial.node("Pad", {"x", "pads"}, {"p"});
  set_attr_string(reflect, "mode", "reflect");
  const Generated r = generate(spatial, {dim("length", 2, 30, 9)}, "none");
  CHECK_THAT(r.sources, Catch::Contains("stitch::movement::reflect_index(c1 - 2, (sym0 - 1))"));

  ModelBuilder twice;
  twice.input("x", kFloat, {-1, 4, 6}, {"batch"}).output("t");
  twice.initializer_i64("repeats", {3}, {2, 1, 1});
  twice.node("Tile", {"x", "repeats"}, {"t"}, "tile0");
  const Generated t = generate(twice, {dim("batch", 1, 16, 4)}, "none");
  CHECK_THAT(t.sources, Catch::Contains("dims[0] = (sym0 * 2);") &&
                            Catch::Contains("out[i] = in[c2 + c1 * 6 + stitch::dims::mod32(c0, "
                                            "sym0) * 24];"));

  ModelBuilder token;
  token.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("y");
  token.initializer_f32("cls", {1, 1, 8}, std::vector<float>(8, 0.5f));
  token.initializer_i64("begin", {1}, {0});
  token.initializer_i64("end", {1}, {1});
  token.initializer_i64("ones", {2}, {1, 1});
  token.node("Shape", {"x"}, {"shape"});
  token.node("Slice", {"shape", "begin", "end"}, {"batch"});
  set_attr_int(token.node("Concat", {"batch", "ones"}, {"repeats"}), "axis", 0);
  token.node("Tile", {"cls", "repeats"}, {"tokens"});
  set_attr_int(token.node("Concat", {"tokens", "x"}, {"y"}), "axis", 1);
  const Generated c = generate(token, {dim("batch", 1, 8, 3), dim("seq", 1, 16, 5)}, "none");
  std::string tokens_dims;
  for (const Tensor& tensor : c.graph.tensors)
    if (tensor.name == "tokens") tokens_dims = sym_shape_to_string(tensor.sym_shape());
  CHECK(tokens_dims == "[batch,1,8]");
  CHECK_THAT(c.sources, Catch::Contains("out[i] = in[c2];"));
}

// Proves: where the rows' range spans both sides of the mapping rule's switch (rows of 512: a
// block per row for few rows, a warp per row for many), the group carries the other mapping as
// a variant and its function picks by the run's rows; the report lists the variant.
TEST_CASE("row groups get a mapping variant where the rows decide it", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 512}, {"rows"}).output("y");
  m.initializer_f32("gamma", {512}, std::vector<float>(512, 0.5f));
  m.initializer_f32("beta", {512}, std::vector<float>(512, 0.25f));
  set_attr_int(m.node("LayerNormalization", {"x", "gamma", "beta"}, {"y"}), "axis", -1);
  for (int64_t planned : {16, 4096}) {
    INFO("planned at " << planned << " rows");
    const Generated g = generate(m, {dim("rows", 1, 4096, planned)});
    REQUIRE(g.plan.groups.size() == 1);
    const FusionGroup& group = g.plan.groups[0];
    REQUIRE(group.variants.size() == 1);
    const MappingVariant& variant = group.variants[0];
    REQUIRE(variant.when.size() == 1);
    REQUIRE(variant.when[0].size() == 1);
    const ExtentBound& bound = variant.when[0][0];
    CHECK(bound.name == "rows");
    CHECK(bound.value.to_string() == "rows");
    // The rule switches where the rows could give each SM 8 warps.
    const int64_t threshold = 8 * DeviceParams{}.sm_count;
    const bool few = planned < threshold;
    CHECK(group.mapping == (few ? ThreadMapping::BlockPerRow : ThreadMapping::WarpPerRow));
    CHECK(variant.mapping == (few ? ThreadMapping::WarpPerRow : ThreadMapping::BlockPerRow));
    CHECK(bound.at_least == (few ? std::optional<int64_t>(threshold) : std::nullopt));
    CHECK(bound.at_most == (few ? std::nullopt : std::optional<int64_t>(threshold - 1)));
    CHECK_THAT(g.sources, Catch::Contains("stitch_g0_regional_block_per_row(") &&
                              Catch::Contains("stitch_g0_regional_warp_per_row(") &&
                              Catch::Contains("const int64_t rows = sym0;"));
    CHECK_THAT(g.sources,
               Catch::Contains(fmt::format("if (rows {} {}) return stitch_group_0_{}(",
                                           few ? ">=" : "<=", few ? threshold : threshold - 1,
                                           few ? "warp_per_row" : "block_per_row")));
  }
}

// Proves: the mapping rule's regions over ranges of rows and row lengths are disjoint boxes
// that cover the ranges, each of the mapping row_mapping gives at every point of it (tried at
// every point of small ranges, and at the ranges' corners and either side of the rule's
// switches for large ones); a range within which the rule does not switch is one box.
TEST_CASE("the mapping rule's regions cover the ranges, one mapping each", "[symbolic][planner]") {
  const DeviceParams device;
  const int64_t switch_rows = 8 * device.sm_count;
  auto check = [&](DimBounds rows, DimBounds length, const std::vector<int64_t>& row_points,
                   const std::vector<int64_t>& length_points) {
    const std::vector<MappingRegion> regions = row_mapping_regions(rows, length, device);
    for (int64_t r : row_points)
      for (int64_t l : length_points) {
        if (r < rows.lo || r > rows.hi || l < length.lo || l > length.hi) continue;
        INFO("rows " << r << ", length " << l);
        int holding = 0;
        for (const MappingRegion& region : regions)
          if (region.rows.lo <= r && r <= region.rows.hi && region.length.lo <= l &&
              l <= region.length.hi) {
            ++holding;
            CHECK(region.mapping == row_mapping(r, l, device));
          }
        CHECK(holding == 1);
      }
    return regions;
  };
  std::vector<int64_t> small;
  for (int64_t v = 1; v <= 300; ++v)
    small.push_back(v);
  check({1, 300}, {1, 300}, small, small);
  std::vector<int64_t> rows_points = {1, 2, switch_rows - 1, switch_rows, switch_rows + 1, 100000};
  std::vector<int64_t> length_points = {1, 16, 17, 255, 256, 1024, 1025, 65536};
  const std::vector<MappingRegion> all = check({1, 100000}, {1, 65536}, rows_points, length_points);
  // A thread per row (short rows), a warp per row in two boxes (middling lengths, many rows
  // from 256 on) merged to as few as make boxes, a block per row likewise.
  CHECK(all.size() <= 5);
  const std::vector<MappingRegion> one = check({1, 8}, {300, 900}, {1, 4, 8}, {300, 600, 900});
  REQUIRE(one.size() == 1);
  CHECK(one[0].mapping == ThreadMapping::BlockPerRow);
  CHECK(one[0].rows.lo == 1);
  CHECK(one[0].rows.hi == 8);
  CHECK(one[0].length.lo == 300);
  CHECK(one[0].length.hi == 900);
}

// Proves: a reduction whose row length depends on the symbols (a global pool over the run's
// pixels) carries a variant for each mapping the rule gives within the range (a thread per
// row of at most 16 pixels, a warp per row, a block per row for long ones), each taken where
// the run's length calls for it, its block sized within its lengths; the group function picks
// by the run's rows and length, and the report lists each variant's bounds.
TEST_CASE("reductions get mapping variants where the row length decides them",
          "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, -1, -1}, {"batch", "height", "width"}).output("y");
  m.node("GlobalAveragePool", {"x"}, {"y"});
  const Generated g =
      generate(m, {dim("batch", 1, 4, 2), dim("height", 1, 64, 3), dim("width", 1, 64, 4)}, "none");
  REQUIRE(g.plan.groups.size() == 1);
  const FusionGroup& group = g.plan.groups[0];
  CHECK(group.mapping == ThreadMapping::Flat); // 12 pixels at the planning size
  REQUIRE(group.variants.size() == 2);
  const MappingVariant& warp = group.variants[0];
  const MappingVariant& block = group.variants[1];
  CHECK(warp.mapping == ThreadMapping::WarpPerRow);
  CHECK(block.mapping == ThreadMapping::BlockPerRow);
  // At most 32 rows: a block per row from 256 pixels on; a warp per row from 17 to 255.
  REQUIRE(warp.when.size() == 1);
  REQUIRE(warp.when[0].size() == 1);
  CHECK(warp.when[0][0].name == "length");
  CHECK(warp.when[0][0].value.to_string() == "height*width");
  CHECK(warp.when[0][0].at_least == std::optional<int64_t>(17));
  CHECK(warp.when[0][0].at_most == std::optional<int64_t>(255));
  REQUIRE(block.when.size() == 1);
  REQUIRE(block.when[0].size() == 1);
  CHECK(block.when[0][0].at_least == std::optional<int64_t>(256));
  CHECK_FALSE(block.when[0][0].at_most);
  // The block's threads by its shortest length: 256 pixels, 4 a thread.
  CHECK(block.launch.block[0] == 64);
  CHECK(block.launch.work_per_block == 1);
  CHECK(warp.launch.work_per_block == 8);
  CHECK_THAT(g.sources, Catch::Contains("const int64_t length = (sym1 * sym2);") &&
                            Catch::Contains("if (length >= 17 && length <= 255) return "
                                            "stitch_group_0_warp_per_row(") &&
                            Catch::Contains("if (length >= 256) return "
                                            "stitch_group_0_block_per_row(") &&
                            Catch::Contains("return stitch_group_0_flat("));
  const nlohmann::json report = plan_to_json(g.graph, g.plan, g.memory);
  const nlohmann::json& variants = report["groups"][0]["variants"];
  REQUIRE(variants.size() == 2);
  CHECK(variants[1]["mapping"] == "block-per-row");
  CHECK(variants[1]["when"][0][0]["extent"] == "length");
  CHECK(variants[1]["when"][0][0]["at_least"] == 256);

  // Many rows of middling length take a warp per row, few a block per row: boxes over both.
  ModelBuilder rows;
  rows.input("x", kFloat, {-1, 512}, {"rows"}).output("y");
  rows.initializer_i64("axes", {1}, {1});
  rows.node("ReduceSum", {"x", "axes"}, {"y"});
  const Generated r = generate(rows, {dim("rows", 1, 4096, 4096)}, "none");
  REQUIRE(r.plan.groups.size() == 1);
  CHECK(r.plan.groups[0].mapping == ThreadMapping::WarpPerRow);
  REQUIRE(r.plan.groups[0].variants.size() == 1);
  CHECK(r.plan.groups[0].variants[0].mapping == ThreadMapping::BlockPerRow);
  CHECK_THAT(r.sources,
             Catch::Contains(fmt::format("if (rows <= {}) return stitch_group_0_block_per_row(",
                                         8 * DeviceParams{}.sm_count - 1)));
}

// Proves: a product whose M alone is symbolic passes M as an expression to the library (one
// GEMM of batch*seq rows); one whose B depends on the symbols is refused, naming B.
TEST_CASE("library products take a symbolic M and refuse a symbolic B", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 16}, {"batch", "seq"}).output("y");
  m.initializer_f32("w", {16, 4}, std::vector<float>(64, 0.25f));
  m.node("MatMul", {"x", "w"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 4, 4), dim("seq", 1, 32, 32)});
  CHECK_THAT(g.sources, Catch::Contains("stitch_gemm_desc_packed((sym0 * sym1), 4, 16)"));

  // Planned at one row, a residual of the result's shape looks like a row of N: over the
  // symbols it is the library's C, not its bias.
  ModelBuilder residual;
  residual.input("x", kFloat, {-1, 16}, {"rows"}).output("y");
  residual.initializer_f32("w", {16, 16}, std::vector<float>(256, 0.25f));
  residual.node("MatMul", {"x", "w"}, {"h"});
  residual.node("Add", {"h", "x"}, {"y"});
  const Generated r = generate(residual, {dim("rows", 1, 64, 1)});
  CHECK_THAT(r.sources, Catch::Contains("desc.beta = 1.0f;"));
  CHECK_THAT(r.sources, Catch::Contains("(b, &desc, lhs, rhs, addend1, nullptr, result,"));
}

// Proves: a batched product whose batch, M, N and K all depend on the symbols (an attention's
// Q·Kᵀ and P·V) passes every extent and stride to the library as expressions; an operand with
// part of the result's batch axes (one stride per operand cannot say it) is refused by name.
TEST_CASE("library products take symbolic batches, M, N and K", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("q", kFloat, {-1, 4, -1, 16}, {"batch", "seq"})
      .input("kt", kFloat, {-1, 4, 16, -1}, {"batch", "seq"})
      .output("s");
  m.node("MatMul", {"q", "kt"}, {"s"});
  const Generated g = generate(m, {dim("batch", 1, 4, 4), dim("seq", 1, 32, 32)}, "none");
  CHECK_THAT(g.sources, Catch::Contains("stitch_gemm_desc_packed(sym1, sym1, 16); // m, n, k"));
  CHECK_THAT(g.sources, Catch::Contains("desc.batch_count = (sym0 * 4);"));
  CHECK_THAT(g.sources, Catch::Contains("desc.stride_a = (sym1 * 16);"));
  CHECK_THAT(g.sources, Catch::Contains("desc.stride_b = (sym1 * 16);"));

  ModelBuilder part;
  part.input("x", kFloat, {-1, 4, -1, 16}, {"batch", "seq"}).output("y");
  part.initializer_f32("w", {4, 16, 8}, std::vector<float>(512, 0.25f));
  part.node("MatMul", {"x", "w"}, {"y"}, "per_head");
  CHECK_THAT(refusal(part, {dim("batch", 1, 4, 4), dim("seq", 1, 32, 32)}),
             Catch::Contains("node 'per_head' (MatMul)") &&
                 Catch::Contains("the batch axes of 'w' [4,16,8] are neither all of the result's "
                                 "[batch,4,seq,8], nor none, nor the leading ones of A's"));

  // One key head shared by four query heads (multi-query attention, K unexpanded): the heads
  // stack into M, one call of `batch` batches, B advancing by one head's K x N.
  ModelBuilder shared;
  shared.input("q", kFloat, {-1, 4, -1, 16}, {"batch", "seq"})
      .input("kt", kFloat, {-1, 1, 16, -1}, {"batch", "seq"})
      .output("s");
  shared.node("MatMul", {"q", "kt"}, {"s"});
  const Generated mq = generate(shared, {dim("batch", 1, 4, 2), dim("seq", 1, 32, 8)}, "none");
  CHECK_THAT(mq.sources, Catch::Contains("their 4 matrices stack into M = 4*seq, one B per batch"));
  CHECK_THAT(mq.sources, Catch::Contains("stitch_gemm_desc_packed((sym1 * 4), sym1, 16);"));
  CHECK_THAT(mq.sources, Catch::Contains("desc.batch_count = sym0;"));
  CHECK_THAT(mq.sources, Catch::Contains("desc.stride_a = (sym1 * 64);"));
  CHECK_THAT(mq.sources, Catch::Contains("desc.stride_b = (sym1 * 16);"));
  // Shared by the leading axis instead (one batch of keys for every batch of queries): A's rows
  // do not continue across it; refused.
  ModelBuilder leading;
  leading.input("q", kFloat, {-1, 4, -1, 16}, {"batch", "seq"})
      .input("kt", kFloat, {1, 4, 16, -1}, {"seq"})
      .output("s");
  leading.node("MatMul", {"q", "kt"}, {"s"}, "scores");
  CHECK_THAT(refusal(leading, {dim("batch", 1, 4, 2), dim("seq", 1, 32, 8)}),
             Catch::Contains("node 'scores' (MatMul)") &&
                 Catch::Contains("the batch axes of 'kt' [1,4,16,seq] are neither all"));
}

// Proves: values computed from the symbols are the run's where a kernel reads them (a pointwise
// kernel evaluates them from the symbols) and refused where one would read their planning
// values from memory (a Gather's indices).
TEST_CASE("values computed from the symbols are read as the run's", "[symbolic][planner]") {
  ModelBuilder data;
  data.input("x", onnx::TensorProto::INT64, {-1, 4}, {"batch"}).output("y");
  data.initializer_i64("zero", {}, {0});
  data.initializer_i64("two", {}, {2});
  data.node("Shape", {"x"}, {"s"});
  set_attr_int(data.node("Gather", {"s", "zero"}, {"b"}), "axis", 0);
  data.node("Mul", {"b", "two"}, {"b2"});
  data.node("Add", {"x", "b2"}, {"y"}, "add_count");
  const Generated g = generate(data, {dim("batch", 1, 8, 8)});
  CHECK_THAT(g.sources, Catch::Contains("= int64_t((sym0 * 2));  // computed from the symbols"));

  ModelBuilder lookup;
  lookup.input("x", onnx::TensorProto::INT64, {-1, 4}, {"batch"})
      .input("table", kFloat, {10, 4})
      .output("y");
  lookup.initializer_i64("zero", {}, {0});
  lookup.node("Shape", {"x"}, {"s"});
  set_attr_int(lookup.node("Gather", {"s", "zero"}, {"b"}), "axis", 0);
  lookup.node("Gather", {"table", "b"}, {"y"}, "pick");
  CHECK_THAT(refusal(lookup, {dim("batch", 1, 8, 8)}),
             Catch::Contains("node 'pick' (Gather)") &&
                 Catch::Contains("it reads 'b' = [batch], values computed from the symbolic "
                                 "dims, as data"));
}

// Proves: a reduction over rows whose length depends on the symbols (a softmax over the keys)
// takes the length from the symbols, each row at line * length, a mean divided by it per run.
TEST_CASE("row reductions over rows of symbolic length", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {4, -1}, {"keys"}).output("y").output("mean");
  set_attr_ints(m.node("ReduceMax", {"x"}, {"y"}), "axes", {-1});
  set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {-1});
  const Generated g = generate(m, {dim("keys", 1, 128, 128)}, "none");
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t length = sym0;  // elements per line: keys"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t base = line * length;"));
  CHECK_THAT(g.sources, Catch::Contains("acc / static_cast<float>(length)"));
}

// Proves: a softmax over the run's keys, with a key mask [batch, 1, 1, keys] added before it and
// a scale per head after, is one Regional group: its rows of `seq` elements from the run's
// extents, the mask read at its batch's row and the element's key, the scale once per row, and
// each thread's share of the longest row (200 keys, a warp per row: 7) cached in registers.
// Rows of at most 16 keys take a thread per row, a variant by the run's row length.
TEST_CASE("row groups run rows of the run's length", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 4, -1, -1}, {"batch", "seq", "seq"})
      .input("mask", kFloat, {-1, 1, 1, -1}, {"batch", "seq"})
      .output("y");
  m.initializer_f32("w", {1, 4, 1, 1}, {0.5f, 1.0f, 1.5f, 2.0f});
  m.node("Add", {"x", "mask"}, {"xm"});
  set_attr_int(m.node("Softmax", {"xm"}, {"p"}), "axis", -1);
  m.node("Mul", {"p", "w"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("seq", 1, 200, 64)});
  REQUIRE(g.plan.groups.size() == 1);
  const FusionGroup& group = g.plan.groups[0];
  const auto& spec = std::get<RegionalSpec>(group.spec);
  REQUIRE(spec.row_length_dims);
  CHECK(spec.row_length_dims->to_string() == "seq");
  CHECK(group.mapping == ThreadMapping::WarpPerRow);
  CHECK(spec.cache == RowCache::Registers);
  CHECK(spec.elements_per_thread == 7); // ceil(200 / 32)
  CHECK_THAT(g.sources, Catch::Contains("const int64_t length = sym1;  // elements per row: seq"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t base = line * length;"));
  CHECK_THAT(g.sources, Catch::Contains("float row0[7];"));
  CHECK_THAT(g.sources, Catch::Contains("if (k >= length) break;"));
  CHECK_THAT(g.sources, Catch::Contains("[(line / (sym1 * 4)) * sym1 + k]"));   // the mask
  CHECK_THAT(g.sources, Catch::Contains("[line / sym1 % 4];  // one per row")); // the scale
  REQUIRE(group.variants.size() == 1);
  const MappingVariant& flat = group.variants[0];
  CHECK(flat.mapping == ThreadMapping::Flat);
  REQUIRE(flat.when.size() == 1);
  REQUIRE(flat.when[0].size() == 1);
  CHECK(flat.when[0][0].name == "length");
  CHECK(flat.when[0][0].at_most == std::optional<int64_t>(16));
  // The thread-per-row variant caches the 16 elements of its longest row.
  const auto& flat_spec = std::get<RegionalSpec>(flat.spec);
  CHECK(flat_spec.cache == RowCache::Registers);
  CHECK(flat_spec.elements_per_thread == 16);
  CHECK_THAT(g.sources, Catch::Contains("if (length <= 16) return stitch_group_0_flat("));
  const nlohmann::json report = plan_to_json(g.graph, g.plan, g.memory);
  CHECK(report["groups"][0]["spec"]["row_length_dims"] == "seq");
  CHECK(report["groups"][0]["spec"]["elements_per_thread"] == 7);
}

// Proves: an attention over symbolic queries keeps the tile geometry planned at the typical
// shape for the queries near it and takes the geometry of other points of the range as
// variants: a block of one warp and one query row where the run has one query (a decode step;
// planned at 12 queries, 4 warps of 3 rows), tiles of 16 queries above the planning shape's
// queries, with key tiles of 32 up to 32 keys and of 64 past them, on tensor cores for float16
// up to 512 queries; the group function picks the kernel by the run's queries. Where the keys
// grow with a symbol the queries lack (a decode step's past), the boxes bound the run's keys too:
// one query over a past planned long takes key tiles of 32 for up to 32 keys, and queries of
// 1..16 over a cache of 1..64 keys each take short and long key tiles.
TEST_CASE("attention tile geometry variants by the run's queries and keys", "[symbolic][planner]") {
  auto attention = [](int dtype, int64_t queries) {
    ModelBuilder m;
    m.input("q", dtype, {-1, 4, queries, 16}, {"batch", "seq"})
        .input("k", dtype, {-1, 4, -1, 16}, {"batch", queries < 0 ? "seq" : "past"})
        .input("v", dtype, {-1, 4, -1, 16}, {"batch", queries < 0 ? "seq" : "past"})
        .output("y");
    set_attr_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
    m.node("MatMul", {"q", "kt"}, {"s"});
    set_attr_int(m.node("Softmax", {"s"}, {"p"}), "axis", -1);
    m.node("MatMul", {"p", "v"}, {"y"});
    return m;
  };
  auto attention_group = [](const Generated& g) -> const FusionGroup& {
    for (const FusionGroup& group : g.plan.groups)
      if (group.kind == GroupKind::Attention) return group;
    FAIL("no attention group");
    return g.plan.groups.front();
  };
  // One box of one bound on the queries.
  auto box = [](const MappingVariant& v, std::optional<int64_t> at_least,
                std::optional<int64_t> at_most) {
    REQUIRE(v.when.size() == 1);
    REQUIRE(v.when[0].size() == 1);
    CHECK(v.when[0][0].name == "queries");
    CHECK(v.when[0][0].at_least == at_least);
    CHECK(v.when[0][0].at_most == at_most);
  };
  {
    const Generated g =
        generate(attention(kFloat, -1), {dim("batch", 1, 8, 3), dim("seq", 1, 64, 12)});
    const FusionGroup& group = attention_group(g);
    const auto& planned = std::get<AttentionSpec>(group.spec);
    CHECK(planned.warps == 4);
    CHECK(planned.rows_per_warp == 3);
    CHECK(planned.key_tile == 32);
    REQUIRE(group.variants.size() == 3);
    const auto& one = std::get<AttentionSpec>(group.variants[0].spec);
    CHECK(one.warps == 1);
    CHECK(one.rows_per_warp == 1);
    CHECK(group.variants[0].launch.block[0] == 32);
    CHECK(group.variants[0].launch.work.to_string() == "4*batch*seq");
    box(group.variants[0], std::nullopt, 1);
    for (size_t k : {1, 2}) {
      const auto& many = std::get<AttentionSpec>(group.variants[k].spec);
      CHECK(many.warps == 4);
      CHECK(many.rows_per_warp == 4);
      CHECK(many.key_tile == (k == 1 ? 32 : 64));
      CHECK_FALSE(many.tensor_cores);
    }
    box(group.variants[1], 13, 32);
    box(group.variants[2], 33, std::nullopt);
    const std::string f = fmt::format("stitch_group_{}", group.id);
    CHECK_THAT(g.sources, Catch::Contains("const int64_t queries = sym1;  // seq"));
    CHECK_THAT(g.sources, Catch::Contains(fmt::format("if (queries <= 1) return {}_q1_k32(", f)));
    CHECK_THAT(g.sources, Catch::Contains(fmt::format(
                              "if (queries >= 13 && queries <= 32) return {}_q16_k32(", f)));
    CHECK_THAT(g.sources, Catch::Contains(fmt::format("if (queries >= 33) return {}_q16_k64(", f)));
    CHECK_THAT(g.sources, Catch::Contains(fmt::format("return {}_q12_k32(b, error", f)));
    CHECK_THAT(g.sources, Catch::Contains("stitch::attention::FlashConfig<16, 16, 1, 1, 32>"));
    const nlohmann::json report = plan_to_json(g.graph, g.plan, g.memory);
    bool reported = false;
    for (const nlohmann::json& j : report["groups"])
      if (j["kind"] == "attention") {
        REQUIRE(j["variants"].size() == 3);
        CHECK(j["variants"][0]["when"][0][0]["extent"] == "queries");
        CHECK(j["variants"][0]["work"] == "4*batch*seq");
        CHECK(j["variants"][2]["spec"]["key_tile"] == 64);
        reported = true;
      }
    CHECK(reported);
  }
  {
    const Generated g = generate(attention(onnx::TensorProto::FLOAT16, -1),
                                 {dim("batch", 1, 8, 3), dim("seq", 1, 512, 12)});
    const FusionGroup& group = attention_group(g);
    CHECK_FALSE(std::get<AttentionSpec>(group.spec).tensor_cores);
    REQUIRE(group.variants.size() == 3);
    for (size_t k : {1, 2}) {
      const auto& many = std::get<AttentionSpec>(group.variants[k].spec);
      CHECK(many.tensor_cores);
      CHECK(many.rows_per_warp == 16);
      CHECK(many.element == DType::Float16);
      CHECK(many.key_tile == (k == 1 ? 32 : 64));
    }
    box(group.variants[1], 13, 32);
    box(group.variants[2], 33, std::nullopt);
    CHECK_THAT(g.sources,
               Catch::Contains("stitch::attention::FlashMmaConfig<stitch::float16, 16, 16"));
    CHECK_THAT(g.sources, Catch::Contains("_k64_mma(b, error, error_size);"));
  }
  {
    const Generated g =
        generate(attention(kFloat, 1), {dim("batch", 1, 8, 3), dim("past", 1, 256, 100)});
    const FusionGroup& group = attention_group(g);
    // One query over a past of 1..256 planned at 100 keys (tiles of 64): up to 32 keys, tiles
    // of 32, bounded by the run's keys only.
    CHECK(std::get<AttentionSpec>(group.spec).query_tile() == 1);
    CHECK(std::get<AttentionSpec>(group.spec).key_tile == 64);
    REQUIRE(group.variants.size() == 1);
    const auto& short_keys = std::get<AttentionSpec>(group.variants[0].spec);
    CHECK(short_keys.key_tile == 32);
    CHECK(short_keys.query_tile() == 1);
    REQUIRE(group.variants[0].when.size() == 1);
    REQUIRE(group.variants[0].when[0].size() == 1);
    const ExtentBound& keys = group.variants[0].when[0][0];
    CHECK(keys.name == "keys");
    CHECK(keys.value.to_string() == "past");
    CHECK_FALSE(keys.at_least);
    CHECK(keys.at_most == std::optional<int64_t>(32));
    CHECK_THAT(g.sources, Catch::Contains("if (keys <= 32) return "));
  }
  {
    // Queries of 1..16 over keys of past + seq (a decode step's cache): each query interval
    // split by the keys, short and long, where their tiles differ.
    ModelBuilder m;
    m.input("q", kFloat, {-1, 4, -1, 16}, {"batch", "seq"})
        .input("k", kFloat, {-1, 4, -1, 16}, {"batch", "total"})
        .input("v", kFloat, {-1, 4, -1, 16}, {"batch", "total"})
        .output("y");
    set_attr_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
    m.node("MatMul", {"q", "kt"}, {"s"});
    set_attr_int(m.node("Softmax", {"s"}, {"p"}), "axis", -1);
    m.node("MatMul", {"p", "v"}, {"y"});
    const Generated g =
        generate(m, {dim("batch", 1, 4, 2), dim("seq", 1, 16, 3), dim("total", 1, 64, 8)});
    const FusionGroup& group = attention_group(g);
    CHECK(std::get<AttentionSpec>(group.spec).key_tile == 32);
    bool long_one = false; // the one-query variant for more than 32 keys
    for (const MappingVariant& v : group.variants) {
      const auto& spec = std::get<AttentionSpec>(v.spec);
      for (const std::vector<ExtentBound>& b : v.when) {
        REQUIRE(b.size() == 2);
        CHECK(b[0].name == "queries");
        CHECK(b[1].name == "keys");
        CHECK(spec.key_tile == (b[1].at_least ? 64 : 32));
        long_one = long_one || (spec.query_tile() == 1 && b[1].at_least == 33);
      }
    }
    CHECK(long_one);
    CHECK_THAT(g.sources, Catch::Contains("queries <= 1 && keys >= 33"));
  }
}

// Proves: a row group's cache holds the longest row it runs: a normalization over the run's
// time axis (up to 30000 elements, planned at 16000) takes a block per row with the rows in
// 120000 bytes of dynamic shared memory, where the planning length alone would ask for 64000;
// its variants for shorter rows keep each thread's share in registers, sized for their own
// longest rows (a warp per row up to 255 elements: 8; a thread per row up to 16: 16).
TEST_CASE("row caches over rows of the run's length hold the longest row", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, -1}, {"batch", "time"}).output("y");
  m.initializer_f32("eps", {}, {1e-5f});
  set_attr_ints(m.node("ReduceMean", {"x"}, {"mu"}), "axes", {-1});
  m.node("Sub", {"x", "mu"}, {"d"});
  m.node("Mul", {"d", "d"}, {"d2"});
  set_attr_ints(m.node("ReduceMean", {"d2"}, {"var"}), "axes", {-1});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"sd"});
  m.node("Div", {"d", "sd"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("time", 1, 30000, 16000)});
  REQUIRE(g.plan.groups.size() == 1);
  const FusionGroup& group = g.plan.groups[0];
  const auto& spec = std::get<RegionalSpec>(group.spec);
  CHECK(group.mapping == ThreadMapping::BlockPerRow);
  CHECK(spec.cache == RowCache::Shared);
  CHECK(group.launch.dynamic_shared_bytes == 30000 * 4);
  CHECK_THAT(g.sources, Catch::Contains("acc1 / static_cast<float>(length)"));
  REQUIRE(group.variants.size() == 2);
  for (const MappingVariant& v : group.variants) {
    const auto& s = std::get<RegionalSpec>(v.spec);
    CHECK(s.cache == RowCache::Registers);
    CHECK(v.launch.dynamic_shared_bytes == 0);
    CHECK(s.elements_per_thread == (v.mapping == ThreadMapping::Flat ? 16 : 8));
  }
}

// Proves: a row of the run's length planned with its symbol at 1 (where a mask broadcast along
// the keys and one holding every key look alike) is no row group: the softmax's ops run apart,
// and the reason names the planning binding.
TEST_CASE("rows of the run's length planned at a binding of 1 are no row group",
          "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1}, {"rows", "keys"}).output("y");
  set_attr_int(m.node("Softmax", {"x"}, {"y"}), "axis", -1);
  const Generated g = generate(m, {dim("rows", 1, 64, 8), dim("keys", 1, 64, 1)});
  CHECK(g.plan.groups.size() > 1);
  CHECK_THAT(plan_to_json(g.graph, g.plan, g.memory)["rejected_fusions"].dump(),
             Catch::Contains("is planned with its axis keys at 1"));
  const Generated planned = generate(m, {dim("rows", 1, 64, 8), dim("keys", 1, 64, 2)});
  CHECK(planned.plan.groups.size() == 1);
}

// Proves: planned at a binding of 1, which drops the reduced axis from the planned space, a
// reduction over a symbolic axis still reads each line's elements at the run's positions:
// along a row (k), along a column `inner` apart (a mean pool over seq: k * 8, lines 8 apart
// within each image), and a running sum and an argmax likewise.
TEST_CASE("reductions over symbolic axes planned at a binding of 1", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("mean").output("sums").output("best");
  set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {1});
  m.initializer_i64("axis", {}, {1});
  m.node("CumSum", {"x", "axis"}, {"sums"});
  m.node("Transpose", {"x"}, {"t"});
  set_attr_int(m.node("ArgMax", {"t"}, {"best"}), "axis", -1);
  const Generated g = generate(m, {dim("batch", 1, 4, 1), dim("seq", 1, 64, 1)}, "none");
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t base = (line / 8) * (length * 8) + line % 8;"));
  CHECK_THAT(g.sources, Catch::Contains("x[base + k * 8]"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t base = line * length;"));
  CHECK_THAT(g.sources, Catch::Contains("x[base + k]"));
  CHECK_THAT(g.sources, Catch::Contains("acc / static_cast<float>(length)"));
}

// Proves: an embedding lookup of a fixed table by symbolic indices runs over the indices'
// elements times the row, output element i reading row i / row of the picks.
TEST_CASE("a Gather of table rows by symbolic indices", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("ids", onnx::TensorProto::INT64, {-1, -1}, {"batch", "seq"}).output("y");
  m.initializer_f32("table", {10, 4}, std::vector<float>(40, 0.5f));
  m.node("Gather", {"table", "ids"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("seq", 1, 16, 8)});
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * sym1 * 4);  // elements: "
                                        "4*batch*seq"));
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t inner = 4, count = (sym0 * sym1), dim = 10;"));
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t p = stitch::dims::mod32(i, inner), j = "
                             "stitch::dims::mod32(stitch::dims::div32(i, inner), count), o = "
                             "stitch::dims::div32(stitch::dims::div32(i, inner), count);"));
}

// Proves: a Gather from data whose axis is symbolic (the last token: index -1 along seq) wraps
// its index by the run's axis, also where the output is fixed.
TEST_CASE("a Gather along a symbolic axis wraps by the run's extent", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 4}, {"seq"}).output("y");
  m.initializer_i64("last", {}, {-1});
  m.node("Gather", {"x", "last"}, {"y"});
  const Generated g = generate(m, {dim("seq", 1, 16, 8)});
  CHECK_THAT(g.sources, Catch::Contains("const int64_t inner = 4, count = 1, dim = sym0;"));
}

// Proves: Range, Trilu, ConstantOfShape and Concat over symbolic extents: a causal mask and
// positions up to the run's sequence, a concatenation along a symbolic axis.
TEST_CASE("generators and concatenations over symbolic extents", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 4}, {"seq"}).output("positions").output("mask").output("both");
  m.initializer_i64("zero", {}, {0});
  m.initializer_i64("one", {}, {1});
  m.node("Shape", {"x"}, {"shape"});
  set_attr_int(m.node("Gather", {"shape", "zero"}, {"n"}), "axis", 0);
  m.initializer_i64("first", {1}, {0});
  m.node("Range", {"zero", "n", "one"}, {"positions"});
  set_attr_int(m.node("Gather", {"shape", "first"}, {"n1"}), "axis", 0);
  set_attr_int(m.node("Concat", {"n1", "n1"}, {"square"}), "axis", 0);
  m.node("ConstantOfShape", {"square"}, {"ones"});
  m.node("Trilu", {"ones"}, {"mask"});
  set_attr_int(m.node("Concat", {"x", "x"}, {"both"}), "axis", 0);
  const Generated g = generate(m, {dim("seq", 1, 16, 8)}, "none");
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = sym0;  // elements: seq"));
  CHECK_THAT(g.sources, Catch::Contains("out[i] = int64_t(0LL + i * 1LL);"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t rows = sym0, columns = sym0;"));
  CHECK_THAT(g.sources,
             Catch::Contains("else out[i] = in1[row * (sym0 * 4) + along - (sym0 * 4)];"));
}

// Proves: a Gather of a flattened mask by Range(batch) * seq + Range(seq) (how traced exports
// index a mask per sequence) reads every position in order at every value of the symbols: it
// becomes a view of the mask, and the Ranges and their arithmetic go with it; indices one
// position off (+ 1) stay a Gather.
TEST_CASE("a Gather by positions in order over the symbols is a view", "[symbolic][planner]") {
  auto model = [](int64_t shift) {
    ModelBuilder m;
    m.input("mask", kFloat, {-1, -1}, {"batch", "seq"}).output("y");
    m.initializer_i64("zero", {}, {0});
    m.initializer_i64("one", {}, {1});
    m.initializer_i64("shift", {}, {shift});
    m.initializer_i64("flat", {1}, {-1});
    m.initializer_i64("axis0", {1}, {0});
    m.initializer_i64("axis1", {1}, {1});
    m.initializer_f32("two", {}, {2.0f});
    m.node("Shape", {"mask"}, {"shape"});
    set_attr_int(m.node("Gather", {"shape", "zero"}, {"b"}), "axis", 0);
    set_attr_int(m.node("Gather", {"shape", "one"}, {"s"}), "axis", 0);
    m.node("Range", {"zero", "b", "one"}, {"rb"});
    m.node("Range", {"zero", "s", "one"}, {"rs"});
    m.node("Unsqueeze", {"rb", "axis1"}, {"rb1"});
    m.node("Unsqueeze", {"rs", "axis0"}, {"rs0"});
    m.node("Mul", {"rb1", "s"}, {"rows"});
    m.node("Add", {"rs0", "rows"}, {"at"});
    m.node("Add", {"at", "shift"}, {"positions"});
    m.node("Reshape", {"mask", "flat"}, {"flat_mask"});
    set_attr_int(m.node("Gather", {"flat_mask", "positions"}, {"picked"}), "axis", 0);
    m.node("Mul", {"picked", "two"}, {"y"});
    return m;
  };
  auto ops = [](const Graph& g) {
    std::multiset<OpKind> kinds;
    for (const Node& n : g.nodes)
      kinds.insert(n.op);
    return kinds;
  };
  const Graph in_order = symbolic_graph(model(0), {dim("batch", 1, 8, 3), dim("seq", 1, 64, 12)});
  CHECK(ops(in_order).count(OpKind::Gather) == 0);
  CHECK(ops(in_order).count(OpKind::Range) == 0);
  const Graph shifted = symbolic_graph(model(1), {dim("batch", 1, 8, 3), dim("seq", 1, 64, 12)});
  CHECK(ops(shifted).count(OpKind::Gather) == 1);
  CHECK(ops(shifted).count(OpKind::Range) == 2);
}

// Proves: unrelated kernels over symbolic dims launch together as one Independent group, each
// part on the blocks its own kernel would have at the run's shape (computed from the symbols in
// the kernel and summed for the grid by the launcher); a row part whose best thread mapping
// changes within the ranges stays a group of its own, with its mapping variants.
TEST_CASE("independent parts over symbolic dims take the run's blocks", "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"})
      .input("z", kFloat, {-1, 4}, {"batch"})
      .output("y1")
      .output("y2");
  m.node("Relu", {"x"}, {"y1"});
  m.node("Sigmoid", {"z"}, {"y2"});
  const Generated g = generate(m, {dim("batch", 1, 8, 3), dim("seq", 1, 4096, 12)});
  REQUIRE(g.plan.groups.size() == 1);
  const FusionGroup& group = g.plan.groups[0];
  CHECK(group.scheme == StitchScheme::Independent);
  const auto& spec = std::get<IndependentSpec>(group.spec);
  REQUIRE(spec.parts.size() == 2);
  for (const IndependentSpec::Part& part : spec.parts)
    REQUIRE(part.run_blocks);
  // Vectors of 4, 1024 elements a block: at most 256 blocks.
  CHECK(spec.parts[0].run_blocks->to_string() == "floor((8*batch*seq+1023)/1024)");
  CHECK(spec.parts[0].blocks == 256);
  CHECK(spec.parts[1].run_blocks->to_string() == "1");
  CHECK(group.launch.work.to_string() == "floor((8*batch*seq+1023)/1024)+1");
  CHECK(group.launch.work_per_block == 1);
  CHECK(group.launch.grid[0] == 257);
  CHECK_THAT(g.sources, Catch::Contains("const int64_t part0_end = stitch::dims::floor_div("));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t part1_end = part0_end + 1;  // + 1"));
  CHECK_THAT(g.sources, Catch::Contains("if (blockIdx.x < part0_end) {"));
  CHECK_THAT(g.sources, Catch::Contains("const unsigned part_block = blockIdx.x - part0_end;"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t sym0, const int64_t sym1)"));

  // Softmax rows of 1..4096 elements beside a pointwise kernel: the rows keep their variants.
  ModelBuilder rows;
  rows.input("x", kFloat, {-1, -1}, {"batch", "seq"})
      .input("z", kFloat, {-1, 4}, {"batch"})
      .output("p")
      .output("y2");
  set_attr_int(rows.node("Softmax", {"x"}, {"p"}), "axis", -1);
  rows.node("Sigmoid", {"z"}, {"y2"});
  const Generated apart = generate(rows, {dim("batch", 1, 8, 3), dim("seq", 1, 4096, 12)});
  bool variants = false;
  for (const FusionGroup& gr : apart.plan.groups) {
    CHECK(gr.scheme != StitchScheme::Independent);
    variants = variants || !gr.variants.empty();
  }
  CHECK(variants);
  FusionContext ctx(apart.graph, DeviceParams{});
  std::vector<int32_t> every;
  for (size_t n = 0; n < apart.graph.nodes.size(); ++n)
    every.push_back(static_cast<int32_t>(n));
  GroupAnalysis a;
  const FusionDecision together = analyze_group(ctx, every, a);
  CHECK_FALSE(together);
  CHECK_THAT(together.reason,
             Catch::Contains("call for other thread mappings within the symbols' ranges"));
}

// Proves: a key-value cache's Concat along the symbolic past (the new keys through their head
// Transpose), a Pad along the symbolic sequence and a causal mask built from the symbols
// (ConstantOfShape, Trilu by the past, Not) are index remappings inside one pointwise group
// each: each part covers the run's extent on the axis ([0, past), [past, past + seq)), the part
// after the past reads its operand at the coordinate minus the run's past, and the Trilu keeps
// the band by the run's diagonal, the mask sharing a launch with the others; a Concat with an
// operand empty at the planning binding only is refused.
TEST_CASE("concatenations, pads and triangles along symbolic axes inside pointwise groups",
          "[symbolic][planner]") {
  ModelBuilder m;
  m.input("past_k", kFloat, {-1, 2, -1, 8}, {"batch", "past"})
      .input("k", kFloat, {-1, -1, 2, 8}, {"batch", "seq"})
      .output("present")
      .output("padded")
      .output("mask");
  set_attr_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 2, 1, 3});
  set_attr_int(m.node("Concat", {"past_k", "kt"}, {"joined"}), "axis", 2);
  m.initializer_f32("two", {}, {2.0f});
  m.node("Mul", {"joined", "two"}, {"present"});
  m.initializer_i64("pads", {8}, {0, 0, 1, 0, 0, 0, 2, 0});
  m.node("Pad", {"kt", "pads"}, {"kp"});
  m.node("Exp", {"kp"}, {"padded"});
  // The mask: [seq, past + seq] of true, lower triangle from the past, negated.
  m.initializer_i64("zero", {1}, {0});
  m.initializer_i64("two_i", {1}, {2});
  m.node("Shape", {"past_k"}, {"past_shape"});
  set_attr_int(m.node("Gather", {"past_shape", "two_i"}, {"past_n"}), "axis", 0);
  m.node("Shape", {"k"}, {"k_shape"});
  m.initializer_i64("one_i", {1}, {1});
  set_attr_int(m.node("Gather", {"k_shape", "one_i"}, {"seq_n"}), "axis", 0);
  m.node("Add", {"past_n", "seq_n"}, {"total"});
  set_attr_int(m.node("Concat", {"seq_n", "total"}, {"mask_shape"}), "axis", 0);
  onnx::NodeProto& fill = m.node("ConstantOfShape", {"mask_shape"}, {"ones"});
  onnx::AttributeProto* value = fill.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int32_data(1);
  m.node("Squeeze", {"past_n", "zero"}, {"past_scalar"});
  set_attr_int(m.node("Trilu", {"ones", "past_scalar"}, {"lower"}), "upper", 0);
  m.node("Not", {"lower"}, {"mask"});
  const Generated g =
      generate(m, {dim("batch", 1, 4, 2), dim("seq", 1, 16, 3), dim("past", 1, 64, 13)});
  const Graph& graph = g.graph;
  // The pointwise groups, on their own or as the parts of an Independent group.
  std::vector<const LocalSpec*> locals;
  for (const FusionGroup& group : g.plan.groups) {
    if (const auto* spec = std::get_if<LocalSpec>(&group.spec)) locals.push_back(spec);
    if (const auto* spec = std::get_if<IndependentSpec>(&group.spec))
      for (const IndependentSpec::Part& part : spec->parts)
        if (const auto* body = std::get_if<LocalSpec>(&part.body)) locals.push_back(body);
  }
  int concats = 0, pads = 0, triangles = 0;
  for (const LocalSpec* spec : locals) {
    for (const MovementRead& move : spec->moves) {
      const OpKind op = graph.nodes[move.node].op;
      if (op == OpKind::Concat) {
        ++concats;
        REQUIRE(move.run_bounds);
        REQUIRE(move.parts.size() == 2);
        CHECK(move.parts[0].run_begin.to_string() == "0");
        CHECK(move.parts[0].run_end.to_string() == "past");
        CHECK(move.parts[1].run_begin.to_string() == "past");
        CHECK(move.parts[1].run_end.to_string() == "past+seq");
      } else if (op == OpKind::Pad) {
        ++pads;
        REQUIRE(move.run_bounds);
        CHECK(move.parts[0].run_begin.to_string() == "1");
        CHECK(move.parts[0].run_end.to_string() == "seq+1");
      } else if (op == OpKind::Trilu) {
        ++triangles;
        CHECK(move.band);
        CHECK_FALSE(move.upper);
        CHECK(move.diagonal.to_string() == "past");
      }
    }
    if (std::any_of(spec->moves.begin(), spec->moves.end(), [&](const MovementRead& mv) {
          return graph.nodes[mv.node].op == OpKind::Trilu;
        })) {
      // The mask's group holds the ConstantOfShape too: it reads nothing.
      CHECK(spec->io.reads.empty());
      CHECK(spec->moves.size() == 2);
    }
  }
  CHECK(concats == 1);
  CHECK(pads == 1);
  CHECK(triangles == 1);
  // The mask's part reads the past as the run's diagonal, and shares a launch with the others
  // (an Independent group's parts take the symbolic support each alone).
  bool mask_shares = false;
  for (const FusionGroup& group : g.plan.groups)
    for (int32_t n : group.nodes)
      if (graph.nodes[n].op == OpKind::Trilu)
        mask_shares = group.scheme == StitchScheme::Independent && group.nodes.size() > 3;
  CHECK(mask_shares);
  // The Transpose's blocks hold the past and the new keys: sym0 batch, sym1 seq, sym2 past.
  CHECK_THAT(g.sources, Catch::Contains("if (c2 < sym2) {"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t k0 = c2 - sym2;"));
  CHECK_THAT(g.sources, Catch::Contains("if (c2 >= 1 && c2 < (sym1 + 1)) {"));
  CHECK_THAT(g.sources, Catch::Contains("if (c1 - c0 <= sym2) {"));
  const nlohmann::json report = plan_to_json(graph, g.plan, g.memory);
  CHECK_THAT(report.dump(), Catch::Contains(R"("covers":["past","past+seq"])") &&
                                Catch::Contains(R"("keeps":"column - row <= past")"));

  // A Concat whose operand is empty at the planning binding (seq - 1 at seq 1) only.
  ModelBuilder empty;
  empty.input("a", kFloat, {-1, 4}, {"seq"}).input("b", kFloat, {2, 4}).output("y");
  empty.initializer_i64("from1", {1}, {1});
  empty.initializer_i64("to_end", {1}, {1000});
  empty.initializer_i64("axis0", {1}, {0});
  empty.node("Slice", {"a", "from1", "to_end", "axis0"}, {"rest"});
  set_attr_int(empty.node("Concat", {"b", "rest"}, {"joined"}), "axis", 0);
  empty.node("Relu", {"joined"}, {"y"});
  const Graph eg = symbolic_graph(empty, {dim("seq", 1, 16, 1)});
  FusionContext ctx(eg, DeviceParams{});
  std::vector<int32_t> every;
  for (size_t n = 0; n < eg.nodes.size(); ++n)
    if (eg.nodes[n].op == OpKind::Concat || eg.nodes[n].op == OpKind::Relu)
      every.push_back(static_cast<int32_t>(n));
  GroupAnalysis a;
  const FusionDecision together = analyze_group(ctx, every, a);
  CHECK_FALSE(together);
  CHECK_THAT(together.reason, Catch::Contains("empty at the planning binding only"));
}

// Proves: an integer Range over the symbols (positions seq-1 down to 0 from the input's Shape)
// is a generator its consumers evaluate in their own group, each element start + delta * its
// coordinate with the run's start, reading nothing.
TEST_CASE("integer Ranges over the symbols are generators inside their consumers' group",
          "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1}, {"batch", "seq"}).output("y");
  m.initializer_i64("one_i", {1}, {1});
  m.initializer_i64("one", {}, {1});
  m.initializer_i64("minus_one", {}, {-1});
  m.node("Shape", {"x"}, {"shape"});
  set_attr_int(m.node("Gather", {"shape", "one_i"}, {"seq_1"}), "axis", 0);
  m.initializer_i64("axes0", {1}, {0});
  m.node("Squeeze", {"seq_1", "axes0"}, {"seq_n"});
  m.node("Sub", {"seq_n", "one"}, {"last"});
  m.node("Range", {"last", "minus_one", "minus_one"}, {"reversed"}); // seq-1, .., 0
  set_attr_int(m.node("Cast", {"reversed"}, {"positions"}), "to", kFloat);
  m.node("Mul", {"x", "positions"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 8, 3), dim("seq", 1, 64, 12)});
  const Graph& graph = g.graph;
  int generators = 0;
  for (const FusionGroup& group : g.plan.groups) {
    const auto* spec = std::get_if<LocalSpec>(&group.spec);
    if (spec == nullptr) continue;
    for (const MovementRead& move : spec->moves)
      if (graph.nodes[move.node].op == OpKind::Range) {
        ++generators;
        CHECK(move.generates);
        CHECK(move.parts.empty());
        CHECK(move.start.to_string() == "seq-1");
        CHECK(move.delta.to_string() == "-1");
      }
  }
  CHECK(generators == 1);
  for (const FusionGroup& group : g.plan.groups)
    for (int32_t n : group.nodes)
      if (graph.nodes[n].op == OpKind::Range) CHECK(group.nodes.size() > 1);
  CHECK_THAT(g.sources, Catch::Contains("(Range)"));
  CHECK_THAT(g.sources, Catch::Contains(" = int64_t((sym1 - 1) + (-1) * c1);"));
}

// Proves: a View that only adds or drops axes of 1 between two of a Local group's nodes is an
// index remapping (a padding mask from Range(seq) unsqueezed to [1, seq] and compared with each
// row's length: one kernel generating the positions in place), each other axis of its operand
// read at the result's axis of the same extent; a View of the group's input, one whose result
// is read outside the group, and a reshape merging axes stay out; and an unrelated row group
// and such a mask share one Independent launch (a row op beside a Local part's remappings).
TEST_CASE("views adding or dropping axes of 1 are remappings inside pointwise groups",
          "[symbolic][planner]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1}, {"batch", "seq"})
      .input("lengths", kInt64, {-1, 1}, {"batch"})
      .input("h", kFloat, {-1, 16}, {"batch"})
      .output("masked")
      .output("normalized");
  m.initializer_i64("zero", {}, {0});
  m.initializer_i64("one", {}, {1});
  m.initializer_i64("seq_axis", {1}, {1});
  m.initializer_i64("axes0", {1}, {0});
  m.initializer_i64("last", {1}, {-1});
  m.node("Shape", {"x"}, {"shape"});
  set_attr_int(m.node("Gather", {"shape", "seq_axis"}, {"seq_1"}), "axis", 0);
  m.node("Squeeze", {"seq_1", "axes0"}, {"seq_n"});
  m.node("Range", {"zero", "seq_n", "one"}, {"positions"});      // [seq]
  m.node("Unsqueeze", {"positions", "axes0"}, {"positions_2d"}); // [1, seq]: a View
  m.node("Less", {"positions_2d", "lengths"}, {"keep"});         // [batch, seq]
  m.initializer_f32("fill", {}, {0.0f});
  m.node("Where", {"keep", "x", "fill"}, {"masked"});
  // Unrelated to the mask: a softmax over each row of h, 16 wide.
  set_attr_int(m.node("Softmax", {"h"}, {"normalized"}), "axis", -1);
  const Generated g = generate(m, {dim("batch", 1, 8, 3), dim("seq", 1, 64, 12)});
  const Graph& graph = g.graph;
  int views = 0;
  for (const FusionGroup& group : g.plan.groups) {
    auto check_local = [&](const LocalSpec& spec) {
      for (const MovementRead& move : spec.moves) {
        if (graph.nodes[move.node].op != OpKind::View) continue;
        ++views;
        REQUIRE(move.parts.size() == 1);
        CHECK(move.parts[0].source == std::vector<int32_t>{1});
        CHECK(move.parts[0].offset == std::vector<int64_t>{0});
      }
    };
    if (const auto* local = std::get_if<LocalSpec>(&group.spec)) check_local(*local);
    if (const auto* independent = std::get_if<IndependentSpec>(&group.spec)) {
      // The mask's part and the softmax's rows in one launch.
      CHECK(independent->parts.size() == 2);
      for (const IndependentSpec::Part& part : independent->parts)
        if (const auto* local = std::get_if<LocalSpec>(&part.body)) check_local(*local);
    }
    for (int32_t n : group.nodes)
      if (graph.nodes[n].op == OpKind::Range || graph.nodes[n].op == OpKind::View)
        CHECK(group.kind == GroupKind::Kernel);
  }
  CHECK(views == 1);
  int64_t launches = 0;
  for (const FusionGroup& group : g.plan.groups)
    launches += group_launches(group);
  CHECK(launches == 1);
  CHECK_THAT(g.sources, Catch::Contains("(Range)"));

  // What stays out: a View of the group's input, one whose result leaves the group, a reshape
  // merging two axes.
  ModelBuilder v;
  v.input("x", kFloat, {-1, 4}, {"seq"}).output("y").output("z").output("w");
  v.initializer_i64("axes0", {1}, {0});
  v.initializer_i64("flat", {1}, {-1});
  v.node("Unsqueeze", {"x", "axes0"}, {"x_1"}); // [1, seq, 4]
  v.node("Relu", {"x_1"}, {"y"});
  v.node("Exp", {"x"}, {"e"});
  v.node("Unsqueeze", {"e", "axes0"}, {"z"}); // read outside: a graph output
  v.node("Neg", {"z"}, {"n"});
  v.node("Reshape", {"n", "flat"}, {"merged"}); // [4 * seq]
  v.node("Abs", {"merged"}, {"w"});
  const Graph vg = symbolic_graph(v, {dim("seq", 1, 16, 3)});
  FusionContext ctx(vg, DeviceParams{});
  auto decide = [&](std::initializer_list<const char*> outputs) {
    std::vector<int32_t> nodes;
    for (const char* name : outputs)
      for (size_t n = 0; n < vg.nodes.size(); ++n)
        if (vg.tensor(vg.nodes[n].outputs[0]).name == name)
          nodes.push_back(static_cast<int32_t>(n));
    std::sort(nodes.begin(), nodes.end());
    GroupAnalysis a;
    return analyze_group(ctx, nodes, a);
  };
  const FusionDecision of_input = decide({"x_1", "y"});
  CHECK_FALSE(of_input);
  CHECK_THAT(of_input.reason, Catch::Contains("views the group's input 'x'"));
  const FusionDecision leaves = decide({"e", "z", "n"});
  CHECK_FALSE(leaves);
  CHECK_THAT(leaves.reason, Catch::Contains("result is read outside the group"));
  const FusionDecision merges = decide({"n", "merged", "w"});
  CHECK_FALSE(merges);
  CHECK_THAT(merges.reason, Catch::Contains("more than adding or dropping axes of 1"));
}

// Proves: a Transpose moving a symbolic axis copies one element per thread, its coordinates
// divided by the symbols' values, the input read through its strides over the symbols.
TEST_CASE("a Transpose of symbolic axes", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 4, 8}, {"batch", "seq"}).output("y");
  set_attr_ints(m.node("Transpose", {"x"}, {"y"}), "perm", {0, 2, 1, 3});
  const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("seq", 1, 16, 3)});
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t c2 = stitch::dims::mod32(rest, sym1); rest = "
                             "stitch::dims::div32(rest, sym1);"));
  CHECK_THAT(g.sources, Catch::Contains("out[i] = in[c3 + c2 * 32 + c1 * 8 + c0 * (sym1 * 32)];"));
}

// Proves: a Slice along a symbolic axis reads start + c * step through the input's strides
// over the symbols, from a start >= 0 or from one counted from the run's end of the axis (the
// last token: max(seq - 1, 0)), also with a negative step (x[:, ::-1]).
TEST_CASE("a Slice along symbolic axes", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("tail");
  m.initializer_i64("one", {1}, {1});
  m.initializer_i64("big", {1}, {100});
  m.initializer_i64("axis1", {1}, {1});
  m.node("Slice", {"x", "one", "big", "axis1"}, {"tail"});
  const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("seq", 2, 16, 5)});
  CHECK_THAT(g.sources, Catch::Contains("out[i] = in[c2 + c1 * 8 + c0 * (sym1 * 8) + 8];"));

  ModelBuilder last;
  last.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("y");
  last.initializer_i64("minus_one", {1}, {-1});
  last.initializer_i64("big", {1}, {100});
  last.initializer_i64("axis1", {1}, {1});
  last.node("Slice", {"x", "minus_one", "big", "axis1"}, {"y"}, "last_token");
  const Generated from_end = generate(last, {dim("batch", 1, 4, 2), dim("seq", 1, 16, 5)});
  CHECK_THAT(from_end.sources, Catch::Contains("sym1 - 1"));

  ModelBuilder reversed;
  reversed.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("y");
  reversed.initializer_i64("minus_one", {1}, {-1});
  reversed.initializer_i64("before", {1}, {-1000});
  reversed.initializer_i64("axis1", {1}, {1});
  reversed.node("Slice", {"x", "minus_one", "before", "axis1", "minus_one"}, {"y"}, "flip");
  const Generated flipped = generate(reversed, {dim("batch", 1, 4, 2), dim("seq", 1, 16, 5)});
  CHECK_THAT(flipped.sources, Catch::Contains("out[i] = in[c2 + c1 * -8 + c0 * (sym1 * 8) + "
                                              "(stitch::dims::max(0, (sym1 - 1)) * 8)];"));
}

// Proves: over a symbolic batch planned at 1, DepthToSpace copies through its 6-D view with
// the batch's coordinate kept, a Resize leaves the batch alone (sizes computed from the
// input's Shape included) and resizes symbolic spatial axes, TopK selects over the run's rows and
// along a symbolic axis of the run's length (refused where it may be shorter than K), and
// GatherElements reads the data at the run's strides.
TEST_CASE("movement and selection ops over a symbolic batch", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, 6, 6}, {"batch"}).output("d2s").output("up").output("fit");
  m.output("values").output("picked");
  set_attr_int(m.node("DepthToSpace", {"x"}, {"d2s"}), "blocksize", 2);
  m.initializer_f32("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
  m.node("Resize", {"x", "", "scales"}, {"up"});
  m.node("Shape", {"x"}, {"shape"});
  m.initializer_i64("zero", {1}, {0});
  m.initializer_i64("two", {1}, {2});
  m.node("Slice", {"shape", "zero", "two"}, {"lead"});
  m.initializer_i64("spatial", {2}, {9, 4});
  set_attr_int(m.node("Concat", {"lead", "spatial"}, {"sizes"}), "axis", 0);
  m.node("Resize", {"x", "", "", "sizes"}, {"fit"});
  m.initializer_i64("k", {1}, {3});
  set_attr_int(m.node("TopK", {"x", "k"}, {"values", "indices"}), "axis", 1);
  set_attr_int(m.node("GatherElements", {"x", "indices"}, {"picked"}), "axis", 1);
  const Generated g = generate(m, {dim("batch", 1, 8, 1)}, "none");
  CHECK_THAT(g.sources,
             Catch::Contains("out[i] = in[c5 * 72 + c4 + c3 * 144 + c2 * 6 + c1 * 36 + c0 * "
                             "288];"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * 1152);  // elements: "
                                        "1152*batch"));
  CHECK_THAT(g.sources, Catch::Contains("const int64_t n = (sym0 * 288);  // elements: "
                                        "288*batch"));
  CHECK_THAT(g.sources, Catch::Contains("for (int64_t row = blockIdx.x; row < (sym0 * 36); row += "
                                        "gridDim.x)"));
  CHECK_THAT(g.sources, Catch::Contains("data[c3 + c2 * 6 + index * 36 + c0 * 288]"));

  // Over symbolic spatial axes: by a scale, each axis's extent floor(in * p / 2^k) and the
  // coordinates mapped by the scale; to sizes computed from another tensor's Shape, the run's
  // scale out / in, the extents declared once per thread.
  ModelBuilder scaled;
  scaled.input("x", kFloat, {1, 8, -1, -1}, {"height", "width"}).output("up").output("back");
  scaled.initializer_f32("scales", {4}, {1.0f, 1.0f, 1.5f, 2.0f});
  scaled.node("Resize", {"x", "", "scales"}, {"up"}, "upsample");
  set_attr_ints(scaled.node("MaxPool", {"x"}, {"pooled"}), "kernel_shape", {2, 2});
  scaled.node("Shape", {"x"}, {"x_shape"});
  set_attr_string(scaled.node("Resize", {"pooled", "", "", "x_shape"}, {"back"}), "mode", "linear");
  const Generated r = generate(scaled, {dim("height", 2, 32, 8), dim("width", 2, 32, 5)}, "none");
  std::string up_dims;
  for (const Tensor& t : r.graph.tensors)
    if (t.name == "up") up_dims = sym_shape_to_string(t.sym_shape());
  CHECK(up_dims == "[1,8,height+floor(height/2),2*width]");
  CHECK_THAT(r.sources, Catch::Contains("resize_coordinate(c2, "
                                        "stitch::movement::ResizeCoordinates::HalfPixel, 1.5, "
                                        "in_extent2, out_extent2, 0.0, 1.0)"));
  CHECK_THAT(r.sources, Catch::Contains("const double scale3 = double(out_extent3) / "
                                        "double(in_extent3); // sizes over the run's extent"));

  // Along a symbolic axis: the run's length, a buffer for the longest row; refused (by shape
  // inference) where the axis may be shorter than K.
  auto along = [](int64_t k) {
    ModelBuilder m;
    m.input("x", kFloat, {2, -1}, {"seq"}).output("values").output("indices");
    m.initializer_i64("k", {1}, {k});
    set_attr_int(m.node("TopK", {"x", "k"}, {"values", "indices"}, "best"), "axis", 1);
    return m;
  };
  const Generated seq = generate(along(1), {dim("seq", 1, 100, 8)}, "none");
  CHECK_THAT(seq.sources, Catch::Contains("const float* x = in + outer * sym0 + inner;"));
  CHECK_THAT(seq.sources, Catch::Contains("stitch::sort::block_top_k<true, 128>(x, sym0, 1, 1, "));
  CHECK_THROWS_WITH(refusal(along(2), {dim("seq", 1, 64, 8)}),
                    Catch::Contains("node 'best' (TopK)") &&
                        Catch::Contains("its k 2 may be larger than axis 1 (seq) for some values "
                                        "of the symbols"));
}

// Proves: the launcher describes the symbols (names from the blob, never as code), marks the
// inputs' symbolic dims -1 with their symbol, and writes each output's dims for given values.
TEST_CASE("the launcher describes the symbols and the outputs' dims", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("y");
  m.node("Relu", {"x"}, {"y"});
  const Generated g = generate(m, {dim("batch", 1, 4, 2), dim("seq", 3, 100, 50)});
  CHECK_THAT(g.sources,
             Catch::Contains("{-1, -1, 8, 0, 0, 0, 0, 0}, 12800, {0, 1, 0, 0, 0, 0, 0, 0}"));
  CHECK_THAT(g.sources, Catch::Contains("static const stitch_abi_symbol symbols[] = {"));
  CHECK_THAT(g.sources, Catch::Contains(", 3, 100}"));
  CHECK_THAT(g.sources, Catch::Contains("dims[0] = sym0;"));
  CHECK_THAT(g.sources, Catch::Contains("dims[1] = sym1;"));
  CHECK_THAT(g.sources, Catch::Contains("dims[2] = 8;"));
  CHECK_THAT(g.sources, Catch::Contains("2, symbols, stitch_output_dims, // symbolic dims"));

  // An output dim computed from the symbols is -1 with no symbol of its own.
  ModelBuilder flat;
  flat.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("y");
  flat.initializer_i64("shape", {2}, {-1, 8});
  flat.node("Relu", {"x"}, {"r"});
  flat.node("Reshape", {"r", "shape"}, {"y"});
  const Generated f = generate(flat, {dim("batch", 1, 4, 2), dim("seq", 1, 8, 8)});
  CHECK_THAT(f.sources,
             Catch::Contains("{-1, 8, 0, 0, 0, 0, 0, 0}, 1024, {-1, 0, 0, 0, 0, 0, 0, 0}"));
  CHECK_THAT(f.sources, Catch::Contains("dims[0] = (sym0 * sym1);"));
  CHECK_THAT(g.sources, !Catch::Contains("\"batch\""));
}

// Proves: a GEMM chain (float16 products, GELU, a residual) over symbolic rows, batch x seq,
// takes the run's rows in its problem and launches the run's row tiles, a cluster each (none
// for no rows); a chain whose hidden width is symbolic is planned apart (the library calls).
TEST_CASE("GEMM chains over symbolic rows", "[symbolic][emitter][chain]") {
  auto chain_model = [](bool symbolic_hidden) {
    ModelBuilder m(20);
    m.input("x_in", kFloat, {-1, -1, 32}, {"batch", "seq"}).output("y");
    if (symbolic_hidden)
      m.input("w1", kFloat, {32, -1}, {"hidden"});
    else
      m.input("w1", kFloat, {32, 96});
    m.input("w2", kFloat, {symbolic_hidden ? -1 : 96, 32}, {"hidden"});
    for (const char* name : {"x_in", "w1", "w2"})
      set_attr_int(m.node("Cast", {name}, {std::string(name) + "_h"}), "to",
                   onnx::TensorProto::FLOAT16);
    m.node("MatMul", {"x_in_h", "w1_h"}, {"p"});
    m.node("Gelu", {"p"}, {"h"});
    m.node("MatMul", {"h", "w2_h"}, {"o"});
    m.node("Add", {"o", "x_in_h"}, {"r"});
    set_attr_int(m.node("Cast", {"r"}, {"y"}), "to", kFloat);
    return m;
  };
  auto plan = [](const ModelBuilder& m, std::vector<SymbolicDim> dims, Generated& out) {
    out.graph = symbolic_graph(m, std::move(dims));
    PlannerOptions options;
    options.gemm_chain = FusionMode::Fused;
    out.plan = plan_fusion(out.graph, options);
    int chains = 0;
    for (const FusionGroup& group : out.plan.groups)
      chains += group.kind == GroupKind::GemmChain;
    return chains;
  };
  Generated g;
  REQUIRE(plan(chain_model(false), {dim("batch", 1, 8, 3), dim("seq", 1, 64, 12)}, g) == 1);
  const MemoryPlan memory = plan_memory(g.graph, g.plan);
  const GeneratedModel model = emit_model(g.graph, g.plan, memory, "host");
  for (const GeneratedFile& f : model.groups)
    g.sources += f.text;
  CHECK_THAT(g.sources, Catch::Contains("(sym0 * sym1), 32, 96, 32};"));
  CHECK_THAT(g.sources, Catch::Contains("if (blocks == 0) return 0; // no rows"));
  CHECK_THAT(g.sources,
             Catch::Contains("STITCH_LAUNCH_CLUSTER(") && Catch::Contains("dim3(blocks, 1, 1)"));

  Generated apart;
  CHECK(plan(chain_model(true),
             {dim("batch", 1, 8, 3), dim("seq", 1, 64, 12), dim("hidden", 32, 128, 96)},
             apart) == 0);
}

// Proves: an Einsum that is no matrix product runs its loop nest over symbolic dims with every
// extent and stride the run's: a diagonal adds its axes' strides as expressions, a label summed
// in one operand loops to the run's extent, and an axis of 1 against a symbolic label
// broadcasts (no stride), where one that is 1 only at the planning binding does not.
TEST_CASE("Einsum loop nests over symbolic dims", "[symbolic][emitter]") {
  ModelBuilder diagonal;
  diagonal.input("x", kFloat, {-1, -1, -1}, {"batch", "seq", "seq"}).output("y");
  set_attr_string(diagonal.node("Einsum", {"x"}, {"y"}), "equation", "bii->bi");
  const Generated d = generate(diagonal, {dim("batch", 1, 8, 3), dim("seq", 1, 16, 5)}, "none");
  CHECK_THAT(d.sources, Catch::Contains("const int64_t base0 = c1 * (sym1 + 1) + c0 * (sym1 * "
                                        "sym1);"));

  ModelBuilder summed;
  summed.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"})
      .input("w", kFloat, {1, 8}, {})
      .output("y");
  set_attr_string(summed.node("Einsum", {"x", "w"}, {"y"}), "equation", "bsd,bd->b");
  const Generated s = generate(summed, {dim("batch", 1, 8, 1), dim("seq", 1, 16, 5)}, "none");
  CHECK_THAT(s.sources, Catch::Contains("for (int64_t s0 = 0; s0 < 8; ++s0)") &&
                            Catch::Contains("for (int64_t s1 = 0; s1 < sym1; ++s1)") &&
                            Catch::Contains("const int64_t base0 = c0 * (sym1 * 8);") &&
                            Catch::Contains("const int64_t base1 = 0;") &&
                            Catch::Contains("float(in1[base1 + s0])"));
}

// Proves: a Pad whose pads are computed from the symbols (a length padded to a multiple of 8 at
// its start: (8 - seq % 8) % 8) grows its axis by the run's pads, shifts its coordinates by the
// run's begin pad, and a reflect pad that may reach the axis's extent is refused by name.
TEST_CASE("pads computed from the symbolic dims", "[symbolic][emitter]") {
  auto model = [](const std::string& mode) {
    ModelBuilder m;
    m.input("x", kFloat, {-1, -1, 4}, {"batch", "seq"}).output("y");
    m.initializer_i64("one", {}, {1});
    m.initializer_i64("eight", {}, {8});
    m.initializer_i64("axis0", {1}, {0});
    m.initializer_i64("head", {1}, {0});
    m.initializer_i64("rest", {4}, {0, 0, 0, 0});
    m.node("Shape", {"x"}, {"shape"});
    set_attr_int(m.node("Gather", {"shape", "one"}, {"seq"}), "axis", 0);
    m.node("Mod", {"seq", "eight"}, {"rem"});
    m.node("Sub", {"eight", "rem"}, {"to_eight"});
    m.node("Mod", {"to_eight", "eight"}, {"tail"});
    m.node("Unsqueeze", {"tail", "axis0"}, {"tail1"});
    set_attr_int(m.node("Concat", {"head", "tail1", "rest"}, {"pads"}), "axis", 0);
    set_attr_string(m.node("Pad", {"x", "pads"}, {"y"}, "pad0"), "mode", mode);
    return m;
  };
  const Generated g = generate(model("edge"), {dim("batch", 1, 4, 2), dim("seq", 8, 32, 9)});
  std::string y_dims;
  for (const Tensor& t : g.graph.tensors)
    if (t.name == "y") y_dims = sym_shape_to_string(t.sym_shape());
  // The head is (-seq) mod 8, which the expressions write as 7 * seq mod 8: the padded
  // length 8 * ceil(seq / 8).
  CHECK(y_dims == "[batch,8*seq-8*floor(7*seq/8),4]");
  CHECK_THAT(g.sources, Catch::Contains("pads begin [0,7*seq-8*floor(7*seq/8),0] end [0,0,0]") &&
                            Catch::Contains("stitch::movement::edge_index(c1 - (sym1 * 7 - "
                                            "stitch::dims::floor_div((sym1 * 7), 8) * 8), sym1);"));
  CHECK_THROWS_WITH(symbolic_graph(model("reflect"), {dim("batch", 1, 4, 2), dim("seq", 1, 32, 9)}),
                    Catch::Contains("node 'pad0' (Pad)") &&
                        Catch::Contains("its reflect pad 7*seq-8*floor(7*seq/8) of axis 1 may "
                                        "reach the axis's extent seq"));
}

// Proves: a reduction whose kept axes after the reduced one depend on the symbols (a mean over
// the channels of [batch, C, height, width]) walks columns the run's height x width apart, a
// thread per line, where before its lines had to keep fixed axes only.
TEST_CASE("reductions over columns the run's extents apart", "[symbolic][emitter]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, -1, -1}, {"batch", "height", "width"}).output("y");
  set_attr_ints(m.node("ReduceMean", {"x"}, {"y"}), "axes", {1});
  const Generated g =
      generate(m, {dim("batch", 1, 4, 2), dim("height", 1, 32, 1), dim("width", 1, 32, 1)}, "none");
  REQUIRE(g.plan.groups.size() == 1);
  CHECK(g.plan.groups[0].mapping == ThreadMapping::Flat);
  CHECK(g.plan.groups[0].variants.empty());
  CHECK_THAT(g.sources,
             Catch::Contains("const int64_t inner = (sym1 * sym2);  // their distance: "
                             "height*width") &&
                 Catch::Contains("const int64_t base = stitch::dims::div32(line, inner) * "
                                 "(length * inner) + stitch::dims::mod32(line, inner);") &&
                 Catch::Contains("k * inner"));
}

// Proves: a Range read through views by several pointwise nodes (position ids read by a rotary
// embedding and by a causal mask) becomes one Range, with its views, per reader
// (copy-shared-ranges), and each copy is generated by its reader's launch: no launch computes
// the Range alone. A Range that a reduction also reads stays one.
TEST_CASE("a Range read by several pointwise nodes is generated where each reads it",
          "[symbolic][movement]") {
  auto positions_model = [](bool also_reduced) {
    ModelBuilder m(17);
    m.input("x", kFloat, {-1, 8}, {"seq"}).output("angles").output("mask");
    if (also_reduced) m.output("count", kInt64);
    m.initializer_i64("zero", {}, {0});
    m.initializer_i64("one", {}, {1});
    m.initializer_i64("axis0", {1}, {0});
    m.initializer_i64("axis2", {1}, {2});
    m.node("Shape", {"x"}, {"shape"});
    m.node("Gather", {"shape", "zero"}, {"s"});
    m.node("Range", {"zero", "s", "one"}, {"positions"});
    m.node("Unsqueeze", {"positions", "axis0"}, {"row"}); // [1, seq], read twice
    set_attr_int(m.node("Cast", {"row"}, {"row_f"}), "to", kFloat);
    m.node("Cos", {"row_f"}, {"angles"});
    m.node("Unsqueeze", {"row", "axis2"}, {"column"}); // [1, seq, 1]
    m.node("LessOrEqual", {"row", "column"}, {"causal"});
    set_attr_int(m.node("Cast", {"causal"}, {"mask"}), "to", kFloat);
    if (also_reduced) m.node("ReduceSum", {"positions"}, {"count"});
    return m;
  };
  const std::vector<SymbolicDim> dims = {dim("seq", 1, 64, 12)};
  const Generated copied = generate(positions_model(false), dims);
  const Graph& g = copied.graph;
  const std::vector<std::vector<int32_t>> consumers = g.consumers();
  std::vector<std::string> ranges;
  for (const Node& node : g.nodes)
    if (node.op == OpKind::Range) {
      ranges.push_back(node.name);
      CHECK(consumers[node.outputs[0]].size() == 1);
    }
  CHECK(ranges.size() == 2);
  for (const std::string& name : ranges)
    CHECK_THAT(name, Catch::Contains("/copy"));
  for (const FusionGroup& group : copied.plan.groups) {
    bool range = false, other = false;
    for (int32_t n : group.nodes) {
      range = range || g.nodes[n].op == OpKind::Range;
      other = other || (g.nodes[n].op != OpKind::Range && g.nodes[n].op != OpKind::View);
    }
    INFO("group " << group.id);
    CHECK((!range || other));
  }
  const Generated shared = generate(positions_model(true), dims);
  int kept = 0;
  for (const Node& node : shared.graph.nodes)
    kept += node.op == OpKind::Range;
  CHECK(kept == 1);
}

// Proves: an integer mean over rows of the run's length is 0 for an empty row (a range from 0),
// where dividing by the length would trap; a float mean is NaN there, as at fixed shapes.
TEST_CASE("an integer mean of a row of the run's length guards the empty row",
          "[symbolic][reduction]") {
  ModelBuilder m;
  m.input("x", kInt64, {-1, -1}, {"batch", "seq"}).output("y", kInt64);
  set_attr_ints(m.node("ReduceMean", {"x"}, {"y"}), "axes", {1});
  const Generated g = generate(m, {dim("batch", 1, 8, 3), dim("seq", 0, 64, 12)});
  CHECK_THAT(g.sources, Catch::Contains("(length > 0 ? acc / length : 0)"));
}
