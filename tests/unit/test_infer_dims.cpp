// Symbolic shape inference (--dim): each tensor's shape as expressions of the symbols, checked
// against the concrete shape rules at other values of the symbols, and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "driver/driver.h"
#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/error.h"
#include "graph/infer_shapes.h"
#include "graph/pipeline.h"
#include "graph_test_util.h"
#include "model_builder.h"
#include "planner/code_generation_support.h"

using namespace stitch;
using stitch::test::find_tensor;
using stitch::test::ModelBuilder;
using stitch::test::set_attr_int;
using stitch::test::set_attr_ints;
using stitch::test::set_attr_string;
namespace fs = std::filesystem;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

SymbolicDim dim(const std::string& name, int64_t min, int64_t max, int64_t typical) {
  return {name, min, max, typical};
}

Graph infer(const std::string& path, std::vector<SymbolicDim> dims,
            std::map<std::string, SymShape> shapes = {}) {
  LoadOptions options;
  options.dims = std::move(dims);
  options.input_shapes = std::move(shapes);
  Graph g = load_onnx(path, options);
  infer_shapes(g);
  return g;
}

std::string infer_error(const std::string& path, std::vector<SymbolicDim> dims) {
  try {
    infer(path, std::move(dims));
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string dims_of(const Graph& g, const std::string& name) {
  return sym_shape_to_string(find_tensor(g, name).sym_shape());
}

// Proves the symbolic shapes right where it matters, at values other than the planning ones:
// the model inferred with each symbol kept over its range, then with the symbols bound to each
// of `points` (the shape rules alone, as a fixed-shape compile runs them); every tensor's
// expressions, and every shape value's elements, evaluate to what the rules give.
void check_against_rules(const std::string& path, const std::vector<SymbolicDim>& dims,
                         const std::vector<SymbolValues>& points) {
  Graph symbolic = infer(path, dims);
  std::map<std::string, const Tensor*> by_name;
  for (const Tensor& t : symbolic.tensors)
    by_name[t.name] = &t;
  int dynamic = 0;
  for (const Tensor& t : symbolic.tensors)
    dynamic += t.is_dynamic() || !t.sym_values.empty();
  CHECK(dynamic > 0);
  for (const SymbolValues& point : points) {
    std::vector<SymbolicDim> bound;
    for (const auto& [name, value] : point)
      bound.push_back({name, value, value, value});
    Graph concrete = infer(path, bound);
    CHECK(concrete.symbols.empty());
    for (const Tensor& c : concrete.tensors) {
      auto it = by_name.find(c.name);
      REQUIRE(it != by_name.end());
      const Tensor& s = *it->second;
      INFO(path << ": tensor '" << c.name << "' " << sym_shape_to_string(s.sym_shape()));
      Shape expected;
      for (const DimExpr& d : s.sym_shape())
        expected.push_back(d.evaluate(point));
      REQUIRE(expected == c.shape);
      // A value folded over the symbols is the one the rules fold at this shape: no value is
      // baked at the planning binding.
      if (s.is_constant() && s.sym_values.empty()) {
        REQUIRE(c.is_constant());
        REQUIRE(c.constant->bytes == s.constant->bytes);
      }
      if (s.sym_values.empty()) continue;
      REQUIRE(c.is_constant());
      std::vector<int64_t> values = constant_as_int64(c);
      REQUIRE(values.size() == s.sym_values.size());
      for (size_t i = 0; i < values.size(); ++i)
        REQUIRE(s.sym_values[i].evaluate(point) == values[i]);
    }
  }
}

// The fixtures of tests/models/dynamic: each model's path and the symbolic dims its
// inputs.json ranges ("dims": {name: {min, max, example}}), planned at the example sizes.
std::vector<std::pair<std::string, std::vector<SymbolicDim>>> dynamic_fixtures() {
  std::vector<std::pair<std::string, std::vector<SymbolicDim>>> out;
  const fs::path dir = fs::path(STITCH_SOURCE_DIR) / "tests/models/dynamic";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".onnx") continue;
    fs::path spec_path = entry.path();
    spec_path.replace_extension(".inputs.json");
    std::ifstream spec_file(spec_path);
    REQUIRE(spec_file);
    const nlohmann::json spec = nlohmann::json::parse(spec_file);
    std::vector<SymbolicDim> dims;
    for (const auto& [name, range] : spec.at("dims").items())
      dims.push_back(dim(name, range.at("min"), range.at("max"), range.at("example")));
    REQUIRE_FALSE(dims.empty());
    out.emplace_back(entry.path().string(), dims);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  REQUIRE(out.size() >= 9);
  return out;
}

// A transformer layer's shape computations as TorchScript exports them: the batch and sequence
// read with Shape and Gather, a head split by Reshape to a Concat of them, a Slice up to the
// sequence, a Range over it, attention products and a softmax.
ModelBuilder attention_shapes_model() {
  ModelBuilder m(17);
  m.input("x", kFloat, {-1, -1, 64}, {"batch", "seq"}).output("y").output("positions");
  m.initializer_i64("zero", {}, {0});
  m.initializer_i64("one", {}, {1});
  m.initializer_i64("axis0", {1}, {0});
  m.initializer_i64("heads", {1}, {4});
  m.initializer_i64("head", {1}, {16});
  m.initializer_i64("step", {}, {1});
  m.initializer_i64("back_perm", {4}, {0, 2, 1, 3});
  m.initializer_f32("table", {128, 64}, std::vector<float>(128 * 64, 0.5f));
  m.node("Shape", {"x"}, {"shape"});
  m.node("Gather", {"shape", "zero"}, {"b"});
  m.node("Gather", {"shape", "one"}, {"s"});
  m.node("Unsqueeze", {"b", "axis0"}, {"b1"});
  m.node("Unsqueeze", {"s", "axis0"}, {"s1"});
  set_attr_int(m.node("Concat", {"b1", "s1", "heads", "head"}, {"split_shape"}), "axis", 0);
  m.node("Reshape", {"x", "split_shape"}, {"q"});
  set_attr_ints(m.node("Transpose", {"q"}, {"qt"}), "perm", {0, 2, 1, 3});
  set_attr_ints(m.node("Transpose", {"q"}, {"kt"}), "perm", {0, 2, 3, 1});
  m.node("MatMul", {"qt", "kt"}, {"scores"});
  set_attr_int(m.node("Softmax", {"scores"}, {"probs"}), "axis", -1);
  m.node("MatMul", {"probs", "qt"}, {"ctx"});
  set_attr_ints(m.node("Transpose", {"ctx"}, {"ctx_t"}), "perm", {0, 2, 1, 3});
  m.initializer_i64("merged", {3}, {0, 0, -1});
  m.node("Reshape", {"ctx_t", "merged"}, {"merged_ctx"});
  m.node("Range", {"zero", "s", "step"}, {"range"});
  m.node("Slice", {"table", "axis0", "s1", "axis0"}, {"rows"});
  m.node("Add", {"merged_ctx", "rows"}, {"y"});
  m.node("Unsqueeze", {"range", "axis0"}, {"positions"});
  return m;
}

} // namespace

