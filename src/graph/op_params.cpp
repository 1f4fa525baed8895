// Readers of the parameters that shape rules and folds share (see op_params.h).
#include "graph/op_params.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "graph/constant.h"

namespace stitch {

namespace {

// ONNX Slice: negative bounds count from the end, then clamp to the axis.
void clamp_slice_bounds(int64_t dim, int64_t step, int64_t& start, int64_t& end) {
  if (dim == 0) {
    start = end = 0; // nothing to select
    return;
  }
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
}

// The number of elements a slice with clamped `start`, `end` and `step` selects.
int64_t slice_length(int64_t start, int64_t end, int64_t step) {
  int64_t diff = step > 0 ? end - start : start - end;
  if (diff <= 0) return 0;
  uint64_t magnitude = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  return static_cast<int64_t>(1 + static_cast<uint64_t>(diff - 1) / magnitude);
}

} // namespace

// ---- Windows ----

namespace {

std::vector<int64_t> positive_ints(const NodeContext& ctx, const char* name, size_t n) {
  std::vector<int64_t> v = ctx.attr_ints(name, std::vector<int64_t>(n, 1));
  if (v.size() != n)
    ctx.fail("attribute '{}' has {} entries for {} spatial axes", name, v.size(), n);
  for (int64_t x : v)
    if (x < 1) ctx.fail("attribute '{}' must hold positive values, got {}", name, x);
  return v;
}

} // namespace

WindowParams read_window_params(const NodeContext& ctx, std::vector<int64_t> kernel) {
  const size_t n = kernel.size();
  WindowParams w;
  w.kernel = std::move(kernel);
  for (int64_t k : w.kernel)
    if (k < 1) ctx.fail("the kernel shape must be positive, got [{}]", fmt::join(w.kernel, ","));
  w.strides = positive_ints(ctx, "strides", n);
  w.dilations = positive_ints(ctx, "dilations", n);
  w.pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (w.pads.size() != 2 * n)
    ctx.fail("attribute 'pads' has {} entries; {} spatial axes need {}", w.pads.size(), n, 2 * n);
  for (int64_t p : w.pads)
    if (p < 0) ctx.fail("attribute 'pads' must not be negative, got {}", p);
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET")
    w.auto_pad = AutoPad::NotSet;
  else if (auto_pad == "SAME_UPPER")
    w.auto_pad = AutoPad::SameUpper;
  else if (auto_pad == "SAME_LOWER")
    w.auto_pad = AutoPad::SameLower;
  else if (auto_pad == "VALID")
    w.auto_pad = AutoPad::Valid;
  else
    ctx.fail("attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got \"{}\"",
             auto_pad);
  return w;
}

AxisPads window_pads(const WindowParams& w, size_t i, int64_t in, int64_t out) {
  switch (w.auto_pad) {
  case AutoPad::NotSet:
    return {w.pads[i], w.pads[i + w.kernel.size()]};
  case AutoPad::Valid:
    return {};
  case AutoPad::SameUpper:
  case AutoPad::SameLower: {
    const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + extent - in);
    const int64_t begin = w.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
    return {begin, total - begin};
  }
  }
  return {};
}

SymAxisPads window_pads(const WindowParams& w, size_t i, const DimExpr& in, const DimExpr& out,
                        const SymbolRanges& ranges) {
  if (w.auto_pad != AutoPad::SameUpper && w.auto_pad != AutoPad::SameLower) {
    const AxisPads pads = window_pads(w, i, 0, 0); // NOTSET or VALID: the sizes are not used
    return {DimExpr(pads.begin), DimExpr(pads.end)};
  }
  const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
  const DimExpr total = DimExpr::max(DimExpr(0), (out - 1) * w.strides[i] + (extent - in), &ranges);
  const DimExpr half = DimExpr::floor_div(total, 2);
  const DimExpr begin = w.auto_pad == AutoPad::SameUpper ? half : total - half;
  return {begin, total - begin};
}

// ---- Reductions ----

int reduce_axes_input_opset(OpKind op) { return op == OpKind::ReduceSum ? 13 : 18; }

