// remove-identity: rewire the consumers of no-op reinterpretations to their input.
#include "graph/remove_identity.h"

#include "graph/constant.h"

namespace stitch {

namespace {

// A read Dropout mask is all true at inference.
void make_mask_constant(Graph& graph, const Node& node) {
  if (node.outputs.size() < 2 || node.outputs[1] == kNoTensor) return;
  Tensor& mask = graph.tensor(node.outputs[1]);
  if (mask.is_constant()) return;
  mask.constant = make_constant_from_int64(mask.dtype, std::vector<int64_t>(mask.elements(), 1));
}

} // namespace

bool remove_identity(Graph& graph) {
  std::vector<TensorId> replacement(graph.tensors.size(), kNoTensor);
  bool changed = false;
  for (Node& node : graph.nodes) {
    for (TensorId& t : node.inputs)
      if (t != kNoTensor && replacement[t] != kNoTensor) t = replacement[t];
    if (!op_reinterprets_storage(node.op) || node.op == OpKind::View) continue;
    if (node.op == OpKind::Dropout) {
      // A mask of symbolic shape is no constant: the Dropout stays to write it.
      if (node.outputs.size() > 1 && node.outputs[1] != kNoTensor &&
          graph.tensor(node.outputs[1]).is_dynamic())
        continue;
      make_mask_constant(graph, node);
    }
    TensorId in = node.inputs[0], out = node.outputs[0];
    if (!graph.tensor(in).same_shape_as(graph.tensor(out))) continue;
    if (graph.is_graph_output(out)) continue;
    replacement[out] = in;
    node.removed = true;
    changed = true;
  }
  graph.compact();
  return changed;
}

} // namespace stitch