TEST_CASE(
    "symbolic dims (--dim) stay symbolic over ranges, bind to values, and rename in --input-shape",
    "[infer_dims]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, -1}, {"batch", "seq"}).output("y");
  m.node("Relu", {"x"}, {"y"});
  std::string path = m.write();
  Graph g = infer(path, {dim("batch", 1, 64, 8), dim("seq", 5, 5, 5)});
  REQUIRE(g.symbols.size() == 1);
  CHECK(g.symbols[0].name == "batch");
  CHECK(dims_of(g, "x") == "[batch,8,5]");
  CHECK(dims_of(g, "y") == "[batch,8,5]");
  CHECK(find_tensor(g, "y").shape == Shape{8, 8, 5}); // planned at the typical value
  // --input-shape with a symbol of --dim renames the dim; both inputs' dims follow.
  Graph h = infer(path, {dim("n", 1, 4, 2)}, {{"x", {DimExpr::symbol("n"), 8, 3}}});
  CHECK(dims_of(h, "y") == "[n,8,3]");
  CHECK_THROWS_WITH(infer(path, {dim("batch", 1, 4, 2)}),
                    Catch::Contains("x[2] 'seq'") && Catch::Contains("--dim NAME=MIN..MAX"));
  CHECK_THROWS_WITH(
      infer(path, {dim("batch", 1, 4, 2), dim("seq", 1, 9, 9), dim("heads", 1, 2, 2)}),
      Catch::Contains("--dim names 'heads', which is no symbolic dim"));
  CHECK_THROWS_WITH(infer(path, {}, {{"x", {DimExpr::symbol("n"), 8, 3}}}),
                    Catch::Contains("--input-shape x names the dim 'n', which no --dim"));
}

TEST_CASE("symbolic dim options (--dim, --input-shape with names) parse", "[infer_dims]") {
  auto d = parse_dim_spec("seq=1..512@128");
  REQUIRE(d);
  CHECK((d->name == "seq" && d->min == 1 && d->max == 512 && d->typical == 128));
  d = parse_dim_spec("batch=0..64");
  REQUIRE(d);
  CHECK((d->min == 0 && d->max == 64 && d->typical == 64));
  d = parse_dim_spec("batch=8");
  REQUIRE(d);
  CHECK((d->min == 8 && d->max == 8 && d->typical == 8));
  CHECK_FALSE(parse_dim_spec("seq=1..x"));
  CHECK_FALSE(parse_dim_spec("2seq=1..4"));
  CHECK_FALSE(parse_dim_spec("se q=1..4"));
  CHECK_FALSE(parse_dim_spec("seq=-1..4"));
  auto s = parse_symbolic_shape_spec("batchx3x224x224");
  REQUIRE(s);
  CHECK(sym_shape_to_string(*s) == "[batch,3,224,224]");
  s = parse_symbolic_shape_spec("max_len,3");
  REQUIRE(s);
  CHECK(sym_shape_to_string(*s) == "[max_len,3]");
  CHECK_FALSE(parse_symbolic_shape_spec("batchx-3"));
}