ReduceParams read_reduce_params(const NodeContext& ctx) {
  int axes_input_opset = reduce_axes_input_opset(ctx.op());
  std::vector<int64_t> axes;
  if (ctx.opset() >= axes_input_opset) {
    if (ctx.has_attr("axes"))
      ctx.fail("takes axes as input 1 from opset {}, not as an attribute", axes_input_opset);
    if (ctx.has_input(1)) axes = ctx.const_int_vector(1, "axes");
  } else {
    axes = ctx.attr_ints("axes");
  }
  ReduceParams p;
  p.keepdims = ctx.attr_flag("keepdims", true);
  p.noop = ctx.attr_flag("noop_with_empty_axes", false) && axes.empty();
  int64_t rank = ctx.rank(0);
  p.reduced.assign(static_cast<size_t>(rank), axes.empty() && !p.noop);
  for (int64_t a : ctx.normalize_axes(axes, rank, "axes"))
    p.reduced[a] = true;
  return p;
}

// ---- Movement ----

std::vector<int64_t> read_perm(const NodeContext& ctx) {
  int64_t rank = ctx.rank(0);
  std::vector<int64_t> reversed;
  for (int64_t d = rank - 1; d >= 0; --d)
    reversed.push_back(d);
  std::vector<int64_t> perm = ctx.attr_ints("perm", reversed);
  if (static_cast<int64_t>(perm.size()) != rank)
    ctx.fail("attribute 'perm' has {} entries for a tensor of rank {}", perm.size(), rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      ctx.fail("attribute 'perm' [{}] is not a permutation of the {} axes", fmt::join(perm, ","),
               rank);
    seen[p] = true;
  }
  return perm;
}

namespace {

// `pads` (begins then ends, one of each per entry of `axes`, input 3's or every axis) spread
// over every axis of the data, `zero` where an axis is not padded.
template <typename Pad>
std::vector<Pad> pads_per_axis(const NodeContext& ctx, const std::vector<Pad>& pads,
                               std::vector<int64_t> axes, const Pad& zero) {
  const int64_t rank = ctx.rank(0);
  if (axes.empty() && !ctx.has_input(3))
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  axes = ctx.normalize_axes(axes, rank, "axes");
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads has {} entries; {} axes need {}", pads.size(), axes.size(), 2 * axes.size());
  std::vector<Pad> per_axis(static_cast<size_t>(2 * rank), zero);
  for (size_t j = 0; j < axes.size(); ++j) {
    per_axis[static_cast<size_t>(axes[j])] = pads[j];
    per_axis[static_cast<size_t>(axes[j] + rank)] = pads[j + axes.size()];
  }
  return per_axis;
}

} // namespace

std::vector<int64_t> read_pads_per_axis(const NodeContext& ctx) {
  if (ctx.opset() < 11) return pads_per_axis<int64_t>(ctx, ctx.req_ints("pads"), {}, 0);
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) axes = ctx.const_int_vector(3, "axes");
  return pads_per_axis<int64_t>(ctx, ctx.const_int_vector(1, "pads"), axes, 0);
}

std::vector<DimExpr> read_sym_pads_per_axis(const NodeContext& ctx) {
  if (ctx.opset() < 11 || !ctx.input(1).has_symbolic_values()) {
    std::vector<DimExpr> out;
    for (int64_t p : read_pads_per_axis(ctx))
      out.emplace_back(p);
    return out;
  }
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) axes = ctx.const_int_vector(3, "axes");
  return pads_per_axis<DimExpr>(ctx, ctx.input(1).sym_values, axes, DimExpr(0));
}

