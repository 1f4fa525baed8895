// GEMM-chain groups (legality_chain.cpp, kernel_gemm_chain.cpp): feed-forward blocks and gated
// MLPs in float16 and bfloat16, built by hand, planned by every planner for the host target; the
// ilp plan must hold exactly one "gemm_chain" group (or none where a chain cannot hold it), and
// every fused plan must compute what the per-op plan computes on random inputs
// (plan_agreement.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "plan_agreement.h"
#include "planner/cost_model.h"

using namespace stitch;
using namespace stitch::test;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

struct ChainModel {
  int64_t batch = 2, seq = 5, width = 32, ffn = 96;
  enum class Form {
    GeluFfn,     // MatMul, Add bias, Gelu, MatMul, Add bias, Add residual
    Gated,       // SiLU(x Wg) * (x Wu), then the down MatMul and the residual
    GatedMerged, // the same from one MatMul of [Wg | Wu] and two Slices of its columns
    GemmFfn,     // 2-D: Gemm(transB, bias), Gelu, Gemm(transB, bias)
    GemmGated,   // 2-D: one Gemm(transB, bias) of [Wg | Wu], its halves, SiLU gate, Gemm
  } form = Form::GeluFfn;
  bool relu_input = false; // X is Relu of the input (a node a square block's group could take)
  int dtype = onnx::TensorProto::FLOAT16;
  bool hidden_output = false; // the hidden activations are a graph output too
};

Graph chain_graph(const ChainModel& c) {
  ModelBuilder m(20);
  const bool two_d = c.form == ChainModel::Form::GemmFfn || c.form == ChainModel::Form::GemmGated;
  const std::vector<int64_t> x_dims = two_d ? std::vector<int64_t>{c.batch * c.seq, c.width}
                                            : std::vector<int64_t>{c.batch, c.seq, c.width};
  m.input("x_in", kFloat, x_dims);
  m.output("y");
  auto typed = [&](const std::string& x) {
    set_attr_int(m.node("Cast", {x}, {x + "_t"}), "to", c.dtype);
    return x + "_t";
  };
  auto weight = [&](const std::string& name, std::vector<int64_t> dims) {
    m.input(name, kFloat, dims);
    return typed(name);
  };
  std::string x = typed("x_in");
  if (c.relu_input) {
    m.node("Relu", {x}, {"x_relu"});
    x = "x_relu";
  }
  std::string hidden;
  switch (c.form) {
  case ChainModel::Form::GeluFfn:
    m.node("MatMul", {x, weight("w1", {c.width, c.ffn})}, {"p"});
    m.node("Add", {"p", weight("b1", {c.ffn})}, {"pb"});
    m.node("Gelu", {"pb"}, {"h"});
    hidden = "h";
    break;
  case ChainModel::Form::Gated:
    m.node("MatMul", {x, weight("wg", {c.width, c.ffn})}, {"g"});
    m.node("MatMul", {x, weight("wu", {c.width, c.ffn})}, {"u"});
    m.node("Sigmoid", {"g"}, {"gs"});
    m.node("Mul", {"g", "gs"}, {"silu"});
    m.node("Mul", {"silu", "u"}, {"h"});
    hidden = "h";
    break;
  case ChainModel::Form::GatedMerged:
    m.node("MatMul", {x, weight("wgu", {c.width, 2 * c.ffn})}, {"gu"});
    m.initializer_i64("s0", {1}, {0});
    m.initializer_i64("s1", {1}, {c.ffn});
    m.initializer_i64("s2", {1}, {2 * c.ffn});
    m.initializer_i64("axis", {1}, {-1});
    m.node("Slice", {"gu", "s0", "s1", "axis"}, {"g"});
    m.node("Slice", {"gu", "s1", "s2", "axis"}, {"u"});
    m.node("Sigmoid", {"g"}, {"gs"});
    m.node("Mul", {"g", "gs"}, {"silu"});
    m.node("Mul", {"silu", "u"}, {"h"});
    hidden = "h";
    break;
  case ChainModel::Form::GemmGated:
    set_attr_int(m.node("Gemm",
                        {x, weight("wgu", {2 * c.ffn, c.width}), weight("bgu", {2 * c.ffn})},
                        {"gu"}),
                 "transB", 1);
    m.initializer_i64("s0", {1}, {0});
    m.initializer_i64("s1", {1}, {c.ffn});
    m.initializer_i64("s2", {1}, {2 * c.ffn});
    m.initializer_i64("axis", {1}, {-1});
    m.node("Slice", {"gu", "s0", "s1", "axis"}, {"g"});
    m.node("Slice", {"gu", "s1", "s2", "axis"}, {"u"});
    m.node("Sigmoid", {"g"}, {"gs"});
    m.node("Mul", {"g", "gs"}, {"silu"});
    m.node("Mul", {"silu", "u"}, {"h"});
    hidden = "h";
    break;
  case ChainModel::Form::GemmFfn:
    set_attr_int(m.node("Gemm", {x, weight("w1", {c.ffn, c.width}), weight("b1", {c.ffn})}, {"p"}),
                 "transB", 1);
    m.node("Gelu", {"p"}, {"h"});
    hidden = "h";
    break;
  }
  if (c.hidden_output) {
    m.output("h_out");
    set_attr_int(m.node("Cast", {hidden}, {"h_out"}), "to", kFloat);
  }
  if (two_d) {
    set_attr_int(
        m.node("Gemm", {hidden, weight("w2", {c.width, c.ffn}), weight("b2", {c.width})}, {"o"}),
        "transB", 1);
  } else {
    m.node("MatMul", {hidden, weight("w2", {c.ffn, c.width})}, {"o"});
    if (c.form == ChainModel::Form::GeluFfn) {
      m.node("Add", {"o", weight("b2", {c.width})}, {"ob"});
      m.node("Add", {"ob", x}, {"r"});
    } else {
      m.node("Add", {"o", x}, {"r"});
    }
  }
  set_attr_int(m.node("Cast", {two_d ? "o" : "r"}, {"y"}), "to", kFloat);
  return load_graph(m);
}