TEST_CASE("stitchc's --dim options parse, and a bad one is a user error", "[infer_dims][driver]") {
  auto parse = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"stitchc", "model.onnx"});
    std::vector<char*> argv;
    for (std::string& a : args)
      argv.push_back(a.data());
    DriverOptions options;
    const int code = parse_command_line(static_cast<int>(argv.size()), argv.data(), options);
    CHECK(code == -1);
    return options;
  };
  DriverOptions o =
      parse({"--dim", "batch=1..64@8", "--dim", "seq=128", "--input-shape", "x=batchx3"});
  REQUIRE(o.load.dims.size() == 2);
  CHECK((o.load.dims[0].name == "batch" && o.load.dims[0].typical == 8));
  CHECK((o.load.dims[1].min == 128 && o.load.dims[1].max == 128));
  CHECK(sym_shape_to_string(o.load.input_shapes.at("x")) == "[batch,3]");
  CHECK_THROWS_WITH(parse({"--dim", "batch=8..1"}),
                    Catch::Contains("--dim 'batch=8..1': the minimum 8 is above the maximum 1"));
  CHECK_THROWS_WITH(parse({"--dim", "seq=1..16@20"}),
                    Catch::Contains("the typical value 20 is outside 1..16"));
  CHECK_THROWS_WITH(parse({"--dim", "seq=1..n"}),
                    Catch::Contains("--dim 'seq=1..n' is not NAME=MIN..MAX"));
  CHECK_THROWS_WITH(parse({"--dim", "seq=1..4", "--dim", "seq=2"}),
                    Catch::Contains("--dim gives 'seq' twice"));
  CHECK_THROWS_WITH(parse({"--dim", "seq=1..4294967296"}),
                    Catch::Contains("above the largest supported"));
  CHECK(parse({"--dim", "past=0..8@3"}).load.dims[0].min == 0); // an empty cache, first step
  CHECK_THROWS_WITH(parse({"--dim", "seq=0..8@0"}),
                    Catch::Contains("--dim 'seq=0..8@0': the typical value is at least 1"));
  CHECK(parse({"--dim", "seq=0"}).load.dims[0].max == 0); // binding to 0 is no range
}

TEST_CASE("shape computations become expressions through a transformer layer", "[infer_dims]") {
  std::string path = attention_shapes_model().write();
  Graph g = infer(path, {dim("batch", 1, 8, 3), dim("seq", 1, 100, 12)});
  CHECK(sym_shape_to_string(find_tensor(g, "split_shape").sym_values) == "[batch,seq,4,16]");
  CHECK(dims_of(g, "q") == "[batch,seq,4,16]");
  CHECK(dims_of(g, "scores") == "[batch,4,seq,seq]");
  CHECK(dims_of(g, "merged_ctx") == "[batch,seq,64]");
  CHECK(dims_of(g, "rows") == "[seq,64]");
  CHECK(dims_of(g, "y") == "[batch,seq,64]");
  CHECK(dims_of(g, "range") == "[seq]");
  // A value whose shape varies is computed at run time, not folded at the planning values.
  CHECK_FALSE(find_tensor(g, "range").is_constant());
  CHECK(find_tensor(g, "split_shape").is_constant());
  check_against_rules(
      path, {dim("batch", 1, 8, 3), dim("seq", 1, 100, 12)},
      {{{"batch", 1}, {"seq", 1}}, {{"batch", 2}, {"seq", 37}}, {{"batch", 8}, {"seq", 100}}});
}

// Proves: Mod of a shape value by a positive constant is a - d * floor(a / d), the integer
// Mod's remainder of the divisor's sign, also where the dividend is negative for some values
// (seq - 10 for seq below 10), as the fixed-shape rules compute it; fmod 1's remainder of the
// dividend's sign is taken only where the dividend is never negative.
TEST_CASE("remainders of shape values", "[infer_dims]") {
  auto model = [](int64_t fmod) {
    ModelBuilder m(13);
    m.input("x", kFloat, {-1, 4}, {"seq"}).output("y");
    m.initializer_i64("zero", {1}, {0});
    m.initializer_i64("one", {1}, {1});
    m.initializer_i64("ten", {1}, {10});
    m.initializer_i64("eight", {1}, {8});
    m.initializer_i64("four", {1}, {4});
    m.node("Shape", {"x"}, {"shape"});
    m.node("Slice", {"shape", "zero", "one"}, {"seq"});
    m.node("Sub", {"seq", "ten"}, {"shifted"});
    set_attr_int(m.node("Mod", {"shifted", "eight"}, {"rem"}), "fmod", fmod);
    set_attr_int(m.node("Concat", {"rem", "four"}, {"target"}), "axis", 0);
    m.node("ConstantOfShape", {"target"}, {"filled"});
    set_attr_int(m.node("Cast", {"filled"}, {"y"}), "to", kFloat);
    return m;
  };
  const std::string path = model(0).write();
  const std::vector<SymbolicDim> dims = {dim("seq", 1, 40, 12)};
  CHECK(dims_of(infer(path, dims), "y") == "[seq-8*floor((seq+6)/8)+6,4]"); // (seq - 10) mod 8
  std::vector<SymbolValues> points;
  for (int64_t v : {1, 2, 9, 10, 11, 17, 18, 40})
    points.push_back({{"seq", v}});
  check_against_rules(path, dims, points);
  CHECK_THAT(infer_error(model(1).write(), dims),
             Catch::Contains("(Mod)") &&
                 Catch::Contains("it takes a remainder stitchc cannot express"));
}

