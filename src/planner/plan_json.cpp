// plan_to_json: the groups, the memory plan's totals, the planners compared, the fusions
// rejected with their reasons and the ILP's statistics.
#include "planner/plan_json.h"

#include "planner/cost_model.h"

#include <fmt/format.h>

namespace stitch {

namespace {

nlohmann::json tensor_names(const Graph& g, const std::vector<TensorId>& tensors) {
  nlohmann::json names = nlohmann::json::array();
  for (TensorId t : tensors)
    names.push_back(g.tensor(t).name);
  return names;
}

nlohmann::json node_names(const Graph& g, const std::vector<int32_t>& nodes) {
  nlohmann::json names = nlohmann::json::array();
  for (int32_t n : nodes)
    names.push_back(g.nodes[n].name);
  return names;
}

} // namespace

nlohmann::json plan_to_json(const Graph& g, const FusionPlan& plan, const MemoryPlan& memory) {
  nlohmann::json j;
  j["planner"] = plan.planner;
  j["groups"] = nlohmann::json::array();
  int launches = 0;
  int64_t bytes = 0;
  for (const FusionGroup& group : plan.groups) {
    nlohmann::json gj = {{"id", group.id},
                         {"kind", group_kind_name(group.kind)},
                         {"estimated_bytes", group.estimated_bytes}};
    nlohmann::json nodes = nlohmann::json::array();
    for (int32_t n : group.nodes)
      nodes.push_back({{"name", g.nodes[n].name}, {"op", op_name(g.nodes[n].op)}});
    gj["nodes"] = nodes;
    gj["estimated_cost"] = group.estimated_cost;
    gj["inputs"] = tensor_names(g, group.inputs);
    gj["outputs"] = tensor_names(g, group.outputs);
    if (group.kind == GroupKind::Kernel) {
      gj["file"] = fmt::format("group_{:03}.cu", group.id);
      gj["scheme"] = scheme_name(group.scheme);
      gj["mapping"] = mapping_name(group.mapping);
      gj["grid"] = group.launch.grid;
      gj["block"] = group.launch.block;
      gj["dynamic_shared_bytes"] = group.launch.dynamic_shared_bytes;
      gj["vector_width"] = group.launch.vector_width;
      gj["cooperative"] = group.launch.cooperative;
      if (group.launch.cooperative) gj["min_blocks_per_sm"] = group.launch.min_blocks_per_sm;
      if (group.rows > 0) {
        gj["rows"] = group.rows;
        gj["row_length"] = group.row_length;
      }
      if (group.scratch_bytes > 0) {
        gj["scratch_bytes"] = group.scratch_bytes;
        gj["scratch_offset"] = memory.scratch_offset.at(&group - plan.groups.data());
      }
      if (!group.parts.empty()) {
        nlohmann::json parts = nlohmann::json::array();
        for (const std::vector<int32_t>& part : group.parts)
          parts.push_back(node_names(g, part));
        gj["parts"] = parts;
        gj["part_blocks"] = group.part_blocks;
      }
    }
    launches += group_launches(group);
    bytes += group.estimated_bytes;
    j["groups"].push_back(gj);
  }
  j["totals"] = {{"groups", plan.groups.size()},
                 {"launches", launches},
                 {"estimated_bytes", bytes},
                 {"arena_peak_bytes", memory.arena_bytes},
                 {"intermediate_bytes", memory.intermediate_bytes},
                 {"weights_bytes", memory.weights_bytes},
                 {"output_copies", memory.output_copies.size()}};
  // The same totals for the other planners, by the same cost model.
  j["compare"] = nlohmann::json::array();
  for (const PlanTotals& t : plan.totals)
    j["compare"].push_back({{"planner", t.planner},
                            {"launches", t.launches},
                            {"estimated_bytes", t.bytes},
                            {"estimated_cost", t.cost}});
  j["rejected_fusions"] = nlohmann::json::array();
  for (const RejectedFusion& r : plan.rejected)
    j["rejected_fusions"].push_back({{"nodes", node_names(g, r.nodes)}, {"reason", r.reason}});
  if (plan.ilp.ran)
    j["ilp"] = {{"status", plan.ilp.status},
                {"objective", plan.ilp.objective},
                {"bound", plan.ilp.bound},
                {"gap", plan.ilp.gap},
                {"solve_seconds", plan.ilp.solve_seconds},
                {"candidates", plan.ilp.candidates},
                {"cycle_cuts", plan.ilp.cycle_cuts},
                {"exhaustive_candidates", plan.ilp.exhaustive}};
  return j;
}

} // namespace stitch
