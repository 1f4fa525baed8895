// Numerics guards, end to end on the host target with the default planner: inputs chosen to
// break a naive kernel. Softmax must subtract the row maximum before exp, LayerNorm must compute
// the variance from deviations (not E[x^2] - E[x]^2, which cancels to garbage at 40000), and
// reductions must give bitwise the same result on every run.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "test_emit_fused_support.h"

using namespace stitch;
using namespace stitch::test;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// The plan stitchc builds by default for the host target (planner ilp).
FusionPlan default_plan(const Graph& g) {
  PlannerOptions options;
  options.device.cooperative_sm_count = kHostTargetMultiprocessors;
  return plan_fusion(g, options);
}

std::vector<float> run_default(const Graph& g, const std::vector<float>& input,
                               const std::string& tag) {
  std::vector<std::vector<float>> outputs = run_on_host(g, default_plan(g), {input}, tag);
  REQUIRE(outputs.size() == 1);
  return outputs[0];
}

} // namespace

// Proves: softmax of logits near 8000 (exp overflows float32 above ~88) has no NaN or inf,
// each row sums to 1, and every value matches a double-precision reference.
TEST_CASE("numerics: softmax of logits near 8000 is finite and exact", "[numerics][host]") {
  constexpr int64_t kRows = 8, kCols = 300;
  ModelBuilder m;
  m.input("x", kFloat, {kRows, kCols}).output("y");
  test::set_attr_int(m.node("Softmax", {"x"}, {"y"}), "axis", -1);
  Graph g = load_graph(m);
  std::vector<float> x = random_values(kRows * kCols, 41, 0.0f, 6.0f);
  for (float& v : x)
    v += 8000.0f;
  std::vector<float> y = run_default(g, x, "softmax-8000");
  for (int64_t r = 0; r < kRows; ++r) {
    double max = -INFINITY, sum = 0, total = 0;
    for (int64_t c = 0; c < kCols; ++c)
      max = std::max(max, double(x[r * kCols + c]));
    for (int64_t c = 0; c < kCols; ++c)
      sum += std::exp(double(x[r * kCols + c]) - max);
    for (int64_t c = 0; c < kCols; ++c) {
      const float got = y[r * kCols + c];
      const double want = std::exp(double(x[r * kCols + c]) - max) / sum;
      INFO("row " << r << " col " << c);
      REQUIRE(std::isfinite(got));
      REQUIRE(std::abs(got - want) <= 1e-6 + 1e-4 * want);
      total += got;
    }
    CHECK(std::abs(total - 1.0) < 1e-5);
  }
}

// Proves: LayerNormalization of rows like [40000, 40001, 40002, 40003] is finite and within
// 1e-3 of the exact (x - mean) / sqrt(var + eps) = [-1.3416, -0.4472, 0.4472, 1.3416]; in
// float32, E[x^2] - E[x]^2 would be off by hundreds here.
TEST_CASE("numerics: LayerNorm of [40000, 40001, 40002, 40003] is accurate", "[numerics][host]") {
  constexpr int64_t kRows = 6, kCols = 4;
  ModelBuilder m;
  m.input("x", kFloat, {kRows, kCols}).output("y");
  m.initializer_f32("scale", {kCols}, {1.0f, 1.0f, 1.0f, 1.0f});
  m.initializer_f32("bias", {kCols}, {0.0f, 0.0f, 0.0f, 0.0f});
  test::set_attr_int(m.node("LayerNormalization", {"x", "scale", "bias"}, {"y"}), "axis", -1);
  Graph g = load_graph(m);
  std::vector<float> x(kRows * kCols);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c)
      x[r * kCols + c] = 40000.0f + 1000.0f * float(r) + float(c);
  std::vector<float> y = run_default(g, x, "layernorm-40000");
  const double var = 1.25, eps = 1e-5; // of [0, 1, 2, 3]
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) {
      const double want = (double(c) - 1.5) / std::sqrt(var + eps);
      INFO("row " << r << " col " << c << ": " << y[r * kCols + c] << " vs " << want);
      REQUIRE(std::isfinite(y[r * kCols + c]));
      REQUIRE(std::abs(y[r * kCols + c] - want) < 1e-3);
    }
}

// Proves: a long row reduction (a row per block, partials combined in a fixed order) and a
// column reduction with a broadcast consumer (the planner fuses them in the Global scheme:
// partials through global scratch and a grid barrier) give bitwise the same results on every
// run, and the sums are right.
TEST_CASE("numerics: reductions are bitwise deterministic across runs", "[numerics][host]") {
  struct Case {
    const char* tag;
    std::vector<int64_t> dims;
    int64_t axis;
  };
  for (const Case& c : {Case{"row", {4, 40000}, 1}, Case{"column", {40000, 4}, 0}}) {
    INFO(c.tag << " reduction");
    ModelBuilder m(11); // axes as an attribute
    m.input("x", kFloat, c.dims).output("sum").output("centered");
    onnx::NodeProto& sum = m.node("ReduceSum", {"x"}, {"sum"});
    test::set_attr_ints(sum, "axes", {c.axis});
    m.node("Sub", {"x", "sum"}, {"centered"});
    Graph g = load_graph(m);
    const std::vector<float> x = random_values(size_t(c.dims[0] * c.dims[1]), 43);
    const std::string tag = std::string("determinism-") + c.tag;
    const FusionPlan plan = default_plan(g);
    // The schemes under test: the row sum and its consumer in one block-per-row Regional
    // group, the column sum and its consumer in one Global group.
    const FusionGroup& fused = group_holding(plan, node_writing(g, "sum"));
    CHECK(fused.nodes.size() == 2);
    if (c.axis == 1) {
      CHECK(fused.scheme == StitchScheme::Regional);
      CHECK(fused.mapping == ThreadMapping::BlockPerRow);
    } else {
      CHECK(fused.scheme == StitchScheme::Global);
      CHECK(fused.launch.cooperative);
    }
    const std::vector<std::vector<float>> first = run_on_host(g, plan, {x}, tag);
    REQUIRE(first.size() == 2);
    for (int run = 1; run < 3; ++run) {
      const std::vector<std::vector<float>> again = run_on_host(g, plan, {x}, tag);
      for (size_t o = 0; o < first.size(); ++o) {
        REQUIRE(again[o].size() == first[o].size());
        CHECK(std::memcmp(again[o].data(), first[o].data(), first[o].size() * sizeof(float)) == 0);
      }
    }
    const int64_t kept = c.dims[1 - c.axis];
    for (int64_t k = 0; k < kept; ++k) {
      double want = 0, magnitude = 0;
      for (int64_t i = 0; i < c.dims[c.axis]; ++i) {
        const float v = c.axis == 1 ? x[k * c.dims[1] + i] : x[i * c.dims[1] + k];
        want += v;
        magnitude += std::abs(v);
      }
      CHECK(std::abs(first[0][k] - want) <= 1e-5 * magnitude);
    }
  }
}
