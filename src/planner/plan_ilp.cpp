// plan_ilp: FusionStitching's global search for the fusion plan (planner.h states the model).
//
// Candidates: every node alone; the groups greedy picks (so the ILP is never worse than
// greedy); each attention (attention_candidate: its two products, the softmax between them and
// the layouts they read through), with and without its layouts and with the prologues computing
// its operands; and legal convex sets of
// fusible nodes, either every subset (small graphs: the
// search is then exact over all partitions) or sets grown from each node along producer and
// consumer edges, to nodes after the seed, breadth first, at most max_group_nodes nodes and
// max_candidates_per_seed sets per seed (a growth stops at an illegal set; a view or a Gather
// brings along the nodes without which it is never legal, see grown_by), and one more chain
// of sets per seed grown greedily (each neighbour that keeps the set legal, in node order), which
// reaches the whole of a long branching chain the breadth-first sets run out before.
//
// The program: binary x_c per candidate, one equality row per node (covered exactly once),
// minimum sum cost_c x_c. Cycles between groups are excluded lazily: when the optimum's groups
// form a cycle, the cut "sum of x_c over the multi-node groups on the cycle <= their count - 1"
// is added and the program solved again. The cut is valid: any partition holding all those
// groups has the same cycle (the nodes between them are linked by the same edges whatever
// groups they fall in). A singleton alone never closes a cycle, so it is left out of the cut.
//
// Packing: grown candidates are connected, so once the plan is acyclic, unions of its unrelated
// groups (Independent groups, one launch) become candidates and the program is solved again,
// a few rounds, each bounded in time (kPackingRoundMs).
#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "graph/error.h"
#include "planner/plan_common.h"

namespace stitch {

namespace {

using Clock = std::chrono::steady_clock;

struct Candidate {
  GroupAnalysis analysis;
  int64_t cost = 0;
  // What the program minimizes: the cost, less a bonus for an attention group under
  // --attention fused (plan_ilp), so that the solver takes every legal attention.
  int64_t objective = 0;
};

class CandidateSet {
public:
  explicit CandidateSet(const FusionContext& ctx) : ctx_(ctx) {}

  // Adds `nodes` (sorted) if legal and new; returns whether it is legal.
  bool add(const std::vector<int32_t>& nodes) {
    if (seen_.count(nodes)) return legal_.count(nodes) > 0;
    seen_.insert(nodes);
    Candidate c;
    if (!analyze_group(ctx_, nodes, c.analysis)) return false;
    c.cost = group_cost(ctx_, c.analysis).total();
    c.objective = c.cost;
    legal_.insert(nodes);
    list_.push_back(std::move(c));
    return true;
  }

