// What code generation supports, checked before any planner runs: a node no plan could compile
// is refused here as a user error (exit 1) that names the model file, the node and op, and the
// reason ("unsupported in code generation: no kernel for op X yet"), so that `--report` never
// describes a plan that cannot be built. Every group a planner then makes has a spec the emitter
// prints; an emitter that cannot is a compiler bug (an internal error).
#pragma once

#include "graph/graph.h"

namespace stitch {

// Refuses a graph that keeps symbolic dims (planning over ranges is not built yet), then the
// first node code generation cannot handle (every dtype has an element type in
// kernels; float16 and bfloat16 compute in float): an op with no kernel (a composite that was not
// lowered), or an attribute value or geometry the op's kernel or library call does not take (a
// Resize coordinate mode, asymmetric Conv pads the library cannot express, a TopK without its
// indices, a library call on other than float32).
void check_code_generation(const Graph& graph);

} // namespace stitch
