// verify_graph: structural checks of the IR between passes.
#include "graph/verify.h"

#include "graph/error.h"

namespace stitch {

namespace {

void check_tensor(const Graph& graph, TensorId id, const std::string& pass, bool require_types) {
  STITCH_INTERNAL_CHECK(id >= 0 && id < static_cast<TensorId>(graph.tensors.size()),
                        "after {}: tensor id {} out of range", pass, id);
  const Tensor& t = graph.tensors[id];
  if (!require_types && !t.typed) return;
  STITCH_INTERNAL_CHECK(t.typed, "after {}: tensor '{}' is untyped", pass, t.name);
  for (int64_t d : t.shape)
    STITCH_INTERNAL_CHECK(d >= 0, "after {}: tensor '{}' has negative dim", pass, t.name);
  if (t.is_dynamic()) {
    STITCH_INTERNAL_CHECK(t.dims.size() == t.shape.size() && !is_static(t.dims),
                          "after {}: tensor '{}' has symbolic dims {} for shape {}", pass, t.name,
                          sym_shape_to_string(t.dims), shape_to_string(t.shape));
    const SymbolValues planning = graph.planning_values();
    for (size_t i = 0; i < t.dims.size(); ++i)
      STITCH_INTERNAL_CHECK(t.dims[i].evaluate(planning) == t.shape[i],
                            "after {}: tensor '{}' dims {} are not {} at the planning values", pass,
                            t.name, sym_shape_to_string(t.dims), shape_to_string(t.shape));
  }
  if (t.constant)
    STITCH_INTERNAL_CHECK(static_cast<int64_t>(t.constant->bytes.size()) == t.bytes(),
                          "after {}: constant '{}' holds {} bytes, expected {}", pass, t.name,
                          t.constant->bytes.size(), t.bytes());
}

} // namespace

void verify_graph(const Graph& graph, const std::string& pass, bool require_types) {
  std::vector<char> available(graph.tensors.size(), 0), produced(graph.tensors.size(), 0);
  for (TensorId t : graph.inputs) {
    check_tensor(graph, t, pass, require_types);
    available[t] = 1;
  }
  for (size_t t = 0; t < graph.tensors.size(); ++t)
    if (graph.tensors[t].constant) available[t] = 1;

  for (const Node& node : graph.nodes) {
    STITCH_INTERNAL_CHECK(!node.removed, "after {}: node '{}' is marked removed", pass, node.name);
    for (TensorId t : node.inputs) {
      if (t == kNoTensor) continue;
      check_tensor(graph, t, pass, require_types);
      STITCH_INTERNAL_CHECK(available[t],
                            "after {}: node '{}' ({}) reads '{}' before it is "
                            "produced",
                            pass, node.name, op_name(node.op), graph.tensors[t].name);
    }
    for (TensorId t : node.outputs) {
      if (t == kNoTensor) continue;
      check_tensor(graph, t, pass, require_types);
      STITCH_INTERNAL_CHECK(!produced[t], "after {}: tensor '{}' has two producers", pass,
                            graph.tensors[t].name);
      produced[t] = available[t] = 1;
    }
  }
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const Tensor& tensor = graph.tensors[t];
    if (tensor.view_of == kNoTensor) continue;
    STITCH_INTERNAL_CHECK(tensor.view_of != static_cast<TensorId>(t), "after {}: '{}' views itself",
                          pass, tensor.name);
    const Tensor& base = graph.tensor(tensor.view_of);
    STITCH_INTERNAL_CHECK(base.bytes() == tensor.bytes() && base.dtype == tensor.dtype,
                          "after {}: view '{}' differs in size or dtype from '{}'", pass,
                          tensor.name, base.name);
    size_t steps = 0;
    for (TensorId v = tensor.view_of; v != kNoTensor; v = graph.tensor(v).view_of)
      STITCH_INTERNAL_CHECK(++steps <= graph.tensors.size(), "after {}: view chain of '{}' loops",
                            pass, tensor.name);
  }
  for (TensorId t : graph.outputs) {
    check_tensor(graph, t, pass, require_types);
    STITCH_INTERNAL_CHECK(available[t], "after {}: graph output '{}' is never produced", pass,
                          graph.tensors[t].name);
  }
}

} // namespace stitch