  std::vector<Candidate>& list() { return list_; }

private:
  const FusionContext& ctx_;
  std::set<std::vector<int32_t>> seen_, legal_;
  std::vector<Candidate> list_;
};

// Every subset of the fusible nodes with at least two members.
void add_all_subsets(const FusionContext& ctx, const std::vector<int32_t>& fusible,
                     CandidateSet& set) {
  const uint64_t count = uint64_t{1} << fusible.size();
  for (uint64_t mask = 1; mask < count; ++mask) {
    if ((mask & (mask - 1)) == 0) continue; // singletons are already in
    std::vector<int32_t> nodes;
    for (size_t i = 0; i < fusible.size(); ++i)
      if (mask >> i & 1) nodes.push_back(fusible[i]);
    set.add(nodes);
  }
  (void)ctx;
}

// The nodes next to `current` (producers and consumers) that a growth from `seed` may add: after
// the seed, not in the set, not alone.
std::set<int32_t> growable_neighbours(const FusionContext& ctx, int32_t seed,
                                      const std::vector<int32_t>& current) {
  std::set<int32_t> neighbours;
  for (int32_t n : current) {
    neighbours.insert(ctx.preds[n].begin(), ctx.preds[n].end());
    neighbours.insert(ctx.succs[n].begin(), ctx.succs[n].end());
  }
  std::erase_if(neighbours, [&](int32_t m) {
    return m <= seed || std::binary_search(current.begin(), current.end(), m) ||
           ctx.node_class[m] == NodeClass::Alone;
  });
  return neighbours;
}

// The pointwise nodes from `m` (excluded) to the nearest row op reading its result through
// them, and that row op, breadth first over consumers, at most kRowOpReach nodes away; empty
// when there is none.
constexpr int kRowOpReach = 6;
std::vector<int32_t> path_to_row_op(const FusionContext& ctx, int32_t m) {
  std::map<int32_t, int32_t> came_from = {{m, -1}};
  std::deque<std::pair<int32_t, int>> queue = {{m, 0}};
  while (!queue.empty()) {
    const auto [k, depth] = queue.front();
    queue.pop_front();
    if (k != m && ctx.node_class[k] == NodeClass::RowOp) {
      std::vector<int32_t> path;
      for (int32_t at = k; at != m; at = came_from.at(at))
        path.push_back(at);
      return path;
    }
    if (depth == kRowOpReach || (k != m && ctx.node_class[k] != NodeClass::Pointwise)) continue;
    for (int32_t next : ctx.succs[k])
      if (came_from.emplace(next, k).second) queue.push_back({next, depth + 1});
  }
  return {};
}

// `current` (sorted) with `m` added, and what joins with it in one step: a view brings the
// chain of views after it and the node they feed, or the pointwise nodes it feeds (alone with
// the nodes before it, a view is never legal); a channels-last Conv or one of its layouts brings
// the other three (conv_layout_nodes); a Gather (legal only with a row op) brings the pointwise
// nodes on its way to the first row op reading it (an embedding's Adds to its LayerNorm), if there
// is one within a few nodes.
std::vector<int32_t> grown_by(const FusionContext& ctx, std::vector<int32_t> current, int32_t m) {
  auto insert = [&](int32_t k) {
    if (!std::binary_search(current.begin(), current.end(), k))
      current.insert(std::upper_bound(current.begin(), current.end(), k), k);
  };
  for (int32_t k = m; k >= 0;) {
    insert(k);
    if (ctx.node_class[k] != NodeClass::View) break;
    if (ctx.succs[k].size() == 1) {
      k = ctx.succs[k][0];
      continue;
    }
    // A view read by several pointwise nodes (a SiLU's Sigmoid and Mul) brings them all.
    const bool pointwise = std::all_of(ctx.succs[k].begin(), ctx.succs[k].end(), [&](int32_t c) {
      return ctx.node_class[c] == NodeClass::Pointwise;
    });
    if (pointwise)
      for (int32_t c : ctx.succs[k])
        insert(c);
    break;
  }
  if (ctx.node_class[m] == NodeClass::Gather)
    for (int32_t k : path_to_row_op(ctx, m))
      insert(k);
  for (int32_t k : conv_layout_nodes(ctx, m))
    insert(k);
  return current;
}

// Sets grown from each seed to later neighbours (grown_by), breadth first (each set once per
// seed: its smallest node is the seed; a view never seeds), then one more chain grown greedily.
void add_grown_sets(const FusionContext& ctx, const PlannerOptions& options, CandidateSet& set) {
  for (size_t s = 0; s < ctx.size(); ++s) {
    NodeClass seed_class = ctx.node_class[s];
    if (seed_class == NodeClass::Alone || seed_class == NodeClass::View) continue;
    const auto seed = static_cast<int32_t>(s);
    std::deque<std::vector<int32_t>> queue = {{seed}};
    std::set<std::vector<int32_t>> visited;
    int legal = 0;
    while (!queue.empty() && legal < options.max_candidates_per_seed) {
      std::vector<int32_t> current = std::move(queue.front());
      queue.pop_front();
      if (static_cast<int>(current.size()) >= options.max_group_nodes) continue;
      for (int32_t m : growable_neighbours(ctx, seed, current)) {
        std::vector<int32_t> grown = grown_by(ctx, current, m);
        if (static_cast<int>(grown.size()) > options.max_group_nodes) continue;
        if (!visited.insert(grown).second) continue;
        if (!set.add(grown)) continue;
        queue.push_back(std::move(grown));
        if (++legal >= options.max_candidates_per_seed) break;
      }
    }
    // The breadth-first sets stop at max_candidates_per_seed, which a chain of a dozen nodes
    // with branches (rotary embedding's slices, negation and concat) exhausts before its
    // whole: grow one set more, greedily, taking each neighbour that keeps it legal.
    std::vector<int32_t> current = {seed};
    for (bool grew = true; grew && static_cast<int>(current.size()) < options.max_group_nodes;) {
      grew = false;
      for (int32_t m : growable_neighbours(ctx, seed, current)) {
        std::vector<int32_t> grown = grown_by(ctx, current, m);
        if (static_cast<int>(grown.size()) > options.max_group_nodes || !set.add(grown)) continue;
        current = std::move(grown);
        grew = true;
        break;
      }
    }
  }
}

// The solver's state across the cut loop, read by the branch-and-bound callback.
struct Solve {
  std::vector<double> warm_start; // 1-based column values of a known acyclic plan
  bool offered = false;
  double bound = 0;
  bool have_bound = false;
};

void on_branch_and_bound(glp_tree* tree, void* info) {
  Solve& solve = *static_cast<Solve*>(info);
  switch (glp_ios_reason(tree)) {
  case GLP_IHEUR:
    if (!solve.offered && !solve.warm_start.empty()) {
      solve.offered = true;
      glp_ios_heur_sol(tree, solve.warm_start.data());
    }
    break;
  case GLP_ISELECT:
  case GLP_IBINGO:
    if (int p = glp_ios_best_node(tree); p != 0) {
      solve.bound = std::max(solve.bound, glp_ios_node_bound(tree, p));
      solve.have_bound = true;
    }
    break;
  default:
    break;
  }
}

class Program {
public:
  explicit Program(const std::vector<Candidate>& candidates, size_t nodes) {
    lp_ = glp_create_prob();
    glp_set_obj_dir(lp_, GLP_MIN);
    glp_add_rows(lp_, static_cast<int>(nodes));
    for (size_t v = 0; v < nodes; ++v)
      glp_set_row_bnds(lp_, static_cast<int>(v + 1), GLP_FX, 1.0, 1.0);
    glp_add_cols(lp_, static_cast<int>(candidates.size()));
    std::vector<int> rows = {0}, cols = {0};
    std::vector<double> values = {0};
    for (size_t c = 0; c < candidates.size(); ++c) {
      int col = static_cast<int>(c + 1);
      glp_set_col_kind(lp_, col, GLP_BV);
      glp_set_obj_coef(lp_, col, static_cast<double>(candidates[c].objective));
      for (int32_t v : candidates[c].analysis.nodes) {
        rows.push_back(v + 1);
        cols.push_back(col);
        values.push_back(1.0);
      }
    }
    glp_load_matrix(lp_, static_cast<int>(rows.size() - 1), rows.data(), cols.data(),
                    values.data());
  }
  ~Program() { glp_delete_prob(lp_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // sum x_c over `columns` (0-based) <= columns - 1.
  void forbid_together(const std::vector<int>& columns) {
    int row = glp_add_rows(lp_, 1);
    std::vector<int> index = {0};
    std::vector<double> values = {0};
    for (int c : columns) {
      index.push_back(c + 1);
      values.push_back(1.0);
    }
    glp_set_mat_row(lp_, row, static_cast<int>(columns.size()), index.data(), values.data());
    glp_set_row_bnds(lp_, row, GLP_UP, 0.0, static_cast<double>(columns.size()) - 1.0);
  }

  // Solves the relaxation, then the integer program; returns whether a solution exists.
  bool solve(int time_limit_ms, Solve& state, std::string& status) {
    glp_smcp lp_parm;
    glp_init_smcp(&lp_parm);
    lp_parm.msg_lev = GLP_MSG_OFF;
    lp_parm.tm_lim = std::max(time_limit_ms, 1);
    if (glp_simplex(lp_, &lp_parm) != 0 || glp_get_status(lp_) != GLP_OPT) {
      status = "time limit in the relaxation";
      return false;
    }
    // The relaxation's optimum bounds every integer solution from below.
    state.bound = std::max(state.bound, glp_get_obj_val(lp_));
    state.have_bound = true;
    state.offered = false;
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_OFF; // the relaxation above is the starting basis
    parm.tm_lim = std::max(time_limit_ms, 1);
    parm.mip_gap = 0.0;
    parm.tol_obj = 1e-9;    // costs are large integers that differ by a few bytes
    parm.gmi_cuts = GLP_ON; // see kPackingRoundMs
    parm.cb_func = on_branch_and_bound;
    parm.cb_info = &state;
    int rc = glp_intopt(lp_, &parm);
    int mip = glp_mip_status(lp_);
    status = mip == GLP_OPT ? "optimal" : rc == GLP_ETMLIM ? "time limit" : "stopped";
    return mip == GLP_OPT || mip == GLP_FEAS;
  }

  bool chosen(size_t c) const { return glp_mip_col_val(lp_, static_cast<int>(c + 1)) > 0.5; }
  double objective() const { return glp_mip_obj_val(lp_); }

private:
  glp_prob* lp_ = nullptr;
};

// Rounds of pairing a plan's unrelated groups into Independent candidates.
constexpr int kPackingRounds = 3;
// A group is paired with the groups this many places after it (by first node).
constexpr size_t kPackingWindow = 8;
// A packing round's program has a matching problem inside (which pairs of groups share a
// launch), whose relaxation is fractional around every odd cycle of pairs; Gomory cuts settle
// most at once, and a round that still takes longer than this keeps the best plan its branch
// and bound has found (at least the previous round's, offered as its start), so that packing
// adds at most kPackingRounds times this to the planning time.
constexpr int kPackingRoundMs = 500;

// Adds the legal unions of each chosen group with the next few chosen groups (by first
// node); returns whether any is new. Only unrelated groups pass (the union must be convex).
bool add_independent_pairs(const FusionContext& ctx, const std::vector<Candidate>& list,
                           std::vector<size_t> picked, CandidateSet& candidates) {
  std::sort(picked.begin(), picked.end(), [&](size_t a, size_t b) {
    return list[a].analysis.nodes.front() < list[b].analysis.nodes.front();
  });
  const size_t before = list.size();
  std::vector<std::vector<int32_t>> unions; // collected first: adding grows `list`
  for (size_t i = 0; i < picked.size(); ++i) {
    const GroupAnalysis& a = list[picked[i]].analysis;
    if (a.kind != GroupKind::Kernel) continue;
    for (size_t j = i + 1; j < picked.size() && j <= i + kPackingWindow; ++j) {
      const GroupAnalysis& b = list[picked[j]].analysis;
      if (b.kind != GroupKind::Kernel) continue;
      std::vector<int32_t> merged = a.nodes;
      merged.insert(merged.end(), b.nodes.begin(), b.nodes.end());
      std::sort(merged.begin(), merged.end());
      unions.push_back(std::move(merged));
    }
  }
  for (const std::vector<int32_t>& nodes : unions)
    candidates.add(nodes);
  (void)ctx;
  return list.size() > before;
}

} // namespace

FusionPlan plan_ilp(const Graph& graph, const PlannerOptions& options) {
  const Clock::time_point start = Clock::now();
  if (graph.nodes.empty()) { // everything folded: nothing to choose (GLPK needs a row)
    FusionPlan plan = plan_one_kernel_per_op(graph, options.device);
    plan.planner = "ilp";
    return plan;
  }
  glp_term_out(GLP_OFF);
  FusionContext ctx(graph, options.device, options.no_fuse, options.attention, options.gemm_chain);
  CandidateSet candidates(ctx);
  for (size_t n = 0; n < ctx.size(); ++n)
    candidates.add({static_cast<int32_t>(n)});
  std::vector<int32_t> fusible;
  for (size_t n = 0; n < ctx.size(); ++n)
    if (ctx.node_class[n] != NodeClass::Alone) fusible.push_back(static_cast<int32_t>(n));
  const bool exhaustive = static_cast<int>(fusible.size()) <= options.exhaustive_candidates_up_to;
  if (exhaustive)
    add_all_subsets(ctx, fusible, candidates);
  else
    add_grown_sets(ctx, options, candidates);
  // Each attention whole (more nodes than grown sets reach), with each combination of the
  // prologues computing its Q, K and V (a K evaluated again by many query tiles may cost more
  // than a kernel writing it once), and without the Slices, Transposes, Views and scalings it
  // reads through, in case those cannot join.
  for (size_t n = 0; n < ctx.size(); ++n) {
    if (ctx.node_class[n] != NodeClass::Gemm) continue;
    std::vector<int32_t> read_through;
    std::vector<std::vector<int32_t>> prologues;
    std::vector<int32_t> nodes =
        attention_candidate(ctx, static_cast<int32_t>(n), &read_through, &prologues);
    if (nodes.empty()) continue;
    candidates.add(nodes);
    for (unsigned subset = 1; subset < (1u << prologues.size()); ++subset) {
      std::vector<int32_t> with = nodes;
      bool repeats = false; // a subset naming an empty prologue repeats a smaller one
      for (size_t o = 0; o < prologues.size(); ++o)
        if ((subset >> o) & 1u) {
          repeats = repeats || prologues[o].empty();
          with.insert(with.end(), prologues[o].begin(), prologues[o].end());
        }
      if (repeats) continue;
      std::sort(with.begin(), with.end());
      with.erase(std::unique(with.begin(), with.end()), with.end());
      candidates.add(with);
    }
    std::erase_if(nodes, [&](int32_t k) {
      return std::find(read_through.begin(), read_through.end(), k) != read_through.end();
    });
    candidates.add(nodes);
  }
  // Each GEMM chain whole, and without the epilogue after its second product.
  for (size_t n = 0; n < ctx.size(); ++n) {
    std::vector<int32_t> epilogue;
    std::vector<int32_t> nodes = gemm_chain_candidate(ctx, static_cast<int32_t>(n), &epilogue);
    if (nodes.empty()) continue;
    candidates.add(nodes);
    if (epilogue.empty()) continue;
    std::erase_if(nodes, [&](int32_t k) {
      return std::find(epilogue.begin(), epilogue.end(), k) != epilogue.end();
    });
    candidates.add(nodes);
  }
  FusionPlan greedy = plan_greedy(graph, options);
  for (const FusionGroup& group : greedy.groups)
    candidates.add(group.nodes);
  std::vector<Candidate>& list = candidates.list();
  // --attention fused, --gemm-chain fused: one bonus for every candidate of the kind, larger
  // than any of them costs plus what every node costs alone: a plan without one of the legal
  // groups never beats the plan with it and the rest unfused, and the cost model still chooses
  // between one attention's or chain's candidates (with or without the layouts it reads
  // through, with or without an epilogue).
  auto forced = [&](GroupKind kind) {
    return (kind == GroupKind::Attention && options.attention == FusionMode::Fused) ||
           (kind == GroupKind::GemmChain && options.gemm_chain == FusionMode::Fused);
  };
  if (options.attention == FusionMode::Fused || options.gemm_chain == FusionMode::Fused) {
    int64_t alone = 0, largest = 0;
    for (size_t n = 0; n < ctx.size(); ++n)
      alone += list[n].cost; // the single-node candidates come first
    for (const Candidate& c : list)
      if (forced(c.analysis.kind)) largest = std::max(largest, c.cost);
    for (Candidate& c : list)
      if (forced(c.analysis.kind)) c.objective = c.cost - (alone + largest + 1);
  }

  // Column lookup for the greedy plan, the warm start and the fallback.
  std::map<std::vector<int32_t>, size_t> column_of;
  for (size_t c = 0; c < list.size(); ++c)
    column_of[list[c].analysis.nodes] = c;
  Solve state;
  state.warm_start.assign(list.size() + 1, 0.0);
  for (const FusionGroup& group : greedy.groups)
    state.warm_start[column_of.at(group.nodes) + 1] = 1.0;

  auto program = std::make_unique<Program>(list, ctx.size());
  int packing_rounds = 0;
  IlpStats stats;
  stats.ran = true;
  stats.candidates = static_cast<int64_t>(list.size());
  stats.exhaustive = exhaustive;
  std::vector<size_t> picked;
  bool acyclic = false;
  for (;;) {
    double elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    int remaining_ms = static_cast<int>(options.ilp_time_limit_s * 1000.0 - elapsed_ms);
    if (remaining_ms <= 0) {
      stats.status = "time limit";
      break;
    }
    const int round_ms =
        packing_rounds > 0 ? std::min(remaining_ms, kPackingRoundMs) : remaining_ms;
    if (!program->solve(round_ms, state, stats.status)) break;
    picked.clear();
    GroupOf group_of(ctx.size(), -1);
    for (size_t c = 0; c < list.size(); ++c)
      if (program->chosen(c)) {
        for (int32_t v : list[c].analysis.nodes)
          group_of[v] = static_cast<int32_t>(picked.size());
        picked.push_back(c);
      }
    std::vector<int32_t> cycle =
        find_group_cycle(ctx, group_of, static_cast<int32_t>(picked.size()));
    if (cycle.empty()) {
      // Grown candidates are connected; unrelated groups of this plan that could share a
      // launch (Independent) become candidates and the program is solved again.
      if (!exhaustive && packing_rounds < kPackingRounds &&
          add_independent_pairs(ctx, list, picked, candidates)) {
        ++packing_rounds;
        program = std::make_unique<Program>(list, ctx.size());
        state.warm_start.assign(list.size() + 1, 0.0);
        for (size_t c : picked)
          state.warm_start[c + 1] = 1.0;
        continue;
      }
      acyclic = true;
      break;
    }
    std::vector<int> columns;
    for (int32_t gi : cycle)
      if (list[picked[gi]].analysis.nodes.size() > 1)
        columns.push_back(static_cast<int>(picked[gi]));
    if (columns.empty()) internal_fail("a cycle between single-node groups in a DAG");
    program->forbid_together(columns);
    ++stats.cycle_cuts;
  }

  // The best acyclic plan: the solver's, or greedy's when the solver found none in time.
  // (Compared by what the program minimizes; reported as costs.)
  std::vector<GroupAnalysis> groups;
  int64_t objective = 0, cost = 0;
  if (acyclic) {
    for (size_t c : picked) {
      groups.push_back(list[c].analysis);
      objective += list[c].objective;
      cost += list[c].cost;
    }
  }
  // The program's bound is in its own units: the bonuses of the solver's plan (none without
  // --attention fused) convert it to costs; without a plan of the solver's there is none.
  const int64_t bonuses = cost - objective;
  if (!acyclic &&
      (options.attention == FusionMode::Fused || options.gemm_chain == FusionMode::Fused))
    state.have_bound = false;
  int64_t greedy_objective = 0;
  for (const FusionGroup& group : greedy.groups)
    greedy_objective += list[column_of.at(group.nodes)].objective;
  if (!acyclic || greedy_objective < objective) {
    stats.status +=
        acyclic ? "; greedy's plan is cheaper" : "; no acyclic plan in time, greedy's plan";
    groups.clear();
    objective = cost = 0;
    for (const FusionGroup& group : greedy.groups) {
      groups.push_back(list[column_of.at(group.nodes)].analysis);
      objective += list[column_of.at(group.nodes)].objective;
      cost += list[column_of.at(group.nodes)].cost;
    }
  }
  FusionPlan plan = assemble_plan(ctx, groups, "ilp");
  stats.objective = static_cast<double>(cost);
  state.bound += static_cast<double>(bonuses);
  stats.bound = state.have_bound ? std::min(state.bound, stats.objective) : 0.0;
  if (stats.status == "optimal") stats.bound = stats.objective;
  stats.gap = stats.objective > 0 ? (stats.objective - stats.bound) / stats.objective : 0.0;
  stats.solve_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  plan.ilp = stats;
  explain_rejections(ctx, plan);
  return plan;
}

} // namespace stitch