TEST_CASE("convolutions and pooling take a symbolic batch", "[infer_dims]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 3, 16, 16}, {"batch"}).output("y");
  m.initializer_f32("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.1f));
  set_attr_ints(m.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  set_attr_ints(m.node("MaxPool", {"c"}, {"p"}), "kernel_shape", {2, 2});
  m.node("GlobalAveragePool", {"p"}, {"g"});
  set_attr_int(m.node("Flatten", {"g"}, {"y"}), "axis", 1);
  std::string path = m.write();
  Graph g = infer(path, {dim("batch", 1, 32, 4)});
  CHECK(dims_of(g, "p") == "[batch,8,15,15]");
  CHECK(dims_of(g, "y") == "[batch,8]");
  check_against_rules(path, {dim("batch", 1, 32, 4)}, {{{"batch", 1}}, {{"batch", 7}}});
}

// Proves: convolutions and pooling windows over symbolic spatial axes give their outputs'
// extents as expressions (floor divisions; ceil_mode's partial last window, a ConvTranspose's
// growth, a global pool's 1s, a Pad's growth) that equal the fixed rules' at every size tried,
// the smallest included; a padding that would depend on the size, and an axis that may be
// shorter than the kernel, are refused with the reason.
TEST_CASE("convolutions and pooling take symbolic spatial axes", "[infer_dims]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 3, -1, -1}, {"batch", "height", "width"})
      .output("y")
      .output("u")
      .output("q");
  m.initializer_f32("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.1f));
  m.initializer_i64("pads", {8}, {0, 0, 2, 1, 0, 1, 0, -1});
  m.initializer_f32("wt", {8, 2, 4, 4}, std::vector<float>(8 * 32, 0.1f));
  auto& conv = m.node("Conv", {"x", "w"}, {"c"});
  set_attr_ints(conv, "pads", {1, 1, 1, 1});
  set_attr_ints(conv, "strides", {2, 1});
  set_attr_ints(conv, "dilations", {1, 2});
  auto& pool = m.node("MaxPool", {"c"}, {"p"});
  set_attr_ints(pool, "kernel_shape", {3, 2});
  set_attr_ints(pool, "strides", {2, 2});
  set_attr_int(pool, "ceil_mode", 1);
  auto& average = m.node("AveragePool", {"p"}, {"a"});
  set_attr_ints(average, "kernel_shape", {1, 1});
  set_attr_string(average, "auto_pad", "SAME_UPPER");
  auto& up = m.node("ConvTranspose", {"a", "wt"}, {"u"});
  set_attr_ints(up, "strides", {2, 2});
  set_attr_ints(up, "pads", {1, 1, 1, 1});
  set_attr_ints(up, "output_padding", {1, 0});
  m.node("GlobalMaxPool", {"a"}, {"y"});
  m.node("Pad", {"c", "pads"}, {"q"});
  std::string path = m.write();
  const std::vector<SymbolicDim> dims = {dim("batch", 1, 4, 2), dim("height", 5, 64, 20),
                                         dim("width", 4, 64, 31)};
  Graph g = infer(path, dims);
  CHECK(dims_of(g, "c") == "[batch,8,floor((height+1)/2),width-2]");
  CHECK(dims_of(g, "y") == "[batch,8,1,1]");
  CHECK(dims_of(g, "q") == "[batch,9,floor((height+1)/2)+2,width-2]");
  check_against_rules(path, dims,
                      {{{"batch", 1}, {"height", 5}, {"width", 4}},
                       {{"batch", 2}, {"height", 20}, {"width", 31}},
                       {{"batch", 3}, {"height", 37}, {"width", 4}},
                       {{"batch", 4}, {"height", 64}, {"width", 64}}});

  SECTION("SAME padding at a stride above 1: ceil(in / stride) windows") {
    // The padding is the run's: a Conv pads a copy of X by it, a pooling window its taps.
    ModelBuilder same;
    same.input("x", kFloat, {1, 3, -1, 16}, {"height"}).output("y");
    same.initializer_f32("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.1f));
    auto& n = same.node("Conv", {"x", "w"}, {"y"});
    set_attr_string(n, "auto_pad", "SAME_UPPER");
    set_attr_ints(n, "strides", {2, 3});
    const std::string same_path = same.write();
    const std::vector<SymbolicDim> same_dims = {dim("height", 1, 64, 16)};
    CHECK(dims_of(infer(same_path, same_dims), "y") == "[1,8,floor((height+1)/2),6]");
    check_against_rules(same_path, same_dims,
                        {{{"height", 1}}, {{"height", 2}}, {{"height", 17}}, {{"height", 64}}});
    ModelBuilder pool;
    pool.input("x", kFloat, {1, 3, -1, 16}, {"height"}).output("y");
    auto& p = pool.node("MaxPool", {"x"}, {"y"});
    set_attr_ints(p, "kernel_shape", {3, 3});
    set_attr_string(p, "auto_pad", "SAME_LOWER");
    set_attr_ints(p, "strides", {3, 2});
    const std::string pool_path = pool.write();
    CHECK(dims_of(infer(pool_path, same_dims), "y") == "[1,3,floor((height+2)/3),8]");
    check_against_rules(pool_path, same_dims,
                        {{{"height", 1}}, {{"height", 3}}, {{"height", 28}}, {{"height", 64}}});
  }
  SECTION("Resizes by any float scale, as the shape rule's floor of the product") {
    ModelBuilder resize;
    resize.input("x", kFloat, {1, 3, -1, -1}, {"height", "width"}).output("y");
    resize.initializer_f32("scales", {4}, {1.0f, 1.0f, 0.3f, 1.7f});
    resize.node("Resize", {"x", "", "scales"}, {"y"});
    const std::string path = resize.write();
    const std::vector<SymbolicDim> dims = {dim("height", 1, 300, 40), dim("width", 1, 300, 40)};
    CHECK(dims_of(infer(path, dims), "y") ==
          "[1,3,floor(5033165*height/16777216),width+floor(2936013*width/4194304)]");
    std::vector<SymbolValues> points;
    for (int64_t v : {1, 2, 3, 7, 10, 17, 20, 30, 100, 101, 299, 300})
      points.push_back({{"height", v}, {"width", 301 - v}});
    check_against_rules(path, dims, points);
  }
  SECTION("a ConvTranspose whose pads may leave a negative extent") {
    ModelBuilder shrink;
    shrink.input("x", kFloat, {1, 3, -1, 16}, {"height"}).output("y");
    shrink.initializer_f32("w", {3, 2, 3, 3}, std::vector<float>(54, 0.1f));
    set_attr_ints(shrink.node("ConvTranspose", {"x", "w"}, {"y"}), "pads", {3, 0, 3, 0});
    CHECK_THAT(infer_error(shrink.write(), {dim("height", 1, 64, 16)}),
               Catch::Contains("(ConvTranspose)") &&
                   Catch::Contains("spatial axis 0 (height-4) may be negative"));
  }
  SECTION("an axis that may be shorter than the kernel") {
    ModelBuilder small;
    small.input("x", kFloat, {1, 3, -1, 16}, {"height"}).output("y");
    set_attr_ints(small.node("MaxPool", {"x"}, {"y"}), "kernel_shape", {3, 3});
    CHECK_THAT(infer_error(small.write(), {dim("height", 2, 64, 16)}),
               Catch::Contains("(MaxPool)") &&
                   Catch::Contains("may be smaller than the kernel extent 3"));
  }
}

TEST_CASE("what depends on the symbols other than as a shape is refused with the reason",
          "[infer_dims]") {
  SECTION("a broadcast the ranges do not make certain") {
    ModelBuilder m;
    m.input("x", kFloat, {-1, 4}, {"n"}).output("y");
    m.initializer_f32("b", {7, 4}, std::vector<float>(28, 1.0f));
    m.node("Add", {"x", "b"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dim("n", 7, 9, 7)}),
               Catch::Contains("(Add)") && Catch::Contains("dims n and 7 broadcast together"));
  }
  SECTION("a float computed from a dim") {
    ModelBuilder m;
    m.input("x", kFloat, {-1, 4}, {"n"}).output("y");
    m.initializer_i64("zero", {}, {0});
    m.node("Shape", {"x"}, {"shape"});
    m.node("Gather", {"shape", "zero"}, {"count"});
    set_attr_int(m.node("Cast", {"count"}, {"count_f"}), "to", kFloat);
    m.node("Div", {"x", "count_f"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dim("n", 1, 9, 4)}),
               Catch::Contains("(Cast)") &&
                   Catch::Contains("a value computed from the symbolic dims other than a shape"));
  }
  SECTION("a reshape whose element count matches only for some values") {
    ModelBuilder m;
    m.input("x", kFloat, {-1, 4}, {"n"}).output("y");
    m.initializer_i64("target", {2}, {2, 8});
    m.node("Reshape", {"x", "target"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dim("n", 1, 9, 4)}),
               Catch::Contains("(Reshape)") && Catch::Contains("4*n elements to 16"));
  }
  SECTION("a slice of a shape value by bounds computed from the symbols") {
    // Its length is 1 for every batch, but which element it picks moves with the batch.
    ModelBuilder m;
    m.input("x", kFloat, {-1, 4, 5}, {"batch"}).output("y").output("v", onnx::TensorProto::INT64);
    m.initializer_i64("zero", {1}, {0});
    m.initializer_i64("one", {1}, {1});
    m.node("Relu", {"x"}, {"y"});
    m.node("Shape", {"x"}, {"s"});
    m.node("Slice", {"s", "zero", "one"}, {"b"});
    m.node("Sub", {"b", "one"}, {"start"});
    m.node("Slice", {"s", "start", "b"}, {"v"});
    CHECK_THAT(infer_error(m.write(), {dim("batch", 1, 2, 2)}),
               Catch::Contains("(Slice)") &&
                   Catch::Contains("a value computed from the symbolic dims other than a shape"));
  }
  SECTION("a split whose last part is negative for small values") {
    ModelBuilder m(18);
    m.input("x", kFloat, {-1, 4}, {"seq"}).output("a").output("b").output("c");
    set_attr_int(m.node("Split", {"x"}, {"a", "b", "c"}), "num_outputs", 3);
    CHECK_THAT(infer_error(m.write(), {dim("seq", 1, 512, 512)}),
               Catch::Contains("(Split)") && Catch::Contains("is negative for some values"));
  }
  SECTION("a declared output dim fixed where it computes a symbolic one") {
    ModelBuilder m;
    m.input("x", kFloat, {-1, 4}, {"n"}).output("y", kFloat, {8, 4}, true);
    m.node("Relu", {"x"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dim("n", 1, 8, 8)}),
               Catch::Contains("graph output 'y' is declared with shape [8,4] but computes [n,4]"));
  }
  SECTION("Resize of a symbolic axis by a scale whose product would depend on rounding") {
    // 0.3f is 5033165 / 2^24: with n up to 2^32 the products pass 2^53.
    ModelBuilder m;
    m.input("x", kFloat, {1, 3, -1, 4}, {"n"}).output("y");
    m.initializer_f32("scales", {4}, {1.0f, 1.0f, 0.3f, 1.0f});
    m.node("Resize", {"x", "", "scales"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dim("n", 1, int64_t{1} << 32, 8)}),
               Catch::Contains("(Resize)") &&
                   Catch::Contains("scales its symbolic axis 2 (n) by 0.3") &&
                   Catch::Contains("a double does not hold exactly"));
  }
  SECTION("Resize of a symbolic axis that may be empty to elements it would read") {
    ModelBuilder m;
    m.input("x", kFloat, {1, 3, -1, 4}, {"n"}).output("y");
    m.initializer_i64("sizes", {4}, {1, 3, 5, 4});
    m.node("Resize", {"x", "", "", "sizes"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dim("n", 0, 8, 8)}),
               Catch::Contains("(Resize)") && Catch::Contains("may resize its axis 2 (n), empty"));
  }
  SECTION("a --dim range over a dim --input-shape binds") {
    ModelBuilder m;
    m.input("x", kFloat, {-1, 4}, {"batch"}).output("y");
    m.node("Relu", {"x"}, {"y"});
    CHECK_THROWS_WITH(infer(m.write(), {dim("batch", 1, 8, 8)}, {{"x", {4, 4}}}),
                      Catch::Contains("--dim batch=1..8 ranges the dim 'batch', which "
                                      "--input-shape binds to 4"));
  }
  SECTION("GatherElements whose indices may outgrow the data") {
    ModelBuilder m;
    m.input("x", kFloat, {-1, 10}, {"n"}).input("i", kInt64, {-1, 4}, {"m"}).output("y");
    set_attr_int(m.node("GatherElements", {"x", "i"}, {"y"}), "axis", 1);
    CHECK_THAT(
        infer_error(m.write(), {dim("n", 1, 8, 4), dim("m", 1, 8, 4)}),
        Catch::Contains("(GatherElements)") &&
            Catch::Contains("its indices [m,4] may be larger than its data [n,10] on axis 0"));
  }
  SECTION("an op whose output shape stitchc expresses over some of its dims only") {
    ModelBuilder m(23);
    m.input("q", kFloat, {2, -1, 3, 4}, {"heads"}).input("k", kFloat, {2, -1, 5, 4}, {"heads"});
    m.input("v", kFloat, {2, -1, 5, 4}, {"heads"}).output("y");
    m.node("Attention", {"q", "k", "v"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dim("heads", 1, 8, 2)}),
               Catch::Contains("(Attention)") &&
                   Catch::Contains("its heads and head sizes must be fixed") &&
                   Catch::Contains("input 0 [2,heads,3,4]"));
  }
}

