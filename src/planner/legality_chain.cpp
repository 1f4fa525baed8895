// GEMM-chain groups (kernel_gemm_chain.cpp prints them over stitch_gemm_chain.cuh): two matrix
// products with pointwise nodes between them, recognized structurally.
//
//   p = MatMul/Gemm(X, W1)           the first product (and a second one of the same X, or the
//   [s1, s2 = Slice(p) columns]      column halves of one merged product: a gated MLP's gate and
//                                    up projections)
//   h = activation nodes(p, ...)     pointwise, each reading the products' values and tensors
//                                    that broadcast against h (a bias, GELU, SiLU, the gated
//                                    product)
//   y = MatMul/Gemm(h, W2)           the second product
//   out = epilogue nodes(y, ...)     pointwise after it (a bias, the residual add, a Cast)
//
// The operands are float16 or bfloat16 (tensor cores), the weights two-dimensional, X's batch
// axes folded into its rows; the products and the hidden values are the element type, as the
// unfused plan stores them. Clusters need sm_90: a library built for sm_90 and older
// architectures too carries each chain's unfused plan (FusionPlan::fallbacks), which the older
// devices run.
// The tile geometry: 4 warps a block, 64 hidden and output columns a step, a k step of 32;
// tiles of 16, 32 or 64 rows and the hidden dim split over a cluster of 1 to 8 blocks (the
// portable size) or 16 (non-portable), chosen by the analytic model of cost_model.h's
// chain_traffic among the configurations whose shared memory and registers fit.
#include <algorithm>
#include <cmath>

#include "graph/op_params.h"
#include "planner/cost_model.h"
#include "planner/legality_internal.h"

namespace stitch::legality {

namespace {

constexpr int kClusterCapability = 90; // thread-block clusters and distributed shared memory
constexpr int kWarps = 4;
constexpr int kBlockK = 32;
constexpr int kHiddenTile = 64;
constexpr int kOutTile = 64;
constexpr int kMaxClusterBlocks = 8;             // the portable cluster size
constexpr int kMaxNonPortableClusterBlocks = 16; // with cudaFuncAttributeNonPortableClusterSize

bool chain_dtype(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

int64_t align16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

// Whether configuration `a` (of `a_blocks` blocks) models faster than `b`: less time, then less
// traffic, then fewer blocks. Times within a relative 1e-9 are equal: configurations the
// products bound compute the same time in different orders of rounding.
bool better(const ChainTraffic& a, int64_t a_blocks, const ChainTraffic& b, int64_t b_blocks) {
  const auto same = [](double x, double y) {
    return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y));
  };
  if (!same(a.time_us, b.time_us)) return a.time_us < b.time_us;
  if (!same(a.memory_us, b.memory_us)) return a.memory_us < b.memory_us;
  return a_blocks < b_blocks;
}

// stitch::chain::ChainConfig::slice_of and ::shared_bytes.
int64_t slice_of(int64_t hidden, int64_t blocks) {
  const int64_t per_block = (hidden + blocks - 1) / blocks;
  return (per_block + kHiddenTile - 1) / kHiddenTile * kHiddenTile;
}
int64_t chain_shared_bytes(int64_t rows_per_tile, int64_t slice, int64_t element, bool gated) {
  const int64_t hidden = align16(rows_per_tile * (slice + 8) * element);
  const int64_t x = align16(rows_per_tile * (kBlockK + 8) * element);
  const int64_t w1 = align16(kBlockK * (kHiddenTile + 8) * element);
  const int64_t phase1 = x + w1 * (gated ? 2 : 1);
  const int64_t phase2 = align16(kBlockK * (kOutTile + 8) * element) +
                         rows_per_tile * kOutTile * static_cast<int64_t>(sizeof(float));
  return hidden + std::max(phase1, phase2);
}

// A product's operand as the chain reads it, from the library spec's layout.
GemmChainSpec::Matrix matrix(TensorId tensor, bool trans, int64_t ld, int64_t offset) {
  GemmChainSpec::Matrix m;
  m.tensor = tensor;
  m.offset = offset;
  m.row_stride = trans ? 1 : ld;
  m.col_stride = trans ? ld : 1;
  return m;
}

// 16-byte row vectors where columns are adjacent and every row (and tile, which starts at a
// multiple of 8 columns) begins 16 bytes aligned.
int vector_of(const GemmChainSpec::Matrix& m) {
  return m.col_stride == 1 && m.row_stride % 8 == 0 && m.offset % 8 == 0 ? 8 : 1;
}

// The library view of `product` alone, when the chain can read it: one GEMM (X's batch axes
// folded into its rows at most), no layouts, a 16-bit element type.
FusionDecision product_view(const FusionContext& ctx, int32_t product, GemmSpec& gs) {
  if (FusionDecision d = gemm_spec(ctx.graph, {product}, ctx.device, gs); !d) return d;
  if (!chain_dtype(gs.dtype))
    return FusionDecision::no(fmt::format("{} is {}: a GEMM chain multiplies float16 or bfloat16 "
                                          "on tensor cores",
                                          ctx.describe(product), dtype_name(gs.dtype)));
  if (gs.batch_count != 1 || !gs.outer.empty())
    return FusionDecision::no(fmt::format("{} is a batched product: a GEMM chain's weights are "
                                          "matrices",
                                          ctx.describe(product)));
  if (gs.layout_a >= 0 || gs.layout_b >= 0 || gs.layout_result >= 0 || gs.slice_a >= 0 ||
      gs.slice_b >= 0)
    return FusionDecision::no(
        fmt::format("{} reads or writes through a layout", ctx.describe(product)));
  for (const GemmSpec::Addend& addend : gs.addends)
    if (addend.epilogue_index != 0)
      return FusionDecision::no("a GEMM chain's product takes only Gemm's own C");
  return FusionDecision::ok();
}

// Gemm's own alpha and beta * C (an addend of the library spec with epilogue index 0).
void own_addend(const GemmSpec& gs, double& alpha, TensorId& c, double& beta) {
  alpha = gs.alpha;
  c = kNoTensor;
  beta = 0.0;
  for (const GemmSpec::Addend& addend : gs.addends)
    if (addend.epilogue_index == 0) {
      c = addend.tensor;
      beta = addend.scale;
    }
}

} // namespace

