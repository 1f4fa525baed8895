// The ILP against exhaustive search: on random DAGs of up to 10 memory-intensive ops, every
// set partition of the nodes whose blocks are legal groups (analyze_group) and whose groups
// are acyclic is costed by the same cost model; the ILP's plan must cost the minimum. Also:
// greedy never beats the ILP, the ILP with grown (not exhaustive) candidates gives a valid
// plan between the optimum and greedy, and the same graph gives the same plan.
#include "random_graphs.h"
#include "test_planner_graphs.h"

#include <limits>

#include "planner/plan_common.h"

using namespace stitch;
using namespace stitch::test;

namespace {

// The cheapest legal acyclic partition, by enumerating all set partitions.
class ExhaustiveSearch {
public:
  explicit ExhaustiveSearch(const FusionContext& ctx)
      : ctx_(ctx), n_(static_cast<int>(ctx.size())), block_cost_(size_t{1} << n_, kUnknown) {}

  int64_t optimum() {
    std::vector<uint32_t> blocks;
    assign(0, blocks, 0);
    return best_;
  }
  int64_t partitions_seen() const { return seen_; }

private:
  static constexpr int64_t kUnknown = -2, kIllegal = -1;

  int64_t cost_of(uint32_t mask) {
    int64_t& c = block_cost_[mask];
    if (c != kUnknown) return c;
    std::vector<int32_t> nodes;
    for (int v = 0; v < n_; ++v)
      if (mask >> v & 1) nodes.push_back(v);
    GroupAnalysis a;
    c = analyze_group(ctx_, nodes, a) ? group_cost(ctx_, a).total() : kIllegal;
    return c;
  }

  void assign(int v, std::vector<uint32_t>& blocks, int64_t) {
    if (v == n_) {
      ++seen_;
      int64_t total = 0;
      for (uint32_t block : blocks) {
        int64_t c = cost_of(block);
        if (c == kIllegal) return;
        total += c;
      }
      if (total >= best_) return;
      GroupOf group_of(n_);
      for (size_t b = 0; b < blocks.size(); ++b)
        for (int u = 0; u < n_; ++u)
          if (blocks[b] >> u & 1) group_of[u] = static_cast<int32_t>(b);
      if (!find_group_cycle(ctx_, group_of, static_cast<int32_t>(blocks.size())).empty()) return;
      best_ = total;
      return;
    }
    for (size_t b = 0; b < blocks.size(); ++b) {
      blocks[b] |= 1u << v;
      assign(v + 1, blocks, 0);
      blocks[b] &= ~(1u << v);
    }
    blocks.push_back(1u << v);
    assign(v + 1, blocks, 0);
    blocks.pop_back();
  }

  const FusionContext& ctx_;
  int n_;
  std::vector<int64_t> block_cost_;
  int64_t best_ = std::numeric_limits<int64_t>::max();
  int64_t seen_ = 0;
};

void check_seeds(uint32_t first, uint32_t last) {
  int fused_plans = 0;
  for (uint32_t seed = first; seed < last; ++seed) {
    Graph g = random_dag(seed, 4 + static_cast<int>(seed % 7)); // 4 to 10 ops
    INFO("seed " << seed << ", " << g.nodes.size() << " nodes");
    FusionContext ctx(g, DeviceParams{});
    ExhaustiveSearch search(ctx);
    int64_t optimum = search.optimum();

    PlannerOptions options;
    options.planner = "ilp";
    FusionPlan ilp = plan_fusion(g, options);
    REQUIRE(ilp.ilp.exhaustive);
    REQUIRE(ilp.ilp.status == "optimal");
    CHECK(plan_cost(ilp) == optimum);
    CHECK(static_cast<int64_t>(ilp.ilp.objective) == optimum);
    if (ilp.groups.size() < g.nodes.size()) ++fused_plans;

    options.planner = "greedy";
    FusionPlan greedy = plan_fusion(g, options);
    CHECK(plan_cost(greedy) >= optimum);

    // Grown candidates only: a valid plan, no better than the optimum, no worse than greedy.
    options.planner = "ilp";
    options.exhaustive_candidates_up_to = 0;
    FusionPlan grown = plan_fusion(g, options);
    CHECK_FALSE(grown.ilp.exhaustive);
    CHECK(plan_cost(grown) >= optimum);
    CHECK(plan_cost(grown) <= plan_cost(greedy));
  }
  // The random graphs do exercise fusion (most optima fuse something).
  CHECK(fused_plans > static_cast<int>(last - first) / 2);
}

} // namespace

TEST_CASE("planner exhaustive: ilp is optimal, seeds 0-99", "[planner][exhaustive]") {
  check_seeds(0, 100);
}
TEST_CASE("planner exhaustive: ilp is optimal, seeds 100-199", "[planner][exhaustive]") {
  check_seeds(100, 200);
}
TEST_CASE("planner exhaustive: ilp is optimal, seeds 200-299", "[planner][exhaustive]") {
  check_seeds(200, 300);
}

// The same graph gives the same plan, group for group.
TEST_CASE("planner: ilp is deterministic", "[planner]") {
  for (uint32_t seed : {7u, 42u, 1234u}) {
    Graph g = random_dag(seed, 10);
    PlannerOptions options;
    options.planner = "ilp";
    options.exhaustive_candidates_up_to = 0;
    FusionPlan first = plan_fusion(g, options), second = plan_fusion(g, options);
    REQUIRE(first.groups.size() == second.groups.size());
    for (size_t i = 0; i < first.groups.size(); ++i) {
      CHECK(first.groups[i].nodes == second.groups[i].nodes);
      CHECK(first.groups[i].scheme == second.groups[i].scheme);
    }
  }
}