std::vector<SliceAxis> read_slice_params(const NodeContext& ctx) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.req_ints("starts");
    ends = ctx.req_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    starts = ctx.const_int_vector(1, "starts");
    ends = ctx.const_int_vector(2, "ends");
    if (ctx.has_input(3)) axes = ctx.const_int_vector(3, "axes");
    if (ctx.has_input(4)) steps = ctx.const_int_vector(4, "steps");
  }
  size_t n = starts.size();
  if (axes.empty())
    for (size_t i = 0; i < n; ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    ctx.fail("starts, ends, axes and steps have different lengths ({}, {}, {}, {})", n, ends.size(),
             axes.size(), steps.size());
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> normalized = ctx.normalize_axes(axes, ctx.rank(0), "axes");
  std::vector<SliceAxis> slices;
  for (size_t i = 0; i < n; ++i) {
    SliceAxis s;
    s.axis = normalized[i];
    s.step = steps[i];
    if (s.step == 0) ctx.fail("steps has a 0 for axis {}", s.axis);
    int64_t end = ends[i];
    s.start = starts[i];
    clamp_slice_bounds(in[s.axis], s.step, s.start, end);
    s.length = slice_length(s.start, end, s.step);
    slices.push_back(s);
  }
  return slices;
}

int64_t check_index(const NodeContext& ctx, int64_t value, int64_t axis, int64_t dim,
                    const char* what) {
  if (value < -dim || value >= dim)
    ctx.fail("index {} in {} is out of range for axis {} of size {}", value, what, axis, dim);
  return value < 0 ? value + dim : value;
}

std::vector<int64_t> read_const_indices(const NodeContext& ctx, int i, int64_t axis, int64_t dim,
                                        const char* what) {
  std::vector<int64_t> indices = ctx.const_ints(i, what);
  for (int64_t& v : indices)
    v = check_index(ctx, v, axis, dim, what);
  return indices;
}

// ---- Value generators ----

DimRange read_shape_range(const NodeContext& ctx) {
  int64_t rank = ctx.rank(0);
  DimRange r{0, rank};
  if (ctx.opset() >= 15) {
    r.start = ctx.attr_int("start", 0);
    r.end = ctx.attr_int("end", rank);
  }
  // Negative bounds count from the end; then both clamp to [0, rank], and end to start.
  if (r.start < 0) r.start += rank;
  if (r.end < 0) r.end += rank;
  r.start = std::clamp<int64_t>(r.start, 0, rank);
  r.end = std::clamp<int64_t>(r.end, r.start, rank);
  return r;
}

RangeParams read_range_params(const NodeContext& ctx) {
  static constexpr const char* kNames[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).elements() != 1)
      ctx.fail("{} must be a scalar, got shape {}", kNames[i], shape_to_string(ctx.shape(i)));
    if (ctx.dtype(i) != ctx.dtype(0))
      ctx.fail("{} is {} but start is {}; they must have the same type", kNames[i],
               dtype_name(ctx.dtype(i)), dtype_name(ctx.dtype(0)));
  }
  DType dtype = ctx.dtype(0);
  if (dtype == DType::Bool) ctx.fail("Range does not take bool inputs");
  RangeParams p;
  p.is_float = dtype_is_float(dtype);
  if (p.is_float) {
    double start = ctx.const_floats(0, kNames[0])[0], limit = ctx.const_floats(1, kNames[1])[0],
           delta = ctx.const_floats(2, kNames[2])[0];
    if (delta == 0 || !std::isfinite(delta) || !std::isfinite(start) || !std::isfinite(limit))
      ctx.fail("start, limit and delta must be finite and delta non-zero, got {}, {}, {}", start,
               limit, delta);
    double n = std::ceil((limit - start) / delta);
    if (!(n < 9.0e18)) ctx.fail("the range from {} to {} by {} is too long", start, limit, delta);
    p.start_real = start;
    p.delta_real = delta;
    p.count = n > 0 ? static_cast<int64_t>(n) : 0;
    return p;
  }
  int64_t start = ctx.const_ints(0, kNames[0])[0], limit = ctx.const_ints(1, kNames[1])[0],
          delta = ctx.const_ints(2, kNames[2])[0];
  if (delta == 0) ctx.fail("delta (input 2) must not be 0");
  __int128 diff = static_cast<__int128>(limit) - start;
  __int128 n = diff / delta; // ceil((limit - start) / delta), exactly, in 128 bits
  if (diff % delta != 0 && (diff > 0) == (delta > 0)) ++n;
  if (n > INT64_MAX) ctx.fail("the range is too long");
  p.start_int = start;
  p.delta_int = delta;
  p.count = n > 0 ? static_cast<int64_t>(n) : 0;
  return p;
}

