// Library groups (library_calls.cpp prints them): a MatMul/Gemm with the epilogue cuBLASLt
// applies, and a Conv/ConvTranspose with the epilogue cuDNN's fused convolution applies. Their
// specs hold the call's whole geometry and where each epilogue operand goes.
//
//   MatMul         numpy matmul as a strided batched GEMM. A 1-D A is one row and a 1-D B one
//                  column. Batch axes where each operand is either complete or broadcast (size
//                  1) become the GEMM's batch, with stride 0 for a broadcast operand (folded
//                  into M when only A has them: one taller GEMM); outer batch axes that strides
//                  cannot express ([2,1] x [1,3]) become a loop of batched GEMMs.
//   Layouts        a MatMul's group may also hold the Transposes producing A or B and one
//                  Transpose of its result (after the epilogue): the call reads A/B through
//                  them (transposed operands, leading dimensions, batch strides from the
//                  permutation) and writes the product straight into the transposed result,
//                  with no copy kernel; what one batch stride cannot express becomes the loop.
//   Gemm           transA/transB, alpha, and beta * C as the first addend of the epilogue.
//   Epilogue       the group's nodes after the product: adds of a bias row or a residual of the
//                  output's shape, then Relu or a tanh Gelu (cuBLASLt's GELU). The addends go
//                  where the library takes them: one row of N with scale 1 is the bias; a lone
//                  addend of the output's full shape is the GEMM's C with beta = its scale; any
//                  others are first summed into the output by a small generated kernel (the
//                  "fill", which the cost model charges as a launch and a round trip of the
//                  output), and the GEMM then accumulates onto it (C is D, beta 1).
//   Conv           groups, strides, dilations, bias, pads from auto_pad (window_pads). The
//                  library takes symmetric pads only; asymmetric ones are used when the
//                  symmetric begin pad gives the same windows, and otherwise X is first copied
//                  padded into the group's scratch (ConvSpec::pre_pad_begin). A biased
//                  Conv may take a residual add of its output's shape and then a Relu.
//                  Its group may also hold the Transposes producing X and W from
//                  channels-last storage and the Transpose of its result to channels-last
//                  (all three or none; a ConvTranspose too): the call then reads and writes
//                  that layout itself (ConvSpec::channels_last; the channels-last pass puts
//                  them there).
//
// Element types and math (GemmSpec/ConvSpec::dtype, ::math): both libraries take float32,
// float16 and bfloat16, one dtype for every operand of a call (as ONNX has it); the 2-byte types
// accumulate in fp32, and cuDNN's fused epilogue takes them too (PSEUDO_HALF / PSEUDO_BFLOAT16;
// where cuDNN refuses a geometry the library falls back to separate calls at run time). The
// math is strict fp32 unless PlannerOptions::tf32 lets float32 calls use TF32 tensor cores:
// choose_library_math records that in every such spec once the plan is made.
//   ConvTranspose  output_padding, output_shape, auto_pad, groups, bias: the library computes
//                  with the begin pad on both sides and an output padding in [0, stride); where
//                  that cannot give the output, the whole unpadded output goes into the group's
//                  scratch and is cropped (ConvSpec::crop_begin).
#include <algorithm>

#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "planner/launch_config.h"
#include "planner/legality_internal.h"
#include "planner/planner.h"

