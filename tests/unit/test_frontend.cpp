// Frontend tests: storage forms of initializers, external data rules, symbolic dims,
// graph structure errors, and the size of graphs the loader walks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "graph_test_util.h"
#include "model_builder.h"

using namespace stitch;
using stitch::test::find_tensor;
using stitch::test::ModelBuilder;
using stitch::test::set_attr_float;
using stitch::test::set_attr_int;
using stitch::test::set_attr_ints;
using stitch::test::set_attr_string;
namespace fs = std::filesystem;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

std::string load_error(const std::string& path, const LoadOptions& options = {}) {
  try {
    load_onnx(path, options);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(loaded without error)";
}

// A model whose initializer 'w' is stored externally in `file` with the given attributes.
ModelBuilder external_model(const std::string& location, const std::string& offset,
                            const std::string& length) {
  ModelBuilder m;
  m.input("x", kFloat, {4}).output("y");
  auto* t = m.proto().mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(kFloat);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_kv = [&](const char* k, const std::string& v) {
    if (v.empty()) return;
    auto* kv = t->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  };
  add_kv("location", location);
  add_kv("offset", offset);
  add_kv("length", length);
  m.node("Add", {"x", "w"}, {"y"});
  return m;
}

void write_floats(const fs::path& path, const std::vector<float>& v, size_t pad_front = 0) {
  std::ofstream f(path, std::ios::binary);
  std::string pad(pad_front, '\x7f');
  f.write(pad.data(), pad.size());
  f.write(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

} // namespace

TEST_CASE("raw_data and typed-field initializers load the same values", "[frontend]") {
  // Proves both storage forms of TensorProto reach the same bytes.
  for (bool raw : {true, false}) {
    ModelBuilder m;
    m.input("x", kFloat, {3}).output("y").initializer_f32("w", {3}, {1.5f, -2.f, 3.25f}, raw);
    m.initializer_i64("k", {2}, {7, -9}, raw);
    m.node("Add", {"x", "w"}, {"y"});
    Graph g = load_onnx(m.write());
    CHECK(constant_as_double(find_tensor(g, "w")) == std::vector<double>{1.5, -2, 3.25});
    CHECK(constant_as_int64(find_tensor(g, "k")) == std::vector<int64_t>{7, -9});
  }
}

TEST_CASE("raw_data shorter than its shape is refused", "[frontend]") {
  ModelBuilder m;
  m.input("x", kFloat, {4}).output("y").initializer_f32("w", {4}, {1, 2, 3});
  m.node("Add", {"x", "w"}, {"y"});
  CHECK_THAT(load_error(m.write()), Catch::Contains("tensor 'w': raw_data holds 12 bytes"));
}

TEST_CASE("external data beside the model loads with offset and length", "[frontend]") {
  fs::path dir = test::fresh_temp_dir("ext");
  write_floats(dir / "weights.bin", {1, 2, 3, 4}, 8);
  Graph g = load_onnx(external_model("weights.bin", "8", "16").write_to(dir));
  CHECK(constant_as_double(find_tensor(g, "w")) == std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("external data paths that leave the model's folder are refused", "[frontend]") {
  fs::path root = test::fresh_temp_dir("ext-escape");
  fs::create_directories(root / "model");
  write_floats(root / "secret.bin", {1, 2, 3, 4});
  write_floats(root / "model" / "ok.bin", {1, 2, 3, 4});
  fs::create_symlink(root / "secret.bin", root / "model" / "link.bin");
  auto err = [&](const std::string& loc) {
    return load_error(external_model(loc, "", "").write_to(root / "model"));
  };
  CHECK_THAT(err("../secret.bin"), Catch::Contains("leaves the model's folder ('..')"));
  CHECK_THAT(err((root / "secret.bin").string()), Catch::Contains("is absolute"));
  CHECK_THAT(err("link.bin"), Catch::Contains("outside the model's folder (through a symlink)"));
  fs::create_hard_link(root / "secret.bin", root / "model" / "hard.bin");
  CHECK_THAT(err("hard.bin"), Catch::Contains("hard links"));
  CHECK_THAT(err("missing.bin"), Catch::Contains("cannot be opened"));
  CHECK_THAT(err("ok.bin"), Catch::Equals("(loaded without error)"));
}

TEST_CASE("external data offset and length are checked against the file", "[frontend]") {
  fs::path dir = test::fresh_temp_dir("ext-range");
  write_floats(dir / "w.bin", {1, 2, 3, 4});
  CHECK_THAT(load_error(external_model("w.bin", "4", "16").write_to(dir)),
             Catch::Contains("runs past the end"));
  CHECK_THAT(load_error(external_model("w.bin", "100", "").write_to(dir)),
             Catch::Contains("past the end"));
  CHECK_THAT(load_error(external_model("w.bin", "0", "8").write_to(dir)),
             Catch::Contains("does not match the tensor's 16 bytes"));
  CHECK_THAT(load_error(external_model("w.bin", "-4", "16").write_to(dir)),
             Catch::Contains("not a decimal number"));
}

TEST_CASE("unbound symbolic dims are refused with the list to bind", "[frontend]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, -1}, {"batch", "seq"}).output("y");
  m.node("Relu", {"x"}, {"y"});
  std::string path = m.write();
  CHECK_THAT(load_error(path), Catch::Contains("x[0] 'batch', x[2] 'seq'"));
  LoadOptions opts;
  opts.input_shapes["x"] = {2, 8, 5};
  Graph g = load_onnx(path, opts);
  CHECK(g.tensor(g.inputs[0]).shape == Shape{2, 8, 5});
  opts.input_shapes["x"] = {2, 9, 5};
  CHECK_THAT(load_error(path, opts), Catch::Contains("the model fixes it to 8"));
}

// Proves: the forms other exporters write load: an input dim written as -1 (paddle2onnx) or
// without name or value is unknown, listed as such and bound with --input-shape; another
// domain's opset import that no node uses is no obstacle.
TEST_CASE("dims written as -1 or unnamed bind with --input-shape; unused domain imports load",
          "[frontend]") {
  ModelBuilder m;
  m.input("x", kFloat, {-1, 8, -1}).output("y");
  m.node("Relu", {"x"}, {"y"});
  m.proto()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-1);
  auto* unused = m.proto().add_opset_import();
  unused->set_domain("com.microsoft");
  unused->set_version(1);
  std::string path = m.write();
  CHECK_THAT(load_error(path), Catch::Contains("x[0] (written as -1), x[2]"));
  LoadOptions opts;
  opts.input_shapes["x"] = {3, 8, 5};
  Graph g = load_onnx(path, opts);
  CHECK(g.tensor(g.inputs[0]).shape == Shape{3, 8, 5});
  opts.input_shapes["x"] = {3, 7, 5};
  CHECK_THAT(load_error(path, opts), Catch::Contains("the model fixes it to 8"));
}

TEST_CASE("a dim_param bound on one input binds the same name on another", "[frontend]") {
  ModelBuilder m;
  m.input("a", kFloat, {-1, 4}, {"n"}).input("b", kFloat, {-1, 4}, {"n"}).output("y");
  m.node("Add", {"a", "b"}, {"y"});
  LoadOptions opts;
  opts.input_shapes["a"] = {3, 4};
  Graph g = load_onnx(m.write(), opts);
  CHECK(g.tensor(g.inputs[1]).shape == Shape{3, 4});
}

TEST_CASE("a chain of 20000 nodes loads (graph walks are iterative)", "[frontend]") {
  ModelBuilder m;
  m.input("x0", kFloat, {2}).output("x20000");
  // Written in reverse so that ordering the nodes is real work.
  for (int i = 20000; i >= 1; --i)
    m.node("Relu", {"x" + std::to_string(i - 1)}, {"x" + std::to_string(i)});
  Graph g = load_onnx(m.write());
  REQUIRE(g.nodes.size() == 20000);
  CHECK(g.tensor(g.nodes.front().inputs[0]).name == "x0");
  CHECK(g.tensor(g.nodes.back().outputs[0]).name == "x20000");
}

TEST_CASE("structural errors name the node", "[frontend]") {
  SECTION("cycle") {
    ModelBuilder m;
    m.input("x", kFloat, {2}).output("c");
    m.node("Add", {"x", "c"}, {"a"}, "first");
    m.node("Relu", {"a"}, {"c"}, "second");
    CHECK_THAT(load_error(m.write()), Catch::Contains("the graph has a cycle"));
  }
  SECTION("undefined input") {
    ModelBuilder m;
    m.input("x", kFloat, {2}).output("y");
    m.node("Add", {"x", "nowhere"}, {"y"}, "adder");
    CHECK_THAT(load_error(m.write()),
               Catch::Contains("node 'adder' (Add): input 'nowhere' is not defined"));
  }
  SECTION("two producers") {
    ModelBuilder m;
    m.input("x", kFloat, {2}).output("y");
    m.node("Relu", {"x"}, {"y"}, "one");
    m.node("Neg", {"x"}, {"y"}, "two");
    CHECK_THAT(load_error(m.write()),
               Catch::Contains("node 'two' (Neg): value 'y' is defined twice"));
  }
}

TEST_CASE("an unnamed node is named in errors by its first output", "[frontend]") {
  ModelBuilder m;
  m.input("x", kFloat, {2}).output("y");
  m.node("Add", {"x", "nowhere"}, {"y"}).clear_name();
  CHECK_THAT(load_error(m.write()),
             Catch::Contains("node (Add) writing 'y': input 'nowhere' is not defined"));
}

TEST_CASE("the list of unsupported ops shows an unnamed node by its output", "[frontend]") {
  ModelBuilder m;
  m.input("x", kFloat, {2}).output("y");
  m.node("Foo", {"x"}, {"y"}).clear_name();
  CHECK_THAT(load_error(m.write()),
             Catch::Contains("unsupported ops: Foo x1 (first: unnamed writing 'y')"));
}

TEST_CASE("every unsupported op is listed at once with counts", "[frontend]") {
  ModelBuilder m;
  m.input("x", kFloat, {2}).output("y");
  m.node("Foo", {"x"}, {"a"}, "f1");
  m.node("Foo", {"a"}, {"b"}, "f2");
  m.node("Bar", {"b"}, {"y"}, "b1");
  std::string err = load_error(m.write());
  CHECK_THAT(err,
             Catch::Contains("unsupported ops: Bar x1 (first: 'b1'); Foo x2 (first: 'f1', 'f2')"));
}

TEST_CASE("an op of an unknown domain is refused by domain name", "[frontend]") {
  ModelBuilder m;
  m.input("x", kFloat, {2}).output("y");
  m.node("FusedGemm", {"x"}, {"y"}, "g").set_domain("com.microsoft");
  CHECK_THAT(load_error(m.write()), Catch::Contains("unsupported op domain: com.microsoft x1"));
}

TEST_CASE("a file that is not ONNX is refused", "[frontend]") {
  fs::path dir = test::fresh_temp_dir("junk");
  std::ofstream(dir / "junk.onnx") << "this is not a protobuf \xff\xff\xff\xff";
  CHECK_THAT(load_error((dir / "junk.onnx").string()), Catch::Contains("not a valid ONNX model"));
  std::ofstream(dir / "empty.onnx");
  CHECK_THAT(load_error((dir / "empty.onnx").string()), Catch::Contains("it has no graph"));
  CHECK_THAT(load_error((dir / "absent.onnx").string()), Catch::Contains("cannot open the model"));
}

TEST_CASE("parse_shape_spec reads NAMExDIMS forms", "[frontend]") {
  CHECK(parse_shape_spec("1x3x224x224") == Shape{1, 3, 224, 224});
  CHECK(parse_shape_spec("") == Shape{});
  CHECK_FALSE(parse_shape_spec("1x-3"));
  CHECK_FALSE(parse_shape_spec("1xx3"));
  CHECK_FALSE(parse_shape_spec("99999999999999999999"));
}

namespace {

const Node& only_node(const Graph& g, OpKind op) {
  const Node* found = nullptr;
  for (const Node& n : g.nodes)
    if (n.op == op) {
      REQUIRE(found == nullptr);
      found = &n;
    }
  REQUIRE(found != nullptr);
  return *found;
}

} // namespace

// Proves: a model of opset 4 loads in its opset-7 forms: consumed_inputs gone, Cast's type name
// a number, Reshape's shape attribute a constant input.
TEST_CASE("opset 4 forms: consumed_inputs, Cast to a type name, Reshape's shape attribute",
          "[frontend][legacy]") {
  ModelBuilder m(4);
  m.input("x", kFloat, {2, 6}).output("y");
  set_attr_ints(m.node("Relu", {"x"}, {"r"}, "relu0"), "consumed_inputs", {0});
  set_attr_ints(m.node("Reshape", {"r"}, {"s"}, "reshape0"), "shape", {3, 4});
  set_attr_string(m.node("Cast", {"s"}, {"y"}, "cast0"), "to", "DOUBLE");
  Graph g = load_onnx(m.write());
  CHECK(g.opset == 7);
  CHECK(only_node(g, OpKind::Relu).attrs.count("consumed_inputs") == 0);
  const Node& reshape = only_node(g, OpKind::Reshape);
  REQUIRE(reshape.inputs.size() == 2);
  CHECK(constant_as_int64(g.tensor(reshape.inputs[1])) == std::vector<int64_t>{3, 4});
  CHECK(reshape.attrs.count("shape") == 0);
  CHECK(std::get<int64_t>(only_node(g, OpKind::Cast).attrs.at("to").value) ==
        onnx::TensorProto::DOUBLE);

  ModelBuilder bad(5);
  bad.input("x", kFloat, {2}).output("y");
  set_attr_string(bad.node("Cast", {"x"}, {"y"}, "cast0"), "to", "QUATERNION");
  CHECK_THAT(load_error(bad.write()),
             Catch::Contains("attribute 'to' names the unknown type \"QUATERNION\""));
}

// Proves: Concat's axis defaults to 1 before opset 4; Pad's `paddings` (opset 1) is `pads`;
// Split's sizes given as a constant input (opset 1) become the attribute.
TEST_CASE("opset 1-3 forms: Concat's default axis, Pad's paddings, Split's sizes input",
          "[frontend][legacy]") {
  ModelBuilder m(1);
  m.input("a", kFloat, {2, 3}).input("b", kFloat, {2, 5}).output("p").output("s1").output("s2");
  m.node("Concat", {"a", "b"}, {"c"}, "concat0");
  set_attr_ints(m.node("Pad", {"c"}, {"p"}, "pad0"), "paddings", {0, 1, 0, 2});
  m.initializer_i64("sizes", {2}, {3, 5});
  set_attr_int(m.node("Split", {"c", "sizes"}, {"s1", "s2"}, "split0"), "axis", 1);
  Graph g = load_onnx(m.write());
  CHECK(std::get<int64_t>(only_node(g, OpKind::Concat).attrs.at("axis").value) == 1);
  const Node& pad = only_node(g, OpKind::Pad);
  CHECK(std::get<std::vector<int64_t>>(pad.attrs.at("pads").value) ==
        std::vector<int64_t>{0, 1, 0, 2});
  CHECK(pad.attrs.count("paddings") == 0);
  const Node& split = only_node(g, OpKind::Split);
  CHECK(split.inputs.size() == 1);
  CHECK(std::get<std::vector<int64_t>>(split.attrs.at("split").value) ==
        std::vector<int64_t>{3, 5});
}

// Proves: before opset 7, Add broadcasting B from an axis of A (the rank of A inferred through a
// Relu) computes A[i,j,k] + B[j], and Mul broadcasting a suffix computes A[i,j,k] * C[k]: the
// values constant folding gives equal the legacy rule's, on values that are not all equal.
TEST_CASE("opset 6 broadcasting from an axis computes the legacy rule", "[frontend][legacy]") {
  ModelBuilder m(6);
  m.output("y");
  std::vector<float> a(24), b = {10, 20, 30}, c = {2, 3, 5, 7};
  for (int i = 0; i < 24; ++i)
    a[i] = static_cast<float>(i % 5) - 1.5f * static_cast<float>(i % 3);
  m.initializer_f32("a", {2, 3, 4}, a).initializer_f32("b", {3}, b).initializer_f32("c", {4}, c);
  m.node("Relu", {"a"}, {"r"}, "relu0");
  onnx::NodeProto& add = m.node("Add", {"r", "b"}, {"s"}, "add0");
  set_attr_int(add, "broadcast", 1);
  set_attr_int(add, "axis", 1);
  set_attr_int(m.node("Mul", {"s", "c"}, {"y"}, "mul0"), "broadcast", 1);
  Graph g = load_onnx(m.write());
  REQUIRE(std::none_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) {
    return n.attrs.count("broadcast") || n.attrs.count("axis") > 0 && n.op != OpKind::Unsqueeze;
  }));
  run_pipeline(g, PipelineOptions{});
  const Tensor& y = g.tensor(g.outputs[0]);
  REQUIRE(y.is_constant());
  REQUIRE(y.shape == Shape{2, 3, 4});
  const std::vector<double> got = constant_as_double(y);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const int e = (i * 3 + j) * 4 + k;
        INFO("element " << e);
        CHECK(got[e] == (std::max(a[e], 0.0f) + b[j]) * c[k]);
      }
}

