// plan_to_json: the groups, the memory plan's totals, the planners compared, the fusions
// rejected with their reasons and the ILP's statistics.
#include "planner/plan_json.h"

#include "planner/cost_model.h"

#include <fmt/format.h>

namespace stitch {

namespace {

nlohmann::json tensor_names(const Graph& g, const std::vector<TensorId>& tensors) {
  nlohmann::json names = nlohmann::json::array();
  for (TensorId t : tensors)
    names.push_back(g.tensor(t).name);
  return names;
}

nlohmann::json node_names(const Graph& g, const std::vector<int32_t>& nodes) {
  nlohmann::json names = nlohmann::json::array();
  for (int32_t n : nodes)
    names.push_back(g.nodes[n].name);
  return names;
}

std::string_view activation_name(EpilogueActivation a) {
  switch (a) {
  case EpilogueActivation::None:
    return "none";
  case EpilogueActivation::Relu:
    return "relu";
  case EpilogueActivation::GeluTanh:
    return "gelu_tanh";
  }
  return "?";
}

// "fp32" (exact products, fp32 sums) or "tf32" (float32 operands rounded to TF32).
std::string_view library_math_name(LibraryMath math) {
  return math == LibraryMath::Tf32 ? "tf32" : "fp32";
}

nlohmann::json regional_json(const Graph& g, const RegionalSpec& spec) {
  nlohmann::json cached = nlohmann::json::array();
  for (const RegionalSpec::CachedRow& row : spec.cached)
    cached.push_back(g.tensor(row.tensor).name);
  nlohmann::json j = {{"rows", spec.rows},
                      {"row_length", spec.row_length},
                      {"mapping", mapping_name(spec.mapping)},
                      {"passes", spec.passes},
                      {"row_cache", row_cache_name(spec.cache)},
                      {"cached_inputs", cached},
                      {"row_inputs", tensor_names(g, spec.row_inputs)},
                      {"element_outputs", tensor_names(g, spec.element_outputs)},
                      {"row_outputs", tensor_names(g, spec.row_outputs)},
                      {"reread_bytes", spec.reread_bytes}};
  if (!spec.space_dims.empty()) j["space_dims"] = sym_shape_to_string(spec.space_dims);
  if (spec.row_length_dims) {
    // Rows of the run's length: the cache holds the longest row this kernel runs.
    j["row_length_dims"] = spec.row_length_dims->to_string();
    j["elements_per_thread"] = spec.elements_per_thread;
  }
  // Row lookups (Gathers): which table each reads a row of, at which indices.
  if (!spec.gathers.empty()) {
    nlohmann::json lookups = nlohmann::json::array();
    for (const RegionalSpec::GatherRow& gather : spec.gathers)
      lookups.push_back({{"node", g.nodes[gather.node].name},
                         {"table", g.tensor(gather.data).name},
                         {"indices", g.tensor(gather.indices).name},
                         {"indices_in_group", gather.indices_in_group}});
    j["lookups"] = lookups;
  }
  return j;
}

// A Local spec: its iteration, vectors, and the movement nodes read through as index
// remappings, each operand's coordinates as "offset + step * r<d>" per axis.
nlohmann::json local_json(const Graph& g, const LocalSpec& spec) {
  nlohmann::json j = {{"iteration", spec.iteration}, {"vector_width", spec.vector_width}};
  if (!spec.iteration_dims.empty()) j["iteration_dims"] = sym_shape_to_string(spec.iteration_dims);
  if (spec.moves.empty()) return j;
  nlohmann::json moves = nlohmann::json::array();
  for (const MovementRead& m : spec.moves) {
    nlohmann::json parts = nlohmann::json::array();
    for (const MovementRead::Part& part : m.parts) {
      std::vector<std::string> axes;
      for (size_t a = 0; a < part.source.size(); ++a) {
        if (part.source[a] < 0) {
          axes.push_back(std::to_string(part.offset[a]));
          continue;
        }
        std::string r = fmt::format("r{}", part.source[a]);
        if (part.step[a] != 1) r = fmt::format("{} * {}", part.step[a], r);
        if (part.offset[a] != 0) r = fmt::format("{} + {}", part.offset[a], r);
        axes.push_back(r);
      }
      nlohmann::json p = {{"operand", g.tensor(part.operand).name}, {"reads", axes}};
      if (m.run_bounds)
        p["covers"] = {part.run_begin.to_string(), part.run_end.to_string()};
      else if (m.axis >= 0)
        p["covers"] = {part.begin, part.end};
      parts.push_back(std::move(p));
    }
    nlohmann::json move = {{"node", g.nodes[m.node].name}, {"parts", std::move(parts)}};
    if (m.generates)
      move["generates"] = fmt::format("{} + {} * r0", m.start.to_string(), m.delta.to_string());
    if (m.band)
      move["keeps"] =
          fmt::format("column - row {} {}", m.upper ? ">=" : "<=", m.diagonal.to_string());
    moves.push_back(std::move(move));
  }
  j["remappings"] = std::move(moves);
  j["unread_bytes"] = spec.unread_bytes;
  j["uncoalesced_bytes"] = spec.uncoalesced_bytes;
  return j;
}

// What the group's spec decided, by kind (group_spec.h).
// A mapping variant's conditions: any of the boxes, each every bound of it.
nlohmann::json variant_conditions(const MappingVariant& v) {
  nlohmann::json when = nlohmann::json::array();
  for (const std::vector<ExtentBound>& box : v.when) {
    nlohmann::json bounds = nlohmann::json::array();
    for (const ExtentBound& b : box) {
      nlohmann::json j = {{"extent", b.name}, {"value", b.value.to_string()}};
      if (b.at_least) j["at_least"] = *b.at_least;
      if (b.at_most) j["at_most"] = *b.at_most;
      bounds.push_back(std::move(j));
    }
    when.push_back(std::move(bounds));
  }
  return when;
}

nlohmann::json spec_json(const Graph& g, const GroupSpec& spec) {
  nlohmann::json j = {{"kind", spec_name(spec)}};
  if (const auto* local = std::get_if<LocalSpec>(&spec)) {
    j.update(local_json(g, *local));
  } else if (const auto* window = std::get_if<WindowSpec>(&spec)) {
    j["window"] = g.nodes[window->window].name;
    j["producers"] = node_names(g, window->producers);
    j["consumers"] = node_names(g, window->consumers);
    j["taps"] = window->geometry.taps();
    j["pads_begin"] = window->geometry.pad_begin;
    j["pads_end"] = window->geometry.pad_end;
  } else if (const auto* regional = std::get_if<RegionalSpec>(&spec)) {
    j.update(regional_json(g, *regional));
  } else if (const auto* column = std::get_if<ColumnSpec>(&spec)) {
    j["rows"] = column->rows;
    j["columns"] = column->columns;
    j["column_nodes"] = node_names(g, column->column_nodes);
    j["element_nodes"] = node_names(g, column->element_nodes);
    j["blocks"] = column->blocks;
  } else if (const auto* gemv = std::get_if<RowGemvSpec>(&spec)) {
    j["head"] = regional_json(g, gemv->head);
    j["vector"] = g.tensor(gemv->vector).name;
    j["product"] = g.nodes[gemv->product].name;
    j["k"] = gemv->mv.k;
    j["n"] = gemv->mv.n;
    j["warp_per_output"] = gemv->mv.b_rows_are_outputs;
    j["consumers"] = node_names(g, gemv->consumers);
    if (!gemv->result_views.empty()) j["result_views"] = node_names(g, gemv->result_views);
  } else if (const auto* independent = std::get_if<IndependentSpec>(&spec)) {
    j["parts"] = nlohmann::json::array();
    for (const IndependentSpec::Part& part : independent->parts) {
      nlohmann::json p = {{"blocks", part.blocks}};
      if (const auto* l = std::get_if<LocalSpec>(&part.body)) {
        p.update(local_json(g, *l));
        p["kind"] = "local";
        p["nodes"] = node_names(g, l->nodes);
      } else {
        const auto& r = std::get<RegionalSpec>(part.body);
        p = regional_json(g, r);
        p["kind"] = "regional";
        p["blocks"] = part.blocks;
      }
      if (part.run_blocks) p["run_blocks"] = part.run_blocks->to_string();
      j["parts"].push_back(p);
    }
  } else if (const auto* gemm = std::get_if<GemmSpec>(&spec)) {
    j["dtype"] = dtype_name(gemm->dtype);
    j["math"] = library_math_name(gemm->math);
    j["m"] = gemm->m;
    if (const auto& e = gemm->symbolic) {
      // The extents that depend on the symbols, as expressions.
      nlohmann::json dims = nlohmann::json::object();
      const bool batched = e->batch_count != DimExpr(1); // strides only between batches
      for (const auto& [name, d] : {std::pair{"m", &e->m},
                                    {"n", &e->n},
                                    {"k", &e->k},
                                    {"batch_count", &e->batch_count},
                                    {"stride_a", &e->stride_a},
                                    {"stride_b", &e->stride_b},
                                    {"stride_d", &e->stride_d}})
        if (!d->is_constant() && (batched || std::string_view(name).substr(0, 6) != "stride"))
          dims[name] = d->to_string();
      j["dims"] = dims;
    }
    j["n"] = gemm->n;
    j["k"] = gemm->k;
    j["batch_count"] = gemm->batch_count;
    auto addend = [&](int i) {
      return i < 0 ? nlohmann::json(nullptr)
                   : nlohmann::json(g.tensor(gemm->addends[i].tensor).name);
    };
    j["bias"] = addend(gemm->bias);
    j["c"] = addend(gemm->c);
    j["fill"] = nlohmann::json::array();
    for (int i : gemm->fill)
      j["fill"].push_back(addend(i));
    j["fill_kernel"] = !gemm->fill.empty();
    j["activation"] = activation_name(gemm->activation);
    // Transposes the call reads or writes in place (no copy kernel), and the loop of calls
    // over batch axes no single stride describes.
    auto through = [&](int32_t node) {
      return node < 0 ? nlohmann::json(nullptr) : nlohmann::json(g.nodes[node].name);
    };
    if (gemm->layout_a >= 0) j["a_through"] = through(gemm->layout_a);
    if (gemm->layout_b >= 0) j["b_through"] = through(gemm->layout_b);
    if (gemm->layout_result >= 0) j["result_through"] = through(gemm->layout_result);
    if (gemm->slice_a >= 0)
      j["a_slice"] = {{"node", through(gemm->slice_a)}, {"offset", gemm->offset_a}};
    if (gemm->slice_b >= 0)
      j["b_slice"] = {{"node", through(gemm->slice_b)}, {"offset", gemm->offset_b}};
    if (!gemm->outer.empty()) j["calls"] = shape_elements(gemm->outer);
  } else if (const auto* attention = std::get_if<AttentionSpec>(&spec)) {
    j["scores"] = g.nodes[attention->scores].name;
    j["product"] = g.nodes[attention->product].name;
    j["layouts"] = node_names(g, attention->layouts);
    j["logit_nodes"] = node_names(g, attention->logit_nodes);
    j["views"] = node_names(g, attention->views);
    j["logit_shape"] = attention->logit_shape;
    j["softmax"] = node_names(g, attention->softmax);
    j["batch"] = attention->batch;
    j["queries"] = attention->queries;
    j["keys"] = attention->keys;
    if (const auto& sym = attention->symbolic)
      j["dims"] = {{"logit_shape", sym_shape_to_string(sym->logit_shape)},
                   {"heads", sym->heads.to_string()},
                   {"queries", sym->queries.to_string()},
                   {"keys", sym->keys.to_string()}};
    j["head_dim"] = attention->head_dim;
    j["value_dim"] = attention->value_dim;
    auto operand = [&](const AttentionSpec::Operand& o) {
      return nlohmann::json{{"tensor", g.tensor(o.tensor).name},
                            {"offset", o.offset},
                            {"batch_strides", o.batch_strides},
                            {"row_stride", o.row_stride},
                            {"col_stride", o.col_stride},
                            {"batch", o.batch},
                            {"head_divisor", o.head_divisor},
                            {"rows_per_head", o.rows_per_head},
                            {"scalings", node_names(g, o.scalings)},
                            {"prologue", node_names(g, o.prologue)},
                            {"vector", o.vector}};
    };
    j["q"] = operand(attention->q);
    j["k"] = operand(attention->k);
    j["v"] = operand(attention->v);
    j["out"] = operand(attention->out);
    j["warps"] = attention->warps;
    j["rows_per_warp"] = attention->rows_per_warp;
    j["key_tile"] = attention->key_tile;
    j["math"] = attention->tensor_cores ? "tensor_cores" : "fma";
    if (attention->tensor_cores) j["element"] = dtype_name(attention->element);
    j["query_tiles"] = attention->query_tiles;
    j["splits"] = attention->splits;
    j["keys_per_split"] = attention->keys_per_split;
    // Over symbolic dims, flash-decoding decided by each run's shape (split_by_run).
    if (const auto& sym = attention->symbolic; sym && sym->sm_count > 0)
      j["splits_by_run"] = {{"below_blocks", sym->sm_count},
                            {"tiles_per_split", sym->tiles_per_split},
                            {"max_splits", sym->max_splits},
                            {"partial_rows", sym->split_rows}};
    j["uncoalesced_bytes"] = attention->uncoalesced_bytes;
  } else if (const auto* chain = std::get_if<GemmChainSpec>(&spec)) {
    auto name_of = [&](TensorId t) {
      return t == kNoTensor ? nlohmann::json(nullptr) : nlohmann::json(g.tensor(t).name);
    };
    auto matrix = [&](const GemmChainSpec::Matrix& m) {
      return nlohmann::json{{"tensor", name_of(m.tensor)},
                            {"offset", m.offset},
                            {"row_stride", m.row_stride},
                            {"col_stride", m.col_stride},
                            {"vector", m.vector}};
    };
    auto product = [&](const GemmChainSpec::Product& p) {
      nlohmann::json pj = {{"node", g.nodes[p.node].name},
                           {"w", matrix(p.w)},
                           {"value", name_of(p.value)},
                           {"column_offset", p.column_offset}};
      if (p.alpha != 1.0) pj["alpha"] = p.alpha;
      if (p.c != kNoTensor) pj["c"] = {{"tensor", name_of(p.c)}, {"beta", p.beta}};
      return pj;
    };
    j["element"] = dtype_name(chain->element);
    j["x"] = matrix(chain->x);
    j["first"] = product(chain->first);
    j["gate"] = chain->gate ? product(*chain->gate) : nlohmann::json(nullptr);
    j["slices"] = node_names(g, chain->slices);
    j["activation"] = node_names(g, chain->activation);
    j["hidden"] = name_of(chain->hidden);
    j["second"] = g.nodes[chain->second].name;
    j["w2"] = matrix(chain->w2);
    if (chain->second_c != kNoTensor)
      j["second_c"] = {{"tensor", name_of(chain->second_c)}, {"beta", chain->second_beta}};
    j["epilogue"] = node_names(g, chain->epilogue);
    j["views"] = node_names(g, chain->views);
    j["result"] = name_of(chain->result);
    j["rows"] = chain->rows;
    j["inner"] = chain->inner;
    j["hidden_dim"] = chain->hidden_dim;
    j["columns"] = chain->columns;
    j["tile"] = {{"rows", 16 * chain->warps_m},
                 {"warps", {chain->warps_m, chain->warps_n}},
                 {"block_k", chain->block_k},
                 {"hidden_tile", chain->hidden_tile},
                 {"out_tile", chain->out_tile}};
    j["cluster_blocks"] = chain->cluster_blocks;
    j["slice"] = chain->slice;
    j["row_tiles"] = chain->row_tiles;
    j["shared_bytes"] = chain->shared_bytes;
    j["hidden_in"] = "shared memory; partial outputs reduced through distributed shared memory";
    j["saved_bytes"] = chain->saved_bytes;
    j["search"] = {{"configurations", chain->configurations},
                   {"modeled_us", chain->modeled_us},
                   {"hbm_bytes", chain->hbm_bytes},
                   {"l2_bytes", chain->l2_bytes},
                   {"dsm_bytes", chain->dsm_bytes}};
  } else if (const auto* conv = std::get_if<ConvSpec>(&spec)) {
    j["dtype"] = dtype_name(conv->dtype);
    j["math"] = library_math_name(conv->math);
    j["pads"] = conv->pads;
    if (conv->pre_pads()) {
      // X copied padded into the group's scratch first (the library pads symmetrically).
      nlohmann::json pre_pad;
      std::vector<std::string> begin, end;
      for (size_t i = 0; i < conv->pre_pad_begin.size(); ++i) {
        begin.push_back(conv->pre_pad_begin[i].to_string());
        end.push_back(conv->pre_pad_end[i].to_string());
      }
      pre_pad["begin"] = begin;
      pre_pad["end"] = end;
      pre_pad["blocks"] = conv->pre_pad_blocks;
      j["pre_pad"] = pre_pad;
    }
    if (conv->crops()) {
      // The whole unpadded output into the group's scratch, the result cropped out of it.
      std::vector<std::string> full;
      for (const DimExpr& d : conv->full_spatial_dims)
        full.push_back(d.to_string());
      j["crop"] = {{"begin", conv->crop_begin}, {"full", full}, {"blocks", conv->crop_blocks}};
    }
    j["residual"] = conv->residual == kNoTensor ? nlohmann::json(nullptr)
                                                : nlohmann::json(g.tensor(conv->residual).name);
    j["relu"] = conv->relu;
    if (conv->batch_dims) j["batch_dims"] = conv->batch_dims->to_string();
    j["layout"] = conv->channels_last ? "channels_last" : "channels_first";
    if (conv->channels_last) {
      j["x_through"] = g.nodes[conv->layout_x].name;
      j["w_through"] = g.nodes[conv->layout_w].name;
      j["result_through"] = g.nodes[conv->layout_result].name;
    }
  }
  return j;
}

} // namespace

nlohmann::json plan_to_json(const Graph& g, const FusionPlan& plan, const MemoryPlan& memory) {
  nlohmann::json j;
  j["planner"] = plan.planner;
  j["groups"] = nlohmann::json::array();
  int launches = 0;
  int64_t bytes = 0;
  auto describe = [&](const FusionGroup& group) {
    nlohmann::json gj = {{"id", group.id},
                         {"kind", group_kind_name(group.kind)},
                         {"estimated_bytes", group.estimated_bytes}};
    nlohmann::json nodes = nlohmann::json::array();
    for (int32_t n : group.nodes)
      nodes.push_back({{"name", g.nodes[n].name}, {"op", op_name(g.nodes[n].op)}});
    gj["nodes"] = nodes;
    gj["estimated_cost"] = group.estimated_cost;
    gj["inputs"] = tensor_names(g, group.inputs);
    gj["outputs"] = tensor_names(g, group.outputs);
    gj["spec"] = spec_json(g, group.spec);
    if (generated_kernel(group.kind)) {
      gj["file"] = fmt::format("group_{:03}.cu", group.id);
      gj["scheme"] = scheme_name(group.scheme);
      gj["mapping"] = mapping_name(group.mapping);
      gj["grid"] = group.launch.grid;
      gj["block"] = group.launch.block;
      gj["dynamic_shared_bytes"] = group.launch.dynamic_shared_bytes;
      gj["vector_width"] = group.launch.vector_width;
      gj["cooperative"] = group.launch.cooperative;
      if (group.launch.cluster > 1) gj["cluster"] = group.launch.cluster;
      if (group.launch.cooperative) gj["min_blocks_per_sm"] = group.launch.min_blocks_per_sm;
      // Over symbolic dims: the work each run covers, the grid (above) its most blocks.
      if (group.launch.work_per_block > 0) {
        gj["work"] = group.launch.work.to_string();
        gj["work_per_block"] = group.launch.work_per_block;
      }
      if (group.launch.index32) gj["index32"] = true;
      // Mapping variants: which rows, row lengths or queries run another mapping or tile
      // geometry, and its launch.
      if (!group.variants.empty()) {
        nlohmann::json variants = nlohmann::json::array();
        for (const MappingVariant& v : group.variants) {
          nlohmann::json vj = {{"mapping", mapping_name(v.mapping)},
                               {"when", variant_conditions(v)},
                               {"grid", v.launch.grid},
                               {"block", v.launch.block},
                               {"dynamic_shared_bytes", v.launch.dynamic_shared_bytes},
                               {"spec", spec_json(g, v.spec)}};
          if (v.launch.work_per_block > 0) {
            vj["work"] = v.launch.work.to_string();
            vj["work_per_block"] = v.launch.work_per_block;
          }
          variants.push_back(std::move(vj));
        }
        gj["variants"] = variants;
      }
      if (group.rows > 0) {
        gj["rows"] = group.rows;
        gj["row_length"] = group.row_length;
      }
      if (group.scratch_bytes > 0) {
        gj["scratch_bytes"] = group.scratch_bytes;
        gj["scratch_offset"] = memory.scratch_offset.at(&group - plan.groups.data());
      }
      if (!group.parts.empty()) {
        nlohmann::json parts = nlohmann::json::array();
        for (const std::vector<int32_t>& part : group.parts)
          parts.push_back(node_names(g, part));
        gj["parts"] = parts;
        gj["part_blocks"] = group.part_blocks;
      }
    }
    return gj;
  };
  for (const FusionGroup& group : plan.groups) {
    launches += group_launches(group);
    bytes += group.estimated_bytes;
    j["groups"].push_back(describe(group));
  }
  // What the library runs in each chain's place on a device that cannot hold its clusters.
  j["fallbacks"] = nlohmann::json::array();
  for (const ChainFallback& fallback : plan.fallbacks) {
    nlohmann::json groups = nlohmann::json::array();
    for (const FusionGroup& group : fallback.groups)
      groups.push_back(describe(group));
    j["fallbacks"].push_back({{"chain_group", fallback.chain_group}, {"groups", groups}});
  }
  j["totals"] = {{"groups", plan.groups.size()},
                 {"launches", launches},
                 {"estimated_bytes", bytes},
                 {"arena_peak_bytes", memory.arena_bytes},
                 {"intermediate_bytes", memory.intermediate_bytes},
                 {"weights_bytes", memory.weights_bytes},
                 {"fallback_bytes", memory.fallback_bytes},
                 {"output_copies", memory.output_copies.size()}};
  // The same totals for the other planners, by the same cost model.
  j["compare"] = nlohmann::json::array();
  for (const PlanTotals& t : plan.totals)
    j["compare"].push_back({{"planner", t.planner},
                            {"launches", t.launches},
                            {"estimated_bytes", t.bytes},
                            {"estimated_cost", t.cost}});
  j["rejected_fusions"] = nlohmann::json::array();
  for (const RejectedFusion& r : plan.rejected)
    j["rejected_fusions"].push_back({{"nodes", node_names(g, r.nodes)}, {"reason", r.reason}});
  if (plan.ilp.ran)
    j["ilp"] = {{"status", plan.ilp.status},
                {"objective", plan.ilp.objective},
                {"bound", plan.ilp.bound},
                {"gap", plan.ilp.gap},
                {"solve_seconds", plan.ilp.solve_seconds},
                {"candidates", plan.ilp.candidates},
                {"cycle_cuts", plan.ilp.cycle_cuts},
                {"exhaustive_candidates", plan.ilp.exhaustive}};
  return j;
}

} // namespace stitch