FusionDecision analyze_gemm_chain(const FusionContext& ctx, GroupAnalysis& a) {
  if (ctx.gemm_chain == FusionMode::Unfused)
    return FusionDecision::no("--gemm-chain unfused keeps every GEMM chain out of one kernel");
  const Graph& g = ctx.graph;
  const std::vector<int32_t>& nodes = a.nodes;
  GemmChainSpec spec;
  std::vector<int32_t> products;
  for (int32_t n : nodes)
    if (ctx.node_class[n] == NodeClass::Gemm) products.push_back(n);
  if (products.size() < 2 || products.size() > 3)
    return FusionDecision::no("a GEMM chain has two or three matrix products");
  // A library built for older architectures too carries the chain's unfused plan for them.
  if (ctx.device.max_compute_capability < kClusterCapability)
    return FusionDecision::no(fmt::format("a GEMM chain runs in thread-block clusters, which need "
                                          "sm_90 (the newest architecture built for is sm_{})",
                                          ctx.device.max_compute_capability));
  spec.second = products.back(); // node order is topological: the last product reads the others
  const Node& second = g.nodes[spec.second];
  spec.hidden = second.inputs[0];

  // The first products: one (perhaps merged, its columns taken apart by Slices) or two of the
  // same X.
  GemmSpec first_view;
  if (FusionDecision d = product_view(ctx, products[0], first_view); !d) return d;
  spec.element = first_view.dtype;
  const int64_t es = dtype_size(spec.element);
  spec.x = matrix(first_view.a, first_view.trans_a, first_view.lda, first_view.offset_a);
  spec.inner = first_view.k;
  spec.rows =
      g.tensor(g.nodes[products[0]].outputs[0]).elements() / std::max<int64_t>(first_view.n, 1);
  auto product_of = [&](int32_t node, const GemmSpec& gs) {
    GemmChainSpec::Product p;
    p.node = node;
    p.w = matrix(gs.b, gs.trans_b, gs.ldb, gs.offset_b);
    own_addend(gs, p.alpha, p.c, p.beta);
    p.value = g.nodes[node].outputs[0];
    return p;
  };
  spec.first = product_of(products[0], first_view);
  int64_t product_columns = first_view.n;
  if (products.size() == 3) {
    GemmSpec gate_view;
    if (FusionDecision d = product_view(ctx, products[1], gate_view); !d) return d;
    const GemmChainSpec::Matrix gate_x =
        matrix(gate_view.a, gate_view.trans_a, gate_view.lda, gate_view.offset_a);
    if (gate_x.tensor != spec.x.tensor || gate_x.offset != spec.x.offset ||
        gate_x.row_stride != spec.x.row_stride || gate_x.col_stride != spec.x.col_stride ||
        gate_view.k != spec.inner || gate_view.n != first_view.n || gate_view.dtype != spec.element)
      return FusionDecision::no(fmt::format("{} and {} do not multiply the same X into the same "
                                            "columns",
                                            ctx.describe(products[0]), ctx.describe(products[1])));
    spec.gate = product_of(products[1], gate_view);
  }

  // Slices of a merged product: its columns, step 1, on the last axis; one or two (the halves).
  for (int32_t n : nodes) {
    const Node& node = g.nodes[n];
    if (node.op != OpKind::Slice) continue;
    if (products.size() == 3 || node.inputs[0] != spec.first.value)
      return FusionDecision::no(
          fmt::format("{} does not take the first product's columns apart", ctx.describe(n)));
    const Shape& from = g.tensor(node.inputs[0]).shape;
    const std::vector<SliceAxis> axes = read_slice_params(NodeContext(g, node));
    if (axes.size() != 1 || axes[0].axis != static_cast<int64_t>(from.size()) - 1 ||
        axes[0].step != 1)
      return FusionDecision::no(
          fmt::format("{} is not a slice of columns in steps of 1", ctx.describe(n)));
    spec.slices.push_back(n);
  }
  if (!spec.slices.empty()) {
    if (spec.slices.size() > 2)
      return FusionDecision::no("more than two Slices take the merged product apart");
    const TensorId merged = spec.first.value;
    std::vector<GemmChainSpec::Product> halves;
    for (int32_t n : spec.slices) {
      const SliceAxis axis = read_slice_params(NodeContext(g, g.nodes[n]))[0];
      GemmChainSpec::Product half = spec.first;
      half.value = g.nodes[n].outputs[0];
      half.column_offset = axis.start;
      half.w.offset += axis.start * half.w.col_stride;
      halves.push_back(half);
      product_columns = axis.length;
    }
    if (halves.size() == 2 &&
        read_slice_params(NodeContext(g, g.nodes[spec.slices[0]]))[0].length != product_columns)
      return FusionDecision::no("the merged product's Slices take different widths");
    for (int32_t reader : ctx.consumers[merged])
      if (!contains(nodes, reader) || g.nodes[reader].op != OpKind::Slice ||
          ctx.graph_output[merged])
        return FusionDecision::no(fmt::format("the merged product '{}' is read elsewhere than by "
                                              "the chain's Slices",
                                              g.tensor(merged).name));
    spec.first = halves[0];
    if (halves.size() == 2) spec.gate = halves[1];
  }
  spec.hidden_dim = product_columns;

  // The second product: the hidden values (rows x hidden_dim) times W2.
  GemmSpec second_view;
  if (FusionDecision d = product_view(ctx, spec.second, second_view); !d) return d;
  if (second_view.dtype != spec.element || second_view.trans_a ||
      second_view.k != spec.hidden_dim ||
      g.tensor(spec.hidden).elements() != spec.rows * spec.hidden_dim)
    return FusionDecision::no(fmt::format("{} does not multiply the {} x {} hidden values of the "
                                          "first product",
                                          ctx.describe(spec.second), spec.rows, spec.hidden_dim));
  spec.w2 = matrix(second_view.b, second_view.trans_b, second_view.ldb, second_view.offset_b);
  own_addend(second_view, spec.second_alpha, spec.second_c, spec.second_beta);
  spec.columns = second_view.n;
  if (spec.rows < 1 || spec.inner < 1 || spec.hidden_dim < 1 || spec.columns < 1)
    return FusionDecision::no("a GEMM chain's extents are at least 1");

  // The activation (between) and the epilogue (after): pointwise nodes, and Views keeping the
  // values' row-major order.
  const TensorId product_out = second.outputs[0];
  spec.result = product_out;
  spec.hidden_shape = g.tensor(spec.hidden).shape;
  spec.result_shape = g.tensor(product_out).shape;
  bool hidden_set = false, result_set = false;
  for (int32_t n : nodes) {
    if (ctx.node_class[n] == NodeClass::Gemm ||
        std::find(spec.slices.begin(), spec.slices.end(), n) != spec.slices.end())
      continue;
    const bool after = ctx.ancestors[n].test(spec.second);
    const TensorId out = g.nodes[n].outputs[0];
    const int64_t width = after ? spec.columns : spec.hidden_dim;
    const Shape& shape = g.tensor(out).shape;
    if (shape.empty() || shape.back() != width || shape_elements(shape) != spec.rows * width)
      return FusionDecision::no(fmt::format("{} gives {}, not the {} x {} {} of the chain",
                                            ctx.describe(n), shape_str(shape), spec.rows, width,
                                            after ? "result" : "hidden values"));
    if (after) spec.result = out;
    if (ctx.node_class[n] == NodeClass::View) {
      const int32_t from = ctx.producer[g.nodes[n].inputs[0]];
      if (from < 0 || !contains(nodes, from))
        return FusionDecision::no(
            fmt::format("{} views a tensor from outside the chain", ctx.describe(n)));
      spec.views.push_back(n);
      continue;
    }
    if (ctx.node_class[n] != NodeClass::Pointwise)
      return FusionDecision::no(fmt::format("{} {}; a GEMM chain holds pointwise nodes and views "
                                            "between and after its products",
                                            ctx.describe(n), class_sentence(ctx.node_class[n])));
    Shape& common = after ? spec.result_shape : spec.hidden_shape;
    bool& set = after ? result_set : hidden_set;
    if (set && shape != common)
      return FusionDecision::no(fmt::format("{} gives {}, not {} as the chain's other {} nodes",
                                            ctx.describe(n), shape_str(shape), shape_str(common),
                                            after ? "epilogue" : "activation"));
    common = shape;
    set = true;
    for (TensorId t : present_operands(g.nodes[n]))
      if (!broadcasts_to(g.tensor(t).shape, shape))
        return FusionDecision::no(fmt::format("'{}' {} does not broadcast against {}",
                                              g.tensor(t).name, shape_str(g.tensor(t).shape),
                                              shape_str(shape)));
    (after ? spec.epilogue : spec.activation).push_back(n);
  }
  // The products' operands come from outside the group; the activation lies between the first
  // products and the second; the epilogue reads the second product's chain and outside tensors.
  auto outside = [&](TensorId t) {
    return t == kNoTensor || ctx.producer[t] < 0 || !contains(nodes, ctx.producer[t]);
  };
  std::vector<TensorId> operands = {spec.x.tensor, spec.first.w.tensor, spec.first.c,
                                    spec.w2.tensor, spec.second_c};
  if (spec.gate) operands.insert(operands.end(), {spec.gate->w.tensor, spec.gate->c});
  for (TensorId t : operands)
    if (!outside(t))
      return FusionDecision::no(fmt::format("'{}', an operand of the chain's products, is "
                                            "computed inside the group",
                                            g.tensor(t).name));
  auto after_first = [&](int32_t n) {
    return ctx.ancestors[n].test(spec.first.node) ||
           (spec.gate && ctx.ancestors[n].test(spec.gate->node));
  };
  for (int32_t n : nodes) {
    if (ctx.node_class[n] == NodeClass::Gemm ||
        std::find(spec.slices.begin(), spec.slices.end(), n) != spec.slices.end())
      continue;
    if (ctx.ancestors[n].test(spec.second)) {
      for (TensorId t : present_operands(g.nodes[n])) {
        const int32_t p = ctx.producer[t];
        if (!outside(t) && p != spec.second && !ctx.ancestors[p].test(spec.second))
          return FusionDecision::no(fmt::format("{} after the second product reads '{}' from "
                                                "before it",
                                                ctx.describe(n), g.tensor(t).name));
      }
    } else if (!after_first(n) || !ctx.descendants[n].test(spec.second)) {
      return FusionDecision::no(
          fmt::format("{} does not lie between the chain's products", ctx.describe(n)));
    }
  }
  if (ctx.producer[spec.result] >= 0 && g.nodes[ctx.producer[spec.result]].op == OpKind::View &&
      std::find(spec.views.begin(), spec.views.end(), ctx.producer[spec.result]) !=
          spec.views.end())
    return FusionDecision::no("a GEMM chain writes its result as computed, not through a View");
  // The hidden values: the second product's A back through Views to a product or the last
  // activation node.
  TensorId source = spec.hidden;
  for (int32_t p = ctx.producer[source];
       p >= 0 && std::find(spec.views.begin(), spec.views.end(), p) != spec.views.end();
       p = ctx.producer[source])
    source = g.nodes[p].inputs[0];
  const int32_t hidden_producer = ctx.producer[source];
  const bool hidden_inside =
      source == spec.first.value || (spec.gate && source == spec.gate->value) ||
      (hidden_producer >= 0 && std::find(spec.activation.begin(), spec.activation.end(),
                                         hidden_producer) != spec.activation.end());
  if (!hidden_inside)
    return FusionDecision::no(fmt::format("{}'s A '{}' is not computed by the chain from its first "
                                          "products",
                                          ctx.describe(spec.second), g.tensor(spec.hidden).name));
  if (a.outputs.size() != 1 || a.outputs[0] != spec.result)
    return FusionDecision::no("a GEMM chain writes its result alone (its products and hidden "
                              "values stay on chip)");
  for (TensorId t : {spec.first.value, spec.hidden})
    if (g.tensor(t).dtype != spec.element)
      return FusionDecision::no(fmt::format("'{}' is {}, not the chain's {}", g.tensor(t).name,
                                            dtype_name(g.tensor(t).dtype),
                                            dtype_name(spec.element)));

  // The tile geometry and the cluster: of the configurations whose shared memory and
  // registers fit (16, 32 or 64 rows a tile; clusters of 1 to 8 blocks, or 16 with the
  // non-portable attribute, no more than the hidden dim has 64-column tiles), the one of least
  // modeled time (chain_traffic: bytes per memory level over its bandwidth, the products at the
  // chain's rate, over the SMs the blocks occupy); ties go to less traffic (the levels' times
  // added up), then to fewer blocks.
  spec.block_k = kBlockK;
  spec.hidden_tile = kHiddenTile;
  spec.out_tile = kOutTile;
  const bool gated = spec.gate.has_value();
  const int64_t hidden_tiles = (spec.hidden_dim + kHiddenTile - 1) / kHiddenTile;
  const ChainShape shape{spec.rows, spec.inner, spec.hidden_dim, spec.columns, gated ? 2 : 1, es};
  const auto registers_for = [&](int warps_n) {
    // A lane's accumulators: 4 floats a fragment of each first product's hidden tile and of the
    // output tile.
    const int64_t hidden_fragments = kHiddenTile / warps_n / 8;
    const int64_t out_fragments = kOutTile / warps_n / 8;
    return kBaseRegisters +
           kRegistersPerNode * static_cast<int64_t>(spec.activation.size() + spec.epilogue.size()) +
           4 * hidden_fragments * (gated ? 2 : 1) + 4 * out_fragments;
  };
  std::vector<int64_t> clusters;
  for (int64_t c = 1; c <= std::min<int64_t>(kMaxClusterBlocks, hidden_tiles); ++c)
    clusters.push_back(c);
  if (hidden_tiles >= kMaxNonPortableClusterBlocks)
    clusters.push_back(kMaxNonPortableClusterBlocks);
  bool found = false;
  ChainTraffic best;
  int64_t smallest_shared = 0;
  for (int warps_m : {1, 2, 4})
    for (int64_t c : clusters) {
      const int64_t rows = 16 * int64_t{warps_m};
      const int64_t slice = slice_of(spec.hidden_dim, c);
      if ((c - 1) * slice >= spec.hidden_dim) continue; // a block with no hidden columns
      const int64_t shared = chain_shared_bytes(rows, slice, es, gated);
      if (smallest_shared == 0 || shared < smallest_shared) smallest_shared = shared;
      if (shared > ctx.device.max_shared_per_block ||
          registers_for(kWarps / warps_m) > ctx.device.max_registers_per_thread)
        continue;
      ++spec.configurations;
      const ChainTraffic t = chain_traffic(ctx.device, shape, rows, c, slice);
      const int64_t blocks = (spec.rows + rows - 1) / rows * c;
      if (found && !better(t, blocks, best, spec.row_tiles * int64_t{spec.cluster_blocks}))
        continue;
      found = true;
      best = t;
      spec.warps_m = warps_m;
      spec.cluster_blocks = static_cast<int>(c);
      spec.slice = slice;
      spec.shared_bytes = shared;
      spec.row_tiles = (spec.rows + rows - 1) / rows;
    }
  if (!found)
    return FusionDecision::no(fmt::format("no tile and cluster configuration of the chain fits: "
                                          "the smallest needs {} bytes of shared memory, over the "
                                          "{} a block has, or too many registers",
                                          smallest_shared, ctx.device.max_shared_per_block));
  spec.warps_n = kWarps / spec.warps_m;
  spec.modeled_us = std::round(best.time_us * 1000.0) / 1000.0; // to the nanosecond
  spec.hbm_bytes = static_cast<int64_t>(best.hbm_bytes);
  spec.l2_bytes = static_cast<int64_t>(best.l2_bytes);
  spec.dsm_bytes = static_cast<int64_t>(best.dsm_bytes);
  spec.x.vector = vector_of(spec.x);
  spec.first.w.vector = vector_of(spec.first.w);
  if (spec.gate) spec.gate->w.vector = vector_of(spec.gate->w);
  spec.w2.vector = vector_of(spec.w2);
  for (TensorId t : {spec.first.value, spec.hidden})
    spec.saved_bytes += 2 * g.tensor(t).bytes();
  if (spec.gate) spec.saved_bytes += 2 * g.tensor(spec.gate->value).bytes();
  spec.io = kernel_interface(ctx, nodes, a.inputs, a.outputs);

  a.kind = GroupKind::GemmChain;
  a.scheme = StitchScheme::Regional;
  a.rows = spec.rows;
  a.row_length = spec.hidden_dim;
  a.iteration = g.tensor(spec.result).shape;
  a.shared_bytes = spec.shared_bytes;
  a.registers = registers_for(spec.warps_n);
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch = LaunchConfig{};
  a.group.launch.grid = {spec.row_tiles * spec.cluster_blocks, 1, 1};
  a.group.launch.block = {int64_t{kWarps} * 32, 1, 1};
  a.group.launch.dynamic_shared_bytes = spec.shared_bytes;
  a.group.launch.cluster = spec.cluster_blocks;
  a.group.launch.vector_width = spec.x.vector; // 16-byte copies where the rows allow
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality

namespace stitch {

std::vector<int32_t> gemm_chain_candidate(const FusionContext& ctx, int32_t second,
                                          std::vector<int32_t>* epilogue) {
  const Graph& g = ctx.graph;
  const Node& node = g.nodes[second];
  if (ctx.node_class[second] != NodeClass::Gemm || node.inputs.empty()) return {};
  // Back from the second product's A through pointwise nodes and Views to the first products
  // (and the Slices of a merged one).
  std::vector<int32_t> nodes = {second};
  std::vector<int32_t> between, firsts;
  std::vector<TensorId> frontier = {node.inputs[0]};
  while (!frontier.empty()) {
    const TensorId t = frontier.back();
    frontier.pop_back();
    const int32_t p = ctx.producer[t];
    if (p < 0 || std::find(between.begin(), between.end(), p) != between.end() ||
        std::find(firsts.begin(), firsts.end(), p) != firsts.end())
      continue;
    if (ctx.node_class[p] == NodeClass::Gemm) {
      firsts.push_back(p);
      continue;
    }
    const bool slice_of_product =
        g.nodes[p].op == OpKind::Slice && ctx.producer[g.nodes[p].inputs[0]] >= 0 &&
        ctx.node_class[ctx.producer[g.nodes[p].inputs[0]]] == NodeClass::Gemm;
    const bool view = ctx.node_class[p] == NodeClass::View;
    if (ctx.node_class[p] != NodeClass::Pointwise && !slice_of_product && !view) continue;
    between.push_back(p);
    if (slice_of_product || view)
      frontier.push_back(g.nodes[p].inputs[0]);
    else
      for (TensorId operand : legality::present_operands(g.nodes[p]))
        frontier.push_back(operand);
  }
  if (firsts.empty() || firsts.size() > 2) return {};
  nodes.insert(nodes.end(), firsts.begin(), firsts.end());
  // Only the nodes downstream of a first product are the activation (a bias's own chain is not).
  for (int32_t n : between)
    for (int32_t f : firsts)
      if (ctx.ancestors[n].test(f)) {
        nodes.push_back(n);
        break;
      }
  // The epilogue: pointwise nodes and Views, each the only reader of the previous one's result.
  TensorId out = node.outputs[0];
  for (;;) {
    const std::vector<int32_t>& readers = ctx.consumers[out];
    if (readers.size() != 1 || ctx.graph_output[out] ||
        (ctx.node_class[readers[0]] != NodeClass::Pointwise &&
         ctx.node_class[readers[0]] != NodeClass::View))
      break;
    nodes.push_back(readers[0]);
    if (epilogue) epilogue->push_back(readers[0]);
    out = g.nodes[readers[0]].outputs[0];
  }
  // The chain writes its result as computed: a View at the end stays an alias of it.
  while (nodes.size() > 1 && g.nodes[nodes.back()].op == OpKind::View &&
         ctx.node_class[nodes.back()] == NodeClass::View) {
    if (epilogue && !epilogue->empty()) epilogue->pop_back();
    nodes.pop_back();
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

} // namespace stitch
