// The operator kinds and categories of stitchc's IR, generated from the table in ops.def.
#pragma once

#include <optional>
#include <string_view>

namespace stitch {

enum class OpCategory { Elementwise, Broadcast, Reduction, Movement, Gemm, Conv, Opaque };

enum class OpKind {
#define STITCH_OP(name, category, rule, fold, device) name,
#include "graph/ops.def"
#undef STITCH_OP
};

std::string_view op_name(OpKind op);
OpCategory op_category(OpKind op);
// The pointwise device function spec from the table ("leaky_relu(alpha=0.01)"), or "".
std::string_view op_device_function(OpKind op);
std::string_view category_name(OpCategory c);
// An ONNX op_type of the default domain that stitchc supports; internal ops are not found.
std::optional<OpKind> op_from_onnx(std::string_view op_type);
bool op_is_internal(OpKind op);
// Ops whose output 0 holds exactly the bytes of input 0 under another shape (Identity,
// Dropout at inference, Reshape, Flatten, Squeeze, Unsqueeze, View): they need no kernel.
bool op_reinterprets_storage(OpKind op);
// Pointwise: one output element from the same-index (or broadcast) element of each operand,
// evaluated by a device expression: an elementwise or broadcast op with a device function in
// the table, Cast, CastLike, or Expand (a broadcast read). The one definition every planner and
// emitter asks.
bool op_is_pointwise(OpKind op);

} // namespace stitch
