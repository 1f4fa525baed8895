// Shape rules of the Reduction category: outputs that combine many input elements along
// axes (Reduce*, ArgMax/ArgMin, CumSum, Softmax, the normalizations, global pooling).
// Where ONNX moved an operand from an attribute to an input, the node's opset decides
// which one is read (for Reduce*, in op_params.h, which the fold shares).
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/op_params.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

// stash_type is a TensorProto data type; only floating types make sense for statistics.
DType stash_dtype(const InferContext& ctx) {
  int64_t code = ctx.attr_int("stash_type", 1);
  std::optional<DType> t;
  if (code > 0 && code <= INT32_MAX) t = dtype_from_onnx(static_cast<int>(code));
  if (!t || !dtype_is_float(*t))
    ctx.fail("attribute 'stash_type' must be a floating-point data type code, got {}", code);
  return *t;
}

// `what` must broadcast to X's shape without growing it (ONNX unidirectional broadcast).
void expect_broadcasts_to_x(const InferContext& ctx, int i, const char* what) {
  if (!ctx.has_input(i)) return;
  std::optional<Shape> b = broadcast_shapes(ctx.shape(0), ctx.shape(i));
  if (!b || *b != ctx.shape(0))
    ctx.fail("{} of shape {} does not broadcast to X of shape {}", what,
             shape_to_string(ctx.shape(i)), shape_to_string(ctx.shape(0)));
}

void expect_channel_vector(const InferContext& ctx, int i, const char* what, int64_t length,
                           const char* length_name) {
  if (ctx.shape(i) != Shape{length})
    ctx.fail("{} must have shape [{}] ({}), got {}", what, length, length_name,
             shape_to_string(ctx.shape(i)));
}

// X's shape with the reduced axes set to 1 (keepdims) or removed.
Shape reduced_shape(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d])
      out.push_back(in[d]);
    else if (keepdims)
      out.push_back(1);
  }
  return out;
}

} // namespace

void rule_reduce(InferContext& ctx) {
  ctx.expect_inputs(1, ctx.opset() >= reduce_axes_input_opset(ctx.op()) ? 2 : 1);
  ReduceParams reduce = read_reduce_params(ctx);
  if (reduce.noop) {
    ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
    return;
  }
  ctx.set_output(0, ctx.dtype(0), reduced_shape(ctx.shape(0), reduce.reduced, reduce.keepdims));
}

void rule_arg_reduce(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  int64_t rank = ctx.rank(0);
  if (rank == 0) ctx.fail("input must have rank 1 or more, got a scalar");
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", 0), rank);
  bool keepdims = ctx.attr_flag("keepdims", true);
  if (ctx.shape(0)[axis] == 0)
    ctx.fail("cannot take {} over the empty axis {}", op_name(ctx.op()), axis);
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  reduced[axis] = true;
  ctx.set_output(0, DType::Int64, reduced_shape(ctx.shape(0), reduced, keepdims));
}