int chain_groups(const FusionPlan& plan) {
  int count = 0;
  for (const FusionGroup& group : plan.groups)
    count += group.kind == GroupKind::GemmChain;
  return count;
}

// Each chain's unfused plan covers exactly the chain's nodes, holds no chain, and numbers its
// groups after the plan's.
void check_fallbacks(const FusionPlan& plan) {
  std::set<int> ids;
  for (const FusionGroup& group : plan.groups)
    ids.insert(group.id);
  size_t next = 0;
  for (const FusionGroup& group : plan.groups) {
    if (group.kind != GroupKind::GemmChain) continue;
    REQUIRE(next < plan.fallbacks.size());
    const ChainFallback& fallback = plan.fallbacks[next++];
    CHECK(fallback.chain_group == group.id);
    std::vector<int32_t> covered;
    for (const FusionGroup& part : fallback.groups) {
      CHECK(part.kind != GroupKind::GemmChain);
      CHECK(part.id >= static_cast<int>(plan.groups.size()));
      CHECK(ids.insert(part.id).second);
      covered.insert(covered.end(), part.nodes.begin(), part.nodes.end());
    }
    std::sort(covered.begin(), covered.end());
    CHECK(covered == group.nodes);
    CHECK(fallback.groups.size() >= 2); // two products at least: two library calls
  }
  CHECK(next == plan.fallbacks.size());
}

