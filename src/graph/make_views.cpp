// make-views: rewrite reinterpreting nodes into View nodes with aliasing outputs.
#include "graph/make_views.h"

namespace stitch {

bool make_views(Graph& graph) {
  bool changed = false;
  for (Node& node : graph.nodes) {
    if (!op_reinterprets_storage(node.op)) continue;
    TensorId in = node.inputs[0], out = node.outputs[0];
    Tensor& result = graph.tensor(out);
    if (node.op == OpKind::View && result.view_of == in) continue;
    bool other_outputs_live = false; // e.g. a Dropout mask still computed at run time
    for (size_t i = 1; i < node.outputs.size(); ++i)
      other_outputs_live = other_outputs_live || (node.outputs[i] != kNoTensor &&
                                                  !graph.tensor(node.outputs[i]).is_constant());
    if (other_outputs_live) continue;
    node.op = OpKind::View;
    node.inputs = {in};
    node.outputs = {out};
    node.attrs.clear();
    node.attrs["shape"] = Attribute{result.shape};
    result.view_of = in;
    changed = true;
  }
  graph.compact();
  return changed;
}

} // namespace stitch
