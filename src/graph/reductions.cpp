// reduction_rule: a lookup in the reduction table (reductions.def).
#include "graph/reductions.h"

#include <array>
#include <optional>

namespace stitch {

namespace {

constexpr int kOpCount = 0
#define STITCH_OP(name, category, rule, fold, device) +1
#include "graph/ops.def"
#undef STITCH_OP
    ;

using RuleTable = std::array<std::optional<ReductionRule>, kOpCount>;

constexpr RuleTable make_rules() {
  RuleTable rules{};
#define STITCH_REDUCTION(op, term, combine, finish)                                                \
  rules[static_cast<int>(OpKind::op)] =                                                            \
      ReductionRule{ReduceTerm::term, ReduceCombine::combine, ReduceFinish::finish};
#include "graph/reductions.def"
#undef STITCH_REDUCTION
  return rules;
}

constexpr RuleTable kRules = make_rules();

} // namespace

const ReductionRule* reduction_rule(OpKind op) {
  const std::optional<ReductionRule>& rule = kRules[static_cast<int>(op)];
  return rule ? &*rule : nullptr;
}

} // namespace stitch
