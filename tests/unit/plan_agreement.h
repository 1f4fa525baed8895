// The property every planner owes the emitter: each plan it makes of a graph emits for the
// host target (emit_model throws no UserError or InternalError), and the library compiled from
// it computes what the one-kernel-per-op plan's library computes on the same random inputs.
// Shared by the random-graph property tests and the hand-built regressions.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "test_emit_fused_support.h"

namespace stitch::test {

// fp32 tolerance between plans: fused chains round in another order than per-op kernels.
constexpr double kPlanRtol = 1e-4, kPlanAtol = 1e-5;

// How closely a fused plan's outputs must match the per-op plan's: kPlanRtol and kPlanAtol
// where values are float32; wider where they are float16 or bfloat16, whose results are rounded
// once per node in both plans but whose reductions may add in another order, so a sum can land
// one unit in the last place of the 2-byte type away and later ops carry that on.
struct PlanTolerance {
  double rtol = kPlanRtol, atol = kPlanAtol;
};

inline const std::vector<std::string>& all_planners() {
  static const std::vector<std::string> planners = {"none", "greedy", "ilp"};
  return planners;
}

// The device stitchc --target host plans for: a cooperative grid fits the blocks the host
// target's CUDA emulation keeps resident (driver.cpp).
inline DeviceParams host_target_device() {
  DeviceParams device;
  device.cooperative_sm_count = kHostTargetMultiprocessors;
  return device;
}

// The plan stitchc --target host --planner `planner` makes.
inline FusionPlan plan_for_host(const Graph& g, const std::string& planner) {
  PlannerOptions options;
  options.planner = planner;
  options.device = host_target_device();
  return plan_fusion(g, options);
}

// "" when the memory plan and the host target's code generation accept `plan`, else the error.
inline std::string emission_error(const Graph& g, const FusionPlan& plan) {
  try {
    MemoryPlan memory = plan_memory(g, plan);
    emit_model(g, plan, memory, "host");
    return "";
  } catch (const UserError& e) {
    return e.what();
  } catch (const InternalError& e) {
    return e.what();
  }
}

// "group 3 kernel regional warp-per-row rows 18 x 1: name(Op) name(Op) ...".
inline std::string describe_group(const Graph& g, const FusionGroup& group) {
  std::ostringstream out;
  out << "group " << group.id << " " << group_kind_name(group.kind) << " "
      << scheme_name(group.scheme) << " " << mapping_name(group.mapping);
  if (group.rows) out << " rows " << group.rows << " x " << group.row_length;
  out << ":";
  for (int32_t n : group.nodes)
    out << " " << g.nodes[n].name << "(" << op_name(g.nodes[n].op) << ")";
  return out.str();
}

// The plan's fused groups, one per line, and how many groups hold a single node.
inline std::string describe_plan(const Graph& g, const FusionPlan& plan) {
  std::ostringstream out;
  size_t single = 0;
  for (const FusionGroup& group : plan.groups)
    if (group.nodes.size() == 1)
      ++single;
    else
      out << "  " << describe_group(g, group) << "\n";
  out << "  and " << single << " single-node groups";
  return out.str();
}

// `plan` with every group whose index `split` accepts replaced by one group per node (in node
// order, which keeps the dependences: each group is convex and its nodes are in topological
// order).
template <typename Split>
FusionPlan split_groups(const Graph& g, const FusionPlan& plan, Split split) {
  FusionPlan out = plan;
  out.groups.clear();
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    if (!split(i) || plan.groups[i].nodes.size() == 1) {
      out.groups.push_back(plan.groups[i]);
      continue;
    }
    for (int32_t n : plan.groups[i].nodes)
      out.groups.push_back(single_node_group(g, n, host_target_device()));
  }
  for (size_t i = 0; i < out.groups.size(); ++i)
    out.groups[i].id = static_cast<int>(i);
  return out;
}

// The fused groups of `plan` that code generation refuses in a plan where every other group
// is split into single nodes, by index, with the error.
inline std::vector<std::pair<size_t, std::string>> refused_groups(const Graph& g,
                                                                  const FusionPlan& plan) {
  std::vector<std::pair<size_t, std::string>> refused;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    if (plan.groups[i].nodes.size() == 1) continue;
    std::string error = emission_error(g, split_groups(g, plan, [&](size_t j) { return j != i; }));
    if (!error.empty()) refused.emplace_back(i, error);
  }
  return refused;
}

