// Attention groups (kernel_attention.cpp prints them over stitch_attention.cuh): scaled
// dot-product attention as canonicalization and lowering leave it, recognized structurally.
//
//   scores = MatMul(Q, Kᵀ)          Q and Kᵀ read through Slices and Transposes (head split)
//   x = logit nodes(scores, ...)    pointwise, each reading the scores' chain and tensors that
//                                   broadcast against the scores (scale, biases, masks, a cap)
//   m = ReduceMax(x), e = Exp(x - m), p = e / ReduceSum(e)   over the keys (the last axis)
//   out = MatMul(Cast*(p), V)       V read through Slices and Transposes, the result written
//                                   through one Transpose (head merge)
//
// The batch axes of the scores ([batch, heads]) are the kernel's flat head index; an operand
// with a size-1 batch axis is broadcast (multi-query K and V). The tile geometry: up to 4 warps
// of up to 4 query rows each (2 for head dims over 128), as many as the queries fill, and key
// tiles of 64 (32 for head dims over 128, or 32 keys or fewer); on tensor cores warps of 16
// query rows (place_tiles). Over symbolic queries the ends of their range get their own
// geometry as variants (attention_variants).
#include <algorithm>
#include <functional>
#include <limits>
#include <set>

#include "graph/op_params.h"
#include "planner/legality_internal.h"
#include "planner/reduction_mapping.h"