// Proves: every exporter's real model with symbolic batch and sequence (tests/models/dynamic)
// infers over the symbols its inputs.json ranges, planned at its example sizes, and its
// expressions agree with the shape rules at other shapes: every symbol at its minimum (1), at
// its maximum, and at odd sizes between (not powers of two).
TEST_CASE("the dynamic fixtures infer symbolically and agree with the rules at other shapes",
          "[infer_dims]") {
  for (const auto& [path, dims] : dynamic_fixtures()) {
    std::vector<SymbolValues> points(4);
    for (const SymbolicDim& d : dims) {
      points[0][d.name] = d.min;
      points[1][d.name] = d.max;
      points[2][d.name] = std::min<int64_t>(d.max, ((d.min + d.max) / 2) | 1);
      points[3][d.name] = std::min<int64_t>(d.max, d.min + 4 + 2 * (d.name == "seq"));
    }
    INFO(path);
    check_against_rules(path, dims, points);
  }
}

// Proves: a range may start at 0 (an empty key-value cache, an empty batch): the fixtures with
// every symbol ranged from 0 infer expressions that give the rules' shapes with each symbol at 0
// (the others at their examples, and all of them at 0), or are refused with a reason (a
// Reshape inferring its -1 from dims that may be 0, a window larger than an empty axis); the
// decoders, feed-forward blocks and image models over their batch infer, and the decode steps
// with their cache alone from 0 (their first step).
TEST_CASE("symbolic dims whose ranges start at 0 infer the rules' empty shapes", "[infer_dims]") {
  auto check_from_zero = [](const std::string& path, std::vector<SymbolicDim> dims,
                            const std::set<std::string>& from_zero) {
    std::vector<SymbolValues> points(1); // every symbol from 0 at 0, then each alone
    for (const SymbolicDim& d : dims)
      points.front()[d.name] = from_zero.count(d.name) ? 0 : d.typical;
    for (SymbolicDim& d : dims) {
      if (!from_zero.count(d.name)) continue;
      d.min = 0;
      SymbolValues alone;
      for (const SymbolicDim& other : dims)
        alone[other.name] = other.typical;
      alone[d.name] = 0;
      points.push_back(alone);
    }
    infer(path, dims); // a refusal throws: the caller decides whether it may
    check_against_rules(path, dims, points);
  };
  std::set<std::string> inferred;
  for (const auto& [path, dims] : dynamic_fixtures()) {
    INFO(path);
    std::set<std::string> every;
    for (const SymbolicDim& d : dims)
      every.insert(d.name);
    try {
      check_from_zero(path, dims, every);
      inferred.insert(fs::path(path).stem().string());
    } catch (const UserError& e) {
      CHECK_THAT(e.what(),
                 Catch::Contains("for some values of the symbols") || Catch::Contains("may be 0"));
    }
    if (every.count("past")) check_from_zero(path, dims, {"past"});
  }
  for (const char* name :
       {"block_dynamic", "decoder_block_dynamo22", "decoder_block_ts20", "decoder_step_ts17",
        "efficientnet_b0_ts15", "ffn_dynamic", "mobilenet_v2_dynamo19", "resnet18_ts13"})
    CHECK(inferred.count(name) == 1);
}

