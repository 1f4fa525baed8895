// Shape rules of the Gemm, Conv and Opaque categories: matrix products (MatMul, Gemm,
// Einsum), windowed ops (Conv, ConvTranspose, MaxPool, AveragePool) and TopK.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/op_params.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

void expect_same_dtype(const InferContext& ctx, int i, int j) {
  if (ctx.has_input(i) && ctx.has_input(j) && ctx.dtype(i) != ctx.dtype(j))
    ctx.fail("input {} is {} but input {} is {}; they must have the same type", i,
             dtype_name(ctx.dtype(i)), j, dtype_name(ctx.dtype(j)));
}

// ---- Windowed ops (Conv, ConvTranspose, pools) ----

int64_t effective_kernel(const InferContext& ctx, const WindowParams& w, size_t i) {
  return ctx.checked_add(ctx.checked_mul(w.kernel[i] - 1, w.dilations[i], "dilated kernel"), 1,
                         "dilated kernel");
}

// The output size of spatial axis i of a convolution or pooling window sliding over `in`.
// With ceil_mode a partial last window counts, but only if it starts inside the input or
// the begin padding (windows starting in the end padding are dropped).
int64_t window_output(const InferContext& ctx, const WindowParams& w, size_t i, int64_t in,
                      bool ceil_mode) {
  int64_t k = effective_kernel(ctx, w, i), s = w.strides[i];
  if (w.auto_pad == AutoPad::SameUpper || w.auto_pad == AutoPad::SameLower)
    return in / s + (in % s != 0 ? 1 : 0);
  const auto [begin, end] = window_pads(w, i, in, /*out=*/0); // NOTSET or VALID: out unused
  int64_t padded = ctx.checked_add(ctx.checked_add(in, begin, "padded size"), end, "padded size");
  if (padded < k)
    ctx.fail("spatial axis {} of size {} (padded to {}) is smaller than the kernel extent {}", i,
             in, padded, k);
  int64_t span = padded - k;
  if (!ceil_mode) return span / s + 1;
  int64_t out = span / s + (span % s != 0 ? 1 : 0) + 1;
  // Drop a last window that would start in the end padding.
  if (ctx.checked_mul(out - 1, s, "window start") >= in + begin) --out;
  return out;
}

// ---- Einsum ----

// One operand's subscripts: letters in order, and where "..." stands (or -1).
struct EinsumTerm {
  std::string labels;
  int ellipsis_at = -1;
};

EinsumTerm parse_einsum_term(const InferContext& ctx, const std::string& text) {
  EinsumTerm term;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      term.labels += c;
    } else if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || term.ellipsis_at >= 0)
        ctx.fail("equation term \"{}\" has a '.' that is not one \"...\"", text);
      term.ellipsis_at = static_cast<int>(term.labels.size());
      i += 2;
    } else {
      ctx.fail("equation term \"{}\" has the invalid character '{}'", text, c);
    }
  }
  return term;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

} // namespace

