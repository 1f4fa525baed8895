// group_cost: the cost model of cost_model.h.
#include "planner/cost_model.h"

#include <algorithm>
#include <cmath>

namespace stitch {

namespace {

// HBM bytes the group moves beyond reading its inputs and writing its outputs once: full-row
// inputs a Regional body reads again in later passes (RowCache::None), a GEMM's fill kernel,
// which writes the result and has the GEMM read it back as C, and reads through layouts and
// index remappings that move whole sectors for fewer useful bytes, a Conv's padded copy of X;
// less the parts of inputs a Local group's Slices never read.
int64_t extra_bytes(const Graph& g, const GroupSpec& spec) {
  if (const auto* regional = std::get_if<RegionalSpec>(&spec)) return regional->reread_bytes;
  if (const auto* gemv = std::get_if<RowGemvSpec>(&spec)) return gemv->head.reread_bytes;
  if (const auto* independent = std::get_if<IndependentSpec>(&spec)) {
    int64_t bytes = 0;
    for (const IndependentSpec::Part& part : independent->parts)
      if (const auto* regional = std::get_if<RegionalSpec>(&part.body))
        bytes += regional->reread_bytes;
      else if (const auto* local = std::get_if<LocalSpec>(&part.body))
        bytes += local->uncoalesced_bytes - local->unread_bytes;
    return bytes;
  }
  if (const auto* gemm = std::get_if<GemmSpec>(&spec))
    return gemm->uncoalesced_bytes + (gemm->fill.empty() ? 0 : 2 * g.tensor(gemm->result).bytes());
  if (const auto* local = std::get_if<LocalSpec>(&spec))
    return local->uncoalesced_bytes - local->unread_bytes;
  // Flash-decoding's partial results: written by the splits, read by the combine.
  if (const auto* attention = std::get_if<AttentionSpec>(&spec)) {
    if (attention->splits <= 1) return attention->uncoalesced_bytes;
    return attention->uncoalesced_bytes + 2 * attention->partial_bytes();
  }
  // A float16/bfloat16 convolution on channels-first tensors: the library's tensor-core
  // kernels read channels-last, so it transforms X and W into its workspace and the result
  // back (a read and a write of each), or falls back to kernels without tensor cores.
  // A channels-last one whose epilogue ends without Relu takes cuDNN's fused call with the
  // identity activation, which cuDNN runs with one algorithm only; on an H100 it refused it for
  // float16 NHWC tensors, and the bias (and a residual) went through cudnnAddTensor, each a
  // pass over the result (conv_cuda.cpp's fallback).
  // A padded copy of X (ConvSpec::pre_pad_begin), or an uncropped output (crop_begin), is
  // written and read again.
  if (const auto* conv = std::get_if<ConvSpec>(&spec)) {
    const int64_t padded = 2 * conv->scratch_bytes();
    if (!conv->channels_last && (conv->dtype == DType::Float16 || conv->dtype == DType::BFloat16))
      return padded + 2 * (g.tensor(conv->x).bytes() + g.tensor(conv->w).bytes() +
                           g.tensor(conv->result).bytes());
    if (conv->channels_last && !conv->transpose && !conv->relu && conv->bias != kNoTensor) {
      const int64_t pass = 2 * g.tensor(conv->result).bytes();
      return padded +
             (conv->residual == kNoTensor ? pass : 2 * pass + g.tensor(conv->residual).bytes());
    }
    return padded;
  }
  return 0;
}

// Launches beyond the group's own: a GEMM's fill kernel, one library call per index of its
// outer batch axes (strides cannot express them as one batched call), the kernel merging
// an attention's flash-decoding splits, and a Conv's padded copy of X or crop.
int64_t extra_launches(const GroupSpec& spec) {
  if (const auto* attention = std::get_if<AttentionSpec>(&spec))
    return attention->splits > 1 ? 1 : 0; // flash-decoding's combine
  if (const auto* conv = std::get_if<ConvSpec>(&spec))
    return conv->pre_pads() || conv->crops() ? 1 : 0; // the padded copy of X, or the crop
  const auto* gemm = std::get_if<GemmSpec>(&spec);
  if (gemm == nullptr) return 0;
  return (gemm->fill.empty() ? 0 : 1) + (shape_elements(gemm->outer) - 1);
}

// Elements of each input the group reads: all of them, but a table that only the group's
// Gathers read (an embedding) only in the rows they pick: the result's elements.
std::vector<int64_t> input_elements_read(const FusionContext& ctx, const GroupAnalysis& group) {
  const Graph& g = ctx.graph;
  std::vector<int64_t> read;
  for (TensorId t : group.inputs) {
    int64_t picked = 0;
    bool only_gathers = true;
    for (int32_t n : group.nodes) {
      const Node& node = g.nodes[n];
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (node.inputs[i] != t) continue;
        if (node.op == OpKind::Gather && i == 0)
          picked += g.tensor(node.outputs[0]).elements();
        else
          only_gathers = false;
      }
    }
    const int64_t all = g.tensor(t).elements();
    read.push_back(only_gathers && picked > 0 ? std::min(all, picked) : all);
  }
  return read;
}

int64_t threads_of(const LaunchConfig& launch) {
  return launch.grid[0] * launch.grid[1] * launch.grid[2] * launch.block[0] * launch.block[1] *
         launch.block[2];
}

} // namespace

