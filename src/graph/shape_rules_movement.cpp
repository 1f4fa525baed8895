// Shape rules of the Movement category: ops that only move or select data (Reshape and its
// kin, Transpose, Concat/Split, Slice, Tile, Pad, Trilu, the gathers and scatters). Operands
// that decide a shape (Reshape's shape, Slice's starts) must be constants: stitchc compiles
// static shapes. The value generators (Range, Shape, Constant, ...) are in
// shape_rules_generators.cpp, the spatial ops (Resize, DepthToSpace, ...) in
// shape_rules_spatial.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/op_params.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

void expect_index_dtype(const InferContext& ctx, int i, const char* what) {
  if (ctx.dtype(i) != DType::Int64 && ctx.dtype(i) != DType::Int32)
    ctx.fail("{} must be int32 or int64, got {}", what, dtype_name(ctx.dtype(i)));
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
  Shape out;
  for (int64_t p : read_perm(ctx))
    out.push_back(ctx.shape(0)[p]);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_reshape(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  Shape requested = ctx.const_int_vector(1, "shape");
  bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  const Shape& in = ctx.shape(0);
  int64_t total = ctx.checked_elements(in, "input element count");
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
    known = ctx.checked_mul(known, d, "reshape element count");
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
      {ctx.checked_elements(outer, "flatten size"), ctx.checked_elements(inner, "flatten size")});
}

void rule_squeeze(InferContext& ctx) {
  ctx.expect_inputs(1, ctx.opset() < 13 ? 1 : 2);
  int64_t rank = ctx.rank(0);
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> axes;
  if (ctx.opset() < 13)
    axes = ctx.attr_ints("axes");
  else if (ctx.has_input(1))
    axes = ctx.const_int_vector(1, "axes");
  std::vector<bool> squeezed(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      squeezed[d] = in[d] == 1;
  }
  for (int64_t a : ctx.normalize_axes(axes, rank, "axes")) {
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
    axes = ctx.const_int_vector(1, "axes");
  }
  const Shape& in = ctx.shape(0);
  int64_t out_rank = ctx.checked_add(ctx.rank(0), static_cast<int64_t>(axes.size()), "rank");
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : ctx.normalize_axes(axes, out_rank, "axes"))
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
    out[axis] = ctx.checked_add(out[axis], s[axis], "concatenated size");
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
    sizes = ctx.const_int_vector(1, "split");
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
    sum = ctx.checked_add(sum, s, "split total");
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
  if (ctx.opset() < 10)
    ctx.expect_inputs(1, 1);
  else
    ctx.expect_inputs(3, 5);
  Shape out = ctx.shape(0);
  for (const SliceAxis& s : read_slice_params(ctx))
    out[s.axis] = s.length;
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_gather(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  expect_index_dtype(ctx, 1, "indices (input 1)");
  const Shape& data = ctx.shape(0);
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", 0), ctx.rank(0));
  if (ctx.input(1).is_constant()) read_const_indices(ctx, 1, axis, data[axis], "indices");
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
  if (ctx.input(1).is_constant()) read_const_indices(ctx, 1, axis, data[axis], "indices");
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
      int64_t axis = b + static_cast<int64_t>(i % m);
      check_index(ctx, values[i], axis, data[axis], "indices");
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
      int64_t axis = static_cast<int64_t>(i % k);
      check_index(ctx, values[i], axis, data[axis], "indices");
    }
  }
  ctx.set_output(0, ctx.dtype(0), data);
}

void rule_tile(InferContext& ctx) {
  ctx.expect_inputs(2, 2);
  std::vector<int64_t> repeats = ctx.const_int_vector(1, "repeats");
  if (static_cast<int64_t>(repeats.size()) != ctx.rank(0))
    ctx.fail("repeats has {} entries for an input of rank {}", repeats.size(), ctx.rank(0));
  Shape out = ctx.shape(0);
  for (size_t d = 0; d < out.size(); ++d) {
    if (repeats[d] < 0) ctx.fail("repeats has the negative entry {}", repeats[d]);
    out[d] = ctx.checked_mul(out[d], repeats[d], "tiled size");
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
    pads = ctx.const_int_vector(1, "pads");
    if (ctx.has_input(2)) {
      if (ctx.input(2).elements() != 1)
        ctx.fail("constant_value (input 2) must be a scalar, got shape {}",
                 shape_to_string(ctx.shape(2)));
      if (ctx.dtype(2) != ctx.dtype(0))
        ctx.fail("constant_value is {} but data is {}; they must have the same type",
                 dtype_name(ctx.dtype(2)), dtype_name(ctx.dtype(0)));
    }
    if (ctx.has_input(3)) axes = ctx.const_int_vector(3, "axes");
  }
  std::string mode = ctx.attr_string("mode", "constant");
  bool wrap_known = ctx.opset() >= 19;
  if (mode != "constant" && mode != "reflect" && mode != "edge" && !(mode == "wrap" && wrap_known))
    ctx.fail("attribute 'mode' must be constant, reflect, edge{}, got \"{}\"",
             wrap_known ? " or wrap" : "", mode);
  if (axes.empty() && !ctx.has_input(3))
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  std::vector<int64_t> normalized = ctx.normalize_axes(axes, rank, "axes");
  size_t n = normalized.size();
  if (pads.size() != 2 * n) ctx.fail("pads has {} entries; {} axes need {}", pads.size(), n, 2 * n);
  Shape out = ctx.shape(0);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = normalized[i], dim = out[a];
    if (mode != "constant" && dim == 0 && (pads[i] > 0 || pads[i + n] > 0))
      ctx.fail("cannot pad the empty axis {} in {} mode", a, mode);
    // A negative pad crops first; the mode then pads what is left, which must not be nothing.
    const int64_t kept = dim - std::max<int64_t>(0, -pads[i]) - std::max<int64_t>(0, -pads[i + n]);
    if (mode != "constant" && dim > 0 && kept <= 0 && (pads[i] > 0 || pads[i + n] > 0))
      ctx.fail("pads [{}, {}] crop every element of axis {} and then pad it in {} mode", pads[i],
               pads[i + n], a, mode);
    int64_t size =
        ctx.checked_add(ctx.checked_add(dim, pads[i], "padded size"), pads[i + n], "padded size");
    if (size < 0)
      ctx.fail("pads [{}, {}] remove more than the {} elements of axis {}", pads[i], pads[i + n],
               dim, a);
    out[a] = size;
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

void rule_trilu(InferContext& ctx) {
  ctx.require_opset(14);
  ctx.expect_inputs(1, 2);
  if (ctx.rank(0) < 2)
    ctx.fail("input must have rank 2 or more, got shape {}", shape_to_string(ctx.shape(0)));
  if (ctx.has_input(1) && (ctx.input(1).elements() != 1 || ctx.dtype(1) != DType::Int64))
    ctx.fail("k (input 1) must be an int64 scalar");
  (void)ctx.attr_flag("upper", true);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void rule_view(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  Shape out = ctx.req_ints("shape");
  for (int64_t d : out)
    if (d < 0) ctx.fail("attribute 'shape' has the negative dimension {}", d);
  int64_t in_elements = ctx.checked_elements(ctx.shape(0), "input element count");
  int64_t out_elements = ctx.checked_elements(out, "view element count");
  if (in_elements != out_elements)
    ctx.fail("a view of {} ({} elements) as {} ({} elements) changes the element count",
             shape_to_string(ctx.shape(0)), in_elements, shape_to_string(out), out_elements);
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

} // namespace stitch
