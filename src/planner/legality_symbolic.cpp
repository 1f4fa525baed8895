// Which groups run over symbolic dims (`--dim NAME=MIN..MAX`), and how: legality's last word on
// a group of a graph that keeps symbols (legality.h, symbolic_support).
//
// A group qualifies when the symbols change only how much work its kernel or library call does,
// never how one work item is computed:
//   - a pointwise kernel (one node, or a Local group, its movement nodes included where each
//     map holds at every shape: moves_support) whose iteration's elements are the work: every
//     operand it reads broadcasts to the iteration over the symbols (broadcasts_over_symbols);
//   - a row reduction (rows of any length) or a Regional group (row ops and their pointwise
//     neighbours, row lookups included) whose rows are the work, its row fixed or of the run's
//     length (the trailing axes whose product the row ops reduce; the row cache sized for the
//     longest): every tensor is per element, per row, broadcast along some row axes (or, over
//     a row of the run's length, along some of the row's), or the same for every row;
//   - a matrix product or a convolution through the library over symbolic extents
//     (GemmSpec::symbolic; ConvSpec::batch_dims and spatial dims, and the run's pads through a
//     padded copy of X), and the attention kernel over the run's heads, queries and keys
//     (attention_support);
//   - a pooling window or depthwise convolution, alone or in a Local group with its pointwise
//     producers and consumers, over the run's images and spatial extents: the output's elements
//     are the work (window_group_support);
//   - Gathers, GatherNDs, GatherElements, Concats, Transposes, Slices, Pads, Resizes,
//     DepthToSpace, SpaceToDepth, Range, ConstantOfShape and Trilu, one thread per output
//     element over the run's extents; Tiles over a symbolic leading axis they leave alone
//     (tile_support);
//   - a view, which has no code.
// Vectors of 16 bytes need every operand whole or a fixed scalar over every shape, not only at
// the planning binding. The launch is sized for the symbols' maxima and covers the actual work
// per run (LaunchConfig::work).
#include "planner/legality_internal.h"

#include <functional>
#include <limits>
#include <set>

#include "graph/error.h"
#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "graph/reductions.h"
#include "planner/launch_config.h"
#include "planner/movement_mapping.h"
#include "planner/reduction_mapping.h"