// Two plans that would generate the same code: the same groups in the same order, each with
// the same nodes, scheme, mapping, launch, row space, scratch and parts.
inline bool same_groups(const FusionPlan& a, const FusionPlan& b) {
  if (a.groups.size() != b.groups.size()) return false;
  for (size_t i = 0; i < a.groups.size(); ++i) {
    const FusionGroup &x = a.groups[i], &y = b.groups[i];
    const LaunchConfig &p = x.launch, &q = y.launch;
    if (x.kind != y.kind || x.nodes != y.nodes || x.scheme != y.scheme || x.mapping != y.mapping ||
        p.grid != q.grid || p.block != q.block ||
        p.dynamic_shared_bytes != q.dynamic_shared_bytes || p.cooperative != q.cooperative ||
        p.vector_width != q.vector_width || x.rows != y.rows || x.row_length != y.row_length ||
        x.scratch_bytes != y.scratch_bytes || x.parts != y.parts ||
        x.part_blocks != y.part_blocks || x.inputs != y.inputs || x.outputs != y.outputs)
      return false;
  }
  return true;
}

// Every element of each output within rtol/atol of the reference; NaN equals NaN and an
// infinity itself.
inline void check_same_outputs(const Graph& g, const std::vector<std::vector<float>>& expected,
                               const std::vector<std::vector<float>>& actual,
                               PlanTolerance tolerance = {}) {
  REQUIRE(expected.size() == actual.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    REQUIRE(expected[o].size() == actual[o].size());
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < expected[o].size(); ++i) {
      double e = expected[o][i], a = actual[o][i];
      bool ok = (std::isnan(e) && std::isnan(a)) || e == a ||
                std::abs(a - e) <= tolerance.atol + tolerance.rtol * std::abs(e);
      if (!ok && bad++ == 0) first_bad = i;
    }
    INFO("output '" << g.tensor(g.outputs[o]).name << "': " << bad << " of " << expected[o].size()
                    << " elements differ; first at " << first_bad << ": expected "
                    << expected[o][first_bad] << ", got " << actual[o][first_bad]);
    CHECK(bad == 0);
  }
}

// Checks that `plan` emits: each fused group code generation refuses (in a plan where every
// other group is split into single nodes) is a failed check naming the group and the message.
// Returns the plan with the refused groups split, or nothing when even that does not emit
// (also a failed check).
inline std::optional<FusionPlan> check_emits(const Graph& g, FusionPlan plan) {
  if (emission_error(g, plan).empty()) return plan;
  std::vector<std::pair<size_t, std::string>> refused = refused_groups(g, plan);
  for (const auto& [group, message] : refused)
    FAIL_CHECK("code generation refuses " << describe_group(g, plan.groups[group])
                                          << "\n(alone, every other fused group split):\n"
                                          << message);
  plan = split_groups(g, plan, [&](size_t i) {
    return std::any_of(refused.begin(), refused.end(), [&](const auto& r) { return r.first == i; });
  });
  if (std::string error = emission_error(g, plan); !error.empty()) {
    FAIL_CHECK("emission refused the plan: " << error << "\nplan:\n" << describe_plan(g, plan));
    return std::nullopt;
  }
  return plan;
}

// Every planner's plan of `g` emits for the host target (check_emits), and each plan that
// differs from the per-op one computes its outputs on the same random inputs (float32,
// magnitudes in [0.25, 2], drawn from `input_seed`); a plan with refused groups is compiled
// with them split. A mismatch is a failed check naming `label`, the planner, the output, and
// listing the plan's fused groups. Returns how many plans it compiled and ran (a plan with
// the same groups as an earlier one is not compiled again).
inline int check_planners_agree(const Graph& g, unsigned input_seed, const std::string& label,
                                PlanTolerance tolerance = {}) {
  std::vector<std::vector<float>> inputs;
  for (TensorId t : g.inputs)
    inputs.push_back(random_values(static_cast<size_t>(g.tensor(t).elements()), input_seed++));
  std::vector<std::vector<float>> reference;
  std::vector<FusionPlan> compiled;
  for (const std::string& planner : all_planners()) {
    INFO(label << ", planner " << planner);
    std::optional<FusionPlan> emitting = check_emits(g, plan_for_host(g, planner));
    if (!emitting) {
      if (planner == "none") return 0; // nothing to compare the others with
      continue;
    }
    FusionPlan plan = std::move(*emitting);
    if (std::any_of(compiled.begin(), compiled.end(),
                    [&](const FusionPlan& done) { return same_groups(done, plan); }))
      continue;
    INFO("plan:\n" << describe_plan(g, plan));
    std::vector<std::vector<float>> outputs;
    try {
      outputs = run_on_host(g, plan, inputs, "agree-" + planner);
    } catch (const std::exception& e) {
      FAIL_CHECK("compiling or running the plan failed: " << e.what());
      if (planner == "none") return 0;
      continue;
    }
    compiled.push_back(std::move(plan));
    if (planner == "none")
      reference = std::move(outputs);
    else
      check_same_outputs(g, reference, outputs, tolerance);
  }
  return static_cast<int>(compiled.size());
}

} // namespace stitch::test