// Proves: ops over dims that may be 0 infer what the rules give at 0 (a reshape whose target
// dim is 0 exactly where the dim it would copy is, a slice of negative step over an empty
// axis) or are refused where the result would depend on the 0 (a target dim copying a
// non-empty one, a -1 inferred from dims that may be 0, a TopK taking more than the axis).
TEST_CASE("reshapes, slices and TopK over dims that may be 0", "[infer_dims]") {
  const std::vector<SymbolicDim> dims = {dim("batch", 0, 4, 2), dim("seq", 0, 16, 3)};
  SECTION("inferred as the rules give them at 0") {
    ModelBuilder m(17);
    m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("flat").output("y").output("first");
    m.initializer_i64("zero", {}, {0});
    m.initializer_i64("one", {}, {1});
    m.initializer_i64("eight", {}, {8});
    m.initializer_i64("axis0", {1}, {0});
    m.initializer_i64("last", {1}, {-1});
    m.initializer_i64("before_first", {1}, {std::numeric_limits<int64_t>::min()});
    m.initializer_i64("axis1", {1}, {1});
    m.node("Shape", {"x"}, {"shape"});
    m.node("Gather", {"shape", "zero"}, {"b"});
    m.node("Gather", {"shape", "one"}, {"s"});
    m.node("Mul", {"s", "eight"}, {"s8"});
    m.node("Unsqueeze", {"b", "axis0"}, {"b1"});
    m.node("Unsqueeze", {"s8", "axis0"}, {"s81"});
    set_attr_int(m.node("Concat", {"b1", "s81"}, {"target"}), "axis", 0);
    m.node("Reshape", {"x", "target"}, {"flat"}); // [batch, 8*seq]: 0 where seq is
    m.node("Slice", {"x", "last", "before_first", "axis1", "last"}, {"reversed"});
    m.node("Add", {"reversed", "x"}, {"y"});
    // x[:, -inf:-inf:-1]: the first element alone, none of an empty axis.
    m.node("Slice", {"x", "before_first", "before_first", "axis1", "last"}, {"first"});
    const std::string path = m.write();
    CHECK(dims_of(infer(path, dims), "flat") == "[batch,8*seq]");
    check_against_rules(path, dims,
                        {{{"batch", 0}, {"seq", 3}},
                         {{"batch", 2}, {"seq", 0}},
                         {{"batch", 0}, {"seq", 0}},
                         {{"batch", 3}, {"seq", 5}}});
  }
  SECTION("a target dim that copies a non-empty one where it is 0") {
    ModelBuilder m(17);
    m.input("x", kFloat, {-1, -1, 8}, {"batch", "seq"}).output("y");
    m.initializer_i64("merged", {2}, {-1, 8});
    m.initializer_i64("zero", {}, {0});
    m.initializer_i64("one", {}, {1});
    m.initializer_i64("axis0", {1}, {0});
    m.initializer_i64("split", {2}, {2, 4});
    m.node("Reshape", {"x", "merged"}, {"rows"}); // [batch*seq, 8]
    m.node("Shape", {"x"}, {"shape"});
    m.node("Gather", {"shape", "zero"}, {"b"});
    m.node("Gather", {"shape", "one"}, {"s"});
    m.node("Unsqueeze", {"b", "axis0"}, {"b1"});
    m.node("Unsqueeze", {"s", "axis0"}, {"s1"});
    set_attr_int(m.node("Concat", {"b1", "s1", "split"}, {"target"}), "axis", 0);
    m.node("Reshape", {"rows", "target"}, {"y"}); // seq 0 copies the rows' 8
    CHECK_THAT(infer_error(m.write(), dims),
               Catch::Contains("(Reshape)") &&
                   Catch::Contains("has the dim seq, which may be 0 and then copies the "
                                   "input's dim 1 (8)"));
  }
  SECTION("a -1 inferred from dims that may be 0") {
    ModelBuilder m(17);
    m.input("x", kFloat, {-1, 8}, {"batch"}).output("y");
    m.initializer_i64("target", {2}, {0, -1});
    m.node("Reshape", {"x", "target"}, {"y"});
    CHECK_THAT(infer_error(m.write(), {dims[0]}),
               Catch::Contains("(Reshape)") &&
                   Catch::Contains("infers the -1 from the other dims, whose product batch may "
                                   "be 0"));
  }
  SECTION("a TopK of more than an axis that may be empty") {
    ModelBuilder m(17);
    m.input("x", kFloat, {-1, -1}, {"batch", "seq"}).output("v");
    m.initializer_i64("k", {1}, {1});
    m.node("TopK", {"x", "k"}, {"v", "i"});
    CHECK_THAT(infer_error(m.write(), dims),
               Catch::Contains("(TopK)") &&
                   Catch::Contains("its k 1 may be larger than axis 1 (seq)"));
  }
}

