// Readers of the operands and attributes that both a shape rule and a host evaluator (fold)
// need. Each reads one op's parameters the way ONNX defines them for the node's opset
// (attribute or input, defaults, negative axes, clamping), checks them, and returns them
// normalized. The rule calls the reader to validate the node and to compute output shapes;
// the fold calls it again, where it cannot fail (the rule has passed), to get the very same
// numbers. One reader per op keeps the two from drifting apart.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/infer_context.h"

namespace stitch {

// ---- Reductions ----

// The opset from which a Reduce* op takes its axes as input 1 instead of attribute 'axes'.
int reduce_axes_input_opset(OpKind op);

struct ReduceParams {
  // Empty axes with noop_with_empty_axes=1: the output is the input as it is.
  bool noop = false;
  std::vector<bool> reduced; // per input axis (all of them for empty axes)
  bool keepdims = true;
};
ReduceParams read_reduce_params(const NodeContext& ctx);

// ---- Windows (Conv, ConvTranspose, MaxPool, AveragePool) ----

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

// The spatial attributes of a window op, one entry per spatial axis, checked: kernel (the
// caller's kernel_shape or filter size), strides and dilations (default 1), pads (all begins,
// then all ends; default 0) and auto_pad.
struct WindowParams {
  std::vector<int64_t> kernel, strides, dilations, pads;
  AutoPad auto_pad = AutoPad::NotSet;
};
WindowParams read_window_params(const NodeContext& ctx, std::vector<int64_t> kernel);

// The padding of a forward window (Conv, MaxPool, AveragePool) on spatial axis i that slides
// over `in` elements to give `out` windows: the pads attribute (NOTSET), none (VALID), or with
// SAME_UPPER / SAME_LOWER the padding the `out` windows need, split with the odd one at the end
// (SAME_UPPER) or at the begin (SAME_LOWER). The one resolution of auto_pad: the shape rules,
// the window kernels and the convolution library calls all use it.
struct AxisPads {
  int64_t begin = 0, end = 0;
};
AxisPads window_pads(const WindowParams& w, size_t i, int64_t in, int64_t out);
// The same over symbolic extents: the pads as expressions of the symbols (SAME's depend on the
// extent: max(0, (out - 1) * stride + extent - in) split as above).
struct SymAxisPads {
  DimExpr begin, end;
};
SymAxisPads window_pads(const WindowParams& w, size_t i, const DimExpr& in, const DimExpr& out,
                        const SymbolRanges& ranges);

// ---- Movement ----

// Transpose's permutation (default: the axes reversed), checked to be one.
std::vector<int64_t> read_perm(const NodeContext& ctx);

// One sliced axis of Slice: the start after ONNX clamping, the step, and the number of
// elements selected.
struct SliceAxis {
  int64_t axis = 0;
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};
// Pad's pads per axis of the data, begins then ends (2 * rank entries, 0 for an axis not
// padded): the attribute before opset 11, else input 1 with the optional axes of input 3.
std::vector<int64_t> read_pads_per_axis(const NodeContext& ctx);
// The same over symbolic dims: pads computed from the symbols (input 1's expressions: a length
// padded to a multiple of a block) as expressions, constant ones as constants.
std::vector<DimExpr> read_sym_pads_per_axis(const NodeContext& ctx);
// starts/ends/axes/steps from attributes (before opset 10) or inputs 1-4.
std::vector<SliceAxis> read_slice_params(const NodeContext& ctx);

// Index `value` into an axis of size `dim` of data, made non-negative; a value outside
// [-dim, dim) is an error naming `what` (the index input) and the axis.
int64_t check_index(const NodeContext& ctx, int64_t value, int64_t axis, int64_t dim,
                    const char* what);
// The constant index input i, each value checked against axis `axis` of size `dim`.
std::vector<int64_t> read_const_indices(const NodeContext& ctx, int i, int64_t axis, int64_t dim,
                                        const char* what);

// ---- Value generators ----

// Shape's [start, end) range of dims (attributes from opset 15), clamped to the rank.
struct DimRange {
  int64_t start = 0;
  int64_t end = 0;
};
DimRange read_shape_range(const NodeContext& ctx);

// Range's scalars: start and delta in the domain of the dtype, and the element count
// ceil((limit - start) / delta), at least 0.
struct RangeParams {
  bool is_float = false;
  double start_real = 0, delta_real = 0; // for floating dtypes
  int64_t start_int = 0, delta_int = 0;  // for integer dtypes
  int64_t count = 0;
};
RangeParams read_range_params(const NodeContext& ctx);

// The value of a Constant node, from whichever value attribute it has.
struct ConstantValue {
  DType dtype = DType::Float32;
  Shape shape;
  std::shared_ptr<const ConstantData> data;
};
ConstantValue read_constant_value(const NodeContext& ctx);

// ConstantOfShape's fill element (attribute 'value'; default a float32 0) as bytes.
struct FillValue {
  DType dtype = DType::Float32;
  std::string element;
};
FillValue read_fill_value(const NodeContext& ctx);

// ---- Composites lowered by lower-composites (the rule and the lowering read these) ----

// Einsum's equation as a label per axis: a letter is its character code; the "..." dims are
// kEinsumEllipsisLabel + j, j counting from the left of the broadcast "..." shape (an operand
// with fewer "..." dims takes the rightmost ids, as broadcasting aligns them). The output is
// the explicit one or the implicit one ("..." first, then the letters used once, in ASCII
// order). The shape rule has validated the equation against the inputs' ranks.
constexpr int kEinsumEllipsisLabel = 128;
struct EinsumLabels {
  std::vector<std::vector<int>> inputs; // per input, a label per axis
  std::vector<int> output;              // a label per output axis
};
EinsumLabels read_einsum_labels(const NodeContext& ctx);

// RotaryEmbedding's heads: X [batch, heads, sequence, head] or, with num_heads,
// [batch, sequence, heads * head]; the rotated part of each head (rotary_embedding_dim, 0: the
// whole head), even and at most the head.
struct RotaryParams {
  int64_t batch = 0, sequence = 0, heads = 0, head = 0, rotary = 0;
  bool four_d = true, interleaved = false;
};
RotaryParams read_rotary_params(const NodeContext& ctx);

// Attention's dimensions: Q, K and V all 4-D [batch, heads, sequence, head] or all 3-D
// [batch, sequence, heads * head] with q_num_heads and kv_num_heads; q_heads a multiple of
// kv_heads; past keys (input 4, if any) before the new ones: total = past + kv_sequence.
struct AttentionParams {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_sequence = 0, kv_sequence = 0;
  int64_t head = 0, v_head = 0, past = 0, total = 0;
  bool four_d = true;
};
AttentionParams read_attention_params(const NodeContext& ctx);
// The same dims over symbolic dims: the batch and the sequences as expressions of the symbols
// (the heads and head sizes are fixed); `fixed` says why not where another dim is symbolic or
// the inputs' batches and sequences differ as expressions (empty: they are as above).
struct AttentionDims {
  DimExpr batch, q_sequence, kv_sequence, past, total;
  std::string not_symbolic; // why the dims cannot be carried over the symbols, or empty
};
AttentionDims read_attention_dims(const NodeContext& ctx);

} // namespace stitch