void rule_matmul(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_same_dtype(ctx, 0, 1);
  if (ctx.dtype(0) == DType::Bool) ctx.fail("MatMul does not take bool inputs");
  Shape a = ctx.shape(0), b = ctx.shape(1);
  if (a.empty() || b.empty())
    ctx.fail("operands must have rank 1 or more, got {} and {}", shape_to_string(a),
             shape_to_string(b));
  // numpy: a 1-D A is a row vector, a 1-D B a column vector; the added axis is dropped.
  bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  if (k != k2)
    ctx.fail("the inner dimensions of {} and {} differ ({} and {})", shape_to_string(ctx.shape(0)),
             shape_to_string(ctx.shape(1)), k, k2);
  std::optional<Shape> batch =
      broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch)
    ctx.fail("the batch dimensions of {} and {} do not broadcast", shape_to_string(ctx.shape(0)),
             shape_to_string(ctx.shape(1)));
  Shape out = *batch;
  if (!a_vector) out.push_back(m);
  if (!b_vector) out.push_back(n);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_gemm(InferContext& ctx) {
  ctx.expect_inputs(2, 3);
  expect_same_dtype(ctx, 0, 1);
  expect_same_dtype(ctx, 0, 2);
  if (ctx.dtype(0) == DType::Bool) ctx.fail("Gemm does not take bool inputs");
  if (ctx.rank(0) != 2 || ctx.rank(1) != 2)
    ctx.fail("A and B must be matrices, got {} and {}", shape_to_string(ctx.shape(0)),
             shape_to_string(ctx.shape(1)));
  bool trans_a = ctx.attr_flag("transA", false), trans_b = ctx.attr_flag("transB", false);
  const Shape &a = ctx.shape(0), &b = ctx.shape(1);
  int64_t m = trans_a ? a[1] : a[0], k = trans_a ? a[0] : a[1];
  int64_t k2 = trans_b ? b[1] : b[0], n = trans_b ? b[0] : b[1];
  if (k != k2)
    ctx.fail("the inner dimensions of A {} and B {} differ ({} and {}) with transA={} transB={}",
             shape_to_string(a), shape_to_string(b), k, k2, trans_a, trans_b);
  Shape out{m, n};
  if (ctx.has_input(2)) {
    std::optional<Shape> c = broadcast_shapes(out, ctx.shape(2));
    if (!c || *c != out)
      ctx.fail("C of shape {} does not broadcast to the output {}", shape_to_string(ctx.shape(2)),
               shape_to_string(out));
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_einsum(InferContext& ctx) {
  ctx.require_opset(12);
  ctx.expect_inputs(1, ctx.num_inputs() > 0 ? ctx.num_inputs() : 1);
  for (int i = 1; i < ctx.num_inputs(); ++i)
    expect_same_dtype(ctx, 0, i);
  std::string equation;
  for (char c : ctx.attr_string("equation", ""))
    if (c != ' ') equation += c;
  if (equation.empty()) ctx.fail("attribute 'equation' is missing or empty");
  size_t arrow = equation.find("->");
  if (arrow != std::string::npos && equation.find("->", arrow + 2) != std::string::npos)
    ctx.fail("equation \"{}\" has more than one \"->\"", equation);
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms = split_on(lhs, ',');
  if (static_cast<int>(terms.size()) != ctx.num_inputs())
    ctx.fail("equation \"{}\" has {} operand terms for {} inputs", equation, terms.size(),
             ctx.num_inputs());

  std::array<int64_t, 128> label_dim;
  label_dim.fill(-1);
  std::array<int, 128> label_count{};
  Shape ellipsis_shape;
  bool any_ellipsis = false;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    EinsumTerm term = parse_einsum_term(ctx, terms[i]);
    const Shape& shape = ctx.shape(i);
    int64_t letters = static_cast<int64_t>(term.labels.size());
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t ellipsis_rank = term.ellipsis_at >= 0 ? rank - letters : 0;
    if (ellipsis_rank < 0 || (term.ellipsis_at < 0 && letters != rank))
      ctx.fail("equation term \"{}\" does not fit input {} of shape {}", terms[i], i,
               shape_to_string(shape));
    if (term.ellipsis_at >= 0) {
      any_ellipsis = true;
      Shape part(shape.begin() + term.ellipsis_at,
                 shape.begin() + term.ellipsis_at + ellipsis_rank);
      std::optional<Shape> b = broadcast_shapes(ellipsis_shape, part);
      if (!b) ctx.fail("the \"...\" dimensions of the inputs do not broadcast");
      ellipsis_shape = *b;
    }
    std::array<int64_t, 128> in_term;
    in_term.fill(-1);
    for (int64_t j = 0; j < letters; ++j) {
      char c = term.labels[j];
      int64_t axis = j < term.ellipsis_at || term.ellipsis_at < 0 ? j : j + ellipsis_rank;
      int64_t d = shape[axis];
      if (in_term[c] >= 0 && in_term[c] != d)
        ctx.fail("label '{}' repeats in term \"{}\" over dimensions {} and {}", c, terms[i],
                 in_term[c], d);
      ++label_count[c]; // a label used twice, even in one term, is summed over
      in_term[c] = d;
      int64_t& known = label_dim[c];
      if (known < 0 || known == 1)
        known = d;
      else if (d != known && d != 1)
        ctx.fail("label '{}' has the dimensions {} and {}, which do not broadcast", c, known, d);
    }
  }

  EinsumTerm output;
  if (arrow != std::string::npos) {
    output = parse_einsum_term(ctx, equation.substr(arrow + 2));
    std::array<bool, 128> seen{};
    for (char c : output.labels) {
      if (label_dim[c] < 0) ctx.fail("output label '{}' is not in any input term", c);
      if (seen[c]) ctx.fail("output label '{}' appears twice", c);
      seen[c] = true;
    }
    if (output.ellipsis_at < 0 && !ellipsis_shape.empty())
      ctx.fail("equation \"{}\" drops the \"...\" dimensions from the output", equation);
    if (output.ellipsis_at >= 0 && !any_ellipsis)
      output.ellipsis_at = -1; // "..." over no dimensions
  } else {
    // Implicit output: "..." first, then the labels used exactly once, in ASCII order.
    output.ellipsis_at = any_ellipsis ? 0 : -1;
    for (int c = 0; c < 128; ++c)
      if (label_count[c] == 1) output.labels += static_cast<char>(c);
  }
  Shape out;
  for (size_t j = 0; j <= output.labels.size(); ++j) {
    if (static_cast<int>(j) == output.ellipsis_at)
      out.insert(out.end(), ellipsis_shape.begin(), ellipsis_shape.end());
    if (j < output.labels.size()) out.push_back(label_dim[output.labels[j]]);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_conv(InferContext& ctx) {
  ctx.expect_inputs(2, 3);
  ctx.expect_float_input(0);
  expect_same_dtype(ctx, 0, 1);
  expect_same_dtype(ctx, 0, 2);
  const Shape &x = ctx.shape(0), &w = ctx.shape(1);
  if (x.size() < 3 || w.size() != x.size())
    ctx.fail("X {} must be [N, C, D1, ...] and W {} [M, C/group, k1, ...] of the same rank",
             shape_to_string(x), shape_to_string(w));
  int64_t group = ctx.attr_int("group", 1);
  if (group < 1) ctx.fail("attribute 'group' must be positive, got {}", group);
  if (ctx.checked_mul(w[1], group, "input channels") != x[1])
    ctx.fail("X has {} channels but W {} with group {} expects {}", x[1], shape_to_string(w), group,
             w[1] * group);
  if (w[0] % group != 0)
    ctx.fail("the output channel count {} is not divisible by group {}", w[0], group);
  if (ctx.has_input(2) && ctx.shape(2) != Shape{w[0]})
    ctx.fail("B must have shape [{}], got {}", w[0], shape_to_string(ctx.shape(2)));
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel)
    ctx.fail("attribute 'kernel_shape' [{}] differs from W's spatial shape [{}]",
             fmt::join(ctx.attr_ints("kernel_shape"), ","), fmt::join(kernel, ","));
  WindowParams win = read_window_params(ctx, kernel);
  Shape out{x[0], w[0]};
  for (size_t i = 0; i < kernel.size(); ++i)
    out.push_back(window_output(ctx, win, i, x[i + 2], false));
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_conv_transpose(InferContext& ctx) {
  ctx.expect_inputs(2, 3);
  ctx.expect_float_input(0);
  expect_same_dtype(ctx, 0, 1);
  expect_same_dtype(ctx, 0, 2);
  const Shape &x = ctx.shape(0), &w = ctx.shape(1);
  if (x.size() < 3 || w.size() != x.size())
    ctx.fail("X {} must be [N, C, D1, ...] and W {} [C, M/group, k1, ...] of the same rank",
             shape_to_string(x), shape_to_string(w));
  int64_t group = ctx.attr_int("group", 1);
  if (group < 1) ctx.fail("attribute 'group' must be positive, got {}", group);
  if (w[0] != x[1])
    ctx.fail("X has {} channels but W {} expects {}", x[1], shape_to_string(w), w[0]);
  if (x[1] % group != 0) ctx.fail("the channel count {} is not divisible by group {}", x[1], group);
  int64_t out_channels = ctx.checked_mul(w[1], group, "output channels");
  if (ctx.has_input(2) && ctx.shape(2) != Shape{out_channels})
    ctx.fail("B must have shape [{}], got {}", out_channels, shape_to_string(ctx.shape(2)));
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel)
    ctx.fail("attribute 'kernel_shape' [{}] differs from W's spatial shape [{}]",
             fmt::join(ctx.attr_ints("kernel_shape"), ","), fmt::join(kernel, ","));
  WindowParams win = read_window_params(ctx, kernel);
  size_t n = kernel.size();
  std::vector<int64_t> output_padding = ctx.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  if (output_padding.size() != n)
    ctx.fail("attribute 'output_padding' has {} entries for {} spatial axes", output_padding.size(),
             n);
  for (size_t i = 0; i < n; ++i)
    if (output_padding[i] < 0 || output_padding[i] >= std::max(win.strides[i], win.dilations[i]))
      ctx.fail("output_padding {} must be non-negative and less than the stride or dilation",
               output_padding[i]);
  std::vector<int64_t> output_shape = ctx.attr_ints("output_shape");
  if (output_shape.size() == n + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != n)
    ctx.fail("attribute 'output_shape' has {} entries for {} spatial axes", output_shape.size(), n);

  Shape out{x[0], out_channels};
  for (size_t i = 0; i < n; ++i) {
    int64_t in = x[i + 2], size;
    if (!output_shape.empty()) {
      size = output_shape[i];
    } else if (win.auto_pad == AutoPad::SameUpper || win.auto_pad == AutoPad::SameLower) {
      size = ctx.checked_mul(in, win.strides[i], "output size");
    } else {
      // stride * (in - 1) + output_padding + dilated kernel - pads
      int64_t pads = win.auto_pad == AutoPad::Valid
                         ? 0
                         : ctx.checked_add(win.pads[i], win.pads[i + n], "total padding");
      size = ctx.checked_mul(win.strides[i], in - 1, "output size");
      size = ctx.checked_add(size, output_padding[i], "output size");
      size = ctx.checked_add(size, effective_kernel(ctx, win, i), "output size");
      size = ctx.checked_add(size, -pads, "output size");
    }
    if (size < 0) ctx.fail("spatial axis {} computes the negative output size {}", i, size);
    out.push_back(size);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_pool(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  if (ctx.dtype(0) == DType::Bool) ctx.fail("X must be numeric, got bool");
  const Shape& x = ctx.shape(0);
  if (x.size() < 3) ctx.fail("X must be [N, C, D1, ...], got {}", shape_to_string(x));
  std::vector<int64_t> kernel = ctx.req_ints("kernel_shape");
  if (kernel.size() != x.size() - 2)
    ctx.fail("attribute 'kernel_shape' has {} entries for {} spatial axes", kernel.size(),
             x.size() - 2);
  WindowParams win = read_window_params(ctx, kernel);
  bool ceil_mode = ctx.attr_flag("ceil_mode", false);
  if (ctx.op() == OpKind::MaxPool)
    (void)ctx.attr_flag("storage_order", false);
  else
    (void)ctx.attr_flag("count_include_pad", false);
  Shape out{x[0], x[1]};
  for (size_t i = 0; i < kernel.size(); ++i)
    out.push_back(window_output(ctx, win, i, x[i + 2], ceil_mode));
  ctx.set_output(0, ctx.dtype(0), out);
  if (ctx.op() == OpKind::MaxPool) ctx.set_output(1, DType::Int64, out); // Indices
}

void rule_topk(InferContext& ctx) {
  ctx.expect_inputs(ctx.opset() < 10 ? 1 : 2, ctx.opset() < 10 ? 1 : 2);
  int64_t rank = ctx.rank(0);
  if (rank == 0) ctx.fail("X must have rank 1 or more, got a scalar");
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", -1), rank);
  int64_t k;
  if (ctx.opset() < 10) {
    k = ctx.req_int("k");
  } else {
    if (ctx.input(1).elements() != 1 || ctx.rank(1) > 1)
      ctx.fail("K (input 1) must hold one value, got shape {}", shape_to_string(ctx.shape(1)));
    k = ctx.const_ints(1, "K")[0];
  }
  if (ctx.opset() >= 11) {
    (void)ctx.attr_flag("largest", true);
    (void)ctx.attr_flag("sorted", true);
  }
  int64_t dim = ctx.shape(0)[axis];
  if (k < 0 || k > dim) ctx.fail("k {} is out of range for axis {} of size {}", k, axis, dim);
  Shape out = ctx.shape(0);
  out[axis] = k;
  ctx.set_output(0, ctx.dtype(0), out);
  ctx.set_output(1, DType::Int64, out);
}

// Attention (opset 23): Q [batch, q_heads, q_sequence, head] with K [batch, kv_heads,
// kv_sequence, head] and V [batch, kv_heads, kv_sequence, v_head], or all 3-D
// [batch, sequence, heads * head] with q_num_heads and kv_num_heads; q_heads a multiple of
// kv_heads (grouped-query heads). past_key and past_value [batch, kv_heads, past, head] come
// before K and V (present_key and present_value are the concatenations); attn_mask, bool or of
// Q's type, broadcasts to [batch, q_heads, q_sequence, past + kv_sequence] (a shorter last axis
// is padded with -inf, or false); nonpad_kv_seqlen (opset 24, int64 [batch]) counts each
// batch's valid keys. Y is
// [batch, q_heads, q_sequence, v_head] (3-D: [batch, q_sequence, q_heads * v_head]);
// qk_matmul_output the scores [batch, q_heads, q_sequence, past + kv_sequence].
void rule_attention(InferContext& ctx) {
  ctx.require_opset(23);
  ctx.expect_inputs(3, 7);
  for (int i = 0; i < 3; ++i)
    ctx.expect_float_input(i);
  const DType t = ctx.dtype(0);
  for (int i : {1, 2, 4, 5})
    if (ctx.has_input(i) && ctx.dtype(i) != t)
      ctx.fail("input {} is {}, Q is {}", i, dtype_name(ctx.dtype(i)), dtype_name(t));
  const AttentionParams a = read_attention_params(ctx);
  const int64_t batch = a.batch, q_heads = a.q_heads, kv_heads = a.kv_heads,
                q_sequence = a.q_sequence, head = a.head, v_head = a.v_head, total = a.total;
  const int64_t rank = a.four_d ? 4 : 3;
  if (ctx.has_input(3)) {
    const DType m = ctx.dtype(3);
    if (m != DType::Bool && m != t)
      ctx.fail("attn_mask must be bool or {}, got {}", dtype_name(t), dtype_name(m));
    const Shape scores = {batch, q_heads, q_sequence, total};
    Shape padded = ctx.shape(3);
    if (!padded.empty() && padded.back() < total) padded.back() = total;
    const std::optional<Shape> b = broadcast_shapes(padded, scores);
    if (!b || *b != scores)
      ctx.fail("attn_mask {} does not broadcast to the scores {}", shape_to_string(ctx.shape(3)),
               shape_to_string(scores));
  }
  if (ctx.has_input(6)) {
    ctx.require_opset(24);
    if (ctx.dtype(6) != DType::Int64 || ctx.shape(6) != Shape{batch})
      ctx.fail("nonpad_kv_seqlen must be int64 [batch] = [{}]", batch);
  }
  if (ctx.num_outputs() > 4) ctx.fail("Attention has at most 4 outputs");
  if (ctx.attr_int("qk_matmul_output_mode", 0) < 0 || ctx.attr_int("qk_matmul_output_mode", 0) > 3)
    ctx.fail("qk_matmul_output_mode must be 0, 1, 2 or 3");
  ctx.set_output(0, t,
                 rank == 4 ? Shape{batch, q_heads, q_sequence, v_head}
                           : Shape{batch, q_sequence, ctx.checked_mul(q_heads, v_head, "Y")});
  if (ctx.has_output(1)) ctx.set_output(1, t, {batch, kv_heads, total, head});
  if (ctx.has_output(2)) ctx.set_output(2, t, {batch, kv_heads, total, v_head});
  if (ctx.has_output(3)) ctx.set_output(3, t, {batch, q_heads, q_sequence, total});
}

} // namespace stitch
