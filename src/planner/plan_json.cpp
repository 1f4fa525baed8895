// plan_to_json.
#include "planner/plan_json.h"

#include <fmt/format.h>

namespace stitch {

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
    if (group.kind == GroupKind::Kernel) {
      gj["file"] = fmt::format("group_{:03}.cu", group.id);
      gj["scheme"] = scheme_name(group.scheme);
      gj["mapping"] = mapping_name(group.mapping);
      gj["grid"] = group.launch.grid;
      gj["block"] = group.launch.block;
      gj["dynamic_shared_bytes"] = group.launch.dynamic_shared_bytes;
      gj["vector_width"] = group.launch.vector_width;
      gj["cooperative"] = group.launch.cooperative;
    }
    if (group.kind != GroupKind::Alias) ++launches;
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
  return j;
}

} // namespace stitch
