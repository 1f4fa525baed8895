// Shape rule tests for the Gemm, Conv and Opaque categories (shape_rules_compute.cpp): MatMul,
// Gemm, Einsum, Conv, ConvTranspose, the pools and TopK.
#include <catch2/catch.hpp>

#include "graph_test_util.h"

using namespace stitch;
using namespace stitch::test;

TEST_CASE("MatMul drops the axes added to 1-D operands", "[shape_rules]") {
  NodeUnderTest vm;
  vm.node(OpKind::MatMul, {vm.input(DType::Float32, {3}), vm.input(DType::Float32, {2, 3, 4})});
  vm.infer();
  CHECK(vm.out().shape == Shape{2, 4});
  NodeUnderTest mv;
  mv.node(OpKind::MatMul, {mv.input(DType::Float32, {5, 3}), mv.input(DType::Float32, {3})});
  mv.infer();
  CHECK(mv.out().shape == Shape{5});
  NodeUnderTest vv;
  vv.node(OpKind::MatMul, {vv.input(DType::Float32, {3}), vv.input(DType::Float32, {3})});
  vv.infer();
  CHECK(vv.out().shape.empty());
}

TEST_CASE("MatMul broadcasts batch dims and refuses mismatched inner dims", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::MatMul,
         {t.input(DType::Float32, {2, 1, 4, 3}), t.input(DType::Float32, {5, 3, 6})});
  t.infer();
  CHECK(t.out().shape == Shape{2, 5, 4, 6});
  NodeUnderTest bad;
  bad.node(OpKind::MatMul, {bad.input(DType::Float32, {4, 3}), bad.input(DType::Float32, {4, 3})});
  REQUIRE_REFUSED(bad, "inner dimensions");
}

TEST_CASE("Gemm honours transA and transB and checks C", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::Gemm, {t.input(DType::Float32, {3, 4}), t.input(DType::Float32, {5, 3}),
                                  t.input(DType::Float32, {5})});
  set(n, "transA", int64_t{1});
  set(n, "transB", int64_t{1});
  t.infer();
  CHECK(t.out().shape == Shape{4, 5});
  NodeUnderTest bad;
  bad.node(OpKind::Gemm, {bad.input(DType::Float32, {3, 4}), bad.input(DType::Float32, {4, 5}),
                          bad.input(DType::Float32, {3, 1, 5})});
  REQUIRE_REFUSED(bad, "C of shape");
}

namespace {
Shape einsum_shape(const std::string& equation, std::vector<Shape> shapes) {
  NodeUnderTest t;
  std::vector<TensorId> inputs;
  for (Shape& s : shapes)
    inputs.push_back(t.input(DType::Float32, s));
  set(t.node(OpKind::Einsum, inputs), "equation", equation);
  t.infer();
  return t.out().shape;
}
} // namespace

TEST_CASE("Einsum infers explicit, implicit and ellipsis outputs", "[shape_rules]") {
  CHECK(einsum_shape("ij,jk->ik", {{2, 3}, {3, 4}}) == Shape{2, 4});
  CHECK(einsum_shape("ij,jk", {{2, 3}, {3, 4}}) == Shape{2, 4});
  CHECK(einsum_shape("ba,ab", {{2, 3}, {3, 2}}).empty());
  CHECK(einsum_shape("...ii ->...i", {{3, 5, 5}}) == Shape{3, 5});
  CHECK(einsum_shape("ij,...", {{2, 3}, {4}}) == Shape{4, 2, 3});
  CHECK(einsum_shape("...i,...i->...", {{2, 1, 3}, {4, 3}}) == Shape{2, 4});
  CHECK(einsum_shape("bij,bjk->bik", {{7, 2, 3}, {7, 3, 4}}) == Shape{7, 2, 4});
}

TEST_CASE("Einsum refuses malformed equations", "[shape_rules]") {
  auto refused = [](const std::string& eq, std::vector<Shape> shapes, const char* fragment) {
    NodeUnderTest t;
    std::vector<TensorId> inputs;
    for (Shape& s : shapes)
      inputs.push_back(t.input(DType::Float32, s));
    set(t.node(OpKind::Einsum, inputs), "equation", eq);
    REQUIRE_REFUSED(t, fragment);
  };
  refused("ij,jk->iz", {{2, 3}, {3, 4}}, "output label 'z'");
  refused("i.j", {{2, 3}}, "not one \"...\"");
  refused("ij", {{2, 3}, {3}}, "1 operand terms for 2 inputs");
  refused("ij,jk", {{2, 3}, {4, 5}}, "label 'j'");
  refused("ijk", {{2, 3}}, "does not fit");
  refused("i->i->i", {{2}}, "more than one");
  refused("i#", {{2, 3}}, "invalid character");
  refused("...i->i", {{2, 3}}, "drops the");
}

