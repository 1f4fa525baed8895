// Shape rule tests that hold for the whole op table: every op has a rule, and a rule's error
// names its node, by name or, for a node the exporter left unnamed, by its first output.
// The per-category cases are in test_shape_rules_<category>.cpp.
#include <catch2/catch.hpp>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("every op in the table has a shape rule", "[shape_rules]") {
  for (int op = 0; op <= static_cast<int>(OpKind::View); ++op)
    CHECK(shape_rule(static_cast<OpKind>(op)) != nullptr);
}

TEST_CASE("a rule's error names an unnamed node by its first output", "[shape_rules]") {
  NodeUnderTest t;
  t.node_name = "";
  t.node(OpKind::Mul, {t.input(DType::Float32, {2, 3}), t.input(DType::Float32, {4})});
  REQUIRE_THROWS_WITH(t.infer(), "node (Mul) writing 'out0': input shapes [2,3], [4] do not "
                                 "broadcast together");
}

TEST_CASE("an unnamed node whose first output is omitted is named by the next", "[shape_rules]") {
  NodeUnderTest t;
  t.node_name = "";
  Node& n =
      t.node(OpKind::Dropout,
             {t.input(DType::Float32, {3}), t.floats({}, {0.5}), t.ints({}, {1}, DType::Bool)}, 2);
  n.outputs[0] = kNoTensor;
  REQUIRE_THROWS_WITH(t.infer(), Catch::StartsWith("node (Dropout) writing 'out1': "
                                                   "training_mode=true is unsupported"));
}

TEST_CASE("an overflow in a rule's size arithmetic names the node", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Tile, {t.input(DType::Float32, {1 << 20}), t.ints1({int64_t{1} << 50})});
  REQUIRE_THROWS_WITH(t.infer(), "node 'node_under_test' (Tile): tiled size overflows 64-bit "
                                 "arithmetic");
}

TEST_CASE("format_user_error names a node by name, else by its first output", "[errors]") {
  CHECK(format_user_error({"m.onnx", "add0", "Add", "y"}, "bad") ==
        "m.onnx: node 'add0' (Add): bad");
  CHECK(format_user_error({"m.onnx", "", "Add", "y"}, "bad") ==
        "m.onnx: node (Add) writing 'y': bad");
  CHECK(format_user_error({"m.onnx", "", "Add"}, "bad") == "m.onnx: node (Add): bad");
  CHECK(format_user_error({"m.onnx", "", ""}, "bad") == "m.onnx: bad");
  // Model strings stay on one printable line.
  CHECK(format_user_error({"", "", "Add", "a\nb"}, "bad") == "node (Add) writing 'a b': bad");
}