// The ilp plan has `expected` GEMM-chain groups and computes what the per-op plan computes on
// random inputs, within the element type's precision: the chain adds its products in another
// order, so a stored product or hidden value may land one unit in the last place away. (The
// other planners' plans put a bias into the library call's epilogue, which skips the product's
// rounding before the add; the attention and precision tests cover those.) With `unfused_too`,
// the same library also runs on a device without clusters, where each chain must run its
// unfused plan (a cluster launch fails there) in the extra memory that plan needs.
void check_chain(const ChainModel& c, unsigned seed, int expected, bool unfused_too = false) {
  const Graph g = chain_graph(c);
  const FusionPlan ilp = plan_for_host(g, "ilp");
  INFO("ilp plan:\n" << describe_plan(g, ilp));
  CHECK(chain_groups(ilp) == expected);
  for (const FusionGroup& group : ilp.groups)
    if (const auto* chain = std::get_if<GemmChainSpec>(&group.spec)) {
      CHECK(group_kind_name(group.kind) == "gemm_chain");
      CHECK(spec_name(group.spec) == "gemm_chain");
      CHECK(chain->rows == c.batch * c.seq);
      CHECK(chain->hidden_dim == c.ffn);
      CHECK(chain->gate.has_value() ==
            (c.form == ChainModel::Form::Gated || c.form == ChainModel::Form::GatedMerged ||
             c.form == ChainModel::Form::GemmGated));
      CHECK(chain->shared_bytes <= host_target_device().max_shared_per_block);
      CHECK((chain->cluster_blocks - 1) * chain->slice < chain->hidden_dim); // no idle block
    }
  check_fallbacks(ilp);
  const PlanTolerance tolerance =
      c.dtype == onnx::TensorProto::FLOAT16    ? PlanTolerance{0x1p-8, 0x1p-8}
      : c.dtype == onnx::TensorProto::BFLOAT16 ? PlanTolerance{0x1p-5, 0x1p-5}
                                               : PlanTolerance{};
  std::vector<std::vector<float>> inputs;
  for (TensorId t : g.inputs)
    inputs.push_back(random_values(static_cast<size_t>(g.tensor(t).elements()), seed++));
  const std::optional<FusionPlan> emitting = check_emits(g, ilp);
  REQUIRE(emitting);
  const std::vector<std::vector<float>> reference =
      run_on_host(g, plan_for_host(g, "none"), inputs, "chain-per-op");
  uint64_t fused_bytes = 0, unfused_bytes = 0;
  check_same_outputs(g, reference, run_on_host(g, *emitting, inputs, "chain-ilp", &fused_bytes),
                     tolerance);
  if (!unfused_too) return;
  // The unfused plan is greedy fusion of the chain's nodes: what the greedy plan computes.
  const std::vector<std::vector<float>> greedy =
      run_on_host(g, plan_for_host(g, "greedy"), inputs, "chain-greedy");
  const ScopedEnv before_sm90("STITCH_HOST_CLUSTER_LAUNCH", "0"); // no thread-block clusters
  INFO("on a device without clusters");
  check_same_outputs(g, greedy, run_on_host(g, *emitting, inputs, "chain-unfused", &unfused_bytes),
                     tolerance);
  // The unfused plan's intermediates: allocated only where a chain runs unfused.
  const int64_t fallback_bytes = plan_memory(g, *emitting).fallback_bytes;
  CHECK(fallback_bytes >= int64_t{2} * c.batch * c.seq * c.ffn);
  CHECK(unfused_bytes == fused_bytes + (static_cast<uint64_t>(fallback_bytes) + 255) / 256 * 256);
}

} // namespace

