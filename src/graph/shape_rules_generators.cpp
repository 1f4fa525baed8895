// Shape rules of the ops that generate values rather than move them: Range, Shape, Size,
// Constant and ConstantOfShape (all in the Movement category of the op table). Their
// parameters are read by op_params.h, which their folds share.
#include <vector>

#include "graph/error.h"
#include "graph/op_params.h"
#include "graph/shape_rules.h"

namespace stitch {

void rule_range(InferContext& ctx) {
  ctx.require_opset(11);
  ctx.expect_inputs(3, 3);
  RangeParams range = read_range_params(ctx);
  ctx.set_output(0, ctx.dtype(0), {range.count});
}

void rule_shape(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  DimRange dims = read_shape_range(ctx);
  ctx.set_output(0, DType::Int64, {dims.end - dims.start});
}

void rule_size(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.set_output(0, DType::Int64, {});
}

void rule_constant_of_shape(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  Shape out = ctx.const_int_vector(0, "shape");
  for (int64_t d : out)
    if (d < 0) ctx.fail("shape (input 0) has the negative dimension {}", d);
  ctx.set_output(0, read_fill_value(ctx).dtype, std::move(out));
}

void rule_constant(InferContext& ctx) {
  ctx.expect_inputs(0, 0);
  ConstantValue value = read_constant_value(ctx);
  ctx.set_output(0, value.dtype, std::move(value.shape));
}

} // namespace stitch