// Proves: a Dropout whose mask has symbolic dims keeps writing it (remove-identity makes only
// a static mask a constant).
TEST_CASE("a Dropout's symbolic mask stays computed through the passes", "[infer_dims]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 4}, {"n"}).output("y").output("relu_mask");
  m.node("Dropout", {"x"}, {"d", "mask"});
  m.node("Relu", {"d"}, {"y"});
  set_attr_int(m.node("Cast", {"mask"}, {"relu_mask"}), "to", kFloat);
  LoadOptions options;
  options.dims = {dim("n", 1, 8, 3)};
  Graph g = load_onnx(m.write(), options);
  run_pipeline(g, {});
  CHECK(dims_of(g, "relu_mask") == "[n,4]");
  CHECK_FALSE(find_tensor(g, "mask").is_constant());
}

TEST_CASE("the graph passes keep the symbolic dims", "[infer_dims]") {
  std::string path = attention_shapes_model().write();
  LoadOptions options;
  options.dims = {dim("batch", 1, 8, 8), dim("seq", 1, 100, 100)};
  Graph g = load_onnx(path, options);
  std::ostringstream printed;
  PipelineOptions pipeline;
  pipeline.print_after = {"all"};
  pipeline.print_to = &printed;
  run_pipeline(g, pipeline);
  CHECK(dims_of(g, "y") == "[batch,seq,64]");
  CHECK(dims_of(g, "positions") == "[1,seq]");
  CHECK_THAT(printed.str(), Catch::Contains("symbol seq in 1..100, planned at 100") &&
                                Catch::Contains("%'y': float32[batch,seq,64]"));
  // Every node of the attention, its products over symbolic Bs included, runs over the
  // symbols.
  CHECK_NOTHROW(check_code_generation(g));
}