namespace stitch::legality {

namespace {

// cuBLASLt applies these activations in its epilogue (CUBLASLT_EPILOGUE_RELU / _GELU): a
// library capability, not an op category. cuBLASLt's GELU is the tanh approximation
// 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), so only a Gelu with approximate="tanh" is that
// op; ONNX's default, approximate="none", is the erf form 0.5x(1 + erf(x/sqrt(2))), up to 4.7e-4
// away from it, and stays in a generated kernel rather than silently change the numerics.
EpilogueActivation cublaslt_activation(const Graph& g, const Node& node) {
  if (node.op == OpKind::Relu) return EpilogueActivation::Relu;
  if (node.op != OpKind::Gelu) return EpilogueActivation::None;
  return NodeContext(g, node).attr_string("approximate", "none") == "tanh"
             ? EpilogueActivation::GeluTanh
             : EpilogueActivation::None;
}

// Why a library call cannot take `tensors` (the op's float operands and result), or "".
std::string library_dtypes_refusal(const Graph& g, const Node& node,
                                   const std::vector<TensorId>& tensors, const char* library) {
  const DType first = g.tensor(tensors.front()).dtype;
  for (TensorId t : tensors) {
    const DType dtype = g.tensor(t).dtype;
    if (!library_dtype(dtype))
      return fmt::format("{} on {}: the {} call takes float32, float16 and bfloat16",
                         op_name(node.op), dtype_name(dtype), library);
    if (dtype != first)
      return fmt::format("{} mixes {} and {} ('{}'): the {} call takes one dtype for every operand",
                         op_name(node.op), dtype_name(first), dtype_name(dtype), g.tensor(t).name,
                         library);
  }
  return "";
}

// The other operand of a two-operand Add of `chained` and something else, or kNoTensor.
TensorId addend_besides(const Node& node, TensorId chained) {
  if (node.op != OpKind::Add || node.inputs.size() != 2) return kNoTensor;
  if ((node.inputs[0] == chained) == (node.inputs[1] == chained)) return kNoTensor;
  return node.inputs[0] == chained ? node.inputs[1] : node.inputs[0];
}

// An epilogue is a chain: `prev`'s result is read by `next` alone (and is no graph output),
// so the library call never has to write it.
FusionDecision epilogue_link(const FusionContext& ctx, int32_t prev, int32_t next) {
  const TensorId chained = ctx.graph.nodes[prev].outputs[0];
  if (ctx.consumers[chained].size() == 1 && !ctx.graph_output[chained] &&
      ctx.consumers[chained][0] == next)
    return FusionDecision::ok();
  return FusionDecision::no(fmt::format("the epilogue must be a chain: {}'s result is read "
                                        "elsewhere than by {}",
                                        ctx.describe(prev), ctx.describe(next)));
}

// One matrix's layout for the library: `trans` false when rows are `ld` apart and columns
// adjacent (stored rows x cols), true when columns are `ld` apart and rows adjacent (stored
// cols x rows, used transposed). False when neither axis has unit stride.
bool matrix_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, bool& trans,
                   int64_t& ld) {
  if (cols == 1 || col_stride == 1) {
    trans = false;
    ld = rows == 1 ? cols : row_stride;
    return ld >= cols;
  }
  if (rows == 1 || row_stride == 1) {
    trans = true;
    ld = col_stride;
    return ld >= rows;
  }
  return false;
}

// MatMul's batch axes split into the GEMM's batch (the innermost axes over which each of A, B
// and D advances by one stride, or not at all for a broadcast operand) and the outer rest, a
// loop of calls. `a`, `b` and `d` carry their batch axes' strides, right-aligned to
// `out_batch` (0 where an operand is broadcast).
void split_matmul_batch(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                        const std::vector<int64_t>& d, const Shape& out_batch, GemmSpec& spec) {
  // Axes of size 1 in the output are 1 in both operands too: drop them.
  Shape o;
  std::vector<int64_t> sa, sb, sd;
  for (size_t j = 0; j < out_batch.size(); ++j)
    if (out_batch[j] != 1) {
      o.push_back(out_batch[j]);
      sa.push_back(a[j]);
      sb.push_back(b[j]);
      sd.push_back(d[j]);
    }
  // Axes [from, end) collapse into one stride for an operand: each steps over the next whole.
  auto collapses = [&](const std::vector<int64_t>& s, size_t from) {
    for (size_t j = from; j + 1 < o.size(); ++j) {
      const bool broadcast = s[j] == 0 && s[j + 1] == 0;
      if (!broadcast && (s[j] == 0 || s[j + 1] == 0 || s[j] != s[j + 1] * o[j + 1])) return false;
    }
    return true;
  };
  size_t split = o.size();
  while (split > 0 && collapses(sa, split - 1) && collapses(sb, split - 1) &&
         collapses(sd, split - 1))
    --split;
  for (size_t j = 0; j < split; ++j) {
    spec.outer.push_back(o[j]);
    spec.outer_stride_a.push_back(sa[j]);
    spec.outer_stride_b.push_back(sb[j]);
    spec.outer_stride_d.push_back(sd[j]);
  }
  int64_t inner = 1;
  for (size_t j = split; j < o.size(); ++j)
    inner *= o[j];
  spec.batch_count = inner;
  const bool batched = split < o.size();
  spec.stride_a = batched ? sa.back() : 0;
  spec.stride_b = batched ? sb.back() : 0;
  spec.stride_d = batched ? sd.back() : spec.m * spec.ldd;
  // B shared by A's trailing batch axes (a multi-query attention's one key head read by every
  // query head), whose rows (and D's) continue across them: they stack into M, and the leading
  // axes, where B advances, batch the call.
  size_t shared = o.size();
  while (shared > 0 && sb[shared - 1] == 0)
    --shared;
  bool foldable = !spec.outer.empty() && shared > 0 && shared < o.size() && !spec.trans_a &&
                  sa.back() == spec.m * spec.lda && sd.back() == spec.m * spec.ldd;
  for (size_t j = 0; foldable && j + 1 < o.size(); ++j) {
    foldable = sa[j] == sa[j + 1] * o[j + 1] && sd[j] == sd[j + 1] * o[j + 1];
    if (j + 1 < shared) foldable = foldable && sb[j] == sb[j + 1] * o[j + 1];
  }
  if (foldable) {
    int64_t stacked = 1, batches = 1;
    for (size_t j = 0; j < o.size(); ++j)
      (j < shared ? batches : stacked) *= o[j];
    spec.outer.clear();
    spec.outer_stride_a.clear();
    spec.outer_stride_b.clear();
    spec.outer_stride_d.clear();
    spec.m *= stacked;
    spec.stacked = stacked;
    spec.batch_count = batches;
    spec.stride_a = sa[shared - 1];
    spec.stride_b = sb[shared - 1];
    spec.stride_d = sd[shared - 1];
    return;
  }
  // B shared by every batch of A, whose rows (and D's) continue from batch to batch: one GEMM
  // with M = batches x m.
  if (spec.outer.empty() && inner > 1 && spec.stride_a != 0 && spec.stride_b == 0 &&
      !spec.trans_a && spec.stride_a == spec.m * spec.lda && spec.stride_d == spec.m * spec.ldd) {
    spec.rows_folded = true;
    spec.m *= inner;
    spec.batch_count = 1;
    spec.stride_a = spec.stride_b = 0;
    spec.stride_d = spec.m * spec.ldd;
  }
}

} // namespace

