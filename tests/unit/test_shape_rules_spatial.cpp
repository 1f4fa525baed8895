// Shape rule tests for the spatial Movement ops (shape_rules_spatial.cpp): DepthToSpace,
// SpaceToDepth and Resize.
#include <catch2/catch.hpp>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("DepthToSpace and SpaceToDepth move channels into blocks and back", "[shape_rules]") {
  NodeUnderTest d;
  set(d.node(OpKind::DepthToSpace, {d.input(DType::Float32, {1, 8, 2, 3})}), "blocksize",
      int64_t{2});
  d.infer();
  CHECK(d.out().shape == Shape{1, 2, 4, 6});
  NodeUnderTest s;
  set(s.node(OpKind::SpaceToDepth, {s.input(DType::Float32, {1, 2, 4, 5})}), "blocksize",
      int64_t{2});
  REQUIRE_REFUSED(s, "divisible by blocksize");
}

TEST_CASE("Resize with scales floors in * scale", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::Resize,
         {t.input(DType::Float32, {1, 3, 5, 7}), kNoTensor, t.floats({4}, {1.0, 1.0, 1.5, 0.6})});
  t.infer();
  CHECK(t.out().shape == Shape{1, 3, 7, 4});
}

TEST_CASE("Resize with sizes and not_larger keeps the aspect ratio", "[shape_rules]") {
  // The ONNX test resize_downsample_sizes_nearest_not_larger: [1,1,2,4] to at most [1,3].
  NodeUnderTest t;
  t.opset = 19;
  Node& n = t.node(OpKind::Resize,
                   {t.input(DType::Float32, {1, 1, 2, 4}), kNoTensor, kNoTensor, t.ints1({1, 3})});
  set(n, "axes", Ints{2, 3});
  set(n, "keep_aspect_ratio_policy", std::string("not_larger"));
  t.infer();
  CHECK(t.out().shape == Shape{1, 1, 1, 2});
}

TEST_CASE("Resize refuses both scales and sizes", "[shape_rules]") {
  NodeUnderTest t;
  t.opset = 13;
  t.node(OpKind::Resize, {t.input(DType::Float32, {1, 1, 2, 2}), kNoTensor,
                          t.floats({4}, {1, 1, 2, 2}), t.ints1({1, 1, 4, 4})});
  REQUIRE_REFUSED(t, "exactly one of scales and sizes");
}