TEST_CASE("gemm chain: feed-forward blocks and gated MLPs plan as one group equal to the per-op "
          "plan",
          "[planner][chain]") {
  // Proves: the GELU feed-forward block (bias, GELU, bias, residual), the SiLU-gated MLP of two
  // products of one X and of one merged product taken apart by Slices, and the 2-D Gemm form
  // (transB, C as the bias) each plan as one gemm_chain group in float16 and bfloat16, at sizes
  // no multiple of the tiles, and compute what the per-op plan computes; each chain carries an
  // unfused plan of its nodes, which a device without clusters runs (three of the forms run
  // there too), in a buffer of its own allocated only there.
  ChainModel c;
  SECTION("GELU feed-forward, float16") { check_chain(c, 11, 1, true); }
  SECTION("GELU feed-forward, bfloat16, a hidden dim of 200") {
    c.dtype = onnx::TensorProto::BFLOAT16;
    c.ffn = 200;
    check_chain(c, 12, 1);
  }
  SECTION("gated MLP, two products of one X") {
    c.form = ChainModel::Form::Gated;
    check_chain(c, 13, 1);
  }
  SECTION("gated MLP, one merged product and its column halves") {
    c.form = ChainModel::Form::GatedMerged;
    c.ffn = 136;
    check_chain(c, 14, 1, true);
  }
  SECTION("Gemm with transB and a bias") {
    c.form = ChainModel::Form::GemmFfn;
    check_chain(c, 15, 1);
  }
  SECTION("gated MLP, one merged Gemm with a bias, halves at an odd offset") {
    c.form = ChainModel::Form::GemmGated;
    c.ffn = 100;
    check_chain(c, 18, 1, true);
  }
  SECTION("a square block whose X a Relu computes") {
    c.ffn = c.width;
    c.relu_input = true;
    check_chain(c, 19, 1);
  }
  SECTION("one row (a decode step), gated") {
    c.form = ChainModel::Form::GatedMerged;
    c.batch = 1, c.seq = 1;
    check_chain(c, 16, 1);
  }
  SECTION("one row and a hidden dim of 1024: a cluster of 16, the non-portable size") {
    c.batch = 1, c.seq = 1, c.ffn = 1024;
    const Graph g = chain_graph(c);
    const FusionPlan ilp = plan_for_host(g, "ilp");
    REQUIRE(chain_groups(ilp) == 1);
    for (const FusionGroup& group : ilp.groups)
      if (const auto* chain = std::get_if<GemmChainSpec>(&group.spec)) {
        CHECK(chain->cluster_blocks == 16); // more blocks for the one row tile
        CHECK(chain->warps_m == 1);         // 16 rows: the fewest a tile has
      }
    check_chain(c, 20, 1);
  }
  SECTION("70 rows over several row tiles") {
    c.batch = 2, c.seq = 35;
    check_chain(c, 17, 1);
  }
}

TEST_CASE("gemm chain: no chain where its kernel cannot hold it", "[planner][chain]") {
  // Proves: hidden values read outside the chain, float32 products, and a library built only
  // for architectures before sm_90 (no thread-block clusters) keep the products apart; one built
  // for sm_90 too gets the chain and its unfused plan.
  ChainModel c;
  SECTION("the hidden values are a graph output") {
    c.hidden_output = true;
    check_chain(c, 21, 0);
  }
  SECTION("float32") {
    c.dtype = kFloat;
    check_chain(c, 22, 0);
  }
  SECTION("built for sm_80 alone, or for sm_80 and sm_90 (a chain with its unfused plan)") {
    const Graph g = chain_graph(c);
    PlannerOptions options;
    options.planner = "ilp";
    options.device = host_target_device();
    options.device.min_compute_capability = 80;
    options.device.max_compute_capability = 80;
    options.device.max_shared_per_block = max_shared_per_block_of(80);
    CHECK(chain_groups(plan_fusion(g, options)) == 0);
    options.device.max_compute_capability = 90;
    const FusionPlan both = plan_fusion(g, options);
    CHECK(chain_groups(both) == 1);
    check_fallbacks(both);
  }
}

TEST_CASE("gemm chain: --gemm-chain fused and unfused override the cost model",
          "[planner][chain]") {
  // Proves: a feed-forward block of 8192 rows, 1024 -> 4096 -> 1024, where the library's GEMMs
  // outrun the chain's products, stays unfused by the cost model and becomes one chain under
  // fused; the small block of the tests above, a chain by the cost model, is none under
  // unfused. Planning only.
  auto chains = [](const ChainModel& c, FusionMode mode) {
    const Graph g = chain_graph(c);
    PlannerOptions options;
    options.planner = "ilp";
    options.device = host_target_device();
    options.gemm_chain = mode;
    return chain_groups(plan_fusion(g, options));
  };
  ChainModel large;
  large.batch = 8, large.seq = 1024, large.width = 1024, large.ffn = 4096;
  CHECK(chains(large, FusionMode::Auto) == 0);
  CHECK(chains(large, FusionMode::Fused) == 1);
  ChainModel small;
  CHECK(chains(small, FusionMode::Auto) == 1);
  CHECK(chains(small, FusionMode::Unfused) == 0);
}

