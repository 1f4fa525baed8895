// Shape rules of the Movement category: ops that only move, select or describe data
// (Reshape and its kin, Transpose, Concat/Split, Slice, the gathers and scatters, Pad,
// Resize, Shape/Size, constants). Operands that decide a shape (Reshape's shape, Slice's
// starts) must be constants: stitchc compiles static shapes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/checked_math.h"
#include "graph/error.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

// checked_mul / checked_add whose overflow error names the node.
int64_t mul_or_fail(const InferContext& ctx, int64_t a, int64_t b, std::string_view what) {
  try {
    return checked_mul(a, b, what);
  } catch (const UserError& e) {
    ctx.fail("{}", e.reason());
  }
}

int64_t add_or_fail(const InferContext& ctx, int64_t a, int64_t b, std::string_view what) {
  try {
    return checked_add(a, b, what);
  } catch (const UserError& e) {
    ctx.fail("{}", e.reason());
  }
}

int64_t elements_or_fail(const InferContext& ctx, const Shape& s, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : s)
    n = mul_or_fail(ctx, n, d, what);
  return n;
}

void require_opset(const InferContext& ctx, int since) {
  if (ctx.opset() < since)
    ctx.fail("{} is an ONNX op from opset {}, but the model imports opset {}", op_name(ctx.op()),
             since, ctx.opset());
}

// The value of a constant 1-D integer input.
std::vector<int64_t> const_vector(const InferContext& ctx, int i, const char* what) {
  if (ctx.rank(i) != 1)
    ctx.fail("{} must be 1-D, got shape {}", what, shape_to_string(ctx.shape(i)));
  return ctx.const_ints(i, what);
}

std::vector<int64_t> normalize_axes(const InferContext& ctx, const std::vector<int64_t>& axes,
                                    int64_t rank, const char* what) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t n = ctx.normalize_axis(a, rank, "axis");
    if (seen[n]) ctx.fail("{} names axis {} twice", what, n);
    seen[n] = true;
    out.push_back(n);
  }
  return out;
}

void expect_index_dtype(const InferContext& ctx, int i, const char* what) {
  if (ctx.dtype(i) != DType::Int64 && ctx.dtype(i) != DType::Int32)
    ctx.fail("{} must be int32 or int64, got {}", what, dtype_name(ctx.dtype(i)));
}

// Constant index values must lie in [-dim, dim); a computed one is checked at run time.
void check_const_indices(const InferContext& ctx, int i, int64_t dim, const char* what) {
  if (!ctx.input(i).is_constant()) return;
  for (int64_t v : ctx.const_ints(i, what))
    if (v < -dim || v >= dim)
      ctx.fail("{} holds {}, out of range for an axis of size {}", what, v, dim);
}

// The number of elements a slice with clamped `start`, `end` and `step` selects.
int64_t slice_length(int64_t start, int64_t end, int64_t step) {
  int64_t diff = step > 0 ? end - start : start - end;
  if (diff <= 0) return 0;
  uint64_t magnitude = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  return static_cast<int64_t>(1 + static_cast<uint64_t>(diff - 1) / magnitude);
}

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

} // namespace