// Where each addend goes (GemmSpec::bias, c, fill). `columns_are_n`: the result's last axis is
// the GEMM's n (false for a MatMul with a 1-D B, whose result's last axis is m).
// `empty_sum_in_epilogue`: a K of 0 still gives the epilogue its addends (a K that is 0 at the
// planning binding only; the library call computes the empty sum's epilogue), where a product
// that is empty at every size leaves them all to the fill kernel.
void place_addends(const Graph& g, GemmSpec& spec, bool columns_are_n, bool empty_sum_in_epilogue) {
  const bool products = spec.k > 0 || empty_sum_in_epilogue;
  spec.bias = spec.c = -1;
  spec.fill.clear();
  const Shape& out = g.tensor(spec.result).shape;
  std::vector<int> rest;
  for (int i = 0; i < static_cast<int>(spec.addends.size()); ++i) {
    const GemmSpec::Addend& addend = spec.addends[i];
    const Shape& s = g.tensor(addend.tensor).shape;
    const std::optional<Shape> broadcast = broadcast_shapes(s, out);
    const bool row = products && addend.scale == 1.0 && broadcast && *broadcast == out &&
                     shape_elements(s) == spec.n &&
                     (spec.n == 1 || (columns_are_n && s.back() == spec.n));
    if (row && spec.bias < 0)
      spec.bias = i;
    else
      rest.push_back(i);
  }
  if (products && rest.size() == 1 && g.tensor(spec.addends[rest[0]].tensor).shape == out)
    spec.c = rest[0];
  else
    spec.fill = rest;
}

StridedMatrix packed(const Shape& shape) { return {shape, row_major_strides(shape), 0}; }

StridedMatrix permuted(const StridedMatrix& view, const std::vector<int64_t>& perm) {
  StridedMatrix out;
  out.offset = view.offset;
  for (int64_t axis : perm) {
    out.shape.push_back(view.shape[static_cast<size_t>(axis)]);
    out.strides.push_back(view.strides[static_cast<size_t>(axis)]);
  }
  return out;
}

// The view read in `to`'s shape, as a View (a reshape) reads it: each run of the view's axes
// that `to` merges or splits must be contiguous within itself (a stride its inner neighbour's
// extent times that neighbour's stride); size-1 axes come and go freely. nullopt where a copy
// would be needed.
std::optional<StridedMatrix> reshaped(const StridedMatrix& view, const Shape& to) {
  std::vector<int64_t> extents, strides; // the view's axes longer than 1
  for (size_t j = 0; j < view.shape.size(); ++j) {
    if (view.shape[j] < 1) return std::nullopt;
    if (view.shape[j] != 1) {
      extents.push_back(view.shape[j]);
      strides.push_back(view.strides[j]);
    }
  }
  StridedMatrix r;
  r.shape = to;
  r.offset = view.offset;
  r.strides.assign(to.size(), 0);
  size_t from = 0, at = 0;
  while (at < to.size() || from < extents.size()) {
    if (at < to.size() && to[at] == 1) {
      ++at;
      continue;
    }
    if (at >= to.size() || from >= extents.size() || to[at] < 1) return std::nullopt;
    // The shortest runs of old axes [from, old_end] and new axes [at, new_end] of equal size.
    size_t old_end = from, new_end = at;
    int64_t old_size = extents[from], new_size = to[at];
    while (old_size != new_size) {
      if (old_size < new_size) {
        if (++old_end >= extents.size()) return std::nullopt;
        old_size *= extents[old_end];
      } else {
        if (++new_end >= to.size()) return std::nullopt;
        new_size *= to[new_end];
      }
    }
    for (size_t k = from; k < old_end; ++k)
      if (strides[k] != strides[k + 1] * extents[k + 1]) return std::nullopt;
    int64_t stride = strides[old_end];
    for (size_t k = new_end + 1; k-- > at;) {
      r.strides[k] = stride;
      stride *= to[k];
    }
    from = old_end + 1;
    at = new_end + 1;
  }
  return r;
}

StridedMatrix into_transpose(const Shape& product, const std::vector<int64_t>& perm) {
  Shape result;
  for (int64_t axis : perm)
    result.push_back(product[static_cast<size_t>(axis)]);
  const std::vector<int64_t> stored = row_major_strides(result);
  StridedMatrix view{product, std::vector<int64_t>(product.size(), 0)};
  for (size_t j = 0; j < perm.size(); ++j)
    view.strides[static_cast<size_t>(perm[j])] = stored[j];
  return view;
}

bool library_dtype(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
}

