// eliminate-dead: one backward sweep over the topological order.
#include "graph/eliminate_dead.h"

namespace stitch {

bool eliminate_dead(Graph& graph) {
  std::vector<char> live(graph.tensors.size(), 0);
  for (TensorId t : graph.outputs)
    live[t] = 1;
  bool changed = false;
  for (auto it = graph.nodes.rbegin(); it != graph.nodes.rend(); ++it) {
    bool needed = false;
    for (TensorId t : it->outputs)
      needed = needed || (t != kNoTensor && live[t]);
    if (!needed) {
      it->removed = true;
      changed = true;
      continue;
    }
    for (TensorId t : it->inputs)
      if (t != kNoTensor) live[t] = 1;
  }
  graph.compact();
  return changed;
}

} // namespace stitch