void rule_identity(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_dropout(InferContext& ctx) {
  ctx.expect_inputs(1, ctx.opset() < 12 ? 1 : 3);
  if (ctx.has_input(2)) {
    if (ctx.input(2).elements() != 1) ctx.fail("training_mode (input 2) must be a scalar");
    // const_ints refuses a run-time value, naming the graph inputs it depends on.
    if (ctx.const_floats(2, "training_mode")[0] != 0)
      ctx.fail("training_mode=true is unsupported: stitchc compiles inference, where Dropout "
               "passes its input through");
  }
  if (ctx.has_input(1) && ctx.input(1).elements() != 1)
    ctx.fail("ratio (input 1) must be a scalar, got shape {}", shape_to_string(ctx.shape(1)));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  // The mask is bool from opset 10; before, it has the data's type.
  ctx.set_output(1, ctx.opset() < 10 ? ctx.dtype(0) : DType::Bool, ctx.shape(0));
}

void rule_transpose(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  int64_t rank = ctx.rank(0);
  std::vector<int64_t> perm;
  for (int64_t d = rank - 1; d >= 0; --d)
    perm.push_back(d);
  perm = ctx.attr_ints("perm", perm);
  if (static_cast<int64_t>(perm.size()) != rank)
    ctx.fail("attribute 'perm' has {} entries for a tensor of rank {}", perm.size(), rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      ctx.fail("attribute 'perm' [{}] is not a permutation of the {} axes", fmt::join(perm, ","),
               rank);
    seen[p] = true;
    out.push_back(ctx.shape(0)[p]);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_reshape(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  Shape requested = const_vector(ctx, 1, "shape");
  bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  const Shape& in = ctx.shape(0);
  int64_t total = elements_or_fail(ctx, in, "input element count");
  Shape out;
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t d = requested[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        ctx.fail("shape {} copies dimension {} (a 0), but the input {} has rank {}",
                 shape_to_string(requested), i, shape_to_string(in), in.size());
      d = in[i];
    } else if (d == -1) {
      if (inferred >= 0) ctx.fail("shape {} has more than one -1", shape_to_string(requested));
      if (allowzero) {
        for (int64_t r : requested)
          if (r == 0)
            ctx.fail("shape {} has both 0 and -1 with allowzero=1", shape_to_string(requested));
      }
      inferred = static_cast<int64_t>(i);
      out.push_back(1);
      continue;
    } else if (d < 0) {
      ctx.fail("shape {} has the invalid dimension {}", shape_to_string(requested), d);
    }
    known = mul_or_fail(ctx, known, d, "reshape element count");
    out.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      ctx.fail("cannot reshape {} ({} elements) to {}: the -1 has no whole size",
               shape_to_string(in), total, shape_to_string(requested));
    out[inferred] = total / known;
  } else if (known != total) {
    ctx.fail("cannot reshape {} ({} elements) to {} ({} elements)", shape_to_string(in), total,
             shape_to_string(out), known);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_flatten(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  int64_t rank = ctx.rank(0);
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < -rank || axis > rank)
    ctx.fail("axis {} is out of range [{}, {}] for a tensor of rank {}", axis, -rank, rank, rank);
  if (axis < 0) axis += rank;
  const Shape& in = ctx.shape(0);
  Shape outer(in.begin(), in.begin() + axis), inner(in.begin() + axis, in.end());
  ctx.set_output(
      0, ctx.dtype(0),
      {elements_or_fail(ctx, outer, "flatten size"), elements_or_fail(ctx, inner, "flatten size")});
}

void rule_squeeze(InferContext& ctx) {
  ctx.expect_inputs(1, ctx.opset() < 13 ? 1 : 2);
  int64_t rank = ctx.rank(0);
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> axes;
  if (ctx.opset() < 13)
    axes = ctx.attr_ints("axes");
  else if (ctx.has_input(1))
    axes = const_vector(ctx, 1, "axes");
  std::vector<bool> squeezed(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      squeezed[d] = in[d] == 1;
  }
  for (int64_t a : normalize_axes(ctx, axes, rank, "axes")) {
    if (in[a] != 1)
      ctx.fail("cannot squeeze axis {} of size {} (shape {})", a, in[a], shape_to_string(in));
    squeezed[a] = true;
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    if (!squeezed[d]) out.push_back(in[d]);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_unsqueeze(InferContext& ctx) {
  std::vector<int64_t> axes;
  if (ctx.opset() < 13) {
    ctx.expect_inputs(1, 1);
    axes = ctx.req_ints("axes");
  } else {
    ctx.expect_inputs(2, 2);
    axes = const_vector(ctx, 1, "axes");
  }
  const Shape& in = ctx.shape(0);
  int64_t out_rank = add_or_fail(ctx, ctx.rank(0), static_cast<int64_t>(axes.size()), "rank");
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : normalize_axes(ctx, axes, out_rank, "axes"))
    inserted[a] = true;
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d)
    out.push_back(inserted[d] ? 1 : in[next++]);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_concat(InferContext& ctx) {
  ctx.expect_inputs(1, ctx.num_inputs() > 0 ? ctx.num_inputs() : 1);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (!ctx.has_input(i)) ctx.fail("input {} is omitted; every input of Concat is required", i);
  int64_t rank = ctx.rank(0);
  int64_t axis = ctx.normalize_axis(ctx.req_int("axis"), rank);
  Shape out = ctx.shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.shape(i);
    if (ctx.dtype(i) != ctx.dtype(0))
      ctx.fail("input {} is {} but input 0 is {}; they must have the same type", i,
               dtype_name(ctx.dtype(i)), dtype_name(ctx.dtype(0)));
    bool compatible = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; compatible && d < rank; ++d)
      compatible = d == axis || s[d] == out[d];
    if (!compatible)
      ctx.fail("input {} of shape {} does not match input 0 of shape {} outside axis {}", i,
               shape_to_string(s), shape_to_string(ctx.shape(0)), axis);
    out[axis] = add_or_fail(ctx, out[axis], s[axis], "concatenated size");
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_split(InferContext& ctx) {
  ctx.expect_inputs(1, ctx.opset() < 13 ? 1 : 2);
  int64_t rank = ctx.rank(0);
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", 0), rank);
  int64_t dim = ctx.shape(0)[axis];
  int64_t outputs = ctx.num_outputs();
  if (outputs == 0) ctx.fail("has no outputs");
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13)
    sizes = ctx.attr_ints("split");
  else if (ctx.has_input(1))
    sizes = const_vector(ctx, 1, "split");
  bool has_num_outputs = ctx.opset() >= 18 && ctx.has_attr("num_outputs");
  if (has_num_outputs && !sizes.empty())
    ctx.fail("has both the 'split' input and the 'num_outputs' attribute; give one");

  if (has_num_outputs) {
    int64_t n = ctx.attr_int("num_outputs", 0);
    if (n != outputs)
      ctx.fail("attribute 'num_outputs' is {} but the node has {} outputs", n, outputs);
    int64_t chunk = dim / n + (dim % n != 0 ? 1 : 0);
    int64_t last = dim - chunk * (n - 1); // chunk * (n-1) <= dim + n, no overflow
    if (last < 0)
      ctx.fail("an axis of size {} cannot be split into {} chunks of {}", dim, n, chunk);
    sizes.assign(static_cast<size_t>(n - 1), chunk);
    sizes.push_back(last);
  } else if (sizes.empty()) {
    if (dim % outputs != 0)
      ctx.fail("an axis of size {} does not split evenly into {} outputs", dim, outputs);
    sizes.assign(static_cast<size_t>(outputs), dim / outputs);
  }
  if (static_cast<int64_t>(sizes.size()) != outputs)
    ctx.fail("split gives {} sizes for {} outputs", sizes.size(), outputs);
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("split has the negative size {}", s);
    sum = add_or_fail(ctx, sum, s, "split total");
  }
  if (sum != dim)
    ctx.fail("split sizes [{}] sum to {}, but the axis has size {}", fmt::join(sizes, ","), sum,
             dim);
  for (int64_t i = 0; i < outputs; ++i) {
    Shape out = ctx.shape(0);
    out[axis] = sizes[i];
    ctx.set_output(static_cast<int>(i), ctx.dtype(0), std::move(out));
  }
}

void rule_slice(InferContext& ctx) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    ctx.expect_inputs(1, 1);
    starts = ctx.req_ints("starts");
    ends = ctx.req_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    ctx.expect_inputs(3, 5);
    starts = const_vector(ctx, 1, "starts");
    ends = const_vector(ctx, 2, "ends");
    if (ctx.has_input(3)) axes = const_vector(ctx, 3, "axes");
    if (ctx.has_input(4)) steps = const_vector(ctx, 4, "steps");
  }
  size_t n = starts.size();
  if (axes.empty())
    for (size_t i = 0; i < n; ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    ctx.fail("starts, ends, axes and steps have different lengths ({}, {}, {}, {})", n, ends.size(),
             axes.size(), steps.size());
  Shape out = ctx.shape(0);
  std::vector<int64_t> normalized = normalize_axes(ctx, axes, ctx.rank(0), "axes");
  for (size_t i = 0; i < n; ++i) {
    if (steps[i] == 0) ctx.fail("steps has a 0 for axis {}", normalized[i]);
    int64_t dim = out[normalized[i]], start = starts[i], end = ends[i];
    clamp_slice_bounds(dim, steps[i], start, end);
    out[normalized[i]] = slice_length(start, end, steps[i]);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_gather(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_index_dtype(ctx, 1, "indices (input 1)");
  const Shape& data = ctx.shape(0);
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", 0), ctx.rank(0));
  check_const_indices(ctx, 1, data[axis], "indices");
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), ctx.shape(1).begin(), ctx.shape(1).end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_gather_elements(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_index_dtype(ctx, 1, "indices (input 1)");
  const Shape &data = ctx.shape(0), &indices = ctx.shape(1);
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", 0), ctx.rank(0));
  if (indices.size() != data.size())
    ctx.fail("indices {} must have the rank of data {}", shape_to_string(indices),
             shape_to_string(data));
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d])
      ctx.fail("indices {} is larger than data {} on axis {}", shape_to_string(indices),
               shape_to_string(data), d);
  check_const_indices(ctx, 1, data[axis], "indices");
  ctx.set_output(0, ctx.dtype(0), indices);
}

void rule_gather_nd(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  if (ctx.dtype(1) != DType::Int64)
    ctx.fail("indices (input 1) must be int64, got {}", dtype_name(ctx.dtype(1)));
  const Shape &data = ctx.shape(0), &indices = ctx.shape(1);
  int64_t r = ctx.rank(0), q = ctx.rank(1);
  int64_t b = ctx.attr_int("batch_dims", 0);
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank 1 or more");
  if (b < 0 || b >= std::min(r, q))
    ctx.fail("attribute 'batch_dims' {} must be in [0, {})", b, std::min(r, q));
  for (int64_t d = 0; d < b; ++d)
    if (data[d] != indices[d])
      ctx.fail("the batch dimensions of data {} and indices {} differ", shape_to_string(data),
               shape_to_string(indices));
  int64_t m = indices[q - 1];
  if (m < 1 || m > r - b)
    ctx.fail("the last dimension of indices {} must be in [1, {}]", shape_to_string(indices),
             r - b);
  if (ctx.input(1).is_constant()) {
    std::vector<int64_t> values = ctx.const_ints(1, "indices");
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t dim = data[b + static_cast<int64_t>(i % m)];
      if (values[i] < -dim || values[i] >= dim)
        ctx.fail("indices holds {}, out of range for an axis of size {}", values[i], dim);
    }
  }
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + m, data.end());
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_scatter_nd(InferContext& ctx) {
  ctx.expect_inputs(3, 3);
  if (ctx.dtype(1) != DType::Int64)
    ctx.fail("indices (input 1) must be int64, got {}", dtype_name(ctx.dtype(1)));
  if (ctx.dtype(2) != ctx.dtype(0))
    ctx.fail("updates is {} but data is {}; they must have the same type", dtype_name(ctx.dtype(2)),
             dtype_name(ctx.dtype(0)));
  std::string reduction = ctx.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    ctx.fail("attribute 'reduction' must be none, add, mul, max or min, got \"{}\"", reduction);
  const Shape &data = ctx.shape(0), &indices = ctx.shape(1), &updates = ctx.shape(2);
  if (data.empty() || indices.empty()) ctx.fail("data and indices must have rank 1 or more");
  int64_t k = indices.back();
  if (k < 1 || k > static_cast<int64_t>(data.size()))
    ctx.fail("the last dimension of indices {} must be in [1, {}]", shape_to_string(indices),
             data.size());
  Shape expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.begin() + k, data.end());
  if (updates != expected)
    ctx.fail("updates must have shape {}, got {}", shape_to_string(expected),
             shape_to_string(updates));
  if (ctx.input(1).is_constant()) {
    std::vector<int64_t> values = ctx.const_ints(1, "indices");
    for (size_t i = 0; i < values.size(); ++i) {
      int64_t dim = data[i % k];
      if (values[i] < -dim || values[i] >= dim)
        ctx.fail("indices holds {}, out of range for an axis of size {}", values[i], dim);
    }
  }
  ctx.set_output(0, ctx.dtype(0), data);
}