FusionDecision gemm_spec(const Graph& g, const std::vector<int32_t>& nodes,
                         const DeviceParams& device, GemmSpec& spec) {
  spec = GemmSpec{};
  // The product: Transposes before it are A's or B's layout, one after its epilogue the
  // result's (analyze_gemm checked that each is read by the next alone).
  size_t at = 0;
  while (at < nodes.size() &&
         (g.nodes[nodes[at]].op == OpKind::Transpose || g.nodes[nodes[at]].op == OpKind::Slice))
    ++at;
  if (at == nodes.size()) return FusionDecision::no("the group has no MatMul or Gemm");
  const Node& node = g.nodes[nodes[at]];
  spec.product = nodes[at];
  spec.a = node.inputs[0];
  spec.b = node.inputs[1];
  size_t end = nodes.size();
  if (end - 1 > at && g.nodes[nodes[end - 1]].op == OpKind::Transpose)
    spec.layout_result = nodes[--end];
  for (size_t i = 0; i < at; ++i) {
    if (g.nodes[nodes[i]].op != OpKind::Transpose) continue;
    const TensorId t = g.nodes[nodes[i]].outputs[0];
    if (t != node.inputs[0] && t != node.inputs[1])
      return FusionDecision::no(
          fmt::format("'{}' (Transpose) produces neither A nor B", g.nodes[nodes[i]].name));
    if (t == node.inputs[0]) spec.layout_a = nodes[i]; // both, for a product of T with itself
    if (t == node.inputs[1]) spec.layout_b = nodes[i];
  }
  // Slices: of A or B, or of the input of the Transpose it is read through.
  for (size_t i = 0; i < at; ++i) {
    if (g.nodes[nodes[i]].op != OpKind::Slice) continue;
    const TensorId t = g.nodes[nodes[i]].outputs[0];
    auto read_as = [&](int32_t layout, TensorId operand) {
      return layout >= 0 ? g.nodes[layout].inputs[0] : operand;
    };
    for (const SliceAxis& axis : read_slice_params(NodeContext(g, g.nodes[nodes[i]])))
      if (axis.step != 1)
        return FusionDecision::no(fmt::format("'{}' (Slice) steps by {}: the library reads "
                                              "through slices of step 1",
                                              g.nodes[nodes[i]].name, axis.step));
    bool used = false;
    if (t == read_as(spec.layout_a, node.inputs[0])) {
      spec.slice_a = nodes[i];
      used = true;
    }
    if (t == read_as(spec.layout_b, node.inputs[1])) {
      spec.slice_b = nodes[i];
      used = true;
    }
    if (!used)
      return FusionDecision::no(
          fmt::format("'{}' (Slice) produces neither A nor B", g.nodes[nodes[i]].name));
  }
  const bool layouts = spec.layout_a >= 0 || spec.layout_b >= 0 || spec.layout_result >= 0 ||
                       spec.slice_a >= 0 || spec.slice_b >= 0;
  if (layouts && node.op != OpKind::MatMul)
    return FusionDecision::no(
        fmt::format("only a MatMul reads or writes through a Transpose, not {}", op_name(node.op)));
  if (std::string why = library_dtypes_refusal(
          g, node, {node.inputs[0], node.inputs[1], node.outputs[0]}, "GEMM library");
      !why.empty())
    return FusionDecision::no(why);
  spec.dtype = g.tensor(node.outputs[0]).dtype;
  bool columns_are_n = true;
  if (node.op == OpKind::Gemm) {
    NodeContext attrs(g, node);
    const Shape &a = g.tensor(spec.a).shape, &b = g.tensor(spec.b).shape;
    spec.trans_a = attrs.attr_flag("transA", false);
    spec.trans_b = attrs.attr_flag("transB", false);
    spec.m = spec.trans_a ? a[1] : a[0];
    spec.k = spec.trans_a ? a[0] : a[1];
    spec.n = spec.trans_b ? b[0] : b[1];
    spec.lda = a[1];
    spec.ldb = b[1];
    spec.ldd = spec.n;
    spec.alpha = attrs.attr_float("alpha", 1.0);
    const double beta = attrs.attr_float("beta", 1.0);
    const TensorId c = node.inputs.size() > 2 ? node.inputs[2] : kNoTensor;
    // Gemm's own beta * C is the first addend (a full [M, N] C becomes the library's C, a row
    // vector with beta 1 its bias, any other broadcast C the fill).
    if (c != kNoTensor && beta != 0.0) {
      if (g.tensor(c).dtype != spec.dtype)
        return FusionDecision::no(fmt::format("Gemm's C is {}, not {} as A and B",
                                              dtype_name(g.tensor(c).dtype),
                                              dtype_name(spec.dtype)));
      spec.addends.push_back({c, beta, 0});
    }
  } else if (node.op == OpKind::MatMul) {
    Shape a = g.tensor(spec.a).shape, b = g.tensor(spec.b).shape;
    columns_are_n = b.size() >= 2;
    if ((a.size() < 2 || b.size() < 2) && layouts)
      return FusionDecision::no("a MatMul of a 1-D operand reads and writes only packed tensors");
    if (a.size() == 1) a.insert(a.begin(), 1); // a row
    if (b.size() == 1) b.push_back(1);         // a column
    const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
    spec.m = m;
    spec.k = k;
    spec.n = n;
    const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
    const std::optional<Shape> out_batch = broadcast_shapes(a_batch, b_batch);
    if (!out_batch) return FusionDecision::no("MatMul's batch axes do not broadcast");
    Shape out = *out_batch;
    out.push_back(m);
    out.push_back(n);
    // Each matrix as stored: packed, or read through its Slice and Transpose.
    auto operand = [&](int32_t slice, int32_t layout, const Shape& logical) {
      if (layout < 0 && slice < 0) return packed(logical);
      StridedMatrix view;
      if (slice >= 0) {
        view = packed(g.tensor(g.nodes[slice].inputs[0]).shape);
        for (const SliceAxis& s : read_slice_params(NodeContext(g, g.nodes[slice]))) {
          view.offset += s.start * view.strides[s.axis];
          view.strides[s.axis] *= s.step;
          view.shape[s.axis] = s.length;
        }
      } else {
        view = packed(g.tensor(g.nodes[layout].inputs[0]).shape);
      }
      if (layout >= 0) view = permuted(view, read_perm(NodeContext(g, g.nodes[layout])));
      return view;
    };
    const StridedMatrix va = operand(spec.slice_a, spec.layout_a, a),
                        vb = operand(spec.slice_b, spec.layout_b, b);
    const StridedMatrix vd =
        spec.layout_result < 0
            ? packed(out)
            : into_transpose(out, read_perm(NodeContext(g, g.nodes[spec.layout_result])));
    if (spec.layout_a >= 0) spec.a = g.nodes[spec.layout_a].inputs[0];
    if (spec.layout_b >= 0) spec.b = g.nodes[spec.layout_b].inputs[0];
    if (spec.slice_a >= 0) spec.a = g.nodes[spec.slice_a].inputs[0];
    if (spec.slice_b >= 0) spec.b = g.nodes[spec.slice_b].inputs[0];
    spec.offset_a = va.offset;
    spec.offset_b = vb.offset;
    auto last_two = [](const StridedMatrix& v, size_t back) {
      return v.strides[v.strides.size() - back];
    };
    if (!matrix_layout(m, k, last_two(va, 2), last_two(va, 1), spec.trans_a, spec.lda))
      return FusionDecision::no("A, read through its Transpose, has neither its rows nor its "
                                "columns adjacent in memory");
    if (!matrix_layout(k, n, last_two(vb, 2), last_two(vb, 1), spec.trans_b, spec.ldb))
      return FusionDecision::no("B, read through its Transpose, has neither its rows nor its "
                                "columns adjacent in memory");
    bool result_transposed = false;
    if (!matrix_layout(m, n, last_two(vd, 2), last_two(vd, 1), result_transposed, spec.ldd) ||
        result_transposed)
      return FusionDecision::no("the Transpose of the result moves its last axis: the library "
                                "writes each row's columns adjacent");
    // Each operand's batch strides, right-aligned to the output's batch axes.
    auto batch_strides = [&](const StridedMatrix& v) {
      std::vector<int64_t> strides(out_batch->size(), 0);
      const size_t axes = v.shape.size() - 2;
      for (size_t j = 0; j < axes; ++j)
        strides[out_batch->size() - axes + j] = v.shape[j] == 1 ? 0 : v.strides[j];
      return strides;
    };
    split_matmul_batch(batch_strides(va), batch_strides(vb), batch_strides(vd), *out_batch, spec);
    // Absorbed layouts whose adjacent runs are shorter than a memory sector cost more bytes.
    const int64_t element = dtype_size(spec.dtype);
    if (spec.layout_a >= 0 || spec.slice_a >= 0)
      spec.uncoalesced_bytes +=
          sector_overhead(shape_elements(va.shape) * element, (spec.trans_a ? m : k) * element);
    if (spec.layout_b >= 0 || spec.slice_b >= 0)
      spec.uncoalesced_bytes +=
          sector_overhead(shape_elements(vb.shape) * element, (spec.trans_b ? k : n) * element);
    if (spec.layout_result >= 0)
      spec.uncoalesced_bytes += sector_overhead(shape_elements(out) * element, n * element);
  } else {
    return FusionDecision::no(fmt::format("{} is not a MatMul or Gemm", op_name(node.op)));
  }
  // The epilogue: Add nodes (a bias row or a residual), then Relu or a tanh Gelu, chained.
  spec.result = node.outputs[0];
  for (size_t i = at + 1; i < end; ++i) {
    const Node& e = g.nodes[nodes[i]];
    if (spec.activation != EpilogueActivation::None)
      return FusionDecision::no("a node follows the epilogue's activation");
    if (e.outputs.size() != 1 || g.tensor(e.outputs[0]).shape != g.tensor(spec.result).shape ||
        g.tensor(e.outputs[0]).dtype != spec.dtype)
      return FusionDecision::no(
          fmt::format("'{}' ({}) changes the product's shape or type", e.name, op_name(e.op)));
    const EpilogueActivation activation = cublaslt_activation(g, e);
    if (activation != EpilogueActivation::None) {
      if (e.inputs.empty() || e.inputs[0] != spec.result)
        return FusionDecision::no(
            fmt::format("'{}' ({}) does not read the product", e.name, op_name(e.op)));
      spec.activation = activation;
    } else {
      const TensorId other = addend_besides(e, spec.result);
      if (other == kNoTensor)
        return FusionDecision::no(fmt::format("'{}' ({}) is not a cuBLASLt epilogue (bias add, "
                                              "residual add, Relu, tanh Gelu)",
                                              e.name, op_name(e.op)));
      if (g.tensor(other).dtype != spec.dtype)
        return FusionDecision::no(fmt::format(
            "'{}' ({}) adds '{}' of {} to a {} product", e.name, op_name(e.op),
            g.tensor(other).name, dtype_name(g.tensor(other).dtype), dtype_name(spec.dtype)));
      spec.addends.push_back({other, 1.0, static_cast<int>(i - at)});
    }
    spec.epilogue.push_back(nodes[i]);
    spec.result = e.outputs[0];
  }
  place_addends(g, spec, columns_are_n, false);
  if (spec.layout_result >= 0) {
    if (spec.c >= 0 || !spec.fill.empty())
      return FusionDecision::no("a residual addend is stored in the product's layout, not in "
                                "the one its Transpose writes");
    spec.result = g.nodes[spec.layout_result].outputs[0];
  }
  if (!spec.fill.empty())
    spec.fill_blocks = flat_launch(g.tensor(spec.result).elements(), 1, device).grid[0];
  return FusionDecision::ok();
}