void rule_cumsum(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  if (ctx.dtype(0) == DType::Bool) ctx.fail("x must be numeric, got bool");
  if (ctx.input(1).elements() != 1 || ctx.rank(1) > 1)
    ctx.fail("axis (input 1) must be a scalar, got shape {}", shape_to_string(ctx.shape(1)));
  std::vector<int64_t> axis = ctx.const_ints(1, "axis");
  if (ctx.rank(0) == 0) ctx.fail("x must have rank 1 or more, got a scalar");
  ctx.normalize_axis(axis[0], ctx.rank(0));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_softmax(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_float_input(0);
  int64_t rank = ctx.rank(0);
  // Before opset 13 the input is coerced to 2-D at `axis` (default 1); from 13 the op
  // works along one axis (default -1).
  int64_t axis = ctx.attr_int("axis", ctx.opset() < 13 ? 1 : -1);
  if (ctx.opset() < 13) {
    if (axis < -rank || axis > rank)
      ctx.fail("axis {} is out of range for a tensor of rank {}", axis, rank);
  } else {
    if (rank == 0) ctx.fail("input must have rank 1 or more, got a scalar");
    ctx.normalize_axis(axis, rank);
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_layer_norm(InferContext& ctx) {
  ctx.require_opset(17);
  ctx.expect_inputs(2, 3);
  ctx.expect_float_input(0);
  int64_t rank = ctx.rank(0);
  if (rank == 0) ctx.fail("X must have rank 1 or more, got a scalar");
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", -1), rank);
  DType stash = stash_dtype(ctx);
  for (int i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.dtype(i) != ctx.dtype(0))
      ctx.fail("input {} is {} but X is {}; they must have the same type", i,
               dtype_name(ctx.dtype(i)), dtype_name(ctx.dtype(0)));
  expect_broadcasts_to_x(ctx, 1, "Scale");
  expect_broadcasts_to_x(ctx, 2, "B");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  Shape stats = ctx.shape(0);
  for (int64_t d = axis; d < rank; ++d)
    stats[d] = 1;
  ctx.set_output(1, stash, stats);
  ctx.set_output(2, stash, stats);
}

void rule_instance_norm(InferContext& ctx) {
  ctx.expect_inputs(3, 3);
  ctx.expect_float_input(0);
  if (ctx.rank(0) < 3)
    ctx.fail("input must have rank 3 or more ([N, C, D1, ...]), got shape {}",
             shape_to_string(ctx.shape(0)));
  int64_t channels = ctx.shape(0)[1];
  expect_channel_vector(ctx, 1, "scale", channels, "the channel count of the input");
  expect_channel_vector(ctx, 2, "B", channels, "the channel count of the input");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_group_norm(InferContext& ctx) {
  ctx.require_opset(18);
  ctx.expect_inputs(3, 3);
  ctx.expect_float_input(0);
  if (ctx.rank(0) < 2)
    ctx.fail("X must have rank 2 or more ([N, C, ...]), got shape {}",
             shape_to_string(ctx.shape(0)));
  int64_t channels = ctx.shape(0)[1];
  int64_t groups = ctx.req_int("num_groups");
  if (groups <= 0) ctx.fail("attribute 'num_groups' must be positive, got {}", groups);
  if (channels % groups != 0)
    ctx.fail("the channel count {} is not divisible by num_groups {}", channels, groups);
  (void)stash_dtype(ctx);
  // Opset 18 gives one scale and bias per group; opset 21 one per channel.
  if (ctx.opset() < 21) {
    expect_channel_vector(ctx, 1, "scale", groups, "num_groups, as in opset 18");
    expect_channel_vector(ctx, 2, "bias", groups, "num_groups, as in opset 18");
  } else {
    expect_channel_vector(ctx, 1, "scale", channels, "the channel count of X");
    expect_channel_vector(ctx, 2, "bias", channels, "the channel count of X");
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_rms_norm(InferContext& ctx) {
  ctx.require_opset(23);
  ctx.expect_inputs(2, 2);
  ctx.expect_float_input(0);
  ctx.expect_float_input(1);
  int64_t rank = ctx.rank(0);
  if (rank == 0) ctx.fail("X must have rank 1 or more, got a scalar");
  ctx.normalize_axis(ctx.attr_int("axis", -1), rank);
  (void)stash_dtype(ctx);
  expect_broadcasts_to_x(ctx, 1, "scale");
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0)); // Y has scale's type (V)
}

void rule_global_pool(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_float_input(0);
  if (ctx.rank(0) < 3)
    ctx.fail("input must have rank 3 or more ([N, C, D1, ...]), got shape {}",
             shape_to_string(ctx.shape(0)));
  Shape out = ctx.shape(0);
  for (size_t d = 2; d < out.size(); ++d) {
    if (out[d] == 0) ctx.fail("cannot pool over the empty spatial axis {}", d);
    out[d] = 1;
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

} // namespace stitch