ConstantValue read_constant_value(const NodeContext& ctx) {
  static constexpr const char* kValueAttrs[] = {"value",         "value_float", "value_floats",
                                                "value_int",     "value_ints",  "value_string",
                                                "value_strings", "sparse_value"};
  int present = 0;
  for (const char* name : kValueAttrs)
    present += ctx.has_attr(name) ? 1 : 0;
  if (present != 1)
    ctx.fail("must have exactly one value attribute (value, value_float, value_int, ...), has {}",
             present);
  if (ctx.has_attr("value_string") || ctx.has_attr("value_strings"))
    ctx.fail("string constants are not supported");
  if (ctx.has_attr("sparse_value")) ctx.fail("sparse constants are not supported");
  if (ctx.has_attr("value")) {
    const Tensor& value = ctx.graph().tensor(ctx.attr_tensor("value"));
    STITCH_INTERNAL_CHECK(value.is_constant(), "Constant's value '{}' has no data", value.name);
    return {value.dtype, value.shape, value.constant};
  }
  if (ctx.has_attr("value_float"))
    return {DType::Float32,
            {},
            make_constant_from_double(DType::Float32, {ctx.attr_float("value_float", 0.0)})};
  if (ctx.has_attr("value_floats")) {
    std::vector<double> values = ctx.attr_floats("value_floats");
    return {DType::Float32,
            {static_cast<int64_t>(values.size())},
            make_constant_from_double(DType::Float32, values)};
  }
  if (ctx.has_attr("value_int"))
    return {
        DType::Int64, {}, make_constant_from_int64(DType::Int64, {ctx.attr_int("value_int", 0)})};
  std::vector<int64_t> values = ctx.attr_ints("value_ints");
  return {DType::Int64,
          {static_cast<int64_t>(values.size())},
          make_constant_from_int64(DType::Int64, values)};
}

FillValue read_fill_value(const NodeContext& ctx) {
  if (!ctx.has_attr("value"))
    return {DType::Float32, std::string(static_cast<size_t>(dtype_size(DType::Float32)), '\0')};
  const Tensor& value = ctx.graph().tensor(ctx.attr_tensor("value"));
  if (value.elements() != 1)
    ctx.fail("attribute 'value' must hold one element, got shape {}", shape_to_string(value.shape));
  STITCH_INTERNAL_CHECK(value.is_constant() &&
                            static_cast<int64_t>(value.constant->bytes.size()) == value.bytes(),
                        "ConstantOfShape value '{}' has no data of its type", value.name);
  return {value.dtype, value.constant->bytes};
}

EinsumLabels read_einsum_labels(const NodeContext& ctx) {
  std::string equation;
  for (char c : ctx.attr_string("equation", ""))
    if (c != ' ') equation += c;
  const size_t arrow = equation.find("->");
  // Each term's letters, and where its "..." stands (-1: none).
  auto parse = [](const std::string& text, std::string& letters) {
    int at = -1;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '.') {
        at = static_cast<int>(letters.size());
        i += 2;
      } else {
        letters += text[i];
      }
    }
    return at;
  };
  std::vector<std::string> terms(1);
  for (char c : equation.substr(0, arrow)) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  EinsumLabels labels;
  std::vector<std::string> letters(terms.size());
  std::vector<int> ellipsis_at(terms.size());
  int64_t ellipsis_rank = 0;
  bool any_ellipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    ellipsis_at[i] = parse(terms[i], letters[i]);
    if (ellipsis_at[i] < 0) continue;
    any_ellipsis = true;
    ellipsis_rank = std::max<int64_t>(ellipsis_rank, ctx.rank(static_cast<int>(i)) -
                                                         static_cast<int64_t>(letters[i].size()));
  }
  std::array<int, 128> count{};
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t rank = ellipsis_at[i] < 0 ? 0
                                            : ctx.rank(static_cast<int>(i)) -
                                                  static_cast<int64_t>(letters[i].size());
    std::vector<int> axes;
    for (size_t j = 0; j <= letters[i].size(); ++j) {
      if (static_cast<int>(j) == ellipsis_at[i])
        for (int64_t k = 0; k < rank; ++k)
          axes.push_back(kEinsumEllipsisLabel + static_cast<int>(ellipsis_rank - rank + k));
      if (j < letters[i].size()) {
        axes.push_back(letters[i][j]);
        ++count[static_cast<unsigned char>(letters[i][j]) & 127];
      }
    }
    labels.inputs.push_back(std::move(axes));
  }
  std::string out_letters;
  int out_ellipsis = -1;
  if (arrow != std::string::npos) {
    out_ellipsis = any_ellipsis ? parse(equation.substr(arrow + 2), out_letters) : -1;
    if (!any_ellipsis) parse(equation.substr(arrow + 2), out_letters);
  } else {
    out_ellipsis = any_ellipsis ? 0 : -1;
    for (int c = 0; c < 128; ++c)
      if (count[c] == 1) out_letters += static_cast<char>(c);
  }
  for (size_t j = 0; j <= out_letters.size(); ++j) {
    if (static_cast<int>(j) == out_ellipsis)
      for (int64_t k = 0; k < ellipsis_rank; ++k)
        labels.output.push_back(kEinsumEllipsisLabel + static_cast<int>(k));
    if (j < out_letters.size()) labels.output.push_back(out_letters[j]);
  }
  return labels;
}