// The channels-last layouts of a Conv group (ConvSpec::channels_last): the Transposes before
// the convolution at `at` in `nodes` (producing X or W from channels-last storage), and one
// right after it (its result to channels-last). Records them in `spec`; the epilogue starts
// at `*next`.
FusionDecision conv_layouts(const Graph& g, const std::vector<int32_t>& nodes, size_t at,
                            ConvSpec& spec, size_t* next) {
  const Node& conv = g.nodes[nodes[at]];
  const size_t rank = g.tensor(conv.inputs[0]).shape.size();
  auto perm_of = [&](int32_t n) { return read_perm(NodeContext(g, g.nodes[n])); };
  for (size_t i = 0; i < at; ++i) {
    const Node& t = g.nodes[nodes[i]];
    const bool is_x = t.outputs[0] == conv.inputs[0];
    const bool is_w = conv.inputs.size() > 1 && t.outputs[0] == conv.inputs[1];
    if (t.op != OpKind::Transpose || (!is_x && !is_w))
      return FusionDecision::no(fmt::format("'{}' ({}) comes before the convolution '{}'; only "
                                            "the Transposes producing its X or W can",
                                            t.name, op_name(t.op), conv.name));
    if (perm_of(nodes[i]) != channels_first_perm(rank))
      return FusionDecision::no(fmt::format("'{}' (Transpose) is not the channels-last to "
                                            "channels-first permutation the library reads "
                                            "through",
                                            t.name));
    (is_x ? spec.layout_x : spec.layout_w) = nodes[i];
  }
  *next = at + 1;
  if (*next < nodes.size() && g.nodes[nodes[*next]].op == OpKind::Transpose) {
    if (perm_of(nodes[*next]) != channels_last_perm(rank))
      return FusionDecision::no(fmt::format("'{}' (Transpose) does not write the convolution's "
                                            "result channels-last",
                                            g.nodes[nodes[*next]].name));
    spec.layout_result = nodes[(*next)++];
  }
  const int present = (spec.layout_x >= 0) + (spec.layout_w >= 0) + (spec.layout_result >= 0);
  if (present == 0) return FusionDecision::ok();
  if (present != 3)
    return FusionDecision::no(fmt::format(
        "the convolution '{}' reads and writes channels-last only with all three layouts in the "
        "group (X and W through their Transposes, the result into its Transpose); this group "
        "has {} of them",
        conv.name, present));
  spec.channels_last = true;
  return FusionDecision::ok();
}

