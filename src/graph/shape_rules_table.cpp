// The shape rule of each op, from the op table (ops.def).
#include <iterator>

#include "graph/error.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {
constexpr ShapeRule kRules[] = {
#define STITCH_OP(name, category, rule, fold, device) &rule,
#include "graph/ops.def"
#undef STITCH_OP
};
} // namespace

ShapeRule shape_rule(OpKind op) {
  auto index = static_cast<size_t>(op);
  STITCH_INTERNAL_CHECK(index < std::size(kRules), "op kind {} has no shape rule", index);
  return kRules[index];
}

} // namespace stitch
