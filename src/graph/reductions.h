// The reduction table (reductions.def): how each reducing op folds its elements. Every place
// that reduces (constant folding, the reduction kernels, fused row and column groups) asks
// reduction_rule() instead of listing op names.
#pragma once

#include "graph/ops.h"

namespace stitch {

enum class ReduceTerm { Value, Abs, Square };
enum class ReduceCombine { Sum, Prod, Max, Min, LogSumExp };
enum class ReduceFinish { None, Mean, Sqrt, Log, Shifted };

struct ReductionRule {
  ReduceTerm term;
  ReduceCombine combine;
  ReduceFinish finish;
  // The passes over a line it takes: 2 for LogSumExp (the maximum, then the sum), else 1.
  int passes() const { return combine == ReduceCombine::LogSumExp ? 2 : 1; }
};

// The rule of `op`, or nullptr for an op that does not reduce this way (ArgMax, CumSum, the
// normalizations, every non-reduction).
const ReductionRule* reduction_rule(OpKind op);

} // namespace stitch