FusionDecision conv_spec(const Graph& g, const std::vector<int32_t>& nodes,
                         const DeviceParams& device, ConvSpec& spec) {
  spec = ConvSpec{};
  size_t at = 0;
  while (at + 1 < nodes.size() && g.nodes[nodes[at]].op != OpKind::Conv &&
         g.nodes[nodes[at]].op != OpKind::ConvTranspose)
    ++at;
  const Node& node = g.nodes[nodes[at]];
  spec.conv = nodes[at];
  spec.transpose = node.op == OpKind::ConvTranspose;
  if (node.op != OpKind::Conv && !spec.transpose)
    return FusionDecision::no(fmt::format("{} is not a convolution", op_name(node.op)));
  size_t epilogue_at = 0;
  if (FusionDecision d = conv_layouts(g, nodes, at, spec, &epilogue_at); !d) return d;
  std::vector<TensorId> operands;
  for (TensorId t : node.inputs)
    if (t != kNoTensor) operands.push_back(t);
  operands.push_back(node.outputs[0]);
  if (std::string why = library_dtypes_refusal(g, node, operands, "convolution library");
      !why.empty())
    return FusionDecision::no(why);
  spec.dtype = g.tensor(node.outputs[0]).dtype;
  NodeContext attrs(g, node);
  spec.x = node.inputs[0];
  spec.w = node.inputs[1];
  spec.bias = node.inputs.size() > 2 ? node.inputs[2] : kNoTensor;
  const Shape &x = g.tensor(spec.x).shape, &w = g.tensor(spec.w).shape,
              &y = g.tensor(node.outputs[0]).shape;
  const size_t n = x.size() - 2;
  if (n < 1 || n > 3)
    return FusionDecision::no(
        fmt::format("{} with {} spatial axes (the library takes 1 to 3)", op_name(node.op), n));
  spec.batch = x[0];
  spec.in_channels = x[1];
  spec.out_channels = y[1];
  spec.groups = attrs.attr_int("group", 1);
  spec.in_spatial.assign(x.begin() + 2, x.end());
  spec.out_spatial.assign(y.begin() + 2, y.end());
  spec.kernel.assign(w.begin() + 2, w.end());
  const WindowParams params = read_window_params(attrs, spec.kernel);
  spec.strides = params.strides;
  spec.dilations = params.dilations;
  if (!spec.transpose) {
    // Windows start at o * stride - begin whatever the end pad; the end pad only decides how
    // many there are. The symmetric begin pad is exact when it gives the same count.
    std::vector<int64_t> begins, ends;
    bool exact = true;
    for (size_t i = 0; i < n; ++i) {
      const AxisPads pads = window_pads(params, i, spec.in_spatial[i], spec.out_spatial[i]);
      const int64_t extent = (spec.kernel[i] - 1) * spec.dilations[i] + 1;
      const int64_t padded = spec.in_spatial[i] + 2 * pads.begin;
      if (pads.begin != pads.end &&
          (padded < extent || (padded - extent) / spec.strides[i] + 1 != spec.out_spatial[i]))
        exact = false;
      begins.push_back(pads.begin);
      ends.push_back(pads.end);
    }
    if (exact) {
      spec.pads = begins;
    } else {
      // The library pads symmetrically: X is first copied padded into the group's scratch.
      spec.pads.assign(n, 0);
      for (size_t i = 0; i < n; ++i) {
        spec.pre_pad_begin.push_back(DimExpr(begins[i]));
        spec.pre_pad_end.push_back(DimExpr(ends[i]));
        spec.padded_spatial.push_back(spec.in_spatial[i] + begins[i] + ends[i]);
        spec.padded_spatial_dims.push_back(DimExpr(spec.padded_spatial.back()));
      }
      spec.pre_pad_blocks = flat_launch(spec.pre_pad_elements(), 1, device).grid[0];
      spec.pre_pad_work = spec.image_elements(spec.in_channels, spec.padded_spatial_dims);
    }
  } else {
    // The begin pad as ONNX defines it (from output_shape or auto_pad when either is given: the
    // total padding split with the odd one at the begin except for SAME_UPPER), used on both
    // sides with the output padding that gives the output size.
    const std::vector<int64_t> output_padding =
        attrs.attr_ints("output_padding", std::vector<int64_t>(n, 0));
    const bool derived = attrs.has_attr("output_shape") || params.auto_pad == AutoPad::SameUpper ||
                         params.auto_pad == AutoPad::SameLower;
    std::vector<int64_t> begins;
    bool crop = false;
    for (size_t i = 0; i < n; ++i) {
      const int64_t extent = (spec.kernel[i] - 1) * spec.dilations[i] + 1;
      const int64_t in = spec.in_spatial[i], out = spec.out_spatial[i];
      const int64_t full = spec.strides[i] * (in - 1) + output_padding[i] + extent; // unpadded
      int64_t begin = 0;
      if (derived) {
        const int64_t total = std::max<int64_t>(0, full - out);
        begin = params.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      } else if (params.auto_pad == AutoPad::NotSet) {
        begin = params.pads[i];
      }
      const int64_t base = spec.strides[i] * (in - 1) + extent - 2 * begin;
      const int64_t library_padding = out - base;
      if (base < 1 || library_padding < 0 || library_padding >= spec.strides[i]) crop = true;
      begins.push_back(begin);
    }
    if (!crop) {
      spec.pads = begins;
    } else {
      // The whole unpadded output into the group's scratch, its window cropped out after.
      spec.pads.assign(n, 0);
      spec.crop_begin = begins;
      for (size_t i = 0; i < n; ++i) {
        const int64_t extent = (spec.kernel[i] - 1) * spec.dilations[i] + 1;
        spec.full_spatial.push_back(spec.strides[i] * (spec.in_spatial[i] - 1) + extent);
        spec.full_spatial_dims.push_back(DimExpr(spec.full_spatial.back()));
      }
      spec.crop_blocks = flat_launch(shape_elements(y), 1, device).grid[0];
      spec.crop_work = spec.image_elements(spec.out_channels, sym_shape_of(spec.out_spatial));
    }
  }
  if (spec.channels_last) {
    spec.x = g.nodes[spec.layout_x].inputs[0];
    spec.w = g.nodes[spec.layout_w].inputs[0];
  }
  // The epilogue: a residual add, then a Relu, chained on the convolution's result (in its
  // channels-last layout when it has one).
  spec.result = spec.channels_last ? g.nodes[spec.layout_result].outputs[0] : node.outputs[0];
  const Shape& result_shape = g.tensor(spec.result).shape;
  for (size_t i = epilogue_at; i < nodes.size(); ++i) {
    const Node& e = g.nodes[nodes[i]];
    if (spec.transpose || spec.bias == kNoTensor || spec.relu)
      return FusionDecision::no(fmt::format("'{}' ({}) cannot be an epilogue of '{}': cuDNN's "
                                            "fused convolution takes a biased Conv's residual add, "
                                            "then Relu",
                                            e.name, op_name(e.op), node.name));
    if (e.op == OpKind::Relu && !e.inputs.empty() && e.inputs[0] == spec.result) {
      spec.relu = true;
    } else {
      const TensorId other = addend_besides(e, spec.result);
      if (other == kNoTensor || spec.residual != kNoTensor)
        return FusionDecision::no(fmt::format("'{}' ({}) is not a cuDNN convolution epilogue (one "
                                              "residual add, then Relu)",
                                              e.name, op_name(e.op)));
      const Tensor& z = g.tensor(other);
      if (z.shape != result_shape || z.dtype != spec.dtype)
        return FusionDecision::no(fmt::format("'{}' ({}) adds '{}' {} {}, not a {} residual "
                                              "of the convolution's shape {}",
                                              e.name, op_name(e.op), z.name, dtype_name(z.dtype),
                                              shape_str(z.shape), dtype_name(spec.dtype),
                                              shape_str(result_shape)));
      spec.residual = other;
    }
    spec.epilogue.push_back(nodes[i]);
    spec.result = e.outputs[0];
  }
  return FusionDecision::ok();
}