namespace stitch::legality {

namespace {

constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMmaRows = 16;          // query rows of a warp on tensor cores
constexpr int kTensorCoreCapability = 80; // bfloat16 warp products: sm_80 and later
constexpr int64_t kShortKeys = 32;        // keys up to this many: key tiles of 32

// The one consumer of `t`, when it is in the group and `t` is no graph output; else -1.
int32_t only_consumer(const FusionContext& ctx, const std::vector<int32_t>& nodes, TensorId t) {
  const std::vector<int32_t>& readers = ctx.consumers[t];
  if (readers.size() != 1 || ctx.graph_output[t] || !contains(nodes, readers[0])) return -1;
  return readers[0];
}

// `node` is `op` over the last axis of its input alone, keeping it (as lowering writes
// Softmax's ReduceMax and ReduceSum).
bool reduces_last_axis(const Graph& g, const Node& node, OpKind op) {
  if (node.op != op || node.inputs.empty() || node.outputs.size() != 1) return false;
  const Shape& in = g.tensor(node.inputs[0]).shape;
  if (in.empty()) return false;
  Shape kept = in;
  kept.back() = 1;
  if (g.tensor(node.outputs[0]).shape != kept) return false;
  const ReductionSpace space = reduction_space(g, node);
  return space.rows() && space.length == in.back();
}

bool reads(const Node& node, OpKind op, TensorId first, TensorId second) {
  return node.op == op && node.inputs.size() == 2 && node.inputs[0] == first &&
         node.inputs[1] == second;
}

// The scalar operand of `node` when it is Mul(x, c), Mul(c, x) or Div(x, c) with c a single
// element from outside the group, and x its other operand; else kNoTensor.
TensorId scaled_operand(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                        const Node& node) {
  if ((node.op != OpKind::Mul && node.op != OpKind::Div) || node.inputs.size() != 2 ||
      node.outputs.size() != 1)
    return kNoTensor;
  const Graph& g = ctx.graph;
  auto scalar = [&](TensorId c) {
    const int32_t p = ctx.producer[c];
    return g.tensor(c).elements() == 1 && (p < 0 || !contains(nodes, p)) &&
           g.tensor(c).dtype == g.tensor(node.outputs[0]).dtype;
  };
  if (scalar(node.inputs[1])) return node.inputs[0];
  if (node.op == OpKind::Mul && scalar(node.inputs[0])) return node.inputs[1];
  return kNoTensor;
}

// `t` as stored: back through the group's Slices, Transposes, Views and Expands producing it, and
// its scalar Muls and Divs (each read by the next alone), to the tensor in memory, the strided view
// of it they make and the scalings to apply to each element.
struct StoredView {
  TensorId stored = kNoTensor;
  StridedMatrix view;
  std::vector<int32_t> layouts;
  std::vector<int32_t> scalings; // from the stored tensor on
  std::vector<TensorId> scalars; // each scaling's other operand
  std::vector<int32_t> prologue; // the nodes computing `stored` in the group (prologue_of)
};

// The strided view of `stored` that the chain of nodes `forward` (each reading the previous
// one's output, the first reading `stored`) makes, and its scalings.
FusionDecision follow(const FusionContext& ctx, TensorId stored,
                      const std::vector<int32_t>& forward, StoredView& r) {
  const Graph& g = ctx.graph;
  r.stored = stored;
  r.view = packed(g.tensor(stored).shape);
  r.layouts.clear();
  r.scalings.clear();
  r.scalars.clear();
  TensorId at = stored; // the operand's value so far
  for (int32_t node : forward) {
    const Node& n = g.nodes[node];
    if (n.op == OpKind::Transpose) {
      r.view = permuted(r.view, read_perm(NodeContext(g, n)));
    } else if (n.op == OpKind::Slice) {
      for (const SliceAxis& s : read_slice_params(NodeContext(g, n))) {
        r.view.offset += s.start * r.view.strides[s.axis];
        r.view.strides[s.axis] *= s.step;
        r.view.shape[s.axis] = s.length;
      }
    } else if (n.op == OpKind::Expand) {
      // A broadcast: the operand right-aligned, its widened size-1 axes and the new leading
      // ones read with stride 0.
      const Shape& to = g.tensor(n.outputs[0]).shape;
      StridedMatrix expanded;
      expanded.offset = r.view.offset;
      expanded.shape = to;
      expanded.strides.assign(to.size(), 0);
      const size_t lead = to.size() - r.view.shape.size();
      for (size_t j = 0; j < r.view.shape.size(); ++j)
        if (r.view.shape[j] == to[j + lead]) expanded.strides[j + lead] = r.view.strides[j];
      r.view = expanded;
    } else if (n.op == OpKind::View) {
      std::optional<StridedMatrix> viewed = reshaped(r.view, g.tensor(n.outputs[0]).shape);
      if (!viewed)
        return FusionDecision::no(fmt::format("{} reshapes a strided view of '{}' into axes no "
                                              "strides describe",
                                              ctx.describe(node), g.tensor(stored).name));
      r.view = *viewed;
    }
    if (n.op == OpKind::Transpose || n.op == OpKind::Slice || n.op == OpKind::View ||
        n.op == OpKind::Expand) {
      r.layouts.push_back(node);
    } else {
      r.scalings.push_back(node);
      r.scalars.push_back(n.inputs[0] == at ? n.inputs[1] : n.inputs[0]);
    }
    at = n.outputs[0];
    if (r.view.shape != g.tensor(n.outputs[0]).shape)
      return FusionDecision::no(
          fmt::format("{} does not read as a strided view", ctx.describe(node)));
  }
  return FusionDecision::ok();
}

// A node a kernel evaluates per element at any coordinates: pointwise, or an index remapping
// (what a Local group holds).
bool evaluable(const FusionContext& ctx, int32_t p) {
  if (p < 0) return false;
  const NodeClass c = ctx.node_class[p];
  return c == NodeClass::Pointwise || ((c == NodeClass::Movement || c == NodeClass::Layout) &&
                                       remapping_op(ctx.graph, ctx.graph.nodes[p]));
}

constexpr size_t kMaxPrologueNodes = 32;

// The operand prologue computing `t` (read by `reader` alone): back from t's producer, the
// evaluable nodes and Views (of `within`, when given) whose every value only the prologue itself
// (or `reader`, for t) reads, in node order; empty where t's producer is no such node or the
// prologue would hold more than kMaxPrologueNodes.
std::vector<int32_t> prologue_of(const FusionContext& ctx, const std::vector<int32_t>* within,
                                 TensorId t, int32_t reader) {
  const Graph& g = ctx.graph;
  // Views too: the kernel reads them at the same row-major position (no strided view needed).
  auto candidate = [&](int32_t p) {
    return p >= 0 && (evaluable(ctx, p) || ctx.node_class[p] == NodeClass::View) &&
           (within == nullptr || contains(*within, p)) && g.nodes[p].outputs.size() == 1;
  };
  const int32_t root = ctx.producer[t];
  if (!candidate(root) || ctx.graph_output[t]) return {};
  std::set<int32_t> taken;
  // Later nodes first: every consumer of a node is decided before the node.
  std::set<int32_t, std::greater<>> pending = {root};
  while (!pending.empty()) {
    const int32_t p = *pending.begin();
    pending.erase(pending.begin());
    const TensorId value = g.nodes[p].outputs[0];
    bool only_prologue = !ctx.graph_output[value];
    for (int32_t c : ctx.consumers[value])
      only_prologue = only_prologue && (taken.count(c) > 0 || (p == root && c == reader));
    if (!only_prologue) continue; // its value stays an input of the prologue
    taken.insert(p);
    if (taken.size() > kMaxPrologueNodes) return {};
    for (TensorId operand : present_operands(g.nodes[p]))
      if (candidate(ctx.producer[operand])) pending.insert(ctx.producer[operand]);
  }
  if (!taken.count(root)) return {};
  return {taken.begin(), taken.end()};
}

// The tensor a step on an operand's way reads: a Slice's, Transpose's, View's or Expand's input,
// a scalar Mul's or Div's other operand; kNoTensor for any other node.
TensorId step_source(const FusionContext& ctx, const std::vector<int32_t>& nodes, int32_t p) {
  const Node& n = ctx.graph.nodes[p];
  if (n.op == OpKind::Transpose || n.op == OpKind::Slice || n.op == OpKind::View ||
      (n.op == OpKind::Expand && remapping_op(ctx.graph, n)))
    return n.inputs.empty() ? kNoTensor : n.inputs[0];
  return scaled_operand(ctx, nodes, n);
}

FusionDecision read_through(const FusionContext& ctx, const std::vector<int32_t>& nodes, TensorId t,
                            int32_t reader, StoredView& r) {
  const Graph& g = ctx.graph;
  std::vector<int32_t> chain; // from t back
  TensorId at = t;
  int32_t next = reader;
  for (;;) {
    const int32_t p = ctx.producer[at];
    if (p < 0 || !contains(nodes, p)) break;
    if (only_consumer(ctx, nodes, at) != next)
      return FusionDecision::no(
          fmt::format("'{}' is read by more than {}", g.tensor(at).name, ctx.describe(next)));
    const TensorId from = step_source(ctx, nodes, p);
    if (from == kNoTensor && evaluable(ctx, p)) break; // `at` is computed: a prologue
    if (from == kNoTensor)
      return FusionDecision::no(fmt::format("{} feeds a matrix product of the attention and is "
                                            "no Slice, Transpose, View, scalar Mul or Div or "
                                            "pointwise node",
                                            ctx.describe(p)));
    chain.push_back(p);
    next = p;
    at = from;
  }
  std::reverse(chain.begin(), chain.end());
  // The longest part next to the product that reads as a strided view; the steps before it (a
  // View no strides describe, say) belong to the prologue computing what that part reads.
  size_t skip = 0; // an empty part always reads as one: t itself
  for (;; ++skip) {
    const TensorId from = skip == 0 ? at : g.nodes[chain[skip - 1]].outputs[0];
    const std::vector<int32_t> part(chain.begin() + static_cast<int64_t>(skip), chain.end());
    if (follow(ctx, from, part, r) || skip == chain.size()) break;
  }
  if (skip > 0) {
    next = skip < chain.size() ? chain[skip] : reader;
    at = g.nodes[chain[skip - 1]].outputs[0];
  }
  r.prologue.clear();
  if (const int32_t p = ctx.producer[at]; p >= 0 && contains(nodes, p)) {
    r.prologue = prologue_of(ctx, &nodes, at, next);
    if (r.prologue.empty())
      return FusionDecision::no(fmt::format("'{}', which {} reads, is computed by nodes the "
                                            "attention kernel cannot evaluate as it loads (each "
                                            "read by them alone, pointwise or index remappings, "
                                            "at most {})",
                                            g.tensor(at).name, ctx.describe(next),
                                            kMaxPrologueNodes));
  }
  if (r.view.shape != g.tensor(t).shape)
    return FusionDecision::no(fmt::format("'{}' does not read as a strided view of '{}'",
                                          g.tensor(t).name, g.tensor(r.stored).name));
  return FusionDecision::ok();
}

// The operand's batch strides against the scores' batch axes (right-aligned, 0 where the
// operand has no such axis or a size-1 one), and its row and column strides.
AttentionSpec::Operand operand_of(const StoredView& v, const Shape& batch, bool swap_rows) {
  AttentionSpec::Operand o;
  o.tensor = v.stored;
  o.offset = v.view.offset;
  o.batch = batch;
  const size_t rank = v.view.shape.size();
  const size_t axes = rank - 2;
  o.batch_strides.assign(batch.size(), 0);
  for (size_t j = 0; j < axes; ++j)
    if (v.view.shape[j] != 1) o.batch_strides[batch.size() - axes + j] = v.view.strides[j];
  o.row_stride = v.view.strides[swap_rows ? rank - 1 : rank - 2];
  o.col_stride = v.view.strides[swap_rows ? rank - 2 : rank - 1];
  return o;
}

bool attention_dtype(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
}

// The tile geometry for `queries` queries and `keys` keys in `heads` heads (the planning shape's,
// or over symbolic dims another shape's: attention_variants): spec's tensor_cores, element,
// warps, rows_per_warp, key_tile and shared_bytes, and a thread's registers. Tensor cores where
// both products read one 16-bit type (their operands are then exact in it, and the graph rounds
// the probabilities to it), every target architecture has them, and the queries fill at least
// one warp's 16 rows; else fp32 FMA.
FusionDecision place_tiles(const FusionContext& ctx, AttentionSpec& spec, int64_t queries,
                           int64_t keys, int64_t heads, int64_t& registers) {
  const Graph& g = ctx.graph;
  const Node& qk = g.nodes[spec.scores];
  const Node& pv = g.nodes[spec.product];
  const bool wide = spec.head_dim > 128 || spec.value_dim > 128;
  const DType element = g.tensor(qk.inputs[0]).dtype;
  bool one_type = element == DType::Float16 || element == DType::BFloat16;
  for (TensorId t : {qk.inputs[1], pv.inputs[0], pv.inputs[1]})
    one_type = one_type && g.tensor(t).dtype == element;
  spec.tensor_cores =
      one_type && ctx.device.min_compute_capability >= kTensorCoreCapability && queries >= kMmaRows;
  spec.element = DType::Float32;
  // Registers for the nodes a thread evaluates per element: the logit nodes and the largest
  // prologue.
  const int64_t nodes = static_cast<int64_t>(
      spec.logit_nodes.size() +
      std::max({spec.q.prologue.size(), spec.k.prologue.size(), spec.v.prologue.size()}));
  // FlashMmaConfig's layout: a T tile of Q and two stages of a K and a V tile, their rows the
  // head and value dims padded to multiples of 16, plus 8; scores, probabilities and outputs
  // stay in registers.
  const int64_t padded_dims = (spec.head_dim + 15) / 16 * 16;
  const int64_t padded_values = (spec.value_dim + 15) / 16 * 16;
  auto mma_shared_bytes = [&](int64_t query_tile, int64_t key_tile) {
    return 2 * query_tile * (padded_dims + 8) +
           2 * 2 * key_tile * (padded_dims + 8 + padded_values + 8);
  };
  // A lane's registers on tensor cores: its Q fragments (4 a 16 dims), scores (4 a tile of 8
  // keys), output accumulators (4 a tile of 8 values), two rows' maximum and sum.
  auto mma_registers = [&](int64_t key_tile) {
    return padded_dims / 4 + key_tile / 2 + padded_values / 2 + 4;
  };
  if (spec.tensor_cores) {
    // Four warps a block where the heads and query tiles still give every SM a block; fewer
    // (more, smaller blocks) where they would not.
    const int64_t row_tiles = (queries + kMmaRows - 1) / kMmaRows;
    int warps = static_cast<int>(std::min<int64_t>(4, row_tiles));
    while (warps > 1 && heads * ((row_tiles + warps - 1) / warps) < ctx.device.sm_count)
      warps /= 2;
    int key_tile = wide || keys <= kShortKeys ? 32 : 64;
    // Where the device's shared memory (the oldest --arch's) does not hold the tiles: shorter
    // key tiles, then fewer warps, then the FMA kernel.
    while (mma_shared_bytes(int64_t{warps} * kMmaRows, key_tile) >
               ctx.device.max_shared_per_block &&
           (key_tile > 32 || warps > 1)) {
      if (key_tile > 32)
        key_tile = 32;
      else
        warps /= 2;
    }
    spec.warps = warps;
    spec.rows_per_warp = kMmaRows;
    spec.key_tile = key_tile;
    spec.shared_bytes = mma_shared_bytes(spec.query_tile(), key_tile);
    if (spec.shared_bytes > ctx.device.max_shared_per_block) spec.tensor_cores = false;
    // Where the fragments would not fit a thread's registers (head and value dims near 256):
    // the FMA kernel, whose rows keep less in registers.
    if (kBaseRegisters + kRegistersPerNode * nodes + mma_registers(key_tile) >
        ctx.device.max_registers_per_thread)
      spec.tensor_cores = false;
  }
  if (spec.tensor_cores) {
    spec.element = element;
    registers = kBaseRegisters + kRegistersPerNode * nodes + mma_registers(spec.key_tile);
  } else {
    // Up to 4 warps of up to 4 query rows each (2 for wide heads), as many as the queries fill;
    // key tiles of 64, 32 for wide heads or 32 keys or fewer. A row's state and scores in
    // registers.
    const int64_t rows = std::clamp<int64_t>(queries, 1, wide ? 8 : 16);
    spec.warps = static_cast<int>(std::min<int64_t>(4, rows));
    spec.rows_per_warp = static_cast<int>((rows + spec.warps - 1) / spec.warps);
    spec.key_tile = keys > kShortKeys && !wide ? 64 : 32;
    const int64_t query_tile = spec.query_tile();
    spec.shared_bytes = 4 * (query_tile * spec.head_dim + spec.key_tile * (spec.head_dim | 1) +
                             spec.key_tile * spec.value_dim + query_tile * spec.key_tile);
    registers = kBaseRegisters + kRegistersPerNode * nodes +
                spec.rows_per_warp * ((spec.value_dim + 31) / 32 + spec.key_tile / 32 + 2);
  }
  if (spec.shared_bytes > ctx.device.max_shared_per_block)
    return FusionDecision::no(fmt::format("the attention's tiles take {} bytes of shared memory, "
                                          "over the {} a block may have",
                                          spec.shared_bytes, ctx.device.max_shared_per_block));
  return FusionDecision::ok();
}

} // namespace

FusionDecision analyze_attention(const FusionContext& ctx, GroupAnalysis& a) {
  if (ctx.attention == FusionMode::Unfused)
    return FusionDecision::no("--attention unfused keeps every attention out of one kernel");
  const Graph& g = ctx.graph;
  const std::vector<int32_t>& nodes = a.nodes;
  AttentionSpec spec;
  std::vector<int32_t> products;
  for (int32_t n : nodes)
    if (ctx.node_class[n] == NodeClass::Gemm) products.push_back(n);
  if (products.size() != 2) return FusionDecision::no("an attention has two matrix products");
  spec.scores = products[0];
  spec.product = products[1];
  const Node& qk = g.nodes[spec.scores];
  const Node& pv = g.nodes[spec.product];
  if (qk.op != OpKind::MatMul || pv.op != OpKind::MatMul)
    return FusionDecision::no(fmt::format("{} and {}: an attention's products are MatMuls",
                                          ctx.describe(spec.scores), ctx.describe(spec.product)));
  const TensorId scores = qk.outputs[0];

  // The softmax over the keys: ReduceMax, Sub, Exp, ReduceSum, Div.
  int32_t max_node = -1;
  for (int32_t n : nodes)
    if (g.nodes[n].op == OpKind::ReduceMax) {
      if (max_node >= 0)
        return FusionDecision::no(fmt::format("{} and {} are two ReduceMax in one attention",
                                              ctx.describe(max_node), ctx.describe(n)));
      max_node = n;
    }
  if (max_node < 0)
    return FusionDecision::no("no softmax over the keys joins the two matrix products");
  const Node& max = g.nodes[max_node];
  if (!reduces_last_axis(g, max, OpKind::ReduceMax))
    return FusionDecision::no(
        fmt::format("{} does not reduce the last axis alone", ctx.describe(max_node)));
  spec.logits = max.inputs[0];
  const int32_t sub_node = only_consumer(ctx, nodes, max.outputs[0]);
  if (sub_node < 0 || !reads(g.nodes[sub_node], OpKind::Sub, spec.logits, max.outputs[0]))
    return FusionDecision::no(
        fmt::format("{} is not the softmax's: x - max(x) does not follow", ctx.describe(max_node)));
  const int32_t exp_node = only_consumer(ctx, nodes, g.nodes[sub_node].outputs[0]);
  if (exp_node < 0 || g.nodes[exp_node].op != OpKind::Exp)
    return FusionDecision::no(
        fmt::format("{} is not followed by the softmax's Exp", ctx.describe(sub_node)));
  const TensorId exp = g.nodes[exp_node].outputs[0];
  const std::vector<int32_t>& exp_readers = ctx.consumers[exp];
  int32_t sum_node = -1, div_node = -1;
  for (int32_t n : exp_readers) {
    if (reduces_last_axis(g, g.nodes[n], OpKind::ReduceSum) && sum_node < 0)
      sum_node = n;
    else if (g.nodes[n].op == OpKind::Div && div_node < 0)
      div_node = n;
  }
  if (exp_readers.size() != 2 || ctx.graph_output[exp] || sum_node < 0 || div_node < 0 ||
      !contains(nodes, sum_node) || !contains(nodes, div_node) ||
      only_consumer(ctx, nodes, g.nodes[sum_node].outputs[0]) != div_node ||
      !reads(g.nodes[div_node], OpKind::Div, exp, g.nodes[sum_node].outputs[0]))
    return FusionDecision::no(fmt::format("{} is not normalized by the sum over the keys as "
                                          "a softmax",
                                          ctx.describe(exp_node)));
  {
    std::vector<int32_t> readers = ctx.consumers[spec.logits];
    std::sort(readers.begin(), readers.end());
    if (ctx.graph_output[spec.logits] ||
        readers != std::vector<int32_t>{std::min(max_node, sub_node), std::max(max_node, sub_node)})
      return FusionDecision::no(
          fmt::format("the softmax's input '{}' is read outside it", g.tensor(spec.logits).name));
  }
  if (g.tensor(spec.logits).dtype != DType::Float32)
    return FusionDecision::no(fmt::format("the softmax computes in {}, not float32",
                                          dtype_name(g.tensor(spec.logits).dtype)));
  spec.softmax = {max_node, sub_node, exp_node, sum_node, div_node};

  // Casts and Views of the probabilities to P·V's A.
  for (TensorId at = g.nodes[div_node].outputs[0]; at != pv.inputs[0];) {
    const int32_t c = only_consumer(ctx, nodes, at);
    const bool cast = c >= 0 && g.nodes[c].op == OpKind::Cast &&
                      dtype_is_float(g.tensor(g.nodes[c].outputs[0]).dtype);
    const bool view = c >= 0 && g.nodes[c].op == OpKind::View;
    if (!cast && !view)
      return FusionDecision::no(fmt::format("the probabilities '{}' reach {} through more than "
                                            "Casts and Views",
                                            g.tensor(at).name, ctx.describe(spec.product)));
    (cast ? spec.probability_casts : spec.views).push_back(c);
    at = g.nodes[c].outputs[0];
  }
  if (only_consumer(ctx, nodes, pv.inputs[0]) != spec.product)
    return FusionDecision::no(fmt::format("the probabilities '{}' are read outside the attention",
                                          g.tensor(pv.inputs[0]).name));

  // Q, Kᵀ and V as stored, the output as written.
  StoredView q, k, v, out;
  if (FusionDecision d = read_through(ctx, nodes, qk.inputs[0], spec.scores, q); !d) return d;
  if (FusionDecision d = read_through(ctx, nodes, qk.inputs[1], spec.scores, k); !d) return d;
  if (FusionDecision d = read_through(ctx, nodes, pv.inputs[1], spec.product, v); !d) return d;
  const TensorId product = pv.outputs[0];
  // The output in the attention's heads: the product, or its View unfolding grouped heads.
  TensorId merged = product;
  int32_t output_view = -1;
  if (const int32_t c = only_consumer(ctx, nodes, product);
      c >= 0 && g.nodes[c].op == OpKind::View) {
    output_view = c;
    merged = g.nodes[c].outputs[0];
  }
  const Shape& product_shape = g.tensor(merged).shape;
  out.stored = merged;
  out.view = packed(product_shape);
  if (const int32_t t = only_consumer(ctx, nodes, merged); t >= 0) {
    if (g.nodes[t].op != OpKind::Transpose)
      return FusionDecision::no(
          fmt::format("{} after the attention's output is no Transpose", ctx.describe(t)));
    out.stored = g.nodes[t].outputs[0];
    out.view = into_transpose(product_shape, read_perm(NodeContext(g, g.nodes[t])));
    out.layouts = {t};
  }
  if (a.outputs != std::vector<TensorId>{out.stored})
    return FusionDecision::no("the attention's scores, logits or probabilities are read outside "
                              "the group");

  // The logit nodes' shape: the scores, or a View of them (grouped heads unfolded).
  TensorId viewed = scores;
  for (int32_t c; (c = only_consumer(ctx, nodes, viewed)) >= 0 && g.nodes[c].op == OpKind::View;) {
    spec.views.push_back(c);
    viewed = g.nodes[c].outputs[0];
  }

  // The shapes: Q [..., G S, D], Kᵀ [..., D, T], V [..., T, Dv], the scores [grouped..., G S, T],
  // the logits [batch..., S, T], the output [grouped..., G S, Dv] or [batch..., S, Dv].
  const Shape& grouped = g.tensor(scores).shape;
  const Shape& logit_shape = g.tensor(viewed).shape;
  for (const StoredView* view : {&q, &k, &v})
    if (view->view.shape.size() < 2)
      return FusionDecision::no("an attention's operands are matrices (or batches of them)");
  if (grouped.size() < 2 || logit_shape.size() < 2 || logit_shape.back() != grouped.back())
    return FusionDecision::no("the View of the attention's scores moves its keys");
  spec.logit_shape = logit_shape;
  spec.batch.assign(logit_shape.begin(), logit_shape.end() - 2);
  spec.queries = logit_shape[logit_shape.size() - 2];
  spec.keys = logit_shape.back();
  spec.head_dim = q.view.shape.back();
  spec.value_dim = v.view.shape.back();
  spec.heads = shape_elements(spec.batch);
  if (spec.queries < 1 || spec.keys < 1 || spec.heads < 1)
    return FusionDecision::no("the attention has no queries, keys or heads");
  const Shape grouped_batch(grouped.begin(), grouped.end() - 2);
  const int64_t grouped_queries = grouped[grouped.size() - 2];
  const int64_t group = grouped_queries / spec.queries;
  if (grouped_queries % spec.queries != 0 || shape_elements(grouped_batch) * group != spec.heads)
    return FusionDecision::no(fmt::format("the scores {} are no grouping of the logits' heads {}",
                                          shape_str(grouped), shape_str(logit_shape)));
  const bool regrouped = grouped_batch != spec.batch;
  const Shape& pv_shape = g.tensor(product).shape;
  if (g.tensor(pv.inputs[0]).shape != grouped ||
      Shape(pv_shape.begin(), pv_shape.end() - 2) != grouped_batch ||
      pv_shape[pv_shape.size() - 2] != grouped_queries)
    return FusionDecision::no("the attention's values broadcast its scores to more heads");
  if (output_view >= 0) {
    Shape heads_out = spec.batch;
    heads_out.insert(heads_out.end(), {spec.queries, spec.value_dim});
    if (product_shape != heads_out)
      return FusionDecision::no(fmt::format("the View of the attention's output {} is not its "
                                            "heads {}",
                                            shape_str(product_shape), shape_str(heads_out)));
    spec.views.push_back(output_view);
  }
  std::sort(spec.views.begin(), spec.views.end());
  if (spec.head_dim < 1 || spec.head_dim > kMaxHeadDim || spec.value_dim < 1 ||
      spec.value_dim > kMaxHeadDim)
    return FusionDecision::no(fmt::format("head dims {} and {}: the attention kernel takes 1 to {}",
                                          spec.head_dim, spec.value_dim, kMaxHeadDim));
  for (TensorId t : {qk.inputs[0], qk.inputs[1], pv.inputs[0], pv.inputs[1], product})
    if (!attention_dtype(g.tensor(t).dtype))
      return FusionDecision::no(fmt::format("'{}' is {}: the attention kernel reads float32, "
                                            "float16 and bfloat16",
                                            g.tensor(t).name, dtype_name(g.tensor(t).dtype)));
  spec.q = operand_of(q, grouped_batch, false);
  spec.k = operand_of(k, grouped_batch, true); // Kᵀ: the keys are its columns
  spec.v = operand_of(v, grouped_batch, false);
  spec.k.head_divisor = spec.v.head_divisor = group;
  if (regrouped) spec.q.rows_per_head = grouped_queries;
  if (output_view >= 0) {
    spec.out = operand_of(out, spec.batch, false);
  } else {
    spec.out = operand_of(out, grouped_batch, false);
    if (regrouped) spec.out.rows_per_head = grouped_queries;
  }
  for (auto [view, o] : {std::pair{&q, &spec.q}, std::pair{&k, &spec.k}, std::pair{&v, &spec.v}}) {
    o->scalings = view->scalings;
    o->scalars = view->scalars;
    o->prologue = view->prologue;
    for (int32_t n : o->prologue)
      if (ctx.node_class[n] == NodeClass::Movement || ctx.node_class[n] == NodeClass::Layout)
        o->moves.push_back(movement_read(g, n));
  }
  // 16-byte loads where every row's dims are adjacent and start at a multiple of 16 bytes (a
  // tensor itself starts 16-byte aligned: the arena's and the caller's, which stitch_run
  // checks).
  auto vector_of = [&](const AttentionSpec::Operand& o, int64_t dims) {
    const int lanes = static_cast<int>(16 / dtype_size(g.tensor(o.tensor).dtype));
    bool aligned = o.scalings.empty() && o.prologue.empty() && o.col_stride == 1 &&
                   dims % lanes == 0 && o.offset % lanes == 0 && o.row_stride % lanes == 0;
    for (int64_t stride : o.batch_strides)
      aligned = aligned && stride % lanes == 0;
    return aligned ? lanes : 1;
  };
  spec.q.vector = vector_of(spec.q, spec.head_dim);
  spec.k.vector = vector_of(spec.k, spec.head_dim);
  spec.v.vector = vector_of(spec.v, spec.value_dim);
  for (const StoredView* view : {&q, &k, &v, &out})
    spec.layouts.insert(spec.layouts.end(), view->layouts.begin(), view->layouts.end());
  std::sort(spec.layouts.begin(), spec.layouts.end());
  std::vector<int32_t> scalings = q.scalings;
  scalings.insert(scalings.end(), k.scalings.begin(), k.scalings.end());
  scalings.insert(scalings.end(), v.scalings.begin(), v.scalings.end());
  std::sort(scalings.begin(), scalings.end());
  std::vector<int32_t> prologues = q.prologue;
  prologues.insert(prologues.end(), k.prologue.begin(), k.prologue.end());
  prologues.insert(prologues.end(), v.prologue.begin(), v.prologue.end());
  std::sort(prologues.begin(), prologues.end());
  // The logit nodes: every other node, pointwise on the scores' shape, reading the scores'
  // chain (and tensors from outside the group).
  for (int32_t n : nodes) {
    if (n == spec.scores || n == spec.product || contains(spec.layouts, n) ||
        contains(spec.views, n) || contains(scalings, n) || contains(prologues, n) ||
        std::find(spec.softmax.begin(), spec.softmax.end(), n) != spec.softmax.end() ||
        std::find(spec.probability_casts.begin(), spec.probability_casts.end(), n) !=
            spec.probability_casts.end())
      continue;
    const Node& node = g.nodes[n];
    if (ctx.node_class[n] != NodeClass::Pointwise || node.outputs.size() != 1 ||
        g.tensor(node.outputs[0]).shape != logit_shape)
      return FusionDecision::no(fmt::format("{} is no pointwise step from the scores to the "
                                            "softmax",
                                            ctx.describe(n)));
    bool chained = false;
    for (TensorId t : present_operands(node))
      chained = chained || (ctx.producer[t] >= 0 && contains(nodes, ctx.producer[t]));
    if (!chained)
      return FusionDecision::no(fmt::format("{} does not read the scores", ctx.describe(n)));
    spec.logit_nodes.push_back(n);
  }
  if (spec.logit_nodes.empty() && spec.logits != viewed)
    return FusionDecision::no("the softmax does not read the scores");
  for (int32_t n : spec.logit_nodes)
    for (TensorId t : present_operands(g.nodes[n])) {
      const int32_t p = ctx.producer[t];
      if (p >= 0 && contains(nodes, p) && p != spec.scores && !contains(spec.views, p) &&
          std::find(spec.logit_nodes.begin(), spec.logit_nodes.end(), p) == spec.logit_nodes.end())
        return FusionDecision::no(fmt::format("{} reads '{}' of the attention's other nodes",
                                              ctx.describe(n), g.tensor(t).name));
      if ((p < 0 || !contains(nodes, p)) && !broadcasts_to(g.tensor(t).shape, logit_shape))
        return FusionDecision::no(fmt::format("'{}' {} does not broadcast against the scores {}",
                                              g.tensor(t).name, shape_str(g.tensor(t).shape),
                                              shape_str(logit_shape)));
    }

  int64_t registers = 0;
  if (FusionDecision d = place_tiles(ctx, spec, spec.queries, spec.keys, spec.heads, registers); !d)
    return d;
  const int64_t query_tile = spec.query_tile();
  spec.query_tiles = (spec.queries + query_tile - 1) / query_tile;
  const int64_t blocks = spec.heads * spec.query_tiles;
  if (blocks > int64_t{0x7fffffff})
    return FusionDecision::no(fmt::format("{} blocks exceed one grid dimension", blocks));
  // Flash-decoding: fewer blocks than SMs and at least kTilesPerSplit key tiles for each of
  // two or more splits: as many splits as give each SM two blocks, at most kMaxSplits.
  const int64_t key_tiles = (spec.keys + spec.key_tile - 1) / spec.key_tile;
  const int64_t want = (2 * int64_t{ctx.device.sm_count} + blocks - 1) / blocks;
  const int64_t splits = std::min({want, key_tiles / kTilesPerSplit, kMaxSplits});
  if (blocks < ctx.device.sm_count && splits >= 2) {
    spec.keys_per_split = (key_tiles + splits - 1) / splits * spec.key_tile;
    spec.splits = static_cast<int>((spec.keys + spec.keys_per_split - 1) / spec.keys_per_split);
    a.group.scratch_bytes = spec.partial_bytes();
    if (a.group.scratch_bytes > ctx.device.max_global_scratch) {
      spec.splits = 1;
      spec.keys_per_split = 0;
      a.group.scratch_bytes = 0;
    }
  }

  // Reads and writes whose adjacent runs are shorter than a memory sector.
  auto overhead = [&](const StoredView& view, const AttentionSpec::Operand& o, int64_t cols) {
    const int64_t element = dtype_size(g.tensor(o.tensor).dtype);
    return sector_overhead(shape_elements(view.view.shape) * element,
                           (o.col_stride == 1 ? cols : 1) * element);
  };
  spec.uncoalesced_bytes = overhead(q, spec.q, spec.head_dim) + overhead(k, spec.k, spec.head_dim) +
                           overhead(v, spec.v, spec.value_dim) +
                           overhead(out, spec.out, spec.value_dim);
  // Prologues: the operand's bytes once more (its rows load element by element, each
  // evaluated), and each element evaluated again by every block past the first that loads it:
  // K's and V's by every query tile of a head (in one split or several), Q's by every split.
  for (const StoredView* view : {&q, &k, &v}) {
    if (view->prologue.empty()) continue;
    const int64_t elements = shape_elements(view->view.shape);
    spec.uncoalesced_bytes += elements * dtype_size(g.tensor(view->stored).dtype);
    const int64_t loads = view == &q ? elements * spec.splits
                                     : spec.heads * spec.query_tiles * spec.keys *
                                           (view == &k ? spec.head_dim : spec.value_dim);
    a.recomputed +=
        std::max<int64_t>(0, loads - elements) * static_cast<int64_t>(view->prologue.size());
  }
  spec.io = kernel_interface(ctx, nodes, a.inputs, a.outputs);

  a.kind = GroupKind::Attention;
  a.scheme = StitchScheme::Regional;
  a.rows = spec.heads * spec.queries;
  a.row_length = spec.keys;
  a.iteration = logit_shape;
  a.shared_bytes = spec.shared_bytes;
  a.registers = registers;
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.group.mapping = ThreadMapping::WarpPerRow;
  a.group.launch = LaunchConfig{};
  a.group.launch.grid = {blocks, spec.splits, 1};
  a.group.launch.block = {int64_t{spec.warps} * 32, 1, 1};
  a.group.launch.dynamic_shared_bytes = spec.shared_bytes;
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

// The planned tile geometry suits the queries of the planning shape and those near it; other
// queries of the range may call for another: a decode step's one query in a block of one warp
// where the plan's block holds 12 query rows, a prefill's 16 queries a block (on tensor cores
// where the types allow them) and key tiles of 64 where the plan's keys were short. The
// geometry (place_tiles) is taken at a few points of the queries' symbols, the other symbols at
// their planning values: the range's ends, the planning values and, where the keys grow with
// the queries' one symbol, its last value with short keys (kShortKeys). The run's queries take
// the geometry of the first point at or above them (whose tiles hold as many queries, with key
// tiles for as many keys); each geometry other than the planned one is a variant, taken where
// the run's queries fall between its points. Where the keys also grow with symbols the queries
// do not (a decode step's past), each query interval is split by the keys too: short keys
// (kShortKeys or fewer, key tiles of 32) and more (the longest keys', 64), each box bounding
// `queries` and `keys`. Each variant's launch, flash-decoding by the run and scratch are its
// own (symbolic_support); the group's scratch is the largest of them.
void attention_variants(const FusionContext& ctx, FusionGroup& group) {
  const Graph& g = ctx.graph;
  const AttentionSpec& planned = std::get<AttentionSpec>(group.spec);
  if (!planned.symbolic) return;
  const DimExpr queries = planned.symbolic->queries;
  const DimExpr keys = planned.symbolic->keys;
  const DimExpr heads = planned.symbolic->heads;
  const SymbolRanges ranges = g.symbol_ranges();
  const std::set<std::string> symbols = queries.symbols();
  if (!queries.non_decreasing(ranges)) return;
  // The points, each the binding of every symbol and its queries.
  std::vector<std::pair<int64_t, SymbolValues>> points;
  auto add = [&](const SymbolValues& at) { points.emplace_back(queries.evaluate(at), at); };
  add(g.planning_values());
  for (const bool most : {false, true}) {
    SymbolValues at = g.planning_values();
    for (const std::string& s : symbols)
      at[s] = most ? ranges.at(s).hi : ranges.at(s).lo;
    add(at);
  }
  if (symbols.size() == 1 && keys.symbols().count(*symbols.begin()) > 0 &&
      keys.non_decreasing(ranges)) {
    const std::string& symbol = *symbols.begin();
    SymbolValues at = g.planning_values();
    int64_t lo = ranges.at(symbol).lo, hi = ranges.at(symbol).hi; // the last short-keys value
    at[symbol] = lo;
    if (keys.evaluate(at) <= kShortKeys) {
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        at[symbol] = mid;
        if (keys.evaluate(at) <= kShortKeys)
          lo = mid;
        else
          hi = mid - 1;
      }
      at[symbol] = lo;
      add(at);
    }
  }
  // In order of their queries; of points with equal queries the first (the planning one).
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; }),
               points.end());
  auto same_geometry = [](const AttentionSpec& a, const AttentionSpec& b) {
    return a.tensor_cores == b.tensor_cores && a.warps == b.warps &&
           a.rows_per_warp == b.rows_per_warp && a.key_tile == b.key_tile;
  };
  // The keys' classes where symbols the queries lack grow them: short keys and more, each with
  // its bound on the run's keys and the keys its tiles are placed for; else one class, the
  // keys at each point.
  struct KeyClass {
    std::optional<ExtentBound> bound;
    std::optional<int64_t> keys;
  };
  std::vector<KeyClass> classes = {KeyClass{}};
  const std::set<std::string> key_symbols = keys.symbols();
  if (!std::includes(symbols.begin(), symbols.end(), key_symbols.begin(), key_symbols.end())) {
    const DimBounds span = keys.bounds(ranges);
    if (span.lo <= kShortKeys && span.hi > kShortKeys)
      classes = {KeyClass{ExtentBound{"keys", keys, std::nullopt, kShortKeys}, kShortKeys},
                 KeyClass{ExtentBound{"keys", keys, kShortKeys + 1, std::nullopt}, span.hi}};
  }
  std::vector<MappingVariant> variants;
  std::vector<bool> usable; // per variant: its kernel holds every shape in range
  int64_t below = std::numeric_limits<int64_t>::min(); // the previous point's queries
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& [at_queries, at] = points[i];
    const int64_t from = below;
    below = at_queries;
    for (const KeyClass& key_class : classes) {
      FusionGroup variant = group;
      variant.variants.clear();
      auto& spec = std::get<AttentionSpec>(variant.spec);
      int64_t registers = 0;
      const bool placed =
          place_tiles(ctx, spec, at_queries, key_class.keys.value_or(keys.evaluate(at)),
                      heads.evaluate(at), registers) &&
          registers <= ctx.device.max_registers_per_thread;
      if (!placed || same_geometry(spec, planned)) continue;
      ExtentBound bound{"queries", queries, std::nullopt, std::nullopt};
      if (i > 0) bound.at_least = from + 1;
      if (i + 1 < points.size()) bound.at_most = at_queries;
      // The box: the run's queries where the points split them, and its keys.
      std::vector<ExtentBound> box;
      if (bound.at_least || bound.at_most) box.push_back(bound);
      if (key_class.bound) box.push_back(*key_class.bound);
      if (box.empty()) continue; // every shape: the planned geometry's (never another)
      size_t k = 0;
      while (k < variants.size() && !same_geometry(std::get<AttentionSpec>(variants[k].spec), spec))
        ++k;
      if (k == variants.size()) {
        spec.query_tiles = (spec.queries + spec.query_tile() - 1) / spec.query_tile();
        variant.launch.block = {int64_t{spec.warps} * 32, 1, 1};
        variant.launch.dynamic_shared_bytes = spec.shared_bytes;
        MappingVariant v;
        usable.push_back(static_cast<bool>(symbolic_support(g, variant, ctx.device)));
        v.spec = variant.spec;
        v.mapping = variant.mapping;
        v.launch = variant.launch;
        if (usable.back())
          group.scratch_bytes = std::max(group.scratch_bytes, variant.scratch_bytes);
        variants.push_back(std::move(v));
      }
      // Next to the previous box of the same variant and keys, the box widens that one.
      std::vector<std::vector<ExtentBound>>& when = variants[k].when;
      const bool widens = !when.empty() && when.back().size() == box.size() &&
                          box[0].name == "queries" && when.back()[0].name == "queries" &&
                          when.back()[0].at_most == std::optional<int64_t>(from) &&
                          (box.size() == 1 || (when.back()[1].at_least == box[1].at_least &&
                                               when.back()[1].at_most == box[1].at_most));
      if (widens)
        when.back()[0].at_most = box[0].at_most;
      else
        when.push_back(std::move(box));
    }
  }
  group.variants.clear();
  for (size_t k = 0; k < variants.size(); ++k)
    if (usable[k]) group.variants.push_back(std::move(variants[k]));
}

} // namespace stitch::legality

