// Hand-built graphs on which the planners made plans the emitter refused (the ilp planner's
// Global group writing full-shape and per-column outputs, Regional groups reducing over an axis
// of length 1, an Independent part reducing leading axes): each is planned by every planner
// (none, greedy, ilp) for the host target, every plan must emit, and every fused plan's library
// must compute what the per-op plan's computes on the same random inputs (plan_agreement.h).
#include <catch2/catch.hpp>

#include "plan_agreement.h"

using namespace stitch;
using namespace stitch::test;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// A LayerNorm over the channels of x[1,C,W], written out as reductions over axis 1 the way a
// tf2onnx or jax2tf export of a channels-axis norm looks; with batch 1 the reductions are
// column reductions (over the leading non-unit axis). `std_output` makes the per-column
// Sqrt(var + eps) a graph output too.
Graph channel_layer_norm(int64_t channels, int64_t width, bool std_output) {
  ModelBuilder m(13);
  m.input("x", kFloat, {1, channels, width});
  m.input("gamma", kFloat, {channels, 1}).input("beta", kFloat, {channels, 1});
  m.output("y");
  if (std_output) m.output("std");
  m.initializer_f32("eps", {}, {1e-5f});
  test::set_attr_ints(m.node("ReduceMean", {"x"}, {"mean"}), "axes", {1});
  m.node("Sub", {"x", "mean"}, {"d"});
  m.node("Mul", {"d", "d"}, {"d2"});
  test::set_attr_ints(m.node("ReduceMean", {"d2"}, {"var"}), "axes", {1});
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"std"});
  m.node("Div", {"d", "std"}, {"n"});
  m.node("Mul", {"n", "gamma"}, {"ng"});
  m.node("Add", {"ng", "beta"}, {"y"});
  return load_graph(m);
}

// Softmax over an axis of length 1 (every value 1) and a ReduceMean of it over that axis.
Graph softmax_over_unit_axis(const std::vector<int64_t>& shape, int64_t axis) {
  ModelBuilder m(13);
  m.input("x", kFloat, shape).output("y").output("mean");
  test::set_attr_int(m.node("Softmax", {"x"}, {"y"}), "axis", axis);
  test::set_attr_ints(m.node("ReduceMean", {"y"}, {"mean"}), "axes", {axis});
  return load_graph(m);
}

// Two unrelated branches: y = exp(-a) over a[10,10], and s = ReduceSum(x, axes) with keepdims 0.
Graph pointwise_beside_reduction(const std::vector<int64_t>& x_shape,
                                 const std::vector<int64_t>& axes) {
  ModelBuilder m(11);
  m.input("a", kFloat, {10, 10}).input("x", kFloat, x_shape);
  m.output("y").output("s");
  m.node("Neg", {"a"}, {"na"});
  m.node("Exp", {"na"}, {"y"});
  auto& sum = m.node("ReduceSum", {"x"}, {"s"});
  test::set_attr_ints(sum, "axes", axes);
  test::set_attr_int(sum, "keepdims", 0);
  return load_graph(m);
}

} // namespace

TEST_CASE("plan regressions: channel LayerNorm of batch 1 (reductions over the middle axis)",
          "[planner][regression]") {
  // Proves: a norm over axis 1 of [1,64,48] — the ilp planner's Global groups of a column
  // reduction and its consumers — emits and matches the per-op plan under every planner, both
  // when it writes only the full-shape result and when its second group also writes the
  // per-column std.
  check_planners_agree(channel_layer_norm(64, 48, false), 101, "channel LayerNorm");
  check_planners_agree(channel_layer_norm(64, 48, true), 102, "channel LayerNorm with std");
}

TEST_CASE("plan regressions: Softmax and ReduceMean over an axis of length 1",
          "[planner][regression]") {
  // Proves: a row op whose row has one element (Softmax over it, then a ReduceMean of the
  // constant result over it), which the ilp planner puts in one Regional group, emits and
  // matches the per-op plan; with the length-1 axis last ([6,1]) and in the middle ([4,1,5],
  // [2,1,3,4]).
  check_planners_agree(softmax_over_unit_axis({6, 1}, -1), 103, "softmax over [6,1] axis -1");
  check_planners_agree(softmax_over_unit_axis({4, 1, 5}, 1), 104, "softmax over [4,1,5] axis 1");
  check_planners_agree(softmax_over_unit_axis({2, 1, 3, 4}, 1), 105,
                       "softmax over [2,1,3,4] axis 1");
}

TEST_CASE("plan regressions: Independent group beside a reduction of leading axes",
          "[planner][regression]") {
  // Proves: a pointwise chain beside an unrelated reduction over leading axes (axis 0 of
  // [8,16] and of [8,16,2], axes 0 and 1 of [4,6,8]), which the ilp planner packs into one
  // Independent group, emits and matches the per-op plan.
  check_planners_agree(pointwise_beside_reduction({8, 16}, {0}), 106, "[8,16] axis 0 beside exp");
  check_planners_agree(pointwise_beside_reduction({8, 16, 2}, {0}), 107,
                       "[8,16,2] axis 0 beside exp");
  check_planners_agree(pointwise_beside_reduction({4, 6, 8}, {0, 1}), 108,
                       "[4,6,8] axes 0, 1 beside exp");
}