RotaryParams read_rotary_params(const NodeContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.size() != 3 && x.size() != 4)
    ctx.fail("X must be [batch, heads, sequence, head] or [batch, sequence, hidden], got {}",
             shape_to_string(x));
  RotaryParams r;
  r.four_d = x.size() == 4;
  r.batch = x[0];
  r.sequence = r.four_d ? x[2] : x[1];
  r.heads = r.four_d ? x[1] : ctx.attr_int("num_heads", 0);
  r.head = x.back();
  if (!r.four_d) {
    if (!ctx.has_attr("num_heads")) ctx.fail("a 3-D X needs the attribute num_heads");
    if (r.heads <= 0 || x[2] % r.heads != 0)
      ctx.fail("num_heads {} does not divide X's hidden size {}", r.heads, x[2]);
    r.head = x[2] / r.heads;
  }
  const int64_t dim = ctx.attr_int("rotary_embedding_dim", 0);
  r.rotary = dim == 0 ? r.head : dim;
  if (r.rotary < 0 || r.rotary > r.head || r.rotary % 2 != 0)
    ctx.fail("rotary_embedding_dim {} must be even and at most the head size {}", r.rotary, r.head);
  r.interleaved = ctx.attr_int("interleaved", 0) != 0;
  return r;
}

AttentionDims read_attention_dims(const NodeContext& ctx) {
  const AttentionParams a = read_attention_params(ctx); // validates the planning shapes
  const SymShape q = ctx.input(0).sym_shape(), k = ctx.input(1).sym_shape(),
                 v = ctx.input(2).sym_shape();
  const size_t seq = a.four_d ? 2 : 1;
  AttentionDims d;
  d.batch = q[0];
  d.q_sequence = q[seq];
  d.kv_sequence = k[seq];
  d.past = ctx.has_input(4) ? ctx.input(4).sym_shape()[2] : DimExpr(0);
  d.total = d.past + d.kv_sequence;
  auto fixed_except = [&](const SymShape& dims, const std::vector<size_t>& free) {
    for (size_t i = 0; i < dims.size(); ++i)
      if (std::find(free.begin(), free.end(), i) == free.end() && !dims[i].is_constant())
        return false;
    return true;
  };
  bool same = k[0] == d.batch && v[0] == d.batch && v[seq] == d.kv_sequence;
  bool fixed = fixed_except(q, {0, seq}) && fixed_except(k, {0, seq}) && fixed_except(v, {0, seq});
  for (int i : {4, 5})
    if (ctx.has_input(i)) {
      const SymShape p = ctx.input(i).sym_shape();
      same = same && p[0] == d.batch && p[2] == d.past;
      fixed = fixed && fixed_except(p, {0, 2});
    }
  if (!fixed)
    d.not_symbolic = "its heads and head sizes must be fixed (symbolic dims only in the batch "
                     "and the sequences)";
  else if (!same)
    d.not_symbolic = "Q, K, V and the past keys and values must have one batch, and K, V and "
                     "the past keys and values their sequences, for every value of the symbols";
  return d;
}