namespace {

// The graph after every pass, as text that leaves out what depends on the planning values:
// each node's op, inputs and outputs by name with their shapes as expressions, a shape
// operand's values as expressions, attributes (but a View's target, which holds the planning
// values; its output's expressions are the view's shape).
std::string planning_free_form(const Graph& g) {
  std::string out;
  auto tensor = [&](TensorId t) {
    if (t == kNoTensor) return std::string("_");
    const Tensor& x = g.tensor(t);
    std::string s = x.name + ":" + sym_shape_to_string(x.sym_shape());
    if (!x.sym_values.empty())
      s += "=" + sym_shape_to_string(x.sym_values);
    else if (x.is_constant() && x.elements() <= 16 && dtype_is_integer(x.dtype))
      s += "=" + shape_to_string(constant_as_int64(x));
    return s;
  };
  for (const Node& n : g.nodes) {
    out += std::string(op_name(n.op)) + "(";
    for (TensorId t : n.inputs)
      out += tensor(t) + " ";
    out += ") -> ";
    for (TensorId t : n.outputs)
      out += tensor(t) + " ";
    for (const auto& [key, a] : n.attrs)
      if (!(n.op == OpKind::View && key == "shape")) out += key + "=" + a.kind_name() + " ";
    out += "\n";
  }
  return out;
}

} // namespace

// Proves: channels-last (float16 Convs and a pool through it) and the lowering of a
// GroupNormalization keep a symbolic batch, and decide the same at batch 4 and 1.
TEST_CASE("channels-last and the composite lowerings keep a symbolic batch", "[infer_dims]") {
  ModelBuilder m(18);
  m.input("x", kFloat, {-1, 3, 16, 16}, {"batch"}).output("y");
  m.initializer_f32("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.1f));
  m.initializer_f32("scale", {2}, {1.0f, 0.5f});
  m.initializer_f32("bias", {2}, {0.0f, 0.25f});
  set_attr_ints(m.node("Conv", {"x", "w"}, {"c"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"});
  set_attr_ints(m.node("MaxPool", {"r"}, {"p"}), "kernel_shape", {2, 2});
  set_attr_int(m.node("GroupNormalization", {"p", "scale", "bias"}, {"n"}), "num_groups", 2);
  m.node("GlobalAveragePool", {"n"}, {"g"});
  m.node("Flatten", {"g"}, {"y"});
  const std::string path = m.write();
  auto passes = [&](int64_t typical) {
    LoadOptions options;
    options.dims = {dim("batch", 1, 16, typical)};
    Graph g = load_onnx(path, options);
    PipelineOptions pipeline;
    pipeline.precision.precision = Precision::Fp16;
    run_pipeline(g, pipeline);
    return g;
  };
  const Graph g = passes(4);
  CHECK(dims_of(g, "y") == "[batch,8]");
  bool transposed = false;
  for (const Node& n : g.nodes)
    transposed = transposed || n.op == OpKind::Transpose;
  CHECK(transposed); // channels-last ran
  CHECK(planning_free_form(g) == planning_free_form(passes(1)));
}

// Proves: the passes decide by the symbolic shapes, never by the values the symbols take for
// planning: each dynamic fixture planned at its example sizes and planned with every symbol at
// 1 (where a dim equal to 1 or to another dim by chance would change a decision) gives the
// same graph after the passes, node for node, in float32 and in float16.
TEST_CASE("the passes give one graph whatever the planning values of the symbols", "[infer_dims]") {
  for (const auto& [path, example] : dynamic_fixtures()) {
    std::vector<SymbolicDim> ones = example;
    for (SymbolicDim& d : ones)
      d.typical = d.min;
    auto passes = [&](const std::vector<SymbolicDim>& dims, Precision precision) {
      LoadOptions options;
      options.dims = dims;
      Graph g = load_onnx(path, options);
      PipelineOptions pipeline;
      pipeline.precision.precision = precision;
      run_pipeline(g, pipeline);
      return planning_free_form(g);
    };
    INFO(path);
    // float16 also runs convert-precision, and channels-last on ViT's patch convolution.
    for (Precision precision : {Precision::Fp32, Precision::Fp16})
      CHECK(passes(example, precision) == passes(ones, precision));
  }
}