void rule_tile(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  std::vector<int64_t> repeats = const_vector(ctx, 1, "repeats");
  if (static_cast<int64_t>(repeats.size()) != ctx.rank(0))
    ctx.fail("repeats has {} entries for an input of rank {}", repeats.size(), ctx.rank(0));
  Shape out = ctx.shape(0);
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats has the negative entry {}", repeats[d]);
    out[d] = mul_or_fail(ctx, out[d], repeats[d], "tiled size");
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_pad(InferContext& ctx) {
  int64_t rank = ctx.rank(0);
  std::vector<int64_t> pads, axes;
  if (ctx.opset() < 11) {
    ctx.expect_inputs(1, 1);
    pads = ctx.req_ints("pads");
    (void)ctx.attr_float("value", 0.0);
  } else {
    ctx.expect_inputs(2, ctx.opset() < 18 ? 3 : 4);
    pads = const_vector(ctx, 1, "pads");
    if (ctx.has_input(2)) {
      if (ctx.input(2).elements() != 1)
        ctx.fail("constant_value (input 2) must be a scalar, got shape {}",
                 shape_to_string(ctx.shape(2)));
      if (ctx.dtype(2) != ctx.dtype(0))
        ctx.fail("constant_value is {} but data is {}; they must have the same type",
                 dtype_name(ctx.dtype(2)), dtype_name(ctx.dtype(0)));
    }
    if (ctx.has_input(3)) axes = const_vector(ctx, 3, "axes");
  }
  std::string mode = ctx.attr_string("mode", "constant");
  bool wrap_known = ctx.opset() >= 19;
  if (mode != "constant" && mode != "reflect" && mode != "edge" && !(mode == "wrap" && wrap_known))
    ctx.fail("attribute 'mode' must be constant, reflect, edge{}, got \"{}\"",
             wrap_known ? " or wrap" : "", mode);
  if (axes.empty() && !ctx.has_input(3))
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  std::vector<int64_t> normalized = normalize_axes(ctx, axes, rank, "axes");
  size_t n = normalized.size();
  if (pads.size() != 2 * n) ctx.fail("pads has {} entries; {} axes need {}", pads.size(), n, 2 * n);
  Shape out = ctx.shape(0);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = normalized[i], dim = out[a];
    if (mode != "constant" && dim == 0 && (pads[i] > 0 || pads[i + n] > 0))
      ctx.fail("cannot pad the empty axis {} in {} mode", a, mode);
    int64_t size =
        add_or_fail(ctx, add_or_fail(ctx, dim, pads[i], "padded size"), pads[i + n], "padded size");
    if (size < 0)
      ctx.fail("pads [{}, {}] remove more than the {} elements of axis {}", pads[i], pads[i + n],
               dim, a);
    out[a] = size;
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_trilu(InferContext& ctx) {
  require_opset(ctx, 14);
  ctx.expect_inputs(1, 2);
  if (ctx.rank(0) < 2)
    ctx.fail("input must have rank 2 or more, got shape {}", shape_to_string(ctx.shape(0)));
  if (ctx.has_input(1) && (ctx.input(1).elements() != 1 || ctx.dtype(1) != DType::Int64))
    ctx.fail("k (input 1) must be an int64 scalar");
  int64_t upper = ctx.attr_int("upper", 1);
  if (upper != 0 && upper != 1) ctx.fail("attribute 'upper' must be 0 or 1, got {}", upper);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_range(InferContext& ctx) {
  require_opset(ctx, 11);
  ctx.expect_inputs(3, 3);
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
  int64_t count = 0;
  if (dtype_is_float(dtype)) {
    double start = ctx.const_floats(0, kNames[0])[0], limit = ctx.const_floats(1, kNames[1])[0],
           delta = ctx.const_floats(2, kNames[2])[0];
    if (delta == 0 || !std::isfinite(delta) || !std::isfinite(start) || !std::isfinite(limit))
      ctx.fail("start, limit and delta must be finite and delta non-zero, got {}, {}, {}", start,
               limit, delta);
    double n = std::ceil((limit - start) / delta);
    if (!(n < 9.0e18)) ctx.fail("the range from {} to {} by {} is too long", start, limit, delta);
    count = n > 0 ? static_cast<int64_t>(n) : 0;
  } else {
    __int128 start = ctx.const_ints(0, kNames[0])[0], limit = ctx.const_ints(1, kNames[1])[0],
             delta = ctx.const_ints(2, kNames[2])[0];
    if (delta == 0) ctx.fail("delta (input 2) must not be 0");
    __int128 diff = limit - start;
    __int128 n = diff / delta; // ceil((limit - start) / delta), exactly, in 128 bits
    if (diff % delta != 0 && (diff > 0) == (delta > 0)) ++n;
    if (n > INT64_MAX) ctx.fail("the range is too long");
    count = n > 0 ? static_cast<int64_t>(n) : 0;
  }
  ctx.set_output(0, dtype, {count});
}

void rule_shape(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  int64_t rank = ctx.rank(0);
  int64_t start = 0, end = rank;
  if (ctx.opset() >= 15) {
    start = ctx.attr_int("start", 0);
    end = ctx.attr_int("end", rank);
  }
  // Negative bounds count from the end; then both clamp to [0, rank].
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  ctx.set_output(0, DType::Int64, {std::max<int64_t>(end - start, 0)});
}

void rule_size(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.set_output(0, DType::Int64, {});
}

void rule_constant_of_shape(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  Shape out = const_vector(ctx, 0, "shape");
  for (int64_t d : out)
    if (d < 0) ctx.fail("shape (input 0) has the negative dimension {}", d);
  DType dtype = DType::Float32;
  if (ctx.has_attr("value")) {
    const Tensor& value = ctx.graph().tensor(ctx.attr_tensor("value"));
    if (value.elements() != 1)
      ctx.fail("attribute 'value' must hold one element, got shape {}",
               shape_to_string(value.shape));
    dtype = value.dtype;
  }
  ctx.set_output(0, dtype, std::move(out));
}

void rule_constant(InferContext& ctx) {
  ctx.expect_inputs(0, 0);
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
    ctx.set_output(0, value.dtype, value.shape);
  } else if (ctx.has_attr("value_float")) {
    (void)ctx.attr_float("value_float", 0.0);
    ctx.set_output(0, DType::Float32, {});
  } else if (ctx.has_attr("value_floats")) {
    ctx.set_output(0, DType::Float32,
                   {static_cast<int64_t>(ctx.attr_floats("value_floats").size())});
  } else if (ctx.has_attr("value_int")) {
    (void)ctx.attr_int("value_int", 0);
    ctx.set_output(0, DType::Int64, {});
  } else {
    ctx.set_output(0, DType::Int64, {static_cast<int64_t>(ctx.attr_ints("value_ints").size())});
  }
}

void rule_depth_to_space(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  if (ctx.rank(0) != 4)
    ctx.fail("input must have rank 4 ([N, C, H, W]), got shape {}", shape_to_string(ctx.shape(0)));
  int64_t block = ctx.req_int("blocksize");
  if (block <= 0) ctx.fail("attribute 'blocksize' must be positive, got {}", block);
  std::string mode = ctx.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    ctx.fail("attribute 'mode' must be DCR or CRD, got \"{}\"", mode);
  const Shape& in = ctx.shape(0);
  int64_t block_area = mul_or_fail(ctx, block, block, "blocksize squared");
  if (in[1] % block_area != 0)
    ctx.fail("the channel count {} is not divisible by blocksize squared ({})", in[1], block_area);
  ctx.set_output(0, ctx.dtype(0),
                 {in[0], in[1] / block_area, mul_or_fail(ctx, in[2], block, "output height"),
                  mul_or_fail(ctx, in[3], block, "output width")});
}

void rule_space_to_depth(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  if (ctx.rank(0) != 4)
    ctx.fail("input must have rank 4 ([N, C, H, W]), got shape {}", shape_to_string(ctx.shape(0)));
  int64_t block = ctx.req_int("blocksize");
  if (block <= 0) ctx.fail("attribute 'blocksize' must be positive, got {}", block);
  const Shape& in = ctx.shape(0);
  if (in[2] % block != 0 || in[3] % block != 0)
    ctx.fail("height {} and width {} must be divisible by blocksize {}", in[2], in[3], block);
  int64_t block_area = mul_or_fail(ctx, block, block, "blocksize squared");
  ctx.set_output(0, ctx.dtype(0),
                 {in[0], mul_or_fail(ctx, in[1], block_area, "output channels"), in[2] / block,
                  in[3] / block});
}

void rule_resize(InferContext& ctx) {
  require_opset(ctx, 10);
  // Opset 10: (X, scales). From 11: (X, roi, scales, sizes); an empty tensor stands for an
  // omitted one.
  int scales_input = ctx.opset() < 11 ? 1 : 2, sizes_input = ctx.opset() < 11 ? -1 : 3;
  ctx.expect_inputs(ctx.opset() < 11 ? 2 : 1, ctx.opset() < 11 ? 2 : 4);
  auto given = [&](int i) { return ctx.has_input(i) && ctx.input(i).elements() > 0; };
  bool has_scales = given(scales_input), has_sizes = sizes_input > 0 && given(sizes_input);
  if (has_scales == has_sizes) ctx.fail("exactly one of scales and sizes must be given");

  std::string mode = ctx.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    ctx.fail("attribute 'mode' must be nearest, linear or cubic, got \"{}\"", mode);
  int64_t rank = ctx.rank(0);
  std::vector<int64_t> axes;
  std::string policy = "stretch";
  if (ctx.opset() >= 18) {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
    axes = normalize_axes(ctx, ctx.attr_ints("axes", axes), rank, "axes");
    policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      ctx.fail("attribute 'keep_aspect_ratio_policy' must be stretch, not_larger or not_smaller, "
               "got \"{}\"",
               policy);
  } else {
    if (ctx.has_attr("axes")) ctx.fail("attribute 'axes' of Resize exists from opset 18");
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }

  const Shape& in = ctx.shape(0);
  Shape out = in;
  if (has_scales) {
    std::vector<double> scales = ctx.const_floats(scales_input, "scales");
    if (scales.size() != axes.size())
      ctx.fail("scales has {} entries for {} axes", scales.size(), axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        ctx.fail("scales must be positive and finite, got {}", scales[i]);
      double size = std::floor(static_cast<double>(in[axes[i]]) * scales[i]);
      if (!(size < 9.0e18)) ctx.fail("the scaled size of axis {} is too large", axes[i]);
      out[axes[i]] = static_cast<int64_t>(size);
    }
    ctx.set_output(0, ctx.dtype(0), std::move(out));
    return;
  }
  std::vector<int64_t> sizes = const_vector(ctx, sizes_input, "sizes");
  if (sizes.size() != axes.size())
    ctx.fail("sizes has {} entries for {} axes", sizes.size(), axes.size());
  for (int64_t s : sizes)
    if (s < 0) ctx.fail("sizes has the negative entry {}", s);
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i)
      out[axes[i]] = sizes[i];
    ctx.set_output(0, ctx.dtype(0), std::move(out));
    return;
  }
  // Keep the aspect ratio: one scale for every resized axis, the smallest (not_larger) or
  // largest (not_smaller) of the per-axis ratios; sizes round half up.
  double scale = policy == "not_larger" ? INFINITY : 0.0;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (in[axes[i]] == 0) ctx.fail("cannot keep the aspect ratio of the empty axis {}", axes[i]);
    double ratio = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
    scale = policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
  }
  for (int64_t a : axes) {
    double size = std::floor(scale * static_cast<double>(in[a]) + 0.5);
    if (!(size < 9.0e18)) ctx.fail("the scaled size of axis {} is too large", a);
    out[a] = static_cast<int64_t>(size);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_view(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  Shape out = ctx.req_ints("shape");
  for (int64_t d : out)
    if (d < 0) ctx.fail("attribute 'shape' has the negative dimension {}", d);
  int64_t in_elements = elements_or_fail(ctx, ctx.shape(0), "input element count");
  int64_t out_elements = elements_or_fail(ctx, out, "view element count");
  if (in_elements != out_elements)
    ctx.fail("a view of {} ({} elements) as {} ({} elements) changes the element count",
             shape_to_string(ctx.shape(0)), in_elements, shape_to_string(out), out_elements);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

} // namespace stitch