namespace stitch::legality {

namespace {

std::string dims_str(const Tensor& t) { return sym_shape_to_string(t.sym_shape()); }

// Whether a kernel can read `t` against an iteration of dims `it` (pointwise_expression.h,
// tensor_index): `t` broadcasts to it over the symbols, each of its dims (right-aligned) 1 or
// the iteration's own, as expressions. The iteration's own shape is read at the flat index; a
// tensor fixed after the iteration's last symbolic axis and, up to it, all 1 or the iteration's
// own, through the fixed coordinates (and the leading index); any other through every
// coordinate, the symbolic ones divided out of the flat index per element.
FusionDecision broadcasts_over_symbols(const Graph& g, TensorId t, const SymShape& it) {
  const Tensor& x = g.tensor(t);
  SymShape dims = x.sym_shape();
  if (dims == it) return FusionDecision::ok();
  if (dims.size() > it.size())
    return FusionDecision::no(fmt::format("'{}' {} has more axes than the iteration {}", x.name,
                                          dims_str(x), sym_shape_to_string(it)));
  dims.insert(dims.begin(), it.size() - dims.size(), DimExpr(1));
  for (size_t d = 0; d < it.size(); ++d)
    if (!is_one(dims[d]) && dims[d] != it[d])
      return FusionDecision::no(fmt::format("'{}' {} does not broadcast to the iteration {} for "
                                            "every value of the symbols (axis {})",
                                            x.name, dims_str(x), sym_shape_to_string(it), d));
  return FusionDecision::ok();
}

bool whole_or_scalar(const Graph& g, TensorId t, const SymShape& it) {
  const Tensor& x = g.tensor(t);
  return x.sym_shape() == it || (!x.is_dynamic() && x.elements() == 1);
}

// A flat launch over `work` elements for every shape in range: sized at the maximum.
void flat_symbolic_launch(const Graph& g, const DimExpr& work, int vector_width,
                          const DeviceParams& device, LaunchConfig& launch) {
  if (work.is_constant()) return; // the planned launch is the one launch
  const int64_t most = std::max<int64_t>(1, work.bounds(g.symbol_ranges()).hi);
  launch = flat_launch(most, vector_width, device);
  launch.work = work;
  launch.work_per_block = launch.block[0] * vector_width;
}

// Pointwise work over iteration `it` reading `reads`: the index rule, and vectors kept only
// where they hold over every shape.
FusionDecision pointwise_support(const Graph& g, const SymShape& it,
                                 const std::vector<TensorId>& reads, int& vector_width) {
  for (TensorId t : reads)
    if (FusionDecision d = broadcasts_over_symbols(g, t, it); !d) return d;
  for (TensorId t : reads)
    if (!whole_or_scalar(g, t, it)) vector_width = 1;
  return FusionDecision::ok();
}

bool all_ones(const SymShape& dims) { return squeezed(dims).empty(); }

// Over the symbols, an operand's batch axes (right-aligned to the result's) are all of the
// result's, in its layout, or none: one stride per operand.
enum class GemmBatch { None, All, Part };

GemmBatch gemm_batch(const SymShape& matrix_dims, const SymShape& batch) {
  SymShape own(matrix_dims.begin(), matrix_dims.end() - 2);
  if (own.size() > batch.size()) return GemmBatch::Part;
  own.insert(own.begin(), batch.size() - own.size(), DimExpr(1));
  if (all_ones(own)) return GemmBatch::None;
  return own == batch ? GemmBatch::All : GemmBatch::Part;
}

// Where B's batch axes (right-aligned to the result's `batch`) turn to 1 for good: B has the
// result's leading axes up to there and is broadcast along the rest, which are not all 1.
// batch.size() where B is not so shaped.
size_t shared_trailing_batch(const SymShape& b_dims, const SymShape& batch) {
  SymShape own(b_dims.begin(), b_dims.end() - 2);
  if (own.size() > batch.size()) return batch.size();
  own.insert(own.begin(), batch.size() - own.size(), DimExpr(1));
  size_t from = batch.size();
  while (from > 0 && is_one(own[from - 1]))
    --from;
  if (from == 0 ||
      all_ones(SymShape(batch.begin() + static_cast<std::ptrdiff_t>(from), batch.end())))
    return batch.size();
  for (size_t j = 0; j < from; ++j)
    if (own[j] != batch[j]) return batch.size();
  return from;
}

FusionDecision gemm_support(const Graph& g, GemmSpec& spec) {
  const Tensor& a = g.tensor(spec.a);
  const Tensor& b = g.tensor(spec.b);
  const Tensor& result = g.tensor(spec.result);
  if (!a.is_dynamic() && !b.is_dynamic() && !result.is_dynamic()) return FusionDecision::ok();
  if (spec.layout_a >= 0 || spec.layout_b >= 0 || spec.slice_a >= 0 || spec.slice_b >= 0 ||
      spec.layout_result >= 0)
    return FusionDecision::no("a product reading A or B or writing its result through a layout "
                              "or a slice over symbolic dims");
  // The stored matrices, a MatMul's vectors as matrices of one row (A) or one column (B):
  // A's last two axes are [M, K] ([K, M] where used transposed), B's [K, N] ([N, K]).
  SymShape ad = a.sym_shape(), bd = b.sym_shape();
  const bool a_vector = ad.size() == 1, b_vector = bd.size() == 1;
  if (a_vector) ad.insert(ad.begin(), DimExpr(1));
  if (b_vector) bd.push_back(DimExpr(1));
  const SymShape out = result.sym_shape();
  const size_t matrix_axes = (a_vector ? 0 : 1) + (b_vector ? 0 : 1);
  if (ad.size() < 2 || bd.size() < 2 || out.size() < matrix_axes)
    return FusionDecision::no("a product over symbolic dims of operands of rank below 1");
  GemmSpec::SymbolicExtents e;
  const DimExpr& a_rows = ad[ad.size() - 2];
  const DimExpr& b_rows = bd[bd.size() - 2];
  e.m = spec.trans_a ? ad.back() : a_rows;
  e.k = spec.trans_a ? a_rows : ad.back();
  e.n = spec.trans_b ? b_rows : bd.back();
  if (e.k != (spec.trans_b ? bd.back() : b_rows))
    return FusionDecision::no(fmt::format("A '{}' {} and B '{}' {}: K differs as expressions",
                                          a.name, dims_str(a), b.name, dims_str(b)));
  if (spec.k == 0) {
    if (e.k.is_constant())
      return FusionDecision::no("a product over symbolic dims whose K is 0 at every size");
    // K is 0 at the planning binding only (seq - 1 planned at seq 1): the addends the planner
    // gave a fill kernel there are the library call's epilogue, which computes the empty sum
    // where the run's K is 0 (stitch_library_gemm: D = act(beta * C + bias)).
    place_addends(g, spec, !b_vector, true);
    spec.fill_blocks = 0;
  }
  if (!spec.fill.empty()) {
    const GemmSpec::Addend& addend = spec.addends[spec.fill.front()];
    const Tensor& t = g.tensor(addend.tensor);
    return FusionDecision::no(fmt::format(
        "the product adds '{}' {}{}, which the library call's epilogue does not take over "
        "symbolic dims (a bias along N and an addend of the result's shape, the bias unscaled); "
        "a separate kernel would add it",
        t.name, dims_str(t),
        addend.scale == 1.0 ? std::string() : fmt::format(" times {}", addend.scale)));
  }
  e.lda = ad.back();
  e.ldb = bd.back();
  e.ldd = e.n;
  const SymShape batch(out.begin(), out.end() - static_cast<std::ptrdiff_t>(matrix_axes));
  const GemmBatch a_batch = gemm_batch(ad, batch), b_batch = gemm_batch(bd, batch);
  // B shared by A's trailing batch axes (a multi-query attention's one key head read by every
  // query head: K [b, 1, d, s] against Q [b, h, s, d]), A's rows continuing across them: those
  // axes fold into M and the leading ones batch the call. Where they start; the batch's end
  // where B is not so shared.
  const size_t shared_from =
      a_batch == GemmBatch::All && b_batch == GemmBatch::Part && !spec.trans_a
          ? shared_trailing_batch(bd, batch)
          : batch.size();
  for (auto [x, kind] : {std::pair{&a, a_batch}, std::pair{&b, b_batch}})
    if (kind == GemmBatch::Part && !(x == &b && shared_from < batch.size()))
      return FusionDecision::no(fmt::format("the batch axes of '{}' {} are neither all of the "
                                            "result's {}, nor none, nor the leading ones of "
                                            "A's (over symbolic dims, one stride per operand)",
                                            x->name, dims_str(*x), dims_str(result)));
  if (shared_from < batch.size()) {
    // The planning binding's loop of calls over the leading axes becomes one batched call.
    spec.outer.clear();
    spec.outer_stride_a.clear();
    spec.outer_stride_b.clear();
    spec.outer_stride_d.clear();
  }
  if (!spec.outer.empty())
    return FusionDecision::no("a product over symbolic dims planned as a loop of calls");
  const DimExpr batches = sym_elements(batch);
  if (sym_elements(out) != batches * e.m * e.n)
    return FusionDecision::no(fmt::format("the result '{}' {} is not the batches of M x N of A "
                                          "{} and B {}",
                                          result.name, dims_str(result), dims_str(a), dims_str(b)));
  spec.rows_folded = false;
  e.batch_count = 1;
  if (shared_from < batch.size()) {
    const SymShape leading(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(shared_from));
    const SymShape trailing(batch.begin() + static_cast<std::ptrdiff_t>(shared_from), batch.end());
    e.stacked = sym_elements(trailing);
    e.m = e.stacked * e.m;
    e.batch_count = sym_elements(leading);
    e.stride_a = e.m * e.k;
    e.stride_b = e.k * e.n;
    // The planning binding's call, as the cost model reads it.
    const SymbolValues planned = g.planning_values();
    spec.m = e.m.evaluate(planned);
    spec.stacked = e.stacked.evaluate(planned);
    spec.batch_count = e.batch_count.evaluate(planned);
    spec.stride_a = e.stride_a.evaluate(planned);
    spec.stride_b = e.stride_b.evaluate(planned);
    spec.stride_d = spec.m * spec.n;
  } else if (a_batch == GemmBatch::All && b_batch == GemmBatch::None && !spec.trans_a) {
    // B shared by every batch of A, whose rows continue from batch to batch: one GEMM with M =
    // batches x m.
    e.m = batches * e.m;
    spec.rows_folded = !batches.is_constant() || batches.constant_value() > 1;
  } else if (a_batch == GemmBatch::All || b_batch == GemmBatch::All) {
    e.batch_count = batches;
    e.stride_a = a_batch == GemmBatch::All ? e.m * e.k : DimExpr(0);
    e.stride_b = b_batch == GemmBatch::All ? e.k * e.n : DimExpr(0);
  }
  e.stride_d = e.m * e.n;
  // Where each addend goes was decided at the planning binding, where a residual of the
  // result's shape may have looked like a row of N (at 1 row) and a row of N like the result's
  // shape: over the symbols, the bias is a fixed row of N and C has the result's dims.
  auto row_of_n = [&](const Tensor& t) {
    if (t.is_dynamic() || t.shape.empty() || t.shape.back() != spec.n) return false;
    return t.elements() == spec.n;
  };
  if (spec.bias >= 0 && g.tensor(spec.addends[spec.bias].tensor).sym_shape() == out &&
      !row_of_n(g.tensor(spec.addends[spec.bias].tensor)) && spec.c < 0) {
    spec.c = spec.bias; // the result's shape over the symbols: C
    spec.bias = -1;
  }
  if (spec.c >= 0 && g.tensor(spec.addends[spec.c].tensor).sym_shape() != out &&
      row_of_n(g.tensor(spec.addends[spec.c].tensor)) && spec.bias < 0) {
    spec.bias = spec.c; // a fixed row of N: the bias
    spec.c = -1;
  }
  for (int i = 0; i < static_cast<int>(spec.addends.size()); ++i) {
    const Tensor& t = g.tensor(spec.addends[i].tensor);
    const bool fits = i == spec.bias ? row_of_n(t) && spec.addends[i].scale == 1.0
                      : i == spec.c  ? t.sym_shape() == out
                                     : false;
    if (!fits)
      return FusionDecision::no(fmt::format("the addend '{}' {} is neither a fixed row of N nor "
                                            "the result's shape {}",
                                            t.name, dims_str(t), sym_shape_to_string(out)));
  }
  spec.symbolic = e;
  return FusionDecision::ok();
}

// A row space over the symbols: rows (the leading axes, which may be symbolic) times a row
// (the trailing axes from `split`), fixed or of the run's length.
struct SymRowSpace {
  SymShape dims;
  size_t split = 0;
  SymShape rows() const { return SymShape(dims.begin(), dims.begin() + split); }
  SymShape row() const { return SymShape(dims.begin() + split, dims.end()); }
};

// Whether a tensor is indexed in the row space by `line` and its place in the row: its leading
// axes (padded to the space's rank) are the space's rows in their layout or all 1; its row
// axes fixed where the space's row is, else the space's row with some axes 1 (a key mask
// [batch, 1, 1, keys] against scores [batch, heads, queries, keys]).
FusionDecision row_space_index(const Graph& g, TensorId t, const SymRowSpace& space) {
  const Tensor& x = g.tensor(t);
  SymShape p = x.sym_shape();
  if (p.size() > space.dims.size())
    return FusionDecision::no(fmt::format("'{}' {} has more axes than the row space {}", x.name,
                                          dims_str(x), sym_shape_to_string(space.dims)));
  p.insert(p.begin(), space.dims.size() - p.size(), DimExpr(1));
  const SymShape rows(p.begin(), p.begin() + space.split);
  const SymShape row(p.begin() + space.split, p.end());
  const SymShape space_row = space.row();
  if (is_static(space_row) && !is_static(row))
    return FusionDecision::no(fmt::format("'{}' {}: the row {} depends on the symbols", x.name,
                                          dims_str(x), sym_shape_to_string(row)));
  if (!is_static(space_row))
    for (size_t d = 0; d < row.size(); ++d)
      if (!is_one(row[d]) && row[d] != space_row[d])
        return FusionDecision::no(fmt::format("'{}' {} is read along the row {} of the row "
                                              "space {} neither whole nor broadcast",
                                              x.name, dims_str(x), sym_shape_to_string(space_row),
                                              sym_shape_to_string(space.dims)));
  if (all_ones(rows) || squeezed(rows) == squeezed(space.rows())) {
    // one value for every row, or one per row
  } else {
    // Broadcast along some of the rows' axes (positions against [batch, seq]): each dim 1 or
    // the space's, read at the row's coordinates (symbolic_broadcast_offset).
    for (size_t d = 0; d < rows.size(); ++d)
      if (!is_one(rows[d]) && rows[d] != space.dims[d])
        return FusionDecision::no(fmt::format("'{}' {} is read in the row space {} neither per "
                                              "row, nor the same for every row, nor broadcast "
                                              "along its rows",
                                              x.name, dims_str(x),
                                              sym_shape_to_string(space.dims)));
    return FusionDecision::ok();
  }
  if (!all_ones(rows) && !all_ones(row) && rows != space.rows())
    return FusionDecision::no(fmt::format("'{}' {} holds elements of rows in another layout than "
                                          "the row space {}",
                                          x.name, dims_str(x), sym_shape_to_string(space.dims)));
  return FusionDecision::ok();
}

// A reduction over symbolic dims: its reduced axes one block (after merging, and dropping axes
// of 1), so that each line is `length` elements `inner` apart (a row where `inner` is 1) at
// (line / inner) * length * inner + line % inner. Its lines, length and inner (the kept axes
// after the block), each of which may depend on the symbols.
FusionDecision symbolic_lines(const Graph& g, const Node& node, DimExpr& lines, DimExpr& length,
                              DimExpr& inner) {
  const Tensor& x = g.tensor(node.inputs[0]);
  const SymShape dims = x.sym_shape();
  const std::vector<bool> reduced = reduced_axes(g, node);
  size_t first = dims.size();
  for (size_t d = 0; d < dims.size(); ++d)
    if (reduced[d] && !is_one(dims[d])) first = std::min(first, d);
  lines = 1;
  length = 1;
  inner = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d < first) {
      if (!reduced[d]) lines = lines * dims[d];
      continue;
    }
    if (is_one(dims[d])) continue;
    if (!reduced[d]) {
      inner = inner * dims[d];
      continue;
    }
    if (!is_one(inner))
      return FusionDecision::no(fmt::format("'{}' {}: a reduction over symbolic dims must reduce "
                                            "one block of axes",
                                            x.name, dims_str(x)));
    length = length * dims[d];
  }
  lines = lines * inner;
  return FusionDecision::ok();
}

// A row kernel's launch for `lines` rows of `length` elements (its block sized by `length`):
// sized for the most lines, and where the symbols change them, covering the actual ones per
// run (LaunchConfig::work).
LaunchConfig rows_launch(const Graph& g, const DimExpr& lines, int64_t length,
                         ThreadMapping mapping, const DeviceParams& device) {
  const int64_t most = std::max<int64_t>(1, lines.bounds(g.symbol_ranges()).hi);
  LaunchConfig launch = row_launch(most, length, mapping, device);
  if (lines.is_constant()) return launch;
  launch.work = lines;
  launch.work_per_block = mapping == ThreadMapping::Flat         ? launch.block[0]
                          : mapping == ThreadMapping::WarpPerRow ? launch.block[0] / 32
                                                                 : 1;
  return launch;
}

// Lines of work the symbols change: the planned launch replaced by rows_launch's.
void row_symbolic_launch(const Graph& g, const DimExpr& lines, int64_t length,
                         ThreadMapping mapping, const DeviceParams& device, LaunchConfig& launch) {
  if (!lines.is_constant()) launch = rows_launch(g, lines, length, mapping, device);
}

// A depthwise Conv over symbolic dims indexes its filter by the channel, which must be fixed
// (a pooling window takes the run's images, channels and spatial extents:
// WindowGeometry::in_dims, out_dims).
FusionDecision depthwise_channels_support(const Graph& g, const Node& window) {
  const Tensor& x = g.tensor(window.inputs[0]);
  if (!x.sym_shape()[1].is_constant())
    return FusionDecision::no(fmt::format("'{}' {}: a depthwise convolution over symbolic "
                                          "channels",
                                          x.name, dims_str(x)));
  return FusionDecision::ok();
}