int64_t group_launches(const FusionGroup& group) {
  return group.kind == GroupKind::Alias ? 0 : 1 + extra_launches(group.spec);
}

GroupCost group_cost(const FusionContext& ctx, const GroupAnalysis& group) {
  GroupCost c;
  if (group.kind == GroupKind::Alias) return c; // a view: no work, no traffic
  const Graph& g = ctx.graph;
  const std::vector<int64_t> read = input_elements_read(ctx, group);
  for (size_t i = 0; i < group.inputs.size(); ++i)
    c.bytes += read[i] * dtype_size(g.tensor(group.inputs[i]).dtype);
  for (TensorId t : group.outputs)
    c.bytes += g.tensor(t).bytes();
  c.bytes += extra_bytes(g, group.group.spec);
  c.launches = 1 + extra_launches(group.group.spec);
  c.launch = c.launches * ctx.device.launch_cost_bytes();
  c.recompute = static_cast<int64_t>(
      std::llround(static_cast<double>(group.recomputed) * ctx.device.recompute_bytes_per_element));
  c.epilogue = group.epilogue_nodes * ctx.device.epilogue_node_bytes;
  if (const auto* attention = std::get_if<AttentionSpec>(&group.group.spec)) {
    const double flops = 2.0 * static_cast<double>(attention->heads) *
                         static_cast<double>(attention->queries) *
                         static_cast<double>(attention->keys) *
                         static_cast<double>(attention->head_dim + attention->value_dim);
    const double rate =
        attention->tensor_cores ? ctx.device.tensor_core_flops_per_us : ctx.device.fma_flops_per_us;
    // Fewer blocks than SMs leave the others idle: the rate falls with them.
    const double blocks = static_cast<double>(
        std::max<int64_t>(group.group.launch.grid[0] * group.group.launch.grid[1], 1));
    const double busy = std::min(1.0, blocks / static_cast<double>(ctx.device.sm_count));
    c.compute =
        static_cast<int64_t>(std::llround(flops / (rate * busy) * ctx.device.hbm_bytes_per_us));
  }
  if (const auto* chain = std::get_if<GemmChainSpec>(&group.group.spec)) {
    const ChainShape shape{chain->rows,    chain->inner,        chain->hidden_dim,
                           chain->columns, chain->gate ? 2 : 1, dtype_size(chain->element)};
    const ChainTraffic traffic = chain_traffic(ctx.device, shape, 16 * int64_t{chain->warps_m},
                                               chain->cluster_blocks, chain->slice);
    const double products = 2.0 * static_cast<double>(shape.rows) *
                            static_cast<double>(shape.inner * shape.products + shape.columns) *
                            static_cast<double>(shape.hidden);
    const double beyond = traffic.time_us -
                          static_cast<double>(c.bytes) / ctx.device.hbm_bytes_per_us -
                          products / ctx.device.library_tensor_flops_per_us;
    c.compute =
        static_cast<int64_t>(std::llround(std::max(0.0, beyond) * ctx.device.hbm_bytes_per_us));
  }
  // Libraries pick their own launch; only generated kernels are charged for parallelism (a
  // chain's occupancy is in its modeled time).
  if (generated_kernel(group.kind) && group.kind != GroupKind::GemmChain) {
    // Loads in flight, not threads, saturate HBM: a thread with 16-byte vectors counts as four.
    double threads = static_cast<double>(
        std::max<int64_t>(threads_of(group.group.launch) * group.group.launch.vector_width, 1));
    double utilization =
        std::min(1.0, threads / static_cast<double>(ctx.device.saturating_threads()));
    double slowdown = std::min(1.0 / utilization, kMaxSlowdown);
    // The slowdown applies to the streamed bytes: the outputs and the inputs of the group's
    // largest size. A smaller input is a broadcast operand (a bias row, a per-row scale) that
    // every thread re-reads from cache, whatever the parallelism; charging it would make
    // fusing a bias into its consumer look worse than leaving it in a GEMM epilogue.
    int64_t largest = 0, streamed = 0;
    for (int64_t elements : read)
      largest = std::max(largest, elements);
    for (TensorId t : group.outputs)
      largest = std::max(largest, g.tensor(t).elements());
    for (size_t i = 0; i < group.inputs.size(); ++i)
      if (read[i] == largest) streamed += read[i] * dtype_size(g.tensor(group.inputs[i]).dtype);
    for (TensorId t : group.outputs)
      streamed += g.tensor(t).bytes();
    c.parallelism =
        static_cast<int64_t>(std::llround(static_cast<double>(streamed) * (slowdown - 1.0)));
  }
  return c;
}

} // namespace stitch

