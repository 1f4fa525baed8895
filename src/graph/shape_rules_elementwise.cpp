// Shape rules of the Elementwise and Broadcast categories: one output element from the
// same-index (or numpy-broadcast) element of each input. These rules check dtypes, since
// a kernel is generated per dtype, and the broadcast of the operand shapes.
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/op_params.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

// The inputs' shapes, a symbolic dim by its expression (the planning binding's value after it).
std::string shapes_list(const InferContext& ctx) {
  std::vector<std::string> shapes;
  bool symbolic = false;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      shapes.push_back("(omitted)");
      continue;
    }
    const Tensor& t = ctx.input(i);
    symbolic = symbolic || t.is_dynamic();
    shapes.push_back(t.is_dynamic() ? sym_shape_to_string(t.sym_shape())
                                    : shape_to_string(ctx.shape(i)));
  }
  std::string list = fmt::format("{}", fmt::join(shapes, ", "));
  if (!symbolic) return list;
  std::vector<std::string> planned;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    planned.push_back(ctx.has_input(i) ? shape_to_string(ctx.shape(i)) : "(omitted)");
  return fmt::format("{} ({} at the planning binding)", list, fmt::join(planned, ", "));
}

// The numpy broadcast of every present input's shape.
Shape broadcast_all_inputs(const InferContext& ctx) {
  Shape out;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    std::optional<Shape> b = broadcast_shapes(out, ctx.shape(i));
    if (!b) ctx.fail("input shapes {} do not broadcast together", shapes_list(ctx));
    out = *b;
  }
  return out;
}

void expect_same_dtype(const InferContext& ctx, int first, int last) {
  for (int i = first + 1; i <= last; ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.dtype(i) != ctx.dtype(first))
      ctx.fail("input {} is {} but input {} is {}; they must have the same type", i,
               dtype_name(ctx.dtype(i)), first, dtype_name(ctx.dtype(first)));
  }
}

void expect_not_bool(const InferContext& ctx, int i) {
  if (ctx.dtype(i) == DType::Bool) ctx.fail("input {} must be numeric, got bool", i);
}

void expect_bool(const InferContext& ctx, int i) {
  if (ctx.dtype(i) != DType::Bool)
    ctx.fail("input {} must be a bool tensor, got {}", i, dtype_name(ctx.dtype(i)));
}

// Sum, Mean, Max and Min take any number of inputs; the other broadcast ops take two.
bool is_variadic(OpKind op) {
  return op == OpKind::Sum || op == OpKind::Mean || op == OpKind::Max || op == OpKind::Min;
}

// A Clip bound (opset 11+) or Pow exponent-like operand that must hold one element.
void expect_single_element(const InferContext& ctx, int i, const char* what) {
  if (!ctx.has_input(i)) return;
  if (ctx.input(i).elements() != 1)
    ctx.fail("{} must be a scalar, got shape {}", what, shape_to_string(ctx.shape(i)));
}

} // namespace