// A Local group around a window over symbolic dims: every operand read at
// a tap broadcasting to the window's input and every operand read per output element to its
// output over the symbols (the emitter indexes both by their symbolic shapes), one flat launch
// over the output's elements.
FusionDecision window_group_support(const Graph& g, const WindowSpec& spec,
                                    const DeviceParams& device, LaunchConfig& launch) {
  const Node& window = g.nodes[spec.window];
  if (spec.fold == WindowFold::Depthwise)
    if (FusionDecision d = depthwise_channels_support(g, window); !d) return d;
  const SymShape in = g.tensor(window.inputs[0]).sym_shape();
  const SymShape out = g.tensor(window.outputs[0]).sym_shape();
  std::set<TensorId> made;
  for (int32_t n : spec.producers)
    made.insert(g.nodes[n].outputs[0]);
  for (int32_t n : spec.consumers)
    made.insert(g.nodes[n].outputs[0]);
  made.insert(window.outputs[0]);
  std::vector<TensorId> at_taps = {window.inputs[0]}, per_output;
  for (int32_t n : spec.producers)
    for (TensorId t : value_operands(g.nodes[n]))
      at_taps.push_back(t);
  for (int32_t n : spec.consumers)
    for (TensorId t : value_operands(g.nodes[n]))
      per_output.push_back(t);
  for (const auto& [reads, it] : {std::pair{&at_taps, &in}, std::pair{&per_output, &out}})
    for (TensorId t : *reads)
      if (t != kNoTensor && !made.count(t))
        if (FusionDecision d = broadcasts_over_symbols(g, t, *it); !d) return d;
  for (TensorId t : spec.io.writes)
    if (g.tensor(t).sym_shape() != out)
      return FusionDecision::no(fmt::format("the group writes '{}' {}, not the window's output {}",
                                            g.tensor(t).name, dims_str(g.tensor(t)),
                                            sym_shape_to_string(out)));
  flat_symbolic_launch(g, sym_elements(out), 1, device, launch);
  return FusionDecision::ok();
}

FusionDecision regional_support(const Graph& g, const std::vector<int32_t>& nodes,
                                RegionalSpec& spec, const DeviceParams& device,
                                LaunchConfig& launch) {
  // The space's dims: the tensor row_space_shape took it from (the first of the highest rank
  // holding rows x row_length elements), which every row op reads whole.
  SymRowSpace space;
  bool found = false;
  for (int32_t n : nodes) {
    const Node& node = g.nodes[n];
    if (reduction_rule(node.op) == nullptr) continue;
    const Tensor& x = g.tensor(node.inputs[0]);
    if (!found) {
      space.dims = x.sym_shape();
      found = true;
    } else if (x.sym_shape() != space.dims) {
      return FusionDecision::no(
          fmt::format("row ops read {} and {}", sym_shape_to_string(space.dims), dims_str(x)));
    }
  }
  if (!found || g.planning_shape(space.dims) != spec.space)
    return FusionDecision::no("a row group over symbolic dims whose row space is not what its row "
                              "ops read");
  // The row: where the row ops' rows have a fixed length, it starts after the last symbolic
  // axis at the latest (the planning binding may have put size-1 axes into it that are rows at
  // other values of the symbols); where their length is the run's, it is the trailing axes
  // whose product is that length.
  DimExpr first_lines, length, first_inner;
  for (int32_t n : nodes)
    if (reduction_rule(g.nodes[n].op) != nullptr) {
      if (FusionDecision d = symbolic_lines(g, g.nodes[n], first_lines, length, first_inner); !d)
        return d;
      break;
    }
  if (length.is_constant()) {
    space.split = std::max(spec.row_axes_from, symbolic_prefix(space.dims));
  } else {
    space.split = space.dims.size();
    DimExpr product(1);
    for (size_t d = space.dims.size(); d-- > 0;) {
      product = product * space.dims[d];
      if (product == length) {
        space.split = d;
        break;
      }
    }
    if (space.split == space.dims.size())
      return FusionDecision::no(fmt::format("rows of {} elements are not trailing axes of {}",
                                            length.to_string(), sym_shape_to_string(space.dims)));
    // The planner decided which values vary along the row at the planning binding: a symbolic
    // axis of the row bound to 1 there would have made a value broadcast along it look like
    // one per row.
    for (const DimExpr& d : space.row())
      if (!d.is_constant() && g.planning_shape(SymShape{d}).front() < 2)
        return FusionDecision::no(fmt::format("the row {} of the row space {} is planned with "
                                              "its axis {} at 1 (plan at another value of the "
                                              "symbols: --dim NAME=MIN..MAX@TYPICAL)",
                                              sym_shape_to_string(space.row()),
                                              sym_shape_to_string(space.dims), d.to_string()));
  }
  // Row lookups (embeddings): one table, each result row a row of the space or broadcast over
  // some of its axes (positions against [batch, seq]); read at the run's row.
  std::vector<int32_t> gathers;
  for (RegionalSpec::GatherRow& gather : spec.gathers) {
    const Tensor& data = g.tensor(gather.data);
    if (data.is_dynamic() || shape_elements(gather.out_rows) != gather.count)
      return FusionDecision::no(fmt::format("a row lookup in '{}' {} over symbolic dims (one "
                                            "fixed table)",
                                            data.name, dims_str(data)));
    SymShape p = g.tensor(g.nodes[gather.node].outputs[0]).sym_shape();
    p.insert(p.begin(), space.dims.size() - std::min(space.dims.size(), p.size()), DimExpr(1));
    gather.out_rows_dims = SymShape(p.begin(), p.begin() + space.split);
    for (size_t d = 0; d < space.split; ++d)
      if (!is_one(gather.out_rows_dims[d]) && gather.out_rows_dims[d] != space.dims[d])
        return FusionDecision::no(fmt::format("the lookup '{}' {} does not broadcast to the rows "
                                              "{}",
                                              g.nodes[gather.node].name, sym_shape_to_string(p),
                                              sym_shape_to_string(space.rows())));
    if (SymShape(p.begin() + space.split, p.end()) !=
        SymShape(space.dims.begin() + space.split, space.dims.end()))
      return FusionDecision::no(
          fmt::format("the lookup '{}' is not one row of the group's", g.nodes[gather.node].name));
    if (!gather.indices_in_group &&
        squeezed(g.tensor(gather.indices).sym_shape()) != squeezed(gather.out_rows_dims))
      return FusionDecision::no(
          fmt::format("the indices of '{}' are not one per lookup row", g.nodes[gather.node].name));
    gathers.push_back(gather.node);
  }
  for (int32_t n : nodes) {
    const Node& node = g.nodes[n];
    if (std::find(gathers.begin(), gathers.end(), n) != gathers.end()) continue; // checked above
    if (reduction_rule(node.op) != nullptr) {
      DimExpr lines, length, inner;
      if (FusionDecision d = symbolic_lines(g, node, lines, length, inner); !d) return d;
      if (!is_one(inner))
        return FusionDecision::no(
            fmt::format("{} reduces columns in a row group", op_name(node.op)));
      if (length != sym_elements(space.row()) || lines != sym_elements(space.rows()))
        return FusionDecision::no(fmt::format("{} reduces other rows than the row space {}",
                                              op_name(node.op), sym_shape_to_string(space.dims)));
    }
    for (const std::vector<TensorId>* list : {&node.inputs, &node.outputs})
      for (TensorId t : *list) {
        if (t == kNoTensor) continue;
        if (list == &node.inputs && reduction_rule(node.op) != nullptr && t != node.inputs[0])
          continue; // a Reduce's axes
        if (std::any_of(gathers.begin(), gathers.end(),
                        [&](int32_t n) { return g.nodes[n].outputs[0] == t; }))
          continue; // a lookup's row, loaded where used
        if (FusionDecision d = row_space_index(g, t, space); !d) return d;
      }
  }
  // What the group writes: element outputs over the whole space (at base + k), row outputs one
  // value per row (at line); a value the same for every row is never written per row.
  auto padded = [&](TensorId t) {
    SymShape p = g.tensor(t).sym_shape();
    p.insert(p.begin(), space.dims.size() - std::min(space.dims.size(), p.size()), DimExpr(1));
    return p;
  };
  for (TensorId t : spec.element_outputs)
    if (padded(t) != space.dims)
      return FusionDecision::no(fmt::format("the group would write '{}' {} once per row of {}",
                                            g.tensor(t).name, dims_str(g.tensor(t)),
                                            sym_shape_to_string(space.dims)));
  for (TensorId t : spec.row_outputs) {
    const SymShape p = padded(t);
    const SymShape rows(p.begin(), p.begin() + space.split), row(p.begin() + space.split, p.end());
    if (squeezed(rows) != squeezed(space.rows()) || !all_ones(row) ||
        all_ones(space.rows()) != all_ones(rows))
      return FusionDecision::no(fmt::format("the group would write '{}' {} once per row of {}",
                                            g.tensor(t).name, dims_str(g.tensor(t)),
                                            sym_shape_to_string(space.dims)));
  }
  for (const RegionalSpec::PerRowLoad& load : spec.per_row_loads) {
    const Tensor& x = g.tensor(load.tensor);
    if (!(!x.is_dynamic() && x.elements() == 1) &&
        squeezed(x.sym_shape()) != squeezed(space.rows()))
      return FusionDecision::no(fmt::format("'{}' {} is loaded per row but is neither one value "
                                            "nor one per row",
                                            x.name, dims_str(x)));
  }
  spec.space_dims = space.dims;
  spec.row_axes_from = space.split;
  const DimExpr row_length = sym_elements(space.row());
  spec.row_length_dims.reset();
  if (!row_length.is_constant()) spec.row_length_dims = row_length;
  size_symbolic_rows(g, sym_elements(space.rows()), spec.row_length,
                     std::max<int64_t>(1, row_length.bounds(g.symbol_ranges()).hi), device, spec,
                     launch);
  return FusionDecision::ok();
}

// A Gather over symbolic dims (kernel_movement_index.cpp): output element (o, j, p) reads
// data[o, indices[j], p] with every extent the run's; its elements are the work.
FusionDecision gather_support(const Graph& g, const Node& node, const DeviceParams& device,
                              LaunchConfig& launch) {
  const DimExpr work = sym_elements(g.tensor(node.outputs[0]).sym_shape());
  flat_symbolic_launch(g, work, 1, device, launch);
  if (work.is_constant()) { // a fixed output, from data whose axis (where -1 points) is the run's
    launch.work = work;
    launch.work_per_block = launch.block[0];
  }
  return FusionDecision::ok();
}