namespace stitch {

ChainTraffic chain_traffic(const DeviceParams& device, const ChainShape& shape, int64_t tile_rows,
                           int64_t cluster_blocks, int64_t slice) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  const int64_t row_tiles = (shape.rows + tile_rows - 1) / tile_rows;
  const double element = d(shape.element);
  const double weights =
      element * d(shape.hidden) * d(shape.inner * shape.products + shape.columns);
  const double x = element * d(shape.rows) * d(shape.inner);
  ChainTraffic t;
  t.hbm_bytes = x + weights + element * d(shape.rows) * d(shape.columns);
  const double again = weights * d(row_tiles - 1);
  (weights <= d(device.l2_bytes) ? t.l2_bytes : t.hbm_bytes) += again;
  // Each block loads its tile's X rows again for every 64-column step of its slice (the first
  // load of all from HBM).
  t.l2_bytes += x * (d(cluster_blocks) * d((slice + 63) / 64) - 1.0);
  t.dsm_bytes = d(row_tiles) * d(tile_rows) * d(shape.columns) * 4.0 * d(cluster_blocks - 1);
  t.flops = 2.0 * d(row_tiles) * d(tile_rows) * d(cluster_blocks) * d(slice) *
            d(shape.inner * shape.products + shape.columns);
  t.busy = std::min(1.0, d(row_tiles * cluster_blocks) / d(device.sm_count));
  const double hbm = t.hbm_bytes / device.hbm_bytes_per_us,
               l2 = t.l2_bytes / device.l2_bytes_per_us,
               dsm = t.dsm_bytes / device.dsm_bytes_per_us;
  t.time_us = std::max({hbm, l2, dsm, t.flops / device.chain_tensor_flops_per_us}) / t.busy;
  t.memory_us = (hbm + l2 + dsm) / t.busy;
  return t;
}

} // namespace stitch
