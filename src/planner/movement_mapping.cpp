// Canonical permuted copies, transpose tiling, TopK's selection plan, and
// plan_movement_launch (see movement_mapping.h).
#include "planner/movement_mapping.h"

#include <algorithm>
#include <numeric>

#include <set>

#include "graph/constant.h"
#include "graph/error.h"
#include "graph/infer_context.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

constexpr int64_t kBlock = 256;
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kTileSpan = 32;          // elements a tile spans on each contiguous side
constexpr int64_t kMinTiledExtent = 16;    // below this on either side, a gather does as well
constexpr int64_t kMaxSortCapacity = 2048; // TopK's shared buffer, in elements

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t max_resident_blocks(const DeviceParams& device) {
  return int64_t{device.sm_count} * (device.max_threads_per_sm / kBlock) * device.waves;
}

int64_t next_power_of_two(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

} // namespace

Shape PermutedCopy::out_dims() const {
  Shape out;
  for (int64_t p : perm)
    out.push_back(dims[p]);
  return out;
}

PermutedCopy canonical_permutation(const Shape& in, const std::vector<int64_t>& perm) {
  // Drop size-1 axes (they move nothing).
  std::vector<int64_t> renumbered(in.size(), -1);
  Shape dims;
  for (size_t a = 0; a < in.size(); ++a) {
    if (in[a] == 1) continue;
    renumbered[a] = static_cast<int64_t>(dims.size());
    dims.push_back(in[a]);
  }
  std::vector<int64_t> kept;
  for (int64_t p : perm)
    if (in[p] != 1) kept.push_back(renumbered[p]);
  // Runs of input axes that stay adjacent, in output order, become one axis.
  std::vector<std::vector<int64_t>> runs;
  for (int64_t a : kept) {
    if (!runs.empty() && runs.back().back() + 1 == a)
      runs.back().push_back(a);
    else
      runs.push_back({a});
  }
  std::vector<size_t> by_input(runs.size());
  std::iota(by_input.begin(), by_input.end(), 0);
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return runs[a].front() < runs[b].front(); });
  PermutedCopy copy;
  std::vector<int64_t> axis_of_run(runs.size());
  for (size_t j = 0; j < by_input.size(); ++j) {
    int64_t size = 1;
    for (int64_t a : runs[by_input[j]])
      size *= dims[a];
    copy.dims.push_back(size);
    axis_of_run[by_input[j]] = static_cast<int64_t>(j);
  }
  for (size_t r = 0; r < runs.size(); ++r)
    copy.perm.push_back(axis_of_run[r]);
  return copy;
}

PermutedCopy node_permutation(const Graph& graph, const Node& node) {
  NodeContext ctx(graph, node);
  const Shape& in = ctx.shape(0);
  switch (node.op) {
  case OpKind::Transpose:
    return canonical_permutation(in, read_perm(ctx));
  case OpKind::DepthToSpace: {
    // DCR: [N, b, b, C/b^2, H, W] -> [N, C/b^2, H, b, W, b]; CRD: [N, C/b^2, b, b, H, W] ->
    // the same output.
    int64_t b = ctx.req_int("blocksize"), c = in[1] / (b * b);
    if (ctx.attr_string("mode", "DCR") == "DCR")
      return canonical_permutation({in[0], b, b, c, in[2], in[3]}, {0, 3, 4, 1, 5, 2});
    return canonical_permutation({in[0], c, b, b, in[2], in[3]}, {0, 1, 4, 2, 5, 3});
  }
  case OpKind::SpaceToDepth: {
    // [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b]
    int64_t b = ctx.req_int("blocksize");
    return canonical_permutation({in[0], in[1], in[2] / b, b, in[3] / b, b}, {0, 3, 5, 1, 2, 4});
  }
  default:
    internal_fail("node_permutation of {}", op_name(node.op));
  }
}

SymbolicPermutation symbolic_permutation(const Graph& graph, const Node& node) {
  NodeContext ctx(graph, node);
  const SymShape in = graph.tensor(node.inputs[0]).sym_shape();
  switch (node.op) {
  case OpKind::Transpose:
    return {in, read_perm(ctx)};
  case OpKind::DepthToSpace: { // as node_permutation; the channels fixed
    const int64_t b = ctx.req_int("blocksize");
    const DimExpr c = DimExpr::floor_div(in[1], b * b);
    if (ctx.attr_string("mode", "DCR") == "DCR")
      return {{in[0], b, b, c, in[2], in[3]}, {0, 3, 4, 1, 5, 2}};
    return {{in[0], c, b, b, in[2], in[3]}, {0, 1, 4, 2, 5, 3}};
  }
  case OpKind::SpaceToDepth: {
    const int64_t b = ctx.req_int("blocksize");
    return {{in[0], in[1], DimExpr::floor_div(in[2], b), b, DimExpr::floor_div(in[3], b), b},
            {0, 3, 5, 1, 2, 4}};
  }
  default:
    internal_fail("symbolic_permutation of {}", op_name(node.op));
  }
}