// A forward Conv over symbolic spatial extents pads each axis by the run's pads (window_pads
// over expressions: SAME's depend on the extent at a stride above 1). The library pads
// symmetrically by fixed pads: where on every axis one constant begin pad on both sides gives
// the run's windows at every value of the symbols (tried one by one), the call takes it;
// otherwise X is first copied with every axis's pads of the run into the group's scratch
// (ConvSpec::pre_pad_begin).
void run_pads(const Graph& g, ConvSpec& spec) {
  const Node& conv = g.nodes[spec.conv];
  const SymbolRanges ranges = g.symbol_ranges();
  const WindowParams params = read_window_params(NodeContext(g, conv), spec.kernel);
  const size_t n = spec.in_spatial_dims.size();
  std::vector<SymAxisPads> pads;
  std::vector<int64_t> symmetric;
  bool pre_pad = spec.pre_pads(); // a fixed axis already needs the copy
  for (size_t i = 0; i < n; ++i) {
    const DimExpr &in = spec.in_spatial_dims[i], &out = spec.out_spatial_dims[i];
    pads.push_back(window_pads(params, i, in, out, ranges));
    const int64_t extent = (spec.kernel[i] - 1) * spec.dilations[i] + 1;
    const int64_t stride = spec.strides[i];
    const int64_t begin = pads.back().begin.evaluate(g.planning_values());
    symmetric.push_back(begin);
    // Not tried (several symbols, too many values): the copy.
    pre_pad = pre_pad || !in.every_value(ranges, [&](const SymbolValues& v) {
                              const int64_t padded = in.evaluate(v) + 2 * begin;
                              return pads.back().begin.evaluate(v) == begin && padded >= extent &&
                                     (padded - extent) / stride + 1 == out.evaluate(v);
                            }).value_or(false);
  }
  if (!pre_pad) {
    spec.pads = symmetric;
    return;
  }
  spec.pads.assign(n, 0);
  spec.pre_pad_begin.clear();
  spec.pre_pad_end.clear();
  spec.padded_spatial_dims.clear();
  spec.padded_spatial.clear();
  for (size_t i = 0; i < n; ++i) {
    spec.pre_pad_begin.push_back(pads[i].begin);
    spec.pre_pad_end.push_back(pads[i].end);
    spec.padded_spatial_dims.push_back(spec.in_spatial_dims[i] + pads[i].begin + pads[i].end);
    spec.padded_spatial.push_back(spec.padded_spatial_dims.back().evaluate(g.planning_values()));
  }
}

// A convolution through the library over symbolic images and spatial extents: X, the result
// and a residual (channels first or last alike) depend on the symbols only through the
// convolution's batch and its input's or output's spatial extents, the channels, W and the bias
// fixed; the library's descriptors are the run's (cached per shape). Pads the library cannot
// take go through a padded copy of X in the group's scratch, sized for the largest shape.
FusionDecision conv_support(const Graph& g, ConvSpec& spec, const DeviceParams& device,
                            int64_t& scratch_bytes) {
  const Node& conv = g.nodes[spec.conv];
  const SymShape x = g.tensor(conv.inputs[0]).sym_shape();
  const SymShape y = g.tensor(conv.outputs[0]).sym_shape();
  std::vector<DimExpr> allowed = {x[0]};
  allowed.insert(allowed.end(), x.begin() + 2, x.end());
  allowed.insert(allowed.end(), y.begin() + 2, y.end());
  for (TensorId t : {spec.x, spec.w, spec.bias, spec.residual, spec.result}) {
    if (t == kNoTensor) continue;
    const bool fixed = t == spec.w || t == spec.bias;
    for (const DimExpr& d : g.tensor(t).sym_shape())
      if (!d.is_constant() &&
          (fixed || std::find(allowed.begin(), allowed.end(), d) == allowed.end()))
        return FusionDecision::no(fmt::format("a convolution over symbolic dims whose '{}' {} "
                                              "depends on the symbols beyond its images and "
                                              "spatial extents",
                                              g.tensor(t).name, dims_str(g.tensor(t))));
  }
  if (!x[1].is_constant() || !y[1].is_constant())
    return FusionDecision::no("a convolution over symbolic channels");
  if (!x[0].is_constant()) spec.batch_dims = x[0];
  const SymShape in(x.begin() + 2, x.end()), out(y.begin() + 2, y.end());
  if (!is_static(in) || !is_static(out)) {
    spec.in_spatial_dims = in;
    spec.out_spatial_dims = out;
  }
  const SymbolRanges ranges = g.symbol_ranges();
  // The library convolves images of at least one pixel (an empty batch it skips).
  for (const SymShape* dims : {&in, &out})
    for (const DimExpr& d : *dims)
      if (d.bounds(ranges).lo < 1)
        return FusionDecision::no(fmt::format("a convolution over a spatial extent {} that may "
                                              "be 0 (the library takes images of at least one "
                                              "pixel)",
                                              d.to_string()));
  if (!spec.transpose && !is_static(in)) run_pads(g, spec);
  if (spec.transpose && !is_static(in)) {
    // The begin pad and output padding are the same at every size (the pads are fixed, SAME's
    // total is the dilated kernel plus the output padding less the stride), but the library's
    // output before its padding, stride * (in - 1) + extent - 2 * begin, must be positive at
    // the smallest size too: else the whole output is computed and cropped.
    bool crop = spec.crops();
    spec.full_spatial_dims.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t extent = (spec.kernel[i] - 1) * spec.dilations[i] + 1;
      spec.full_spatial_dims.push_back((in[i] - 1) * spec.strides[i] + extent);
      const int64_t begin = spec.crops() ? spec.crop_begin[i] : spec.pads[i];
      crop = crop || (spec.full_spatial_dims.back() - 2 * begin).bounds(ranges).lo < 1;
    }
    if (crop && !spec.crops()) {
      spec.crop_begin = spec.pads;
      spec.pads.assign(in.size(), 0);
      spec.full_spatial.clear();
      for (const DimExpr& d : spec.full_spatial_dims)
        spec.full_spatial.push_back(d.evaluate(g.planning_values()));
    }
    if (!crop) spec.full_spatial_dims.clear();
  }
  if (spec.pre_pads()) {
    spec.pre_pad_blocks = flat_launch(spec.pre_pad_elements(&ranges), 1, device).grid[0];
    spec.pre_pad_work = spec.image_elements(spec.in_channels, spec.padded_spatial_dims);
  }
  if (spec.crops()) {
    spec.crop_blocks =
        flat_launch(sym_elements(g.tensor(spec.result).sym_shape()).largest(ranges), 1, device)
            .grid[0];
    spec.crop_work = spec.image_elements(spec.out_channels, spec.out_spatial_dims.empty()
                                                                ? sym_shape_of(spec.out_spatial)
                                                                : spec.out_spatial_dims);
  }
  // The padded copy or the uncropped output, sized for the largest shape.
  if (spec.pre_pads() || spec.crops()) scratch_bytes = spec.scratch_bytes(&ranges);
  return FusionDecision::ok();
}

// Range, ConstantOfShape, Trilu, Concat and GatherND over symbolic dims (kernel_movement_copy.cpp,
// kernel_movement_index.cpp): an element per thread, every extent the run's. Range's delta is
// fixed and a start computed from the symbols an integer; GatherND's index rows are fixed.
FusionDecision flat_copy_support(const Graph& g, const Node& node, const DeviceParams& device,
                                 LaunchConfig& launch) {
  if (node.op == OpKind::Range) {
    const Tensor& start = g.tensor(node.inputs[0]);
    if (g.tensor(node.inputs[2]).has_symbolic_values() ||
        (start.has_symbolic_values() && !dtype_is_integer(start.dtype)))
      return FusionDecision::no("a Range whose delta, or floating start, depends on the symbols");
  }
  if (node.op == OpKind::GatherND && !g.tensor(node.inputs[1]).sym_shape().back().is_constant())
    return FusionDecision::no("a GatherND whose index rows' length depends on the symbols");
  flat_symbolic_launch(g, sym_elements(g.tensor(node.outputs[0]).sym_shape()), 1, device, launch);
  return FusionDecision::ok();
}

// Flash-decoding over symbolic dims: where some shape in range has fewer heads x query tiles
// than SMs and keys enough for two splits of kTilesPerSplit key tiles, the run splits its keys
// by the planner's rule (AttentionSpec::Symbolic::sm_count). The partial rows are bounded over
// every shape: a run splits only with fewer blocks than SMs, into at most ceil(2 * SMs /
// blocks) splits, so blocks x splits stay below 3 x SMs. Left to one kernel where that scratch
// would not fit.
void split_by_run(const Graph& g, AttentionSpec& spec, const DeviceParams& device,
                  int64_t& scratch_bytes) {
  AttentionSpec::Symbolic& sym = *spec.symbolic;
  const SymbolRanges ranges = g.symbol_ranges();
  const int64_t fewest_blocks =
      std::max<int64_t>(1, (sym.heads * sym.query_tiles).bounds(ranges).lo);
  const int64_t most_blocks = std::max<int64_t>(1, (sym.heads * sym.query_tiles).bounds(ranges).hi);
  const int64_t most_key_tiles = (sym.keys.bounds(ranges).hi + spec.key_tile - 1) / spec.key_tile;
  if (fewest_blocks >= device.sm_count || most_key_tiles / kTilesPerSplit < 2) return;
  const int64_t rows =
      std::min(3 * int64_t{device.sm_count}, most_blocks * kMaxSplits) * spec.query_tile();
  const int64_t bytes = rows * (8 + 4 * spec.value_dim);
  if (bytes > device.max_global_scratch) return;
  sym.sm_count = device.sm_count;
  sym.tiles_per_split = kTilesPerSplit;
  sym.max_splits = kMaxSplits;
  sym.split_rows = rows;
  scratch_bytes = bytes;
}

// A Tile over symbolic dims: output coordinate c reads the input at c modulo the run's extent
// on every axis; its repeats give the output's shape only (the shape rule's expressions), so
// they may be computed from the symbols (a class token tiled over the run's batch).
FusionDecision tile_support(const Graph& g, const Node& node, const DeviceParams& device,
                            LaunchConfig& launch) {
  flat_symbolic_launch(g, sym_elements(g.tensor(node.outputs[0]).sym_shape()), 1, device, launch);
  return FusionDecision::ok();
}

