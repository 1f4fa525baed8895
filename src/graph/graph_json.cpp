// graph_to_json: a faithful, stable dump of the graph IR.
#include "graph/graph_json.h"

namespace stitch {

namespace {

nlohmann::json tensor_json(const Graph& g, TensorId id) {
  const Tensor& t = g.tensor(id);
  nlohmann::json j = {{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}};
  if (t.is_constant()) j["constant"] = true;
  if (t.view_of != kNoTensor) j["view_of"] = g.tensor(t.view_of).name;
  // Over symbolic dims `shape` is the planning binding's; `dims` says what it stands for.
  if (t.is_dynamic()) {
    j["dims"] = nlohmann::json::array();
    for (const DimExpr& d : t.dims)
      j["dims"].push_back(d.to_string());
  }
  return j;
}

nlohmann::json attribute_json(const Graph& g, const Attribute& a) {
  return std::visit(
      [&](const auto& v) -> nlohmann::json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, TensorId>)
          return tensor_json(g, v);
        else
          return v;
      },
      a.value);
}

} // namespace

nlohmann::json graph_to_json(const Graph& g) {
  nlohmann::json j;
  j["source"] = g.source_file;
  j["opset"] = g.opset;
  if (!g.symbols.empty()) {
    j["symbols"] = nlohmann::json::array();
    for (const SymbolicDim& s : g.symbols)
      j["symbols"].push_back(
          {{"name", s.name}, {"min", s.min}, {"max", s.max}, {"planned_at", s.typical}});
  }
  j["inputs"] = nlohmann::json::array();
  for (TensorId t : g.inputs)
    j["inputs"].push_back(tensor_json(g, t));
  j["outputs"] = nlohmann::json::array();
  for (TensorId t : g.outputs)
    j["outputs"].push_back(tensor_json(g, t));
  j["nodes"] = nlohmann::json::array();
  int64_t constant_bytes = 0;
  std::vector<char> counted(g.tensors.size(), 0);
  for (const Node& n : g.nodes) {
    nlohmann::json node = {
        {"name", n.name}, {"op", op_name(n.op)}, {"category", category_name(op_category(n.op))}};
    node["inputs"] = nlohmann::json::array();
    for (TensorId t : n.inputs) {
      node["inputs"].push_back(t == kNoTensor ? nlohmann::json() : tensor_json(g, t));
      if (t != kNoTensor && g.tensor(t).is_constant() && !counted[t]) {
        counted[t] = 1;
        constant_bytes += g.tensor(t).bytes();
      }
    }
    node["outputs"] = nlohmann::json::array();
    for (TensorId t : n.outputs)
      node["outputs"].push_back(t == kNoTensor ? nlohmann::json() : tensor_json(g, t));
    nlohmann::json attrs = nlohmann::json::object();
    for (const auto& [key, a] : n.attrs)
      attrs[key] = attribute_json(g, a);
    node["attributes"] = attrs;
    j["nodes"].push_back(node);
  }
  std::map<std::string, int> per_category;
  for (const Node& n : g.nodes)
    ++per_category[std::string(category_name(op_category(n.op)))];
  j["totals"] = {{"nodes", g.nodes.size()},
                 {"nodes_per_category", per_category},
                 {"constant_bytes", constant_bytes}};
  return j;
}

} // namespace stitch