AttentionParams read_attention_params(const NodeContext& ctx) {
  const int64_t rank = ctx.rank(0);
  if ((rank != 3 && rank != 4) || ctx.rank(1) != rank || ctx.rank(2) != rank)
    ctx.fail("Q, K and V must all be 3-D or all 4-D, got {}, {} and {}",
             shape_to_string(ctx.shape(0)), shape_to_string(ctx.shape(1)),
             shape_to_string(ctx.shape(2)));
  const Shape &q = ctx.shape(0), &k = ctx.shape(1), &v = ctx.shape(2);
  int64_t q_heads, kv_heads, head, k_head, v_head;
  const int64_t batch = q[0], q_sequence = rank == 4 ? q[2] : q[1];
  const int64_t kv_sequence = rank == 4 ? k[2] : k[1];
  if (rank == 4) {
    q_heads = q[1], kv_heads = k[1], head = q[3], k_head = k[3], v_head = v[3];
    if (v[1] != kv_heads || v[2] != kv_sequence)
      ctx.fail("V {} must have K's heads and sequence ({})", shape_to_string(v),
               shape_to_string(k));
  } else {
    if (!ctx.has_attr("q_num_heads") || !ctx.has_attr("kv_num_heads"))
      ctx.fail("3-D Q, K and V need the attributes q_num_heads and kv_num_heads");
    q_heads = ctx.attr_int("q_num_heads", 0);
    kv_heads = ctx.attr_int("kv_num_heads", 0);
    if (q_heads <= 0 || kv_heads <= 0 || q[2] % q_heads != 0 || k[2] % kv_heads != 0 ||
        v[2] % kv_heads != 0)
      ctx.fail("q_num_heads {} and kv_num_heads {} must divide the hidden sizes of Q {}, K {} "
               "and V {}",
               q_heads, kv_heads, shape_to_string(q), shape_to_string(k), shape_to_string(v));
    head = q[2] / q_heads, k_head = k[2] / kv_heads, v_head = v[2] / kv_heads;
    if (v[1] != kv_sequence)
      ctx.fail("V {} must have K's sequence ({})", shape_to_string(v), shape_to_string(k));
  }
  if (k[0] != batch || v[0] != batch)
    ctx.fail("Q, K and V must have one batch size, got {}, {} and {}", batch, k[0], v[0]);
  if (k_head != head) ctx.fail("K's head size {} is not Q's {}", k_head, head);
  if (head <= 0) ctx.fail("the head size must be positive");
  if (kv_heads <= 0 || q_heads % kv_heads != 0)
    ctx.fail("Q's {} heads are not a multiple of K's and V's {}", q_heads, kv_heads);
  int64_t past = 0;
  if (ctx.has_input(4) != ctx.has_input(5)) ctx.fail("past_key and past_value come together");
  if (ctx.has_input(4)) {
    const Shape &pk = ctx.shape(4), &pv = ctx.shape(5);
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != batch || pk[1] != kv_heads || pk[3] != head ||
        pv[0] != batch || pv[1] != kv_heads || pv[2] != pk[2] || pv[3] != v_head)
      ctx.fail("past_key {} and past_value {} must be [batch, kv_heads, past, head] = [{}, {}, "
               "past, {} and {}]",
               shape_to_string(pk), shape_to_string(pv), batch, kv_heads, head, v_head);
    past = pk[2];
  }
  AttentionParams a;
  a.batch = batch, a.q_heads = q_heads, a.kv_heads = kv_heads, a.q_sequence = q_sequence;
  a.kv_sequence = kv_sequence, a.head = head, a.v_head = v_head, a.past = past;
  a.total = ctx.checked_add(past, kv_sequence, "past and new keys");
  a.four_d = rank == 4;
  return a;
}

} // namespace stitch
