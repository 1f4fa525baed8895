// fold-constants: drop nodes whose outputs are all constant.
#include "graph/fold_constants.h"

namespace stitch {

bool fold_constants(Graph& graph) {
  bool changed = false;
  for (Node& node : graph.nodes) {
    bool all_constant = true;
    for (TensorId t : node.outputs)
      all_constant = all_constant && (t == kNoTensor || graph.tensor(t).is_constant());
    if (!all_constant) continue;
    node.removed = true;
    changed = true;
  }
  graph.compact();
  return changed;
}

} // namespace stitch