TransposeTiling transpose_tiling(const PermutedCopy& copy) {
  TransposeTiling t;
  int64_t rank = static_cast<int64_t>(copy.dims.size());
  if (rank < 2) return t;
  int64_t reduced = rank;
  if (copy.perm[rank - 1] == rank - 1) {
    t.vector = copy.dims[rank - 1];
    reduced = rank - 1;
  }
  if (reduced < 2 || t.vector >= kTileSpan) return t; // a gather reads whole vectors already
  t.x_axis = reduced - 1;
  t.y_axis = copy.perm[reduced - 1];
  int64_t dx = copy.dims[t.x_axis], dy = copy.dims[t.y_axis];
  if (dy < kMinTiledExtent || dx * t.vector < kMinTiledExtent) return t;
  t.tiled = true;
  t.tile_x = ceil_div(kTileSpan, t.vector);
  t.tile_y = kTileSpan;
  int64_t batch = 1;
  for (int64_t a = 0; a < reduced; ++a)
    if (a != t.x_axis && a != t.y_axis) batch *= copy.dims[a];
  t.tiles = batch * ceil_div(dy, t.tile_y) * ceil_div(dx, t.tile_x);
  return t;
}

TopKPlan topk_plan(const Graph& graph, const Node& node) {
  NodeContext ctx(graph, node);
  const Shape& in = ctx.shape(0);
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", -1), ctx.rank(0));
  TopKPlan p;
  p.length = in[axis];
  p.k = ctx.opset() < 10 ? ctx.req_int("k") : ctx.const_ints(1, "K")[0];
  for (size_t d = axis + 1; d < in.size(); ++d)
    p.inner *= in[d];
  p.rows = p.length == 0 ? 0 : shape_elements(in) / p.length;
  p.capacity = topk_capacity(p.length, p.k);
  return p;
}

int64_t topk_capacity(int64_t length, int64_t k) {
  const int64_t padded = next_power_of_two(std::max<int64_t>(length, 2));
  if (padded <= kMaxSortCapacity) return padded;
  return k <= kMaxSortCapacity / 2 ? kMaxSortCapacity : 0;
}

int64_t topk_threads(const TopKPlan& plan) {
  return plan.capacity == 0 ? kBlock : std::clamp<int64_t>(plan.capacity / 2, 32, kBlock);
}

bool scatter_rows_distinct(const Graph& graph, const Node& node) {
  const Tensor& data = graph.tensor(node.inputs[0]);
  const Tensor& indices = graph.tensor(node.inputs[1]);
  const size_t k = static_cast<size_t>(indices.shape.back());
  const int64_t rows = k == 0 ? 0 : indices.elements() / static_cast<int64_t>(k);
  if (rows <= 1) return true;
  if (!indices.is_constant()) return false;
  Shape strides(data.shape.size(), 1);
  for (size_t d = data.shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * data.shape[d];
  std::vector<int64_t> values = constant_as_int64(indices);
  std::set<int64_t> targets;
  for (int64_t u = 0; u < rows; ++u) {
    int64_t offset = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t v = values[u * k + j];
      offset += (v < 0 ? v + data.shape[j] : v) * strides[j]; // in range: the shape rule checked
    }
    if (!targets.insert(offset).second) return false;
  }
  return true;
}

void plan_movement_launch(const Graph& graph, const Node& node, const DeviceParams& device,
                          FusionGroup& group) {
  switch (node.op) {
  case OpKind::Transpose:
  case OpKind::DepthToSpace:
  case OpKind::SpaceToDepth: {
    TransposeTiling tiling = transpose_tiling(node_permutation(graph, node));
    if (!tiling.tiled) return;
    group.launch = LaunchConfig{};
    group.launch.block = {kBlock, 1, 1};
    group.launch.grid = {
        std::clamp<int64_t>(tiling.tiles, 1, std::min(max_resident_blocks(device), kMaxGridX)), 1,
        1};
    return;
  }
  case OpKind::ScatterND: {
    // Distinct rows: the flat launch over the output serves the copy and the update kernel.
    if (scatter_rows_distinct(graph, node)) return;
    const Tensor& indices = graph.tensor(node.inputs[1]);
    int64_t rows = indices.elements() / indices.shape.back();
    group.mapping = ThreadMapping::BlockPerRow;
    group.launch = LaunchConfig{};
    group.launch.block = {kBlock, 1, 1};
    group.launch.grid = {
        std::clamp<int64_t>(rows, 1, std::min(max_resident_blocks(device), kMaxGridX)), 1, 1};
    return;
  }
  case OpKind::Split:
    group.launch = flat_launch(graph.tensor(node.inputs[0]).elements(), 1, device);
    return;
  case OpKind::TopK: {
    TopKPlan p = topk_plan(graph, node);
    group.mapping = ThreadMapping::BlockPerRow;
    group.launch = LaunchConfig{};
    group.launch.block = {topk_threads(p), 1, 1};
    group.launch.grid = {std::clamp<int64_t>(p.rows, 1, kMaxGridX), 1, 1};
    return;
  }
  default:
    return;
  }
}

} // namespace stitch