namespace stitch {

std::vector<int32_t> attention_candidate(const FusionContext& ctx, int32_t product,
                                         std::vector<int32_t>* read_through,
                                         std::vector<std::vector<int32_t>>* prologues) {
  const Graph& g = ctx.graph;
  const Node& pv = g.nodes[product];
  if (pv.op != OpKind::MatMul || pv.inputs.size() < 2) return {};
  std::vector<int32_t> nodes = {product};
  // Back from P·V's A through Casts to the softmax's Div, Exp, ReduceSum, Sub and ReduceMax.
  int32_t at = ctx.producer[pv.inputs[0]];
  while (at >= 0 && (g.nodes[at].op == OpKind::Cast || g.nodes[at].op == OpKind::View)) {
    nodes.push_back(at);
    at = ctx.producer[g.nodes[at].inputs[0]];
  }
  if (at < 0 || g.nodes[at].op != OpKind::Div) return {};
  const int32_t div = at;
  const int32_t exp = ctx.producer[g.nodes[div].inputs[0]];
  const int32_t sum = ctx.producer[g.nodes[div].inputs[1]];
  if (exp < 0 || sum < 0 || g.nodes[exp].op != OpKind::Exp || g.nodes[sum].op != OpKind::ReduceSum)
    return {};
  const int32_t sub = ctx.producer[g.nodes[exp].inputs[0]];
  if (sub < 0 || g.nodes[sub].op != OpKind::Sub) return {};
  const int32_t max = ctx.producer[g.nodes[sub].inputs[1]];
  if (max < 0 || g.nodes[max].op != OpKind::ReduceMax) return {};
  nodes.insert(nodes.end(), {div, exp, sum, sub, max});
  // Back from the softmax's input through pointwise nodes and Views downstream of a MatMul:
  // the logit nodes, the Views of the scores and the scores' product.
  int32_t scores = -1;
  std::vector<TensorId> frontier = {g.nodes[max].inputs[0]};
  std::vector<int32_t> logit;
  while (!frontier.empty()) {
    const TensorId t = frontier.back();
    frontier.pop_back();
    const int32_t p = ctx.producer[t];
    if (p < 0 || std::find(logit.begin(), logit.end(), p) != logit.end()) continue;
    if (ctx.node_class[p] == NodeClass::Gemm) {
      // The scores' product is the latest one: a mask's or a bias's chain may reach earlier
      // products, never a later one.
      scores = std::max(scores, p);
      continue;
    }
    if (ctx.node_class[p] != NodeClass::Pointwise && ctx.node_class[p] != NodeClass::View) continue;
    logit.push_back(p);
    for (TensorId operand : legality::present_operands(g.nodes[p]))
      frontier.push_back(operand);
  }
  if (scores < 0) return {};
  // Only the pointwise nodes downstream of the scores are logit nodes (a mask's own chain is
  // not).
  for (int32_t n : logit)
    if (ctx.ancestors[n].test(scores)) nodes.push_back(n);
  nodes.push_back(scores);
  // The Slices, Transposes, Views and scalar Muls and Divs Q, Kᵀ and V are read through (as far
  // as they make a strided view), and a Transpose of the output.
  auto layouts_of = [&](TensorId t, int32_t reader) {
    std::vector<int32_t> way; // from t back
    std::vector<TensorId> sources;
    const std::vector<int32_t> none;
    for (int32_t p = ctx.producer[t]; p >= 0 && ctx.node_class[p] != NodeClass::Alone &&
                                      ctx.consumers[g.nodes[p].outputs[0]].size() == 1 &&
                                      !ctx.graph_output[g.nodes[p].outputs[0]];) {
      const TensorId from = legality::step_source(ctx, none, p);
      if (from == kNoTensor) break;
      way.push_back(p);
      sources.push_back(from);
      p = ctx.producer[from];
    }
    // The longest part next to the product that reads as a strided view, and the prologue
    // computing what it reads.
    size_t take = way.size();
    for (; take > 0; --take) {
      std::vector<int32_t> forward(way.begin(), way.begin() + static_cast<int64_t>(take));
      std::reverse(forward.begin(), forward.end());
      legality::StoredView view;
      if (!legality::follow(ctx, sources[take - 1], forward, view)) continue;
      nodes.insert(nodes.end(), forward.begin(), forward.end());
      if (read_through) read_through->insert(read_through->end(), forward.begin(), forward.end());
      break;
    }
    const TensorId computed = take > 0 ? sources[take - 1] : t;
    if (prologues)
      prologues->push_back(
          legality::prologue_of(ctx, nullptr, computed, take > 0 ? way[take - 1] : reader));
  };
  layouts_of(g.nodes[scores].inputs[0], scores);
  layouts_of(g.nodes[scores].inputs[1], scores);
  layouts_of(pv.inputs[1], product);
  // The output's View unfolding grouped heads, and the head merge's Transpose.
  TensorId out = pv.outputs[0];
  for (int step = 0; step < 2; ++step) {
    const std::vector<int32_t>& readers = ctx.consumers[out];
    if (readers.size() != 1 || ctx.graph_output[out]) break;
    const Node& next = g.nodes[readers[0]];
    if ((step == 0 && next.op == OpKind::View) ||
        (next.op == OpKind::Transpose && ctx.node_class[readers[0]] != NodeClass::Alone)) {
      nodes.push_back(readers[0]);
      out = next.outputs[0];
      if (next.op == OpKind::Transpose) {
        if (read_through) read_through->push_back(readers[0]);
        break;
      }
    } else {
      break;
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

} // namespace stitch