FusionDecision analyze_gemm(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  size_t at = 0;
  while (at < a.nodes.size() && ctx.node_class[a.nodes[at]] != NodeClass::Gemm)
    ++at;
  const int32_t gemm = a.nodes[at];
  // Before the product only the Transposes and Slices it reads A or B through (no copy is
  // made): a Transpose of A or B, a Slice of A or B or of such a Transpose's input.
  for (size_t i = 0; i < at; ++i) {
    const int32_t n = a.nodes[i];
    const TensorId t = g.nodes[n].outputs[0];
    const bool operand = t == g.nodes[gemm].inputs[0] || t == g.nodes[gemm].inputs[1];
    const bool slice = g.nodes[n].op == OpKind::Slice && ctx.node_class[n] == NodeClass::Movement;
    // The node reading it: the product, or (a Slice) a Transpose of the group the product
    // reads.
    int32_t reader = gemm;
    if (slice && !operand && ctx.consumers[t].size() == 1) {
      const int32_t next = ctx.consumers[t][0];
      const TensorId read = g.nodes[next].outputs[0];
      if (contains(a.nodes, next) && ctx.node_class[next] == NodeClass::Layout &&
          (read == g.nodes[gemm].inputs[0] || read == g.nodes[gemm].inputs[1]))
        reader = next;
    }
    if ((ctx.node_class[n] != NodeClass::Layout && !slice) || (!operand && reader == gemm))
      return FusionDecision::no(fmt::format("{} comes before the matrix product in the group; "
                                            "only its consumers, or a Transpose or Slice of A "
                                            "or B, can join it",
                                            ctx.describe(n)));
    const auto& readers = ctx.consumers[t];
    if (ctx.graph_output[t] ||
        std::any_of(readers.begin(), readers.end(), [&](int32_t c) { return c != reader; }))
      return FusionDecision::no(fmt::format("{} is read elsewhere than by {}: the library reads "
                                            "through it only when no copy is needed",
                                            ctx.describe(n), ctx.describe(reader)));
  }
  const Shape& d = g.tensor(g.nodes[gemm].outputs[0]).shape;
  bool bias = false, residual = false, activation = false;
  for (size_t i = at + 1; i < a.nodes.size(); ++i) {
    const int32_t n = a.nodes[i], prev = a.nodes[i - 1];
    const Node& node = g.nodes[n];
    if (FusionDecision link = epilogue_link(ctx, prev, n); !link) return link;
    if (ctx.node_class[n] == NodeClass::Layout) {
      if (i + 1 != a.nodes.size())
        return FusionDecision::no(fmt::format("{} is followed by more epilogue nodes; a "
                                              "Transpose joins only as the result's layout",
                                              ctx.describe(n)));
      continue;
    }
    if (activation)
      return FusionDecision::no(fmt::format("{} follows the epilogue's activation; cuBLASLt "
                                            "applies the activation last",
                                            ctx.describe(n)));
    if (g.tensor(node.outputs[0]).shape != d)
      return FusionDecision::no(
          fmt::format("{} changes the product's shape {}", ctx.describe(n), shape_str(d)));
    if (cublaslt_activation(g, node) != EpilogueActivation::None) {
      activation = true;
      continue;
    }
    // A two-operand add of the chained value and a bias row or a residual of the full shape.
    const TensorId other = addend_besides(node, g.nodes[prev].outputs[0]);
    if (other == kNoTensor)
      return FusionDecision::no(fmt::format("{} is not a cuBLASLt epilogue (bias add, residual "
                                            "add, Relu, tanh Gelu)",
                                            ctx.describe(n)));
    const Shape& s = g.tensor(other).shape;
    if (s == d && !residual) {
      residual = true;
    } else if (!bias && !d.empty() && squeezed(s) == Shape{d.back()} && broadcasts_to(s, d)) {
      bias = true;
    } else {
      return FusionDecision::no(fmt::format("{} adds '{}' {}, neither a bias row of {} nor a "
                                            "second residual of {}",
                                            ctx.describe(n), g.tensor(other).name, shape_str(s),
                                            d.empty() ? 1 : d.back(), shape_str(d)));
    }
  }
  GemmSpec spec;
  if (FusionDecision s = gemm_spec(g, a.nodes, ctx.device, spec); !s)
    return FusionDecision::no(
        fmt::format("{} with its epilogue: {}", ctx.describe(gemm), s.reason));
  a.group = single_node_group(g, gemm, ctx.device);
  a.kind = GroupKind::GemmLibrary;
  a.epilogue_nodes = static_cast<int>(spec.epilogue.size());
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

FusionDecision analyze_conv(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  size_t at = 0;
  while (at < a.nodes.size() && ctx.node_class[a.nodes[at]] != NodeClass::Conv)
    ++at;
  const int32_t conv = a.nodes[at];
  // Before the convolution only the Transposes it reads X or W through (no copy is made).
  for (size_t i = 0; i < at; ++i) {
    const int32_t n = a.nodes[i];
    const TensorId t = g.nodes[n].outputs[0];
    const auto& inputs = g.nodes[conv].inputs;
    const bool operand = t == inputs[0] || (inputs.size() > 1 && t == inputs[1]);
    if (ctx.node_class[n] != NodeClass::Layout || !operand)
      return FusionDecision::no(fmt::format("{} comes before the convolution in the group; "
                                            "only its consumers, or a Transpose of X or W, can "
                                            "join it",
                                            ctx.describe(n)));
    const auto& readers = ctx.consumers[t];
    if (ctx.graph_output[t] ||
        std::any_of(readers.begin(), readers.end(), [&](int32_t c) { return c != conv; }))
      return FusionDecision::no(fmt::format("{} is read elsewhere than by {}: the library reads "
                                            "through it only when no copy is needed",
                                            ctx.describe(n), ctx.describe(conv)));
  }
  bool relu = false;
  for (size_t i = at + 1; i < a.nodes.size(); ++i) {
    if (FusionDecision link = epilogue_link(ctx, a.nodes[i - 1], a.nodes[i]); !link) return link;
    if (relu)
      return FusionDecision::no(fmt::format("{} follows the epilogue's Relu; cuDNN applies the "
                                            "activation last",
                                            ctx.describe(a.nodes[i])));
    relu = ctx.graph.nodes[a.nodes[i]].op == OpKind::Relu;
  }
  ConvSpec spec;
  if (FusionDecision s = conv_spec(ctx.graph, a.nodes, ctx.device, spec); !s)
    return FusionDecision::no(
        fmt::format("{} with its epilogue: {}", ctx.describe(conv), s.reason));
  a.group = single_node_group(ctx.graph, conv, ctx.device);
  a.kind = GroupKind::ConvLibrary;
  a.epilogue_nodes = static_cast<int>(spec.epilogue.size());
  a.group.scratch_bytes = spec.scratch_bytes();
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality

namespace stitch {

void choose_library_math(FusionPlan& plan, bool tf32) {
  const LibraryMath float32_math = tf32 ? LibraryMath::Tf32 : LibraryMath::Fp32;
  auto choose = [&](FusionGroup& group) {
    if (auto* gemm = std::get_if<GemmSpec>(&group.spec))
      gemm->math = gemm->dtype == DType::Float32 ? float32_math : LibraryMath::Fp32;
    else if (auto* conv = std::get_if<ConvSpec>(&group.spec))
      conv->math = conv->dtype == DType::Float32 ? float32_math : LibraryMath::Fp32;
  };
  for (FusionGroup& group : plan.groups)
    choose(group);
  for (ChainFallback& fallback : plan.fallbacks)
    for (FusionGroup& group : fallback.groups)
      choose(group);
}

} // namespace stitch