// Along each symbolic axis a Slice reads from a start >= 0 with a positive step: what the
// planning binding normalized is then the start at every shape (until the start passes the
// axis's end, where the output is empty). The Slice's own kernel (`own_kernel`) computes its
// starts per run: one counted from the run's end of the axis (max(dim + start, 0): x[:, -1:]),
// and any negative step (from min(start, dim - 1): x[::-1]).
FusionDecision slice_starts_hold(const Graph& g, const Node& node, bool own_kernel = false) {
  const Tensor& data = g.tensor(node.inputs[0]);
  const SymShape dims = data.sym_shape();
  NodeContext nc(g, node);
  std::vector<int64_t> starts, axes, steps;
  if (nc.opset() < 10) {
    starts = nc.req_ints("starts");
    axes = nc.attr_ints("axes");
  } else {
    starts = nc.const_int_vector(1, "starts");
    if (nc.has_input(3)) axes = nc.const_int_vector(3, "axes");
    if (nc.has_input(4)) steps = nc.const_int_vector(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  const std::vector<int64_t> normalized = nc.normalize_axes(axes, nc.rank(0), "axes");
  for (size_t i = 0; i < starts.size() && i < normalized.size() && i < steps.size(); ++i) {
    const DimExpr& d = dims[static_cast<size_t>(normalized[i])];
    if (d.is_constant()) continue;
    if (!own_kernel && (starts[i] < 0 || steps[i] <= 0))
      return FusionDecision::no(fmt::format(
          "a Slice of the symbolic axis {} of '{}' {} from {} step {} (read through in a fused "
          "group over symbolic dims, a Slice starts at a constant >= 0 with a positive step)",
          normalized[i], data.name, dims_str(data), starts[i], steps[i]));
  }
  return FusionDecision::ok();
}

// A Slice over symbolic dims (kernel_movement_copy.cpp's symbolic read): along a symbolic axis
// its step positive and its start a constant >= 0 or counted from the run's end of the axis,
// so that element c of the output reads input element start + c * step at every shape (where
// the start passes the axis's end, the output is empty there). Fixed axes slice as planned;
// ends only size the output.
FusionDecision slice_support(const Graph& g, const Node& node, const DeviceParams& device,
                             LaunchConfig& launch) {
  const Tensor& data = g.tensor(node.inputs[0]);
  const SymShape dims = data.sym_shape();
  NodeContext nc(g, node);
  for (int k = 1; k < static_cast<int>(node.inputs.size()); ++k) {
    if (k == 2 || node.inputs[static_cast<size_t>(k)] == kNoTensor) continue; // ends size it
    const Tensor& x = g.tensor(node.inputs[static_cast<size_t>(k)]);
    if (x.has_symbolic_values())
      return FusionDecision::no(fmt::format("a Slice whose {} '{}' = {} depends on the symbols",
                                            k == 1   ? "starts"
                                            : k == 3 ? "axes"
                                                     : "steps",
                                            x.name, sym_shape_to_string(x.sym_values)));
  }
  if (FusionDecision d = slice_starts_hold(g, node, true); !d) return d;
  flat_symbolic_launch(g, sym_elements(g.tensor(node.outputs[0]).sym_shape()), 1, device, launch);
  return FusionDecision::ok();
}

// TopK over symbolic dims (kernel_movement_topk.cpp): a block per row, the rows the run's. K
// and the axes after the selected one (the row's stride) are fixed; the selected axis may be
// symbolic where it is never shorter than K: then the row's length is the run's and the
// selection's buffer serves the longest row. The grid is sized for the most rows.
FusionDecision topk_support(const Graph& g, const Node& node, OpSpec& spec, LaunchConfig& launch) {
  const SymShape in = g.tensor(node.inputs[0]).sym_shape();
  const SymShape out = g.tensor(node.outputs[0]).sym_shape();
  NodeContext nc(g, node);
  const auto axis = static_cast<size_t>(nc.normalize_axis(nc.attr_int("axis", -1), nc.rank(0)));
  for (size_t d = axis + 1; d < in.size(); ++d)
    if (!in[d].is_constant())
      return FusionDecision::no(fmt::format("TopK over symbolic dims needs fixed axes after the "
                                            "selected one, not {} (axis {})",
                                            sym_shape_to_string(in), axis));
  if (!out[axis].is_constant())
    return FusionDecision::no(
        fmt::format("TopK over symbolic dims needs a fixed K, not {}", out[axis].to_string()));
  STITCH_INTERNAL_CHECK(spec.topk.has_value(), "TopK '{}' without its selection plan", node.name);
  TopKPlan& plan = *spec.topk;
  const DimExpr& length = in[axis];
  if (!length.is_constant()) {
    const DimBounds range = length.bounds(g.symbol_ranges());
    // Shape inference refused a k above the axis' length at any size (infer_dims.cpp, TopK).
    STITCH_INTERNAL_CHECK(
        length
            .every_value(g.symbol_ranges(),
                         [&](const SymbolValues& v) { return length.evaluate(v) >= plan.k; })
            .value_or(range.lo >= plan.k),
        "TopK '{}' selects {} along axis {} of {}, which may be shorter", node.name, plan.k, axis,
        sym_shape_to_string(in));
    plan.length_dims = length;
    plan.capacity = topk_capacity(range.hi, plan.k);
    launch.block = {topk_threads(plan), 1, 1};
  }
  DimExpr rows = 1;
  for (size_t d = 0; d < in.size(); ++d)
    if (d != axis) rows = rows * in[d];
  if (rows.is_constant()) return FusionDecision::ok();
  const int64_t most = std::max<int64_t>(1, rows.bounds(g.symbol_ranges()).hi);
  launch.grid = {std::min<int64_t>(most, std::numeric_limits<int32_t>::max()), 1, 1};
  launch.work = rows;
  launch.work_per_block = 1;
  return FusionDecision::ok();
}

// A GEMM chain over symbolic rows (kernel_gemm_chain.cpp): X's rows are the run's (its leading
// dims: a batch and a sequence), the inner, hidden and output widths and the weights fixed. X is
// read as rows of its last axis, every value of the chain holds rows x its width in that order,
// and the other operands of the products (Gemm's C), the activation and the epilogue broadcast
// to their values at every shape. The grid is the run's row tiles, a cluster of blocks each,
// sized for the most rows.
FusionDecision chain_support(const Graph& g, const std::vector<int32_t>& nodes, GemmChainSpec& spec,
                             LaunchConfig& launch) {
  const Tensor& x = g.tensor(spec.x.tensor);
  const SymShape xs = x.sym_shape();
  if (xs.empty() || xs.back() != DimExpr(spec.inner) || spec.x.offset != 0 ||
      spec.x.col_stride != 1 || spec.x.row_stride != spec.inner)
    return FusionDecision::no(fmt::format("the chain reads X '{}' {} other than as rows of its "
                                          "last axis",
                                          x.name, dims_str(x)));
  DimExpr rows = 1;
  for (size_t d = 0; d + 1 < xs.size(); ++d)
    rows = rows * xs[d];
  for (const GemmChainSpec::Matrix* w :
       {&spec.first.w, &spec.w2, spec.gate ? &spec.gate->w : &spec.first.w})
    if (g.tensor(w->tensor).is_dynamic())
      return FusionDecision::no(fmt::format("the chain's weight '{}' {} has symbolic dims",
                                            g.tensor(w->tensor).name,
                                            dims_str(g.tensor(w->tensor))));
  std::set<TensorId> inside;
  for (int32_t n : nodes)
    for (TensorId t : g.nodes[n].outputs)
      inside.insert(t);
  // Each value: rows x its last axis; each operand from outside broadcasts to the value it
  // meets.
  for (int32_t n : nodes) {
    const Node& node = g.nodes[n];
    if (node.op == OpKind::View) continue;
    const SymShape out = g.tensor(node.outputs[0]).sym_shape();
    if (out.empty() || !out.back().is_constant() || sym_elements(out) != rows * out.back())
      return FusionDecision::no(fmt::format("'{}' {} in the chain is not its rows {} by a fixed "
                                            "width",
                                            g.tensor(node.outputs[0]).name,
                                            dims_str(g.tensor(node.outputs[0])), rows.to_string()));
    if (n == spec.first.node || n == spec.second || (spec.gate && n == spec.gate->node)) {
      const TensorId c = n == spec.second       ? spec.second_c
                         : n == spec.first.node ? spec.first.c
                                                : spec.gate->c;
      if (c != kNoTensor)
        if (FusionDecision d = broadcasts_over_symbols(g, c, out); !d) return d;
      continue;
    }
    for (TensorId t : value_operands(node))
      if (t != kNoTensor && inside.count(t) == 0)
        if (FusionDecision d = broadcasts_over_symbols(g, t, out); !d) return d;
  }
  spec.symbolic_rows = rows;
  if (rows.is_constant()) return FusionDecision::ok();
  const DimExpr blocks =
      DimExpr::ceil_div(rows, 16 * int64_t{spec.warps_m}) * int64_t{spec.cluster_blocks};
  launch.grid[0] = std::max<int64_t>(spec.cluster_blocks, blocks.bounds(g.symbol_ranges()).hi);
  launch.work = blocks;
  launch.work_per_block = 1;
  return FusionDecision::ok();
}

// A Concat's or a Pad's parts over a symbolic axis (MovementRead::run_bounds): each covers
// its operand's run length after the ones before it (a Concat), or after the constant pad (a
// Pad). The planning binding must not have dropped a part as empty that another binding fills.
FusionDecision run_bounds(const Graph& g, MovementRead& m) {
  const Node& node = g.nodes[m.node];
  const auto axis = static_cast<size_t>(m.axis);
  if (node.op == OpKind::Concat) {
    std::vector<TensorId> joined;
    for (TensorId t : node.inputs)
      if (t != kNoTensor && g.tensor(t).sym_shape()[axis] != DimExpr(0)) joined.push_back(t);
    if (joined.size() != m.parts.size())
      return FusionDecision::no(fmt::format("'{}' (Concat) joins an operand empty at the "
                                            "planning binding only",
                                            node.name));
    DimExpr at = 0;
    for (size_t k = 0; k < joined.size(); ++k) { // the parts are these, in order
      m.parts[k].run_begin = at;
      at = at + g.tensor(joined[k]).sym_shape()[axis];
      m.parts[k].run_end = at;
    }
  } else {
    const SymShape in = g.tensor(node.inputs[0]).sym_shape();
    if (m.parts.empty())
      return FusionDecision::no(fmt::format("'{}' ({}) pads an operand empty at the planning "
                                            "binding along the symbolic axis {}",
                                            node.name, op_name(node.op), m.axis));
    m.parts[0].run_begin = m.parts[0].begin;
    m.parts[0].run_end = DimExpr(m.parts[0].begin) + in[axis];
  }
  m.run_bounds = true;
  return FusionDecision::ok();
}

// A Local group with movement nodes over symbolic dims (kernel_fused_remapped.cpp): each
// element asks its values at coordinates that the moves map, so every map must hold at every
// shape: Concats and Pads along any axis (a symbolic one by the run's bounds: run_bounds),
// Slices of a symbolic axis from 0 (step 1), Expands and broadcasts widening the same axes at
// every value of the symbols.
FusionDecision moves_support(const Graph& g, const std::vector<int32_t>& nodes,
                             std::vector<MovementRead>& moves) {
  auto widens = [](const DimExpr& from, const DimExpr& to) { return is_one(from) && !is_one(to); };
  for (MovementRead& m : moves) {
    const Node& node = g.nodes[m.node];
    const SymShape out = g.tensor(node.outputs[0]).sym_shape();
    if (node.op == OpKind::Slice)
      if (FusionDecision d = slice_starts_hold(g, node); !d) return d;
    if (m.axis >= 0) {
      bool symbolic = !out[static_cast<size_t>(m.axis)].is_constant();
      for (const MovementRead::Part& part : m.parts)
        symbolic |= !g.tensor(part.operand).sym_shape()[static_cast<size_t>(m.axis)].is_constant();
      if (symbolic)
        if (FusionDecision d = run_bounds(g, m); !d) return d;
    }
    for (const MovementRead::Part& part : m.parts) {
      const SymShape in = g.tensor(part.operand).sym_shape();
      for (size_t j = 0; j < in.size(); ++j) {
        if (in[j].is_constant()) continue;
        const bool plain = part.source[j] >= 0 && part.step[j] == 1 &&
                           (part.offset[j] == 0 || static_cast<int32_t>(j) == m.axis);
        if (!plain)
          return FusionDecision::no(fmt::format("'{}' ({}) reads the symbolic axis {} of '{}' "
                                                "{} other than from 0 with step 1",
                                                node.name, op_name(node.op), j,
                                                g.tensor(part.operand).name,
                                                dims_str(g.tensor(part.operand))));
      }
      if (node.op == OpKind::Expand) {
        const size_t lead = out.size() - in.size();
        for (size_t j = 0; j < in.size(); ++j)
          if (widens(in[j], out[j + lead]) != (part.source[j] < 0))
            return FusionDecision::no(fmt::format("'{}' (Expand) widens {} to {} at the "
                                                  "planning binding only",
                                                  node.name, dims_str(g.tensor(part.operand)),
                                                  sym_shape_to_string(out)));
      }
    }
  }
  // The pointwise nodes' operands broadcast to their results at every value of the symbols.
  for (int32_t n : nodes) {
    const Node& node = g.nodes[n];
    if (!op_is_pointwise(node.op) || node.op == OpKind::Expand) continue;
    const SymShape out = g.tensor(node.outputs[0]).sym_shape();
    for (TensorId t : value_operands(node))
      if (t != kNoTensor)
        if (FusionDecision d = broadcasts_over_symbols(g, t, out); !d) return d;
  }
  return FusionDecision::ok();
}

// ---- the attention kernel over symbolic dims ----

// A strided view of a stored tensor over the symbols (StridedMatrix's counterpart).
struct SymView {
  SymShape shape, strides;
  DimExpr offset;
};

SymView sym_packed(const SymShape& shape) {
  return {shape, sym_row_major_strides(shape), DimExpr(0)};
}

// The view read in `to`'s dims, as a View reads it (legality_library.cpp's reshaped over the
// symbols): runs of axes of equal products, each contiguous within itself. The planning values
// steer which side of a run grows; the products must then be equal as expressions. nullopt
// where that does not hold for every value of the symbols.
std::optional<SymView> sym_reshaped(const Graph& g, const SymView& view, const SymShape& to) {
  SymShape extents, strides; // the view's axes that are not the constant 1
  for (size_t j = 0; j < view.shape.size(); ++j)
    if (!is_one(view.shape[j])) {
      extents.push_back(view.shape[j]);
      strides.push_back(view.strides[j]);
    }
  auto planned = [&](const DimExpr& d) { return g.planning_shape(SymShape{d}).front(); };
  SymView r{to, SymShape(to.size(), DimExpr(0)), view.offset};
  size_t from = 0, at = 0;
  while (at < to.size() || from < extents.size()) {
    if (at < to.size() && is_one(to[at])) {
      ++at;
      continue;
    }
    if (at >= to.size() || from >= extents.size()) return std::nullopt;
    size_t old_end = from, new_end = at;
    DimExpr old_size = extents[from], new_size = to[at];
    while (old_size != new_size) {
      if (planned(old_size) <= planned(new_size) && old_end + 1 < extents.size()) {
        old_size = old_size * extents[++old_end];
      } else if (new_end + 1 < to.size()) {
        new_size = new_size * to[++new_end];
      } else {
        return std::nullopt;
      }
      if (planned(old_size) > planned(new_size) * 1024 * 1024) return std::nullopt;
    }
    for (size_t k = from; k < old_end; ++k)
      if (strides[k] != strides[k + 1] * extents[k + 1]) return std::nullopt;
    DimExpr stride = strides[old_end];
    for (size_t k = new_end + 1; k-- > at;) {
      r.strides[k] = stride;
      stride = stride * to[k];
    }
    from = old_end + 1;
    at = new_end + 1;
  }
  return r;
}

// The view of `stored` that the group's layout nodes (and scalings) make on the way to
// `operand`, over the symbols.
FusionDecision sym_follow(const Graph& g, const AttentionSpec& spec,
                          const AttentionSpec::Operand& o, TensorId operand, SymView& r) {
  const TensorId stored = o.tensor;
  const std::vector<int32_t>& scalings = o.scalings;
  // The chain from `operand` back to `stored`: each tensor's producer among the group's layout
  // nodes and the operand's scalings.
  std::vector<int32_t> chain;
  for (TensorId at = operand; at != stored;) {
    int32_t producer = -1;
    for (const std::vector<int32_t>* list : {&spec.layouts, &scalings})
      for (int32_t n : *list)
        if (g.nodes[n].outputs[0] == at) producer = n;
    if (producer < 0 || chain.size() > spec.layouts.size() + scalings.size())
      return FusionDecision::no(fmt::format("'{}' does not lead to '{}' through the layouts",
                                            g.tensor(stored).name, g.tensor(operand).name));
    chain.push_back(producer);
    const Node& n = g.nodes[producer];
    // A scaling reads the operand and its scalar.
    at = n.inputs[0];
    if (auto k = std::find(scalings.begin(), scalings.end(), producer); k != scalings.end())
      if (at == o.scalars[static_cast<size_t>(k - scalings.begin())]) at = n.inputs[1];
  }
  r = sym_packed(g.tensor(stored).sym_shape());
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const int32_t next = *it;
    const Node& n = g.nodes[next];
    const SymShape to = g.tensor(n.outputs[0]).sym_shape();
    if (n.op == OpKind::Transpose) {
      const std::vector<int64_t> perm = read_perm(NodeContext(g, n));
      SymView p{{}, {}, r.offset};
      for (int64_t axis : perm) {
        p.shape.push_back(r.shape[static_cast<size_t>(axis)]);
        p.strides.push_back(r.strides[static_cast<size_t>(axis)]);
      }
      r = p;
    } else if (n.op == OpKind::Slice) {
      for (const SliceAxis& a : read_slice_params(NodeContext(g, n))) {
        const auto axis = static_cast<size_t>(a.axis);
        if (!r.shape[axis].is_constant())
          return FusionDecision::no("a Slice of a symbolic axis on the way to the attention");
        r.offset = r.offset + r.strides[axis] * a.start;
        r.strides[axis] = r.strides[axis] * a.step;
        r.shape[axis] = a.length;
      }
    } else if (n.op == OpKind::Expand) {
      SymView e{to, SymShape(to.size(), DimExpr(0)), r.offset};
      const size_t lead = to.size() - r.shape.size();
      for (size_t j = 0; j < r.shape.size(); ++j)
        if (r.shape[j] == to[j + lead]) e.strides[j + lead] = r.strides[j];
      r = e;
    } else if (n.op == OpKind::View) {
      std::optional<SymView> viewed = sym_reshaped(g, r, to);
      if (!viewed)
        return FusionDecision::no(fmt::format("'{}' {} reshapes a view into axes no strides over "
                                              "the symbols describe",
                                              n.name, dims_str(g.tensor(n.outputs[0]))));
      r = *viewed;
    } // a scaling keeps the view
    if (r.shape != to)
      return FusionDecision::no(fmt::format("'{}' does not read as a strided view over the "
                                            "symbols",
                                            g.tensor(n.outputs[0]).name));
  }
  return FusionDecision::ok();
}

// The operand's strides against the batch axes (right-aligned, 0 where it has none or a
// constant 1), its row and column strides.
AttentionSpec::SymbolicOperand sym_operand(const SymView& v, const SymShape& batch,
                                           bool swap_rows) {
  AttentionSpec::SymbolicOperand o;
  o.batch = batch;
  o.offset = v.offset;
  const size_t rank = v.shape.size();
  const size_t axes = rank - 2;
  o.batch_strides.assign(batch.size(), DimExpr(0));
  for (size_t j = 0; j < axes; ++j)
    if (!is_one(v.shape[j])) o.batch_strides[batch.size() - axes + j] = v.strides[j];
  o.row_stride = v.strides[swap_rows ? rank - 1 : rank - 2];
  o.col_stride = v.strides[swap_rows ? rank - 2 : rank - 1];
  return o;
}

// Whether `d` is a multiple of `n` for every value of the symbols.
bool divisible(const DimExpr& d, int64_t n) {
  return DimExpr::exact_div(d, DimExpr(n)).has_value();
}

// The attention kernel (kernel_attention.cpp) over symbolic dims: the queries, keys and heads
// the run's, every operand read through strides over the symbols (grouped-query heads and
// prologues included); one kernel, without flash-decoding (group_support drops the split).
FusionDecision attention_support(const Graph& g, AttentionSpec& spec, LaunchConfig& launch) {
  // A prologue (rotary embedding) is evaluated per element as a Local group's moves are.
  for (AttentionSpec::Operand* o : {&spec.q, &spec.k, &spec.v})
    if (FusionDecision d = moves_support(g, o->prologue, o->moves); !d) return d;
  const Node& qk = g.nodes[spec.scores];
  const Node& pv = g.nodes[spec.product];
  AttentionSpec::Symbolic s;
  s.logit_shape = g.tensor(spec.logits).sym_shape();
  // The products' heads and rows: the logits', or G heads folded into each (grouped queries).
  const SymShape grouped = g.tensor(qk.outputs[0]).sym_shape();
  const SymShape grouped_batch(grouped.begin(), grouped.end() - 2);
  const DimExpr grouped_queries = grouped[grouped.size() - 2];
  s.batch = SymShape(s.logit_shape.begin(), s.logit_shape.end() - 2);
  s.heads = sym_elements(s.batch);
  s.queries = s.logit_shape[s.logit_shape.size() - 2];
  s.keys = s.logit_shape.back();
  s.query_tiles = DimExpr::ceil_div(s.queries, spec.query_tile());
  // The output in the attention's heads: the product, or the View of it in spec.views.
  TensorId merged = pv.outputs[0];
  for (int32_t n : spec.views)
    if (g.nodes[n].inputs[0] == merged) merged = g.nodes[n].outputs[0];
  const std::vector<std::pair<const AttentionSpec::Operand*, TensorId>> reads = {
      {&spec.q, qk.inputs[0]}, {&spec.k, qk.inputs[1]}, {&spec.v, pv.inputs[1]}};
  std::vector<SymView> views;
  for (const auto& [o, operand] : reads) {
    SymView view;
    if (FusionDecision d = sym_follow(g, spec, *o, operand, view); !d) return d;
    views.push_back(view);
  }
  if (grouped_batch.size() != spec.q.batch.size() ||
      sym_elements(grouped_batch) * grouped_queries != s.heads * s.queries)
    return FusionDecision::no("the attention's scores are no grouping of its heads over the "
                              "symbols");
  s.q = sym_operand(views[0], grouped_batch, false);
  s.k = sym_operand(views[1], grouped_batch, true);
  s.v = sym_operand(views[2], grouped_batch, false);
  if (spec.q.rows_per_head > 0) s.q.rows_per_head = grouped_queries;
  // The output: packed, or written through the Transpose that follows it.
  const SymShape merged_dims = g.tensor(merged).sym_shape();
  SymView out = sym_packed(merged_dims);
  if (spec.out.tensor != merged) {
    int32_t transpose = -1;
    for (int32_t n : spec.layouts)
      if (g.nodes[n].op == OpKind::Transpose && g.nodes[n].inputs[0] == merged) transpose = n;
    if (transpose < 0 || g.nodes[transpose].outputs[0] != spec.out.tensor)
      return FusionDecision::no("the attention's output is written through more than a Transpose");
    const std::vector<int64_t> perm = read_perm(NodeContext(g, g.nodes[transpose]));
    const SymView stored = sym_packed(g.tensor(spec.out.tensor).sym_shape());
    for (size_t j = 0; j < perm.size(); ++j)
      out.strides[static_cast<size_t>(perm[j])] = stored.strides[j];
  }
  // Written through the View unfolding grouped heads: in the attention's heads.
  s.out = sym_operand(out, merged != pv.outputs[0] ? s.batch : grouped_batch, false);
  if (spec.out.rows_per_head > 0) s.out.rows_per_head = grouped_queries;
  // 16-byte loads only where the strides keep every row aligned at every shape.
  for (auto [o, so] :
       {std::pair{&spec.q, &s.q}, std::pair{&spec.k, &s.k}, std::pair{&spec.v, &s.v}}) {
    if (o->vector <= 1) continue;
    bool aligned = divisible(so->offset, o->vector) && divisible(so->row_stride, o->vector);
    for (const DimExpr& stride : so->batch_strides)
      aligned = aligned && divisible(stride, o->vector);
    if (!aligned) o->vector = 1;
  }
  // The logit nodes read tensors that broadcast against the logits over the symbols.
  for (int32_t n : spec.logit_nodes)
    for (TensorId t : value_operands(g.nodes[n]))
      if (t != kNoTensor &&
          std::find(spec.io.reads.begin(), spec.io.reads.end(), t) != spec.io.reads.end())
        if (FusionDecision d = broadcasts_over_symbols(g, t, s.logit_shape); !d) return d;
  const DimExpr work = s.heads * s.query_tiles;
  launch.grid[0] = std::max<int64_t>(1, work.bounds(g.symbol_ranges()).hi);
  launch.work = work;
  launch.work_per_block = 1;
  spec.symbolic = std::move(s);
  return FusionDecision::ok();
}

// Whether every tensor of the group holds fewer than 2^31 elements at the symbols' maxima: then
// its kernel's index math may run in 32 bits (LaunchConfig::index32).
bool fits_32_bits(const Graph& g, const FusionGroup& group) {
  bool dynamic = false;
  for (int32_t n : group.nodes)
    for (const std::vector<TensorId>* list : {&g.nodes[n].inputs, &g.nodes[n].outputs})
      for (TensorId t : *list) {
        if (t == kNoTensor) continue;
        const Tensor& x = g.tensor(t);
        dynamic = dynamic || x.is_dynamic();
        if (sym_elements(x.sym_shape()).bounds(g.symbol_ranges()).hi >= (int64_t{1} << 31))
          return false;
      }
  return dynamic;
}

FusionDecision group_support(const Graph& g, FusionGroup& group, const DeviceParams& device);

// Independent parts over symbolic dims: each part's body as its own group's (group_support of
// the part alone: its work per run and its most blocks), its blocks per run
// clamp(ceil(work / work per block), 1, most) (IndependentSpec::Part::run_blocks); the launch's
// work is their sum, one block each. A part whose rows would need another block size over the
// symbols, or shared memory, is refused.
FusionDecision independent_support(const Graph& g, FusionGroup& group, IndependentSpec& spec,
                                   const DeviceParams& device) {
  if (group.parts.size() != spec.parts.size())
    return FusionDecision::no("an Independent group without its parts' nodes");
  const SymbolRanges ranges = g.symbol_ranges();
  DimExpr total = 0;
  int64_t most = 0;
  for (size_t k = 0; k < spec.parts.size(); ++k) {
    IndependentSpec::Part& part = spec.parts[k];
    FusionGroup alone;
    alone.kind = GroupKind::Kernel;
    alone.nodes = group.parts[k];
    std::visit([&](const auto& body) { alone.spec = body; }, part.body);
    const auto* regional = std::get_if<RegionalSpec>(&part.body);
    alone.mapping = regional != nullptr ? regional->mapping : ThreadMapping::Flat;
    alone.scheme = regional != nullptr ? StitchScheme::Regional : StitchScheme::Local;
    alone.launch.block = group.launch.block;
    alone.launch.grid = {part.blocks, 1, 1};
    if (FusionDecision d = group_support(g, alone, device); !d) return d;
    // A part's rows keep its planned mapping at every shape: where the mapping rule gives
    // another somewhere in the range, the rows belong in a group of their own, with variants.
    if (const auto* rows = std::get_if<RegionalSpec>(&alone.spec)) {
      DimBounds lines = sym_elements(rows->rows_dims()).bounds(ranges);
      DimBounds length = sym_elements(rows->row_dims()).bounds(ranges);
      lines.lo = std::max<int64_t>(1, lines.lo);
      length.lo = std::max<int64_t>(1, length.lo);
      for (const MappingRegion& region : row_mapping_regions(lines, length, device))
        if (region.mapping != rows->mapping)
          return FusionDecision::no(fmt::format(
              "an independent part's rows ({} of {}) call for other thread mappings within the "
              "symbols' ranges; their mapping variants need a group of their own",
              sym_shape_to_string(rows->rows_dims()), sym_shape_to_string(rows->row_dims())));
    }
    if (alone.launch.block != group.launch.block || alone.launch.dynamic_shared_bytes > 0)
      return FusionDecision::no(fmt::format(
          "an independent part's rows need blocks of {} threads and {} bytes of shared memory "
          "over the symbols; the group's blocks have {} threads and none",
          alone.launch.block[0], alone.launch.dynamic_shared_bytes, group.launch.block[0]));
    if (const auto* local = std::get_if<LocalSpec>(&alone.spec))
      part.body = *local;
    else
      part.body = std::get<RegionalSpec>(alone.spec);
    part.blocks = std::max<int64_t>(1, alone.launch.grid[0]);
    const DimExpr blocks =
        alone.launch.work_per_block > 0
            ? DimExpr::max(
                  1,
                  DimExpr::min(DimExpr::ceil_div(alone.launch.work, alone.launch.work_per_block),
                               part.blocks, &ranges),
                  &ranges)
            : DimExpr(part.blocks);
    part.run_blocks = blocks;
    total = total + blocks;
    most += part.blocks;
  }
  group.launch.grid = {most, 1, 1};
  group.launch.work = total;
  group.launch.work_per_block = 1;
  group.part_blocks.clear();
  for (const IndependentSpec::Part& part : spec.parts)
    group.part_blocks.push_back(part.blocks);
  return FusionDecision::ok();
}

FusionDecision group_support(const Graph& g, FusionGroup& group, const DeviceParams& device) {
  if (g.symbols.empty()) return FusionDecision::ok();
  if (std::holds_alternative<AliasSpec>(group.spec)) return FusionDecision::ok();
  if (auto* spec = std::get_if<GemmSpec>(&group.spec)) return gemm_support(g, *spec);
  if (auto* spec = std::get_if<ConvSpec>(&group.spec))
    return conv_support(g, *spec, device, group.scratch_bytes);
  bool dynamic = false;
  TensorId values = kNoTensor; // a tensor of values computed from the symbols, read as data
  for (int32_t n : group.nodes) {
    for (const std::vector<TensorId>* list : {&g.nodes[n].inputs, &g.nodes[n].outputs})
      for (TensorId t : *list)
        dynamic = dynamic || (t != kNoTensor && g.tensor(t).is_dynamic());
    // (A Resize's sizes give its shape only: the kernel takes the run's extents from the
    // shapes, and its scales from them; a Tile's repeats give its shape only; a Pad's pads its
    // shape and shifts, which its kernel computes from the symbols.)
    const Node& node = g.nodes[n];
    const bool shape_only =
        (node.op == OpKind::Tile || node.op == OpKind::Pad) && node.inputs.size() > 1;
    if (node.op != OpKind::View && node.op != OpKind::Resize)
      for (TensorId t : value_operands(node))
        if (t != kNoTensor && g.tensor(t).has_symbolic_values() &&
            !(shape_only && t == node.inputs[1]))
          values = t;
  }
  if (!dynamic && values == kNoTensor) return FusionDecision::ok();
  // Such values are the run's only where a kernel evaluates them from the symbols as it reads
  // them (symbolic_value_code): pointwise kernels and groups (an Independent group's parts are
  // checked each alone), Range, Trilu's k, and ConstantOfShape, which takes only its shape from
  // them. Elsewhere they would be their planning values.
  const auto* op = std::get_if<OpSpec>(&group.spec);
  const OpKind kind = op != nullptr ? g.nodes[op->node].op : OpKind::Identity;
  const bool evaluates_values =
      std::holds_alternative<LocalSpec>(group.spec) ||
      std::holds_alternative<IndependentSpec>(group.spec) ||
      (op != nullptr && (kind == OpKind::Range || kind == OpKind::Trilu ||
                         kind == OpKind::ConstantOfShape || op_is_pointwise(kind)));
  if (values != kNoTensor && !evaluates_values)
    return FusionDecision::no(fmt::format("it reads '{}' = {}, values computed from the symbolic "
                                          "dims, as data",
                                          g.tensor(values).name,
                                          sym_shape_to_string(g.tensor(values).sym_values)));
  if (auto* spec = std::get_if<OpSpec>(&group.spec)) {
    const Node& node = g.nodes[spec->node];
    if (node.op == OpKind::Range || node.op == OpKind::ConstantOfShape ||
        node.op == OpKind::Trilu || node.op == OpKind::Concat || node.op == OpKind::GatherND) {
      group.mapping = ThreadMapping::Flat;
      return flat_copy_support(g, node, device, group.launch);
    }
    if (spec->reduction) {
      DimExpr lines, length, inner;
      if (FusionDecision d = symbolic_lines(g, node, lines, length, inner); !d) return d;
      // The kernel walks the lines as these give them at every shape (a planning binding of 1
      // drops the axes it makes 1 from the planned space): rows as planned, columns (lines
      // `inner` apart, `inner` the run's where the symbols change it) a thread per line.
      ReductionSpace& space = *spec->reduction;
      space.inner = g.planning_shape(SymShape{inner}).front();
      if (!inner.is_constant()) space.inner_dims = inner;
      space.length = g.planning_shape(SymShape{length}).front();
      if (!length.is_constant()) space.length_dims = length;
      if (!is_one(inner) && group.mapping != ThreadMapping::Flat) {
        group.mapping = ThreadMapping::Flat;
        group.launch =
            flat_launch(std::max<int64_t>(1, lines.bounds(g.symbol_ranges()).hi), 1, device);
      }
      row_symbolic_launch(g, lines, space.length, group.mapping, device, group.launch);
      // Rows whose count or length the symbols change may want other mappings than the
      // planning shape's (a global pool over one pixel or over thousands): variants.
      group.variants.clear();
      if (is_one(inner) && node.op != OpKind::CumSum && space.rows())
        add_mapping_variants(
            g, lines, length, space.length, device, group,
            [&](ThreadMapping mapping, int64_t row_length, int64_t, MappingVariant& variant) {
              variant.spec = group.spec;
              variant.launch = rows_launch(g, lines, row_length, mapping, device);
              return true;
            });
      return FusionDecision::ok();
    }
    if (node.op == OpKind::Gather) return gather_support(g, node, device, group.launch);
    if (node.op == OpKind::Tile) {
      group.mapping = ThreadMapping::Flat;
      return tile_support(g, node, device, group.launch);
    }
    if (spec->window) { // MaxPool, AveragePool: a thread per output element
      group.mapping = ThreadMapping::Flat;
      flat_symbolic_launch(g, sym_elements(g.tensor(node.outputs[0]).sym_shape()), 1, device,
                           group.launch);
      return FusionDecision::ok();
    }
    if (node.op == OpKind::Slice) {
      group.mapping = ThreadMapping::Flat;
      return slice_support(g, node, device, group.launch);
    }
    if (node.op == OpKind::Transpose || node.op == OpKind::DepthToSpace ||
        node.op == OpKind::SpaceToDepth) {
      // One thread per output element (kernel_movement_permute.cpp's symbolic copy through the
      // 6-D view of DepthToSpace and SpaceToDepth, their channels fixed by the shape rule).
      group.mapping = ThreadMapping::Flat;
      group.launch =
          flat_launch(std::max<int64_t>(1, g.tensor(node.outputs[0]).elements()), 1, device);
      flat_symbolic_launch(g, sym_elements(g.tensor(node.outputs[0]).sym_shape()), 1, device,
                           group.launch);
      return FusionDecision::ok();
    }
    if (node.op == OpKind::TopK) return topk_support(g, node, *spec, group.launch);
    if (node.op == OpKind::GatherElements || node.op == OpKind::Resize || node.op == OpKind::Pad) {
      // A thread per output element: GatherElements's coordinates and data strides the run's
      // (kernel_movement_index.cpp); Resize's extents and scales from sizes the run's, its
      // scales fixed (kernel_movement_resize.cpp); Pad's coordinates and its windows of the
      // input the run's, its pads fixed (kernel_movement_copy.cpp).
      group.mapping = ThreadMapping::Flat;
      flat_symbolic_launch(g, sym_elements(g.tensor(node.outputs[0]).sym_shape()), 1, device,
                           group.launch);
      return FusionDecision::ok();
    }
    if (node.op == OpKind::Einsum) {
      // An Einsum that is no matrix product (a diagonal, a label summed in one operand only,
      // other than two operands): its loop nest, a thread per output element, every extent
      // and stride the run's (kernel_movement_einsum.cpp).
      group.mapping = ThreadMapping::Flat;
      flat_symbolic_launch(g, sym_elements(g.tensor(node.outputs[0]).sym_shape()), 1, device,
                           group.launch);
      return FusionDecision::ok();
    }
    if (!op_is_pointwise(node.op))
      return FusionDecision::no(
          fmt::format("no kernel for {} over symbolic dims yet", op_name(node.op)));
    const SymShape it = g.tensor(node.outputs[0]).sym_shape();
    std::vector<TensorId> reads = value_operands(node);
    std::erase(reads, kNoTensor);
    int width = group.launch.vector_width;
    if (FusionDecision d = pointwise_support(g, it, reads, width); !d) return d;
    flat_symbolic_launch(g, sym_elements(it), width, device, group.launch);
    group.launch.vector_width = width;
    return FusionDecision::ok();
  }
  if (auto* spec = std::get_if<LocalSpec>(&group.spec)) {
    const SymShape it = g.tensor(spec->io.writes.front()).sym_shape();
    for (TensorId t : spec->io.writes)
      if (g.tensor(t).sym_shape() != it)
        return FusionDecision::no(fmt::format(
            "the group writes '{}' {} and '{}' {}", g.tensor(spec->io.writes.front()).name,
            sym_shape_to_string(it), g.tensor(t).name, dims_str(g.tensor(t))));
    if (!spec->moves.empty()) {
      if (FusionDecision d = moves_support(g, spec->nodes, spec->moves); !d) return d;
      spec->iteration_dims = it;
      flat_symbolic_launch(g, sym_elements(it), 1, device, group.launch);
      return FusionDecision::ok();
    }
    int width = spec->vector_width;
    if (FusionDecision d = pointwise_support(g, it, spec->io.reads, width); !d) return d;
    spec->vector_width = width;
    spec->iteration_dims = it;
    flat_symbolic_launch(g, sym_elements(it), width, device, group.launch);
    group.launch.vector_width = width;
    return FusionDecision::ok();
  }
  if (auto* spec = std::get_if<RegionalSpec>(&group.spec))
    return regional_support(g, group.nodes, *spec, device, group.launch);
  if (auto* spec = std::get_if<WindowSpec>(&group.spec))
    return window_group_support(g, *spec, device, group.launch);
  if (auto* spec = std::get_if<AttentionSpec>(&group.spec)) {
    // Flash-decoding's split of the keys suits some shapes of the range only: the run decides
    // it (split_by_run), the planned kernel taking every key tile in each block otherwise.
    spec->splits = 1;
    spec->keys_per_split = 0;
    group.scratch_bytes = 0;
    group.launch.grid[1] = 1;
    if (FusionDecision d = attention_support(g, *spec, group.launch); !d) return d;
    split_by_run(g, *spec, device, group.scratch_bytes);
    return FusionDecision::ok();
  }
  if (auto* spec = std::get_if<GemmChainSpec>(&group.spec))
    return chain_support(g, group.nodes, *spec, group.launch);
  if (auto* spec = std::get_if<IndependentSpec>(&group.spec))
    return independent_support(g, group, *spec, device);
  return FusionDecision::no(
      fmt::format("no {} group over symbolic dims yet", group_kind_name(group.kind)));
}

} // namespace

void size_symbolic_rows(const Graph& g, const DimExpr& lines, int64_t length, int64_t longest,
                        const DeviceParams& device, RegionalSpec& spec, LaunchConfig& launch) {
  const bool index32 = launch.index32; // the group's index math, not its geometry
  launch = rows_launch(g, lines, length, spec.mapping, device);
  launch.index32 = index32;
  spec.block = launch.block[0];
  // Every row read again is in one of the two lists (place_row_cache), in tensor order.
  std::vector<RegionalSpec::CachedRow> rows =
      spec.cache == RowCache::None ? spec.uncached : spec.cached;
  const RowCachePlacement placed = place_row_cache(g, spec, std::move(rows), longest, device);
  launch.dynamic_shared_bytes = placed.shared_bytes;
}

FusionDecision symbolic_support(const Graph& g, FusionGroup& group, const DeviceParams& device) {
  FusionDecision d = group_support(g, group, device);
  if (d && !g.symbols.empty()) group.launch.index32 = fits_32_bits(g, group);
  return d;
}

} // namespace stitch::legality
