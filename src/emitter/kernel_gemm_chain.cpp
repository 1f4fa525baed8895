// GemmChainSpec: Y = epilogue(activation(X·W1 [, X·W3]) · W2) in one kernel of thread-block
// clusters over stitch::chain (device/stitch_gemm_chain.cuh). The group's source holds
//
//   using stitch_g7_tiles = stitch::chain::ChainConfig<stitch::float16, 4, 1, 32, 64, 64, true>;
//   struct stitch_g7_problem {    // what the device code asks of the model
//     in0, in1, ..., out0;        // the kernel's pointers
//     rows, inner, hidden, columns
//     x(m, k), w1(k, n), w3(k, n), w2(n, j)   // the operands' elements through their strides
//     kXVector, x_row(m), ...                 // 16-byte rows where the plan copies vectors
//     activation(m, n, first, second)        // the hidden value at (m, n) from the products,
//                                             // each rounded to its stored type first
//     store(m, j, y)                          // the epilogue at (m, j) from the second product
//   };
//   __global__ void stitch_g7_chain(...)      // a cluster per row tile
//
// and the launch in clusters (STITCH_LAUNCH_CLUSTER).
#include <algorithm>

#include <fmt/format.h>

#include "emitter/kernel_fused.h"
#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"

namespace stitch {

namespace {

// The accessors of one matrix: `float NAME(int64_t r, int64_t c)`, the element through its
// strides, and `const T* NAME_row(int64_t r)`, row r's column 0 (read only where the plan copies
// 16-byte vectors), and its vector constant.
void emit_matrix(CodeWriter& out, const std::string& name, const std::string& constant,
                 const std::string& pointer, const std::string& element,
                 const GemmChainSpec::Matrix& m) {
  out.linef("static constexpr int k{}Vector = {};", constant, m.vector);
  out.linef("__device__ const {}* {}_row(int64_t r) const {{ return {} + ({} + r * {}); }}",
            element, name, pointer, m.offset, m.row_stride);
  out.linef("__device__ float {}(int64_t r, int64_t c) const {{ return static_cast<float>({}[{} + "
            "r * {} + c * {}]); }}",
            name, pointer, m.offset, m.row_stride, m.col_stride);
}

// The coordinates of element `linear` of a value of `shape` (over the symbols `dims`) that
// `operands` are read at: the fixed axes', then, over symbolic dims, those of the axes up to
// the last symbolic one where an operand broadcasts along them (tensor_index).
void emit_operand_coordinates(const GroupEmitContext& ctx, CodeWriter& out,
                              const std::vector<TensorId>& operands, const Shape& shape,
                              const SymShape& dims, const std::string& linear,
                              const std::string& coordinate) {
  const Graph& g = ctx.graph();
  bool fixed = false, symbolic = false;
  for (TensorId t : operands) {
    fixed = fixed || tensor_needs_coordinates(g, t, shape, dims);
    symbolic = symbolic || (!g.symbols.empty() && needs_symbolic_coordinates(g, t, dims));
  }
  if (fixed || symbolic) emit_coordinates(out, shape, linear, coordinate, &dims);
  if (symbolic)
    emit_symbolic_coordinates(out, g, dims, linear, coordinate, ctx.group().launch.index32);
}

// The value a product's output holds at (m, column), as the graph stores it: alpha times the sum
// plus beta times Gemm's C (broadcast against the output), rounded to the output's type.
std::string product_value(const GroupEmitContext& ctx, const FusedSignature& sig, CodeWriter& out,
                          TensorId output, const std::string& sum, double alpha, TensorId c,
                          double beta, const std::string& column, const std::string& prefix) {
  const Graph& g = ctx.graph();
  const Tensor& t = g.tensor(output);
  std::string value =
      alpha == 1.0 ? sum : fmt::format("{} * {}", float_literal(alpha, DType::Float32), sum);
  if (c != kNoTensor) {
    const std::string linear = prefix + "i", coordinate = prefix + "c";
    out.linef("const int64_t {} = m * {} + {};", linear, t.shape.back(), column);
    const SymShape dims = t.sym_shape();
    emit_operand_coordinates(ctx, out, {c}, t.shape, dims, linear, coordinate);
    const std::string loaded = load_broadcast(ctx, sig, c, t.shape, out, linear, coordinate, &dims);
    value = fmt::format("{} + {} * {}", value, float_literal(beta, DType::Float32), loaded);
  }
  return rounded_to(t.dtype, value);
}

} // namespace

void emit_gemm_chain(const GroupEmitContext& ctx, CodeWriter& out) {
  const Graph& g = ctx.graph();
  const FusionGroup& group = ctx.group();
  const GemmChainSpec& spec = ctx.spec<GemmChainSpec>();
  const FusedSignature sig = fused_signature(ctx, spec.io);
  const auto [kernel, tiles, problem] = template_kernel_names(ctx, "chain");
  auto param = [&](TensorId t, const char* what) {
    return interface_name(ctx, sig, t, fmt::format("GEMM chain's {}", what));
  };
  const std::string element = storage_ctype(spec.element, ctx);
  // A value read through the group's Views is its source's value (Views keep the order).
  auto resolve = [&](TensorId t) {
    for (bool moved = true; moved;) {
      moved = false;
      for (int32_t v : spec.views)
        if (g.nodes[v].outputs[0] == t) {
          t = g.nodes[v].inputs[0];
          moved = true;
        }
    }
    return t;
  };
  const int64_t tile_rows = 16 * int64_t{spec.warps_m};
  const bool gated = spec.gate.has_value();

  fused_kernel_banner(
      ctx, sig, group.nodes,
      fmt::format("Fused group {} (gemm_chain): {} rows x {} -> {} hidden -> {} columns, {}; the "
                  "hidden values never reach memory ({} bytes the unfused plan writes and reads "
                  "back). A cluster of {} blocks per tile of {} rows, each block {} hidden "
                  "columns into shared memory, then its rows of W2; the blocks' partial tiles "
                  "summed through distributed shared memory. {} tiles on tensor cores, fp32 "
                  "accumulators.",
                  group.id, spec.rows, spec.inner, spec.hidden_dim, spec.columns,
                  gated ? "two first products (gated)" : "one first product", spec.saved_bytes,
                  spec.cluster_blocks, tile_rows, spec.slice, dtype_name(spec.element)),
      out);
  out.linef("using {} = stitch::chain::ChainConfig<{}, {}, {}, {}, {}, {}, {}>;", tiles, element,
            spec.warps_m, spec.warps_n, spec.block_k, spec.hidden_tile, spec.out_tile,
            gated ? "true" : "false");
  out.linef("static_assert({}::shared_bytes({}) == {}, \"the plan's shared memory\");", tiles,
            spec.slice, spec.shared_bytes);
  out.line();

  out.comment("What stitch::chain asks of this model: its operands, activation and epilogue.");
  // Over symbolic dims the rows are the run's, from the symbols the kernel takes (which the
  // activation and the epilogue may also index by).
  const std::vector<int> symbols = launch_symbols(ctx);
  out.open(fmt::format("struct {}", problem));
  for (const std::string& p : sig.params)
    out.linef("{};", p);
  for (int k : symbols)
    out.linef("int64_t sym{};", k);
  out.line("int64_t rows, inner, hidden, columns;");
  out.line();
  emit_matrix(out, "x", "X", param(spec.x.tensor, "X"), element, spec.x);
  emit_matrix(out, "w1", "W1", param(spec.first.w.tensor, "W1"), element, spec.first.w);
  const GemmChainSpec::Matrix& w3 = gated ? spec.gate->w : spec.first.w;
  emit_matrix(out, "w3", "W3", param(w3.tensor, "W3"), element, w3);
  emit_matrix(out, "w2", "W2", param(spec.w2.tensor, "W2"), element, spec.w2);

  // The hidden value at (m, n): the activation nodes over the hidden values' coordinates.
  // The operands the activation and the epilogue load (the kernel's inputs among their nodes').
  auto loaded = [&](const std::vector<int32_t>& nodes) {
    std::vector<TensorId> operands;
    for (int32_t n : nodes)
      for (TensorId t : value_operands(g.nodes[n]))
        if (t != kNoTensor && sig.inputs.count(t) > 0) operands.push_back(t);
    return operands;
  };
  const Shape& hidden_shape = spec.hidden_shape;
  const SymShape hidden_dims = g.tensor(spec.hidden).sym_shape();
  out.open("__device__ float activation(int64_t m, int64_t n, float first, float second) const");
  out.line("(void)second;");
  out.linef("const int64_t i = m * {} + n;", spec.hidden_dim);
  emit_operand_coordinates(ctx, out, loaded(spec.activation), hidden_shape, hidden_dims, "i", "c");
  out.line("(void)i;");
  auto first_value = [&](const GemmChainSpec::Product& p, const char* sum, const char* prefix) {
    out.comment(fmt::format("the product '{}' as the graph stores it", g.tensor(p.value).name));
    const std::string column =
        p.column_offset == 0 ? std::string("n") : fmt::format("n + {}", p.column_offset);
    const std::string v = fmt::format("{}value", prefix);
    // In a scope of its own: Gemm's C loads under its parameter's name, as other values may.
    out.linef("float {};", v);
    out.open("");
    out.linef("{} = {};", v,
              product_value(ctx, sig, out, g.nodes[p.node].outputs[0], sum, p.alpha, p.c, p.beta,
                            column, prefix));
    out.close();
    return v;
  };
  ValueScope* hidden_scope = nullptr; // the scope below, for values read through a View
  ValueScope hidden(ctx, spec.activation, out, [&](TensorId t) -> std::string {
    const TensorId source = resolve(t);
    if (source != t) return hidden_scope->value(source); // once, however many Views read it
    if (t == spec.first.value) return first_value(spec.first, "first", "p");
    if (gated && t == spec.gate->value) return first_value(*spec.gate, "second", "q");
    return load_broadcast(ctx, sig, t, hidden_shape, out, "i", "c", &hidden_dims);
  });
  hidden_scope = &hidden;
  out.linef("return {};", hidden.value(resolve(spec.hidden)));
  out.close();

  // The result at (m, j): the epilogue nodes over the result's coordinates.
  const Shape& result_shape = spec.result_shape;
  const TensorId product_out = g.nodes[spec.second].outputs[0];
  const SymShape result_dims = g.tensor(spec.result).sym_shape();
  out.open("__device__ void store(int64_t m, int64_t j, float y) const");
  out.linef("const int64_t i = m * {} + j;", spec.columns);
  emit_operand_coordinates(ctx, out, loaded(spec.epilogue), result_shape, result_dims, "i", "c");
  ValueScope* result_scope = nullptr;
  ValueScope result(ctx, spec.epilogue, out, [&](TensorId t) -> std::string {
    if (resolve(t) != t) return result_scope->value(resolve(t));
    if (t == product_out) {
      out.comment(fmt::format("the product '{}' as the graph stores it", g.tensor(t).name));
      out.line("float s;");
      out.open("");
      out.linef("s = {};", product_value(ctx, sig, out, t, "y", spec.second_alpha, spec.second_c,
                                         spec.second_beta, "j", "s"));
      out.close();
      return "s";
    }
    return load_broadcast(ctx, sig, t, result_shape, out, "i", "c", &result_dims);
  });
  result_scope = &result;
  out.linef("{}[i] = {};", param(spec.result, "result"), result.value(resolve(spec.result)));
  out.close();
  out.close(";");
  out.line();

  // Aggregate initialization in the struct's member order: sig.params', reads then writes.
  std::vector<std::string> members = interface_members(sig, spec.io);
  std::vector<std::string> params = sig.params;
  for (int k : symbols) {
    members.push_back(fmt::format("sym{}", k));
    params.push_back(fmt::format("const int64_t sym{}", k));
  }
  const bool symbolic_rows = group.launch.work_per_block > 0;
  const std::string rows =
      symbolic_rows ? dim_code(g, *spec.symbolic_rows) : std::to_string(spec.rows);
  out.comment(fmt::format("A cluster of {} blocks per tile of {} rows; block r of the cluster owns "
                          "hidden columns [r * {}, (r + 1) * {}).",
                          spec.cluster_blocks, tile_rows, spec.slice, spec.slice));
  out.open(kernel_head(ctx, kernel, params));
  out.line("STITCH_DYNAMIC_SHARED(unsigned char, shared);");
  out.linef("const {} p{{{}, {}, {}, {}, {}}};", problem, fmt::join(members, ", "), rows,
            spec.inner, spec.hidden_dim, spec.columns);
  out.linef("const int64_t tile = blockIdx.x / {};", spec.cluster_blocks);
  out.linef("stitch::chain::gemm_chain_tile<{}>(p, tile * {}, {}, shared);", tiles, tile_rows,
            spec.slice);
  out.close();
  out.line();

  const LaunchConfig& l = group.launch;
  out.open(fmt::format(fmt::runtime(kGroupSignature), ctx.group_function()));
  std::vector<std::string> names;
  for (size_t k = 0; k < sig.args.size(); ++k) {
    out.linef("auto* const a{} = {};", k, sig.args[k]);
    names.push_back(fmt::format("a{}", k));
  }
  emit_symbol_reads(g, symbols, out);
  for (int k : symbols)
    names.push_back(fmt::format("sym{}", k));
  std::string grid = std::to_string(l.grid[0]);
  if (symbolic_rows) {
    out.linef("const int64_t blocks = {};  // the run's row tiles x {} blocks: {}",
              dim_code(g, l.work), spec.cluster_blocks, l.work.to_string());
    out.line("if (blocks == 0) return 0; // no rows");
    grid = "blocks";
  }
  emit_shared_memory_opt_in(ctx, out, kernel, l.dynamic_shared_bytes);
  constexpr int64_t kPortableClusterBlocks = 8;
  if (l.cluster > kPortableClusterBlocks) {
    out.comment(fmt::format("Clusters of {} blocks: more than the portable 8.", l.cluster));
    out.linef("if (const cudaError_t allow = cudaFuncSetAttribute({}, "
              "cudaFuncAttributeNonPortableClusterSizeAllowed, 1); allow != cudaSuccess)",
              kernel);
    out.linef("  return stitch_launch_result(allow, \"{}\", {}, error, error_size);", kernel,
              group.id);
  }
  out.linef("const cudaError_t status = STITCH_LAUNCH_CLUSTER({}, dim3({}, 1, 1), dim3({}, 1, 1), "
            "dim3({}, 1, 1), {}, b->stream, {});",
            kernel, grid, l.cluster, l.block[0], l.dynamic_shared_bytes, fmt::join(names, ", "));
  out.linef("return stitch_launch_result(status, \"{}\", {}, error, error_size);", kernel,
            group.id);
  out.close();
  out.line();
  out.comment("Whether the device holds this chain's clusters: asked once when the model is "
              "created; where it does not (no clusters before sm_90, or too little shared "
              "memory), the launcher runs the chain's unfused plan instead.");
  out.open(fmt::format("bool {}_fits(void)", ctx.group_function()));
  out.linef("return stitch::cluster_launch_fits({}, dim3({}, 1, 1), dim3({}, 1, 1), {});", kernel,
            l.cluster, l.block[0], l.dynamic_shared_bytes);
  out.close();
}

} // namespace stitch