TEST_CASE("gemm chain: the configuration model moves bytes to the level that serves them",
          "[planner][chain]") {
  // Proves: chain_traffic charges the weights once from HBM and again from L2 for each later row
  // tile while they fit in L2, from HBM once they do not; a cluster's blocks past the first
  // read X's rows from L2 and send their partial tiles through distributed shared memory (none
  // for a cluster of one); fewer blocks than SMs slow every level; and the search prefers taller
  // row tiles where the weights are read again from HBM.
  DeviceParams device;
  const ChainShape small{256, 64, 256, 64, 1, 2}; // weights 64 KiB
  const ChainTraffic alone = chain_traffic(device, small, 64, 1, 256);
  const double weights = 2.0 * 256 * (64 + 64), x = 2.0 * 256 * 64, y = 2.0 * 256 * 64;
  CHECK(alone.hbm_bytes == x + weights + y);
  // 4 row tiles; X's rows once per 64-column step of the 256-column slice.
  CHECK(alone.l2_bytes == 3 * weights + 3 * x);
  CHECK(alone.dsm_bytes == 0);
  CHECK(alone.busy == Approx(4.0 / device.sm_count));
  const ChainTraffic pair = chain_traffic(device, small, 64, 2, 128);
  CHECK(pair.l2_bytes == alone.l2_bytes); // two blocks of two steps each
  CHECK(pair.dsm_bytes == 4.0 * 64 * 64 * 4);
  CHECK(pair.time_us < alone.time_us); // twice the blocks, the same bytes and products

  DeviceParams tiny_l2 = device;
  tiny_l2.l2_bytes = 1024;
  const ChainTraffic spilled = chain_traffic(tiny_l2, small, 64, 1, 256);
  CHECK(spilled.hbm_bytes == x + 4 * weights + y);
  CHECK(spilled.l2_bytes == 3 * x);

  // A hidden dim of 576 (nine 64-column tiles): no cluster leaves a block without hidden columns
  // (8 blocks of 128 would leave three), and of the sizes the products bound alike the one of
  // least traffic is taken, not one a rounding apart.
  ChainModel nine;
  nine.batch = 2, nine.seq = 12, nine.width = 512, nine.ffn = 576;
  PlannerOptions fused;
  fused.planner = "ilp";
  fused.device = host_target_device();
  fused.gemm_chain = FusionMode::Fused;
  const FusionPlan nine_plan = plan_fusion(chain_graph(nine), fused);
  CHECK(chain_groups(nine_plan) == 1);
  for (const FusionGroup& group : nine_plan.groups)
    if (const auto* chain = std::get_if<GemmChainSpec>(&group.spec)) {
      CHECK((chain->cluster_blocks - 1) * chain->slice < chain->hidden_dim);
      CHECK(chain->configurations > 4);
    }

  // 4096 rows of a block whose weights (4096 x 16384 x 2 x 2 bytes) outgrow L2: the search takes
  // tiles of 64 rows, each tile reading the weights again.
  ChainModel large;
  large.batch = 4, large.seq = 1024, large.width = 4096, large.ffn = 16384;
  const Graph g = chain_graph(large);
  PlannerOptions options;
  options.planner = "ilp";
  options.device = host_target_device();
  options.gemm_chain = FusionMode::Fused;
  const FusionPlan plan = plan_fusion(g, options);
  int chains = 0;
  for (const FusionGroup& group : plan.groups)
    if (const auto* chain = std::get_if<GemmChainSpec>(&group.spec)) {
      ++chains;
      CHECK(chain->warps_m == 4);
      CHECK(chain->configurations > 1);
      CHECK(chain->hbm_bytes > 4 * 4096 * 16384 * 2 * 2);
    }
  CHECK(chains == 1);
}
