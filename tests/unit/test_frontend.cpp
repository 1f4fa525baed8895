// Frontend tests: storage forms of initializers, external data rules, symbolic dims,
// graph structure errors, and the size of graphs the loader walks.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "frontend/onnx_loader.h"
#include "graph/constant.h"
#include "graph/error.h"
#include "model_builder.h"

using namespace stitch;
using stitch::test::ModelBuilder;
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

const Tensor& find_tensor(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  return g.tensors.front();
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