// Proves: BatchNormalization's and Dropout's is_test and Gemm's broadcast (opset 6) are dropped;
// Upsample (opset 7: scales attribute; opset 9: scales input) becomes a Resize of opset 10 in a
// model of an older opset, nearest or linear (BILINEAR of opset 1 too).
TEST_CASE("opset 6 inference attributes and Upsample as Resize", "[frontend][legacy]") {
  ModelBuilder m(6);
  m.input("x", kFloat, {2, 3}).output("y");
  for (const char* n : {"scale", "bias", "mean", "var"})
    m.initializer_f32(n, {3}, {1, 2, 3});
  m.initializer_f32("w", {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}).initializer_f32("c", {3}, {1, 2, 3});
  set_attr_int(m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"n"}, "bn0"),
               "is_test", 1);
  set_attr_int(m.node("Dropout", {"n"}, {"d"}, "drop0"), "is_test", 1);
  set_attr_int(m.node("Gemm", {"d", "w", "c"}, {"y"}, "gemm0"), "broadcast", 1);
  Graph g = load_onnx(m.write());
  CHECK(only_node(g, OpKind::BatchNormalization).attrs.count("is_test") == 0);
  CHECK(only_node(g, OpKind::Dropout).attrs.count("is_test") == 0);
  CHECK(only_node(g, OpKind::Gemm).attrs.count("broadcast") == 0);

  for (int opset : {1, 7, 9}) {
    INFO("opset " << opset);
    ModelBuilder u(opset);
    u.input("x", kFloat, {1, 2, 3, 4}).output("y");
    onnx::NodeProto& up =
        u.node("Upsample",
               opset == 9 ? std::vector<std::string>{"x", "scales"} : std::vector<std::string>{"x"},
               {"y"}, "up0");
    if (opset == 1) {
      set_attr_float(up, "height_scale", 2.0f);
      set_attr_float(up, "width_scale", 3.0f);
      set_attr_string(up, "mode", "BILINEAR");
    } else if (opset == 7) {
      onnx::AttributeProto& scales = *up.add_attribute();
      scales.set_name("scales");
      scales.set_type(onnx::AttributeProto::FLOATS);
      for (float s : {1.0f, 1.0f, 2.0f, 3.0f})
        scales.add_floats(s);
    } else {
      u.initializer_f32("scales", {4}, {1, 1, 2, 3});
    }
    Graph ug = load_onnx(u.write());
    const Node& resize = only_node(ug, OpKind::Resize);
    CHECK(resize.opset == 10);
    CHECK(ug.opset == std::max(opset, 7));
    REQUIRE(resize.inputs.size() == 2);
    CHECK(constant_as_double(ug.tensor(resize.inputs[1])) == std::vector<double>{1, 1, 2, 3});
    CHECK(std::get<std::string>(resize.attrs.at("mode").value) ==
          (opset == 1 ? "linear" : "nearest"));
    run_pipeline(ug, PipelineOptions{});
    CHECK(ug.tensor(ug.outputs[0]).shape == Shape{1, 2, 6, 12});
  }
}