void rule_unary(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  expect_not_bool(ctx, 0);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_unary_float(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_float_input(0);
  if (ctx.op() == OpKind::Gelu) {
    ctx.require_opset(20);
    std::string approximate = ctx.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      ctx.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"", approximate);
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_unary_bool_in(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  expect_bool(ctx, 0);
  ctx.set_output(0, DType::Bool, ctx.shape(0));
}

void rule_unary_to_bool(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_float_input(0);
  ctx.set_output(0, DType::Bool, ctx.shape(0));
}

void rule_clip(InferContext& ctx) {
  if (ctx.opset() < 11) {
    ctx.expect_inputs(1, 1);
    ctx.expect_float_input(0);
    (void)ctx.attr_float("min", 0.0); // kind checks
    (void)ctx.attr_float("max", 0.0);
  } else {
    ctx.expect_inputs(1, 3);
    expect_not_bool(ctx, 0);
    expect_same_dtype(ctx, 0, 2);
    expect_single_element(ctx, 1, "min (input 1)");
    expect_single_element(ctx, 2, "max (input 2)");
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_cast(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  int64_t to = ctx.req_int("to");
  if (to < 0 || to > INT32_MAX) ctx.fail("attribute 'to' is not a data type code: {}", to);
  std::optional<DType> dtype = dtype_from_onnx(static_cast<int>(to));
  if (!dtype)
    ctx.fail("unsupported Cast target type {}", onnx_dtype_code_name(static_cast<int>(to)));
  ctx.set_output(0, *dtype, ctx.shape(0));
}

void rule_cast_like(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0));
}

void rule_broadcast(InferContext& ctx) {
  if (is_variadic(ctx.op()))
    ctx.expect_inputs(1, ctx.num_inputs() > 0 ? ctx.num_inputs() : 1);
  else
    ctx.expect_inputs(2, 2);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) ctx.fail("input {} is omitted; every input of this op is required", i);
  expect_same_dtype(ctx, 0, ctx.num_inputs() - 1);
  expect_not_bool(ctx, 0);
  if (ctx.op() == OpKind::Mod) (void)ctx.attr_flag("fmod", false);
  Shape out = broadcast_all_inputs(ctx);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_pow(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_not_bool(ctx, 0);
  expect_not_bool(ctx, 1);
  Shape out = broadcast_all_inputs(ctx);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_compare(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_same_dtype(ctx, 0, 1);
  Shape out = broadcast_all_inputs(ctx);
  ctx.set_output(0, DType::Bool, std::move(out));
}

void rule_logical(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_bool(ctx, 0);
  expect_bool(ctx, 1);
  Shape out = broadcast_all_inputs(ctx);
  ctx.set_output(0, DType::Bool, std::move(out));
}

void rule_where(InferContext& ctx) {
  ctx.expect_inputs(3, 3);
  expect_bool(ctx, 0);
  expect_same_dtype(ctx, 1, 2);
  Shape out = broadcast_all_inputs(ctx);
  ctx.set_output(0, ctx.dtype(1), std::move(out));
}

void rule_prelu(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_not_bool(ctx, 0);
  expect_same_dtype(ctx, 0, 1);
  // The slope broadcasts to X's shape; X's shape never grows.
  std::optional<Shape> b = broadcast_shapes(ctx.shape(0), ctx.shape(1));
  if (!b || *b != ctx.shape(0))
    ctx.fail("slope of shape {} does not broadcast to X of shape {}", shape_to_string(ctx.shape(1)),
             shape_to_string(ctx.shape(0)));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_expand(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  if (ctx.rank(1) != 1)
    ctx.fail("shape (input 1) must be 1-D, got shape {}", shape_to_string(ctx.shape(1)));
  Shape target = ctx.const_ints(1, "shape");
  for (int64_t d : target)
    if (d < 0) ctx.fail("shape (input 1) has a negative dimension {}", d);
  std::optional<Shape> out = broadcast_shapes(ctx.shape(0), target);
  if (!out)
    ctx.fail("input of shape {} cannot be expanded to shape {}", shape_to_string(ctx.shape(0)),
             shape_to_string(target));
  ctx.set_output(0, ctx.dtype(0), std::move(*out));
}

void rule_batch_norm(InferContext& ctx) {
  ctx.expect_inputs(5, 5);
  if (ctx.attr_int("training_mode", 0) != 0)
    ctx.fail("training_mode=1 is unsupported: stitchc compiles inference, where the input "
             "statistics are used as they are");
  if (ctx.opset() < 9 && ctx.attr_int("spatial", 1) != 1)
    ctx.fail("spatial=0 (per-activation statistics) is unsupported");
  for (int i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.has_output(i))
      ctx.fail("output {} (running or saved statistics) is only produced in training mode, "
               "which stitchc does not compile",
               i);
  ctx.expect_float_input(0);
  if (ctx.rank(0) < 2)
    ctx.fail("X must have rank 2 or more ([N, C, ...]), got shape {}",
             shape_to_string(ctx.shape(0)));
  int64_t channels = ctx.shape(0)[1];
  static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) {
    ctx.expect_float_input(i);
    if (ctx.shape(i) != Shape{channels})
      ctx.fail("{} must have shape [{}] (the channel count of X), got {}", kNames[i], channels,
               shape_to_string(ctx.shape(i)));
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// RotaryEmbedding (opset 23): X [batch, heads, sequence, head] or, with num_heads,
// [batch, sequence, heads * head]; cos and sin caches of half the rotary dimension (or more) per
// position, [positions, n] indexed by position_ids [batch, sequence], or [batch, sequence, n]
// without them. Y is X's shape and type.
void rule_rotary_embedding(InferContext& ctx) {
  ctx.require_opset(23);
  ctx.expect_inputs(3, 4);
  ctx.expect_float_input(0);
  const Shape& x = ctx.shape(0);
  const RotaryParams r = read_rotary_params(ctx);
  const int64_t batch = r.batch, sequence = r.sequence, rotary = r.rotary;
  const bool positions = ctx.has_input(3);
  for (int i : {1, 2}) {
    const char* what = i == 1 ? "cos_cache" : "sin_cache";
    if (ctx.dtype(i) != ctx.dtype(0))
      ctx.fail("{} is {}, X is {}", what, dtype_name(ctx.dtype(i)), dtype_name(ctx.dtype(0)));
    const Shape& c = ctx.shape(i);
    const bool ok = positions
                        ? c.size() == 2 && c[1] >= rotary / 2
                        : c.size() == 3 && c[0] == batch && c[1] == sequence && c[2] >= rotary / 2;
    if (!ok)
      ctx.fail("{} {} must be {} with at least {} values per position", what, shape_to_string(c),
               positions ? "[positions, n]" : "[batch, sequence, n] without position_ids",
               rotary / 2);
  }
  if (positions) {
    if (ctx.dtype(3) != DType::Int64) ctx.fail("position_ids must be int64");
    if (ctx.shape(3) != Shape{batch, sequence})
      ctx.fail("position_ids {} must be [batch, sequence] = [{}, {}]",
               shape_to_string(ctx.shape(3)), batch, sequence);
  }
  ctx.set_output(0, ctx.dtype(0), x);
}

} // namespace stitch