TEST_CASE("Conv applies pads, strides and dilations", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::Conv,
                   {t.input(DType::Float32, {1, 4, 10, 9}), t.input(DType::Float32, {8, 2, 3, 3})});
  set(n, "group", int64_t{2});
  set(n, "pads", Ints{1, 0, 1, 0});
  set(n, "strides", Ints{2, 1});
  set(n, "dilations", Ints{1, 2});
  t.infer();
  // H: (10 + 2 - 3) / 2 + 1 = 5; W: (9 - 5) / 1 + 1 = 5.
  CHECK(t.out().shape == Shape{1, 8, 5, 5});
}

TEST_CASE("Conv with SAME_UPPER gives ceil(in / stride)", "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::Conv,
                   {t.input(DType::Float32, {1, 1, 7, 7}), t.input(DType::Float32, {1, 1, 3, 3})});
  set(n, "auto_pad", std::string("SAME_UPPER"));
  set(n, "strides", Ints{2, 2});
  t.infer();
  CHECK(t.out().shape == Shape{1, 1, 4, 4});
}

TEST_CASE("Conv refuses channels that do not match W and group", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Conv,
         {t.input(DType::Float32, {1, 3, 5, 5}), t.input(DType::Float32, {4, 2, 3, 3})});
  REQUIRE_REFUSED(t, "channels");
}

TEST_CASE("Conv refuses a kernel larger than the padded input", "[shape_rules]") {
  NodeUnderTest t;
  t.node(OpKind::Conv,
         {t.input(DType::Float32, {1, 1, 2, 2}), t.input(DType::Float32, {1, 1, 3, 3})});
  REQUIRE_REFUSED(t, "smaller than the kernel");
}

TEST_CASE("ConvTranspose grows by stride and honours output_padding and output_shape",
          "[shape_rules]") {
  NodeUnderTest t;
  Node& n = t.node(OpKind::ConvTranspose,
                   {t.input(DType::Float32, {1, 1, 3, 3}), t.input(DType::Float32, {1, 2, 3, 3})});
  set(n, "strides", Ints{3, 2});
  set(n, "output_padding", Ints{1, 1});
  t.infer();
  // 3 * (3 - 1) + 1 + 3 = 10; 2 * (3 - 1) + 1 + 3 = 8.
  CHECK(t.out().shape == Shape{1, 2, 10, 8});
  NodeUnderTest s;
  Node& m = s.node(OpKind::ConvTranspose,
                   {s.input(DType::Float32, {1, 1, 3, 3}), s.input(DType::Float32, {1, 2, 3, 3})});
  set(m, "strides", Ints{3, 2});
  set(m, "output_shape", Ints{10, 8});
  s.infer();
  CHECK(s.out().shape == Shape{1, 2, 10, 8});
}

TEST_CASE("MaxPool ceil_mode drops a last window starting in the end padding", "[shape_rules]") {
  // ONNX test maxpool_2d_ceil_output_size_reduce_by_one.
  NodeUnderTest t;
  Node& n = t.node(OpKind::MaxPool, {t.input(DType::Float32, {1, 1, 2, 2})}, 2);
  set(n, "kernel_shape", Ints{1, 1});
  set(n, "strides", Ints{2, 2});
  set(n, "ceil_mode", int64_t{1});
  t.infer();
  CHECK(t.out(0).shape == Shape{1, 1, 1, 1});
  CHECK(t.out(1).dtype == DType::Int64);
}

TEST_CASE("AveragePool ceil_mode counts a partial window that starts inside", "[shape_rules]") {
  // ONNX tests averagepool_2d_ceil and averagepool_2d_ceil_last_window_starts_on_pad.
  NodeUnderTest t;
  Node& n = t.node(OpKind::AveragePool, {t.input(DType::Float32, {1, 1, 4, 4})});
  set(n, "kernel_shape", Ints{3, 3});
  set(n, "strides", Ints{2, 2});
  set(n, "ceil_mode", int64_t{1});
  t.infer();
  CHECK(t.out().shape == Shape{1, 1, 2, 2});
  NodeUnderTest p;
  Node& m = p.node(OpKind::AveragePool, {p.input(DType::Float32, {1, 3, 2, 2})});
  set(m, "kernel_shape", Ints{3, 3});
  set(m, "strides", Ints{3, 3});
  set(m, "pads", Ints{1, 1, 1, 1});
  set(m, "ceil_mode", int64_t{1});
  p.infer();
  CHECK(p.out().shape == Shape{1, 3, 1, 1});
}

TEST_CASE("TopK outputs k values and int64 indices and refuses k past the axis", "[shape_rules]") {
  NodeUnderTest t;
  set(t.node(OpKind::TopK, {t.input(DType::Float32, {3, 8}), t.ints1({5})}, 2), "axis", int64_t{1});
  t.infer();
  CHECK(t.out(0).shape == Shape{3, 5});
  CHECK(t.out(1).dtype == DType::Int64);
  NodeUnderTest bad;
  bad.node(OpKind::TopK, {bad.input(DType::Float32, {3, 8}), bad.ints1({9})}, 2);
  REQUIRE_REFUSED(bad, "out of range");
}
