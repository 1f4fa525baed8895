// AttentionSpec: softmax(logits(Q Kᵀ)) V in one kernel over stitch::attention (device/
// stitch_attention.cuh). The group's source holds
//
//   using stitch_g4_tiles = stitch::attention::FlashConfig<64, 64, 4, 4, 64>;
//                                   // or, on tensor cores, FlashMmaConfig<stitch::float16, 64,
//                                   // 64, 4, 64> (element, dims, warps, key tile)
//   struct stitch_g4_problem {      // what the device code asks of the model
//     in0, in1, ..., out0;          // the kernel's pointers
//     query(head, i, d)             // Q, K and V elements through their strides as float
//     key(head, j, d), value(head, j, d)
//     kQueryVector, query_row(head, i)  // where the plan loads 16-byte vectors: the row's dim 0
//     kKeyVector, key_row(head, j)      // (kXVector 1: element by element, no row pointer)
//     kValueVector, value_row(head, j)
//     logit(head, i, j, dot)        // the logit nodes per (query, key), from the product
//                                   // rounded to the scores' type, as the graph computes them
//     key_end(head, last_query)     // every key
//     store(head, i, d, value)      // the output through its strides
//   };
//   __global__ void stitch_g4_attention(...)   // a block per (head, query tile)
//
// The flat head index runs over the scores' batch axes, the last fastest.
#include <algorithm>

#include <fmt/format.h>

#include "emitter/kernel_fused.h"
#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"

namespace stitch {

namespace {

// An operand's offset and strides as C++: the plan's numbers, or over symbolic dims their
// expressions of the run's symbols ("0" for a broadcast batch axis).
struct OperandStrides {
  std::vector<std::string> batch_dims; // the batch axes its strides index
  std::string queries, rows_per_head;  // where it folds heads (AttentionSpec::Operand)
  std::string offset;
  std::vector<std::string> batch;
  std::string row, col;
};

OperandStrides strides_of(const GroupEmitContext& ctx, const AttentionSpec& spec,
                          const AttentionSpec::Operand& o) {
  OperandStrides r;
  if (!spec.symbolic) {
    for (int64_t d : o.batch)
      r.batch_dims.push_back(std::to_string(d));
    r.queries = std::to_string(spec.queries);
    r.rows_per_head = std::to_string(o.rows_per_head);
    r.offset = std::to_string(o.offset);
    for (int64_t stride : o.batch_strides)
      r.batch.push_back(std::to_string(stride));
    r.row = std::to_string(o.row_stride);
    r.col = std::to_string(o.col_stride);
    return r;
  }
  const Graph& g = ctx.graph();
  const AttentionSpec::Symbolic& sym = *spec.symbolic;
  const AttentionSpec::SymbolicOperand& so = &o == &spec.q   ? sym.q
                                             : &o == &spec.k ? sym.k
                                             : &o == &spec.v ? sym.v
                                                             : sym.out;
  for (const DimExpr& d : so.batch)
    r.batch_dims.push_back(dim_code(g, d));
  r.queries = "queries"; // the problem's member
  r.rows_per_head = dim_code(g, so.rows_per_head);
  r.offset = dim_code(g, so.offset);
  for (const DimExpr& stride : so.batch_strides)
    r.batch.push_back(dim_code(g, stride));
  r.row = dim_code(g, so.row_stride);
  r.col = dim_code(g, so.col_stride);
  return r;
}

// `const int64_t b0 = ..., b1 = ...;` decomposing `index` over the batch axes `dims`.
void emit_batch_coordinates(CodeWriter& out, const std::vector<std::string>& dims,
                            const std::string& index = "head") {
  if (dims.empty()) return;
  out.linef("int64_t rest = {};", index);
  for (size_t j = dims.size(); j-- > 1;) {
    out.linef("const int64_t b{} = rest % {};", j, dims[j]);
    out.linef("rest /= {};", dims[j]);
  }
  out.line("const int64_t b0 = rest;");
}

// The element index of (head's batch coordinates, row, col) in an operand.
std::string operand_index(const OperandStrides& o, const std::string& row, const std::string& col) {
  std::string index = o.offset;
  for (size_t j = 0; j < o.batch.size(); ++j)
    if (o.batch[j] != "0") index += fmt::format(" + b{} * {}", j, o.batch[j]);
  index += fmt::format(" + {} * {}", row, o.row);
  index += o.col == "1" ? fmt::format(" + {}", col) : fmt::format(" + {} * {}", col, o.col);
  return index;
}

bool uses_batch(const OperandStrides& o) {
  for (const std::string& s : o.batch)
    if (s != "0") return true;
  return false;
}

// The operand's batch coordinates b0, b1, ... of the attention's (head, row), and the name of
// its row: grouped-query heads read K and V at head / G; Q and an output of products that fold
// G heads into one take the flat row head * queries + row apart into their own head and row.
std::string emit_operand_coordinates(CodeWriter& out, const AttentionSpec& spec,
                                     const AttentionSpec::Operand& o,
                                     const OperandStrides& strides) {
  std::string row = "row", head = "head";
  if (o.rows_per_head > 0) {
    out.linef("const int64_t flat_row = head * {} + row;", strides.queries);
    out.linef("const int64_t grouped_head = flat_row / {};", strides.rows_per_head);
    out.linef("const int64_t grouped_row = flat_row % {};", strides.rows_per_head);
    head = "grouped_head";
    row = "grouped_row";
  } else if (o.head_divisor > 1) {
    out.linef("const int64_t grouped_head = head / {};  // {} query heads per key head",
              o.head_divisor, o.head_divisor);
    head = "grouped_head";
  }
  if (uses_batch(strides))
    emit_batch_coordinates(out, strides.batch_dims, head);
  else
    out.linef("(void){};", head);
  return row;
}

// The operand's element `e` of its prologue's tensor evaluated from the group's inputs at its
// coordinates (e0, e1, ... of the tensor's shape, row-major), as a Local group evaluates it.
std::string emit_prologue_value(const GroupEmitContext& ctx, const FusedSignature& sig,
                                CodeWriter& out, const std::string& name, const AttentionSpec& spec,
                                const AttentionSpec::Operand& o, const std::string& row,
                                int64_t rows, int64_t cols) {
  const Tensor& t = ctx.graph().tensor(o.tensor);
  const auto rank = static_cast<int64_t>(t.shape.size());
  out.comment(fmt::format("{} as the prologue computes it: '{}' {} evaluated at the element's "
                          "coordinates",
                          name, t.name, shape_to_string(t.shape)));
  std::vector<std::string> at(static_cast<size_t>(rank), "0");
  // The operand's axes are the tensor's (batch..., row, dim), packed: their coordinates as
  // they are.
  const std::vector<int64_t> packed = row_major_strides(t.shape);
  bool direct = o.offset == 0 && o.batch_strides.size() + 2 == packed.size() &&
                Shape(t.shape.begin(), t.shape.end() - 2) == o.batch &&
                t.shape[packed.size() - 2] == rows && t.shape.back() == cols &&
                o.row_stride == packed[packed.size() - 2] && o.col_stride == 1;
  for (size_t j = 0; direct && j < o.batch_strides.size(); ++j)
    direct = t.shape[j] == 1 || o.batch_strides[j] == packed[j];
  if (direct) {
    for (size_t j = 0; j < o.batch_strides.size(); ++j)
      if (t.shape[j] != 1) at[j] = fmt::format("b{}", j);
    at[packed.size() - 2] = t.shape[packed.size() - 2] == 1 ? "0" : row;
    at[packed.size() - 1] = t.shape[packed.size() - 1] == 1 ? "0" : "dim";
    return emit_remapped_value(ctx, sig, o.prologue, o.moves, o.tensor, at, out);
  }
  out.linef("const int64_t e = {};", operand_index(strides_of(ctx, spec, o), row, "dim"));
  emit_coordinates(out, t.shape, "e", "e");
  for (int64_t j = 0; j < rank; ++j)
    if (t.shape[static_cast<size_t>(j)] != 1) at[static_cast<size_t>(j)] = fmt::format("e{}", j);
  return emit_remapped_value(ctx, sig, o.prologue, o.moves, o.tensor, at, out);
}

// emit_prologue_value over symbolic dims: the tensor's dims and the operand's strides as
// expressions; `rows` the operand's rows (the queries, keys, or grouped rows).
std::string emit_symbolic_prologue_value(const GroupEmitContext& ctx, const FusedSignature& sig,
                                         CodeWriter& out, const std::string& name,
                                         const AttentionSpec& spec, const AttentionSpec::Operand& o,
                                         const std::string& row) {
  const Graph& g = ctx.graph();
  const Tensor& t = g.tensor(o.tensor);
  const SymShape dims = t.sym_shape();
  const size_t rank = dims.size();
  const AttentionSpec::Symbolic& sym = *spec.symbolic;
  const AttentionSpec::SymbolicOperand& so = &o == &spec.q ? sym.q : &o == &spec.k ? sym.k : sym.v;
  const DimExpr rows = so.rows_per_head != DimExpr(0) ? so.rows_per_head
                       : &o == &spec.q                ? sym.queries
                                                      : sym.keys;
  out.comment(fmt::format("{} as the prologue computes it: '{}' {} evaluated at the element's "
                          "coordinates",
                          name, t.name, sym_shape_to_string(dims)));
  const SymShape packed = sym_row_major_strides(dims);
  std::vector<std::string> at(rank, "0");
  // The operand's axes are the tensor's (batch..., row, dim), packed: their coordinates as
  // they are.
  bool direct = so.offset == DimExpr(0) && so.batch_strides.size() + 2 == rank &&
                SymShape(dims.begin(), dims.end() - 2) == so.batch && dims[rank - 2] == rows &&
                so.row_stride == packed[rank - 2] && so.col_stride == DimExpr(1);
  for (size_t j = 0; direct && j < so.batch_strides.size(); ++j)
    direct = is_one(dims[j]) || so.batch_strides[j] == packed[j];
  if (direct) {
    for (size_t j = 0; j < so.batch_strides.size(); ++j)
      if (!is_one(dims[j])) at[j] = fmt::format("b{}", j);
    at[rank - 2] = is_one(dims[rank - 2]) ? "0" : row;
    at[rank - 1] = is_one(dims[rank - 1]) ? "0" : "dim";
    return emit_remapped_value(ctx, sig, o.prologue, o.moves, o.tensor, at, out);
  }
  out.linef("const int64_t e = {};", operand_index(strides_of(ctx, spec, o), row, "dim"));
  for (size_t j = 0; j < rank; ++j) {
    if (is_one(dims[j])) continue;
    std::string e = is_one(packed[j]) ? "e" : fmt::format("e / {}", dim_code(g, packed[j]));
    if (j > 0) e = fmt::format("({}) % {}", e, dim_code(g, dims[j]));
    out.linef("const int64_t e{} = {};", j, e);
    at[j] = fmt::format("e{}", j);
  }
  return emit_remapped_value(ctx, sig, o.prologue, o.moves, o.tensor, at, out);
}

// One accessor of the problem struct: `float NAME(int64_t head, int64_t row, int dim)`, the
// element through the operand's strides (or its prologue) and its scalings (each rounded to its
// type, as the graph computes them).
void emit_load(const GroupEmitContext& ctx, const FusedSignature& sig, CodeWriter& out,
               const std::string& name, const std::string& pointer, const AttentionSpec& spec,
               const AttentionSpec::Operand& o, int64_t rows, int64_t cols) {
  out.open(fmt::format("__device__ float {}(int64_t head, int64_t row, int dim) const", name));
  const OperandStrides strides = strides_of(ctx, spec, o);
  const std::string row = emit_operand_coordinates(out, spec, o, strides);
  if (o.scalings.empty()) {
    out.linef("return {};",
              o.prologue.empty()
                  ? fmt::format("{}[{}]", pointer, operand_index(strides, row, "dim"))
              : spec.symbolic ? emit_symbolic_prologue_value(ctx, sig, out, name, spec, o, row)
                              : emit_prologue_value(ctx, sig, out, name, spec, o, row, rows, cols));
    out.close();
    return;
  }
  if (o.prologue.empty()) {
    out.linef("const float x = {}[{}];", pointer, operand_index(strides, row, "dim"));
  } else {
    // The prologue's values in a scope of their own: the scalings name theirs alike.
    out.line("float x;");
    out.open("");
    out.linef("x = {};", spec.symbolic
                             ? emit_symbolic_prologue_value(ctx, sig, out, name, spec, o, row)
                             : emit_prologue_value(ctx, sig, out, name, spec, o, row, rows, cols));
    out.close();
  }
  const Graph& g = ctx.graph();
  ValueScope scope(ctx, o.scalings, out, [&](TensorId t) -> std::string {
    if (std::find(o.scalars.begin(), o.scalars.end(), t) == o.scalars.end()) return "x";
    return load_broadcast(ctx, sig, t, g.tensor(t).shape, out, "0"); // its one element
  });
  out.linef("return {};", scope.value(g.nodes[o.scalings.back()].outputs[0]));
  out.close();
}

// The operand's row as the kernel loads it whole: `static constexpr int kNAMEVector` (its
// plan's vector: 16-byte loads, or 1 for element by element) and, for vectors, `const E*
// NAME_row(int64_t head, int64_t row)`, the row's dim 0.
void emit_row(const GroupEmitContext& ctx, CodeWriter& out, const std::string& name,
              const std::string& constant, const std::string& pointer, const std::string& ctype,
              const AttentionSpec& spec, const AttentionSpec::Operand& o) {
  out.linef("static constexpr int k{}Vector = {};", constant, o.vector);
  if (o.vector <= 1) return;
  out.open(
      fmt::format("__device__ const {}* {}_row(int64_t head, int64_t row) const", ctype, name));
  const OperandStrides strides = strides_of(ctx, spec, o);
  const std::string row = emit_operand_coordinates(out, spec, o, strides);
  out.linef("return {} + ({});", pointer, operand_index(strides, row, "0"));
  out.close();
}

// Over symbolic dims, flash-decoding by the run's shape (AttentionSpec::Symbolic::sm_count): the
// kernel of one split of the keys, the kernel merging the splits, and the group function that
// applies the planner's rule to the run's heads, query tiles and keys, splitting where it says
// so and running `kernel` (every key tile in each block, through `stitch_group_N[_variant]_whole`)
// otherwise.
void emit_symbolic_splits(const GroupEmitContext& ctx, CodeWriter& out, const FusedSignature& sig,
                          const std::string& kernel, const std::string& tiles,
                          const std::string& problem_value) {
  const Graph& g = ctx.graph();
  const FusionGroup& group = ctx.group();
  const AttentionSpec& spec = ctx.spec<AttentionSpec>();
  const AttentionSpec::Symbolic& sym = *spec.symbolic;
  const int64_t query_tile = spec.query_tile();
  const std::string query_tiles =
      fmt::format("const int64_t query_tiles = {};  // {}", dim_code(g, sym.query_tiles),
                  sym.query_tiles.to_string());
  std::vector<std::string> params = sig.params;
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);

  const std::string partial_kernel = kernel + "_split";
  std::vector<std::string> split_params = params;
  split_params.push_back("stitch::attention::Partial* __restrict__ stats");
  split_params.push_back("float* __restrict__ partial");
  split_params.push_back("const int splits");
  split_params.push_back("const int64_t per_split");
  out.comment("One split of the keys (blockIdx.y of `splits`, `per_split` keys each) for the "
              "block's (head, query tile): its rows' maximum, sum and unnormalized output into "
              "the scratch.");
  out.open(kernel_head(ctx, partial_kernel, split_params));
  out.line("STITCH_DYNAMIC_SHARED(float, shared);");
  out.line(problem_value);
  out.line(query_tiles);
  out.line("const int64_t block = blockIdx.x;");
  out.linef("stitch::attention::flash_attention_partial<{}>(p, block / query_tiles, block % "
            "query_tiles * {}, block, static_cast<int>(blockIdx.y), splits, per_split, stats, "
            "partial, shared);",
            tiles, query_tile);
  out.close();
  out.line();

  const std::string combine = kernel + "_combine";
  constexpr int kCombineThreads = 128;
  std::vector<std::string> combine_params = params;
  combine_params.push_back("const stitch::attention::Partial* __restrict__ stats");
  combine_params.push_back("const float* __restrict__ partial");
  combine_params.push_back("const int splits");
  out.comment("The splits of each row merged in order: a thread per (query row, output dim).");
  out.open(fmt::format("__global__ void __launch_bounds__({}) {}({})", kCombineThreads, combine,
                       fmt::join(combine_params, ", ")));
  out.line(problem_value);
  out.line(query_tiles);
  out.line("const int64_t block = blockIdx.x;");
  out.linef("for (int e = threadIdx.x; e < {}; e += blockDim.x)", query_tile * spec.value_dim);
  out.linef("  stitch::attention::flash_attention_combine<{}>(p, block / query_tiles, block % "
            "query_tiles * {}, block, splits, stats, partial, e / {}, e % {});",
            tiles, query_tile, spec.value_dim, spec.value_dim);
  out.close();
  out.line();

  // The kernel over every key tile, launched by a function of its own.
  const GroupEmitContext whole(g, group, ctx.memory(), -1,
                               ctx.variant().empty() ? "whole" : ctx.variant() + "_whole");
  emit_launch(whole, out, kernel, sig.args);
  for (const auto& [name, bytes] : whole.shared_opt_ins())
    ctx.record_shared_opt_in(name, bytes);
  out.line();

  const LaunchConfig& l = group.launch;
  out.comment(fmt::format(
      "Flash-decoding where the run's blocks (heads x query tiles) are fewer than {} and its "
      "keys make two splits of {} key tiles or more: min(ceil(2 * {} / blocks), key tiles / {}, "
      "{}) splits of whole key tiles, as the planner splits a fixed shape; else the kernel over "
      "every key tile.",
      sym.sm_count, sym.tiles_per_split, sym.sm_count, sym.tiles_per_split, sym.max_splits));
  out.open(fmt::format(fmt::runtime(kGroupSignature), ctx.group_function()));
  std::vector<std::string> names;
  for (size_t k = 0; k < sig.args.size(); ++k) {
    out.linef("auto* const a{} = {};", k, sig.args[k]);
    names.push_back(fmt::format("a{}", k));
  }
  const std::vector<int> symbols = launch_symbols(ctx);
  emit_symbol_reads(g, symbols, out);
  for (int k : symbols)
    names.push_back(fmt::format("sym{}", k));
  out.linef("const int64_t blocks = {};  // heads x query tiles", dim_code(g, l.work));
  out.linef("const int64_t keys = {};  // {}", dim_code(g, sym.keys), sym.keys.to_string());
  out.linef("const int64_t key_tiles = (keys + {0} - 1) / {0};", spec.key_tile);
  out.line("int64_t splits = 1;");
  out.linef("if (blocks > 0 && blocks < {}) splits = std::min<int64_t>(std::min<int64_t>((2 * {} "
            "+ blocks - 1) / blocks, key_tiles / {}), {});",
            sym.sm_count, sym.sm_count, sym.tiles_per_split, sym.max_splits);
  out.open("if (splits < 2)");
  out.linef("return {}(b, error, error_size);", whole.group_function());
  out.close();
  out.linef("const int64_t per_split = (key_tiles + splits - 1) / splits * {};", spec.key_tile);
  out.line("splits = (keys + per_split - 1) / per_split;");
  out.linef("auto* const stats = {};", ctx.scratch_pointer("stitch::attention::Partial"));
  out.linef("auto* const partial = reinterpret_cast<float*>(stats + {});  // after {} stats",
            sym.split_rows, sym.split_rows);
  emit_shared_memory_opt_in(ctx, out, partial_kernel, l.dynamic_shared_bytes);
  std::vector<std::string> split_args = names;
  for (const char* a : {"stats", "partial", "static_cast<int>(splits)", "per_split"})
    split_args.push_back(a);
  out.linef("cudaError_t status = STITCH_LAUNCH({}, dim3(static_cast<unsigned>(blocks), "
            "static_cast<unsigned>(splits), 1), dim3({}, 1, 1), {}, b->stream, {});",
            partial_kernel, l.block[0], l.dynamic_shared_bytes, fmt::join(split_args, ", "));
  out.linef("if (status != cudaSuccess) return stitch_launch_result(status, \"{}\", {}, error, "
            "error_size);",
            partial_kernel, group.id);
  std::vector<std::string> combine_args = names;
  for (const char* a : {"stats", "partial", "static_cast<int>(splits)"})
    combine_args.push_back(a);
  out.linef("status = STITCH_LAUNCH({}, dim3(static_cast<unsigned>(blocks), 1, 1), dim3({}, 1, "
            "1), 0, b->stream, {});",
            combine, kCombineThreads, fmt::join(combine_args, ", "));
  out.linef("return stitch_launch_result(status, \"{}\", {}, error, error_size);", combine,
            group.id);
  out.close();
}

} // namespace

void emit_attention(const GroupEmitContext& ctx, CodeWriter& out) {
  const Graph& g = ctx.graph();
  const FusionGroup& group = ctx.group();
  const AttentionSpec& spec = ctx.spec<AttentionSpec>();
  const FusedSignature sig = fused_signature(ctx, spec.io);
  const auto [kernel, tiles, problem] = template_kernel_names(ctx, "attention");
  auto param = [&](TensorId t, const char* what) {
    return interface_name(ctx, sig, t, fmt::format("attention's {}", what));
  };
  const int64_t query_tile = spec.query_tile();
  // Over symbolic dims the heads, queries and keys are the run's.
  const std::optional<AttentionSpec::Symbolic>& sym = spec.symbolic;

  fused_kernel_banner(
      ctx, sig, group.nodes,
      fmt::format("Fused group {} (attention): softmax(logits(Q Kᵀ)) V of {} heads ({}), {} "
                  "queries x {} keys, head dims {} and {}, in one pass over the keys; the "
                  "scores never reach memory. A block per (head, tile of {} queries): {} warps "
                  "of {} query rows, key tiles of {} through shared memory, an online softmax in "
                  "fp32; {}.",
                  group.id, sym ? sym->heads.to_string() : std::to_string(spec.heads),
                  sym ? sym_shape_to_string(sym->batch) : shape_to_string(spec.batch),
                  sym ? sym->queries.to_string() : std::to_string(spec.queries),
                  sym ? sym->keys.to_string() : std::to_string(spec.keys), spec.head_dim,
                  spec.value_dim, query_tile, spec.warps, spec.rows_per_warp, spec.key_tile,
                  spec.tensor_cores
                      ? fmt::format("Q·Kᵀ and P·V on tensor cores ({} tiles, fp32 accumulators)",
                                    dtype_name(spec.element))
                      : std::string("Q·Kᵀ and P·V in fp32 FMA")) +
          (spec.splits > 1
               ? fmt::format(" Flash-decoding: the keys in {} splits of {}, a block per (head, "
                             "query tile, split), merged by a second kernel.",
                             spec.splits, spec.keys_per_split)
           : sym && sym->sm_count > 0
               ? fmt::format(" Flash-decoding where a run has fewer than {} blocks and keys "
                             "enough: the run splits its keys, a block per (head, query tile, "
                             "split), merged by a second kernel.",
                             sym->sm_count)
               : std::string()),
      out);
  if (spec.tensor_cores)
    out.linef("using {} = stitch::attention::FlashMmaConfig<{}, {}, {}, {}, {}>;", tiles,
              storage_ctype(spec.element, ctx), spec.head_dim, spec.value_dim, spec.warps,
              spec.key_tile);
  else
    out.linef("using {} = stitch::attention::FlashConfig<{}, {}, {}, {}, {}>;", tiles,
              spec.head_dim, spec.value_dim, spec.warps, spec.rows_per_warp, spec.key_tile);
  out.linef("static_assert({}::shared_bytes == {}, \"the plan's shared memory\");", tiles,
            spec.shared_bytes);
  out.line();

  // The problem (operands, logits, output) is the same for every tile geometry: a group's
  // variants share the one the planned kernel's source defines before them.
  CodeWriter shared;
  CodeWriter& def = ctx.variant().empty() || !group.variants.empty() ? out : shared;
  def.comment("What stitch::attention asks of this model: its operands, logits and output.");
  def.open(fmt::format("struct {}", problem));
  for (const std::string& p : sig.params)
    def.linef("{};", p);
  def.line("int64_t queries, keys;");
  // Over symbolic dims the run's symbols, which the strides below name.
  std::vector<std::string> symbols;
  if (sym)
    for (int k : launch_symbols(ctx))
      symbols.push_back(fmt::format("sym{}", k));
  if (!symbols.empty())
    def.linef("int64_t {};  // the run's symbolic dims", fmt::join(symbols, ", "));
  def.line();
  // An operand's pointer: none for one its prologue computes.
  auto pointer = [&](const AttentionSpec::Operand& o, const char* what) {
    return o.prologue.empty() ? param(o.tensor, what) : std::string();
  };
  emit_load(ctx, sig, def, "query", pointer(spec.q, "Q"), spec, spec.q,
            spec.q.rows_per_head > 0 ? spec.q.rows_per_head : spec.queries, spec.head_dim);
  emit_load(ctx, sig, def, "key", pointer(spec.k, "K"), spec, spec.k, spec.keys, spec.head_dim);
  emit_load(ctx, sig, def, "value", pointer(spec.v, "V"), spec, spec.v, spec.keys, spec.value_dim);
  emit_row(ctx, def, "query", "Query", pointer(spec.q, "Q"),
           storage_ctype(g.tensor(spec.q.tensor).dtype, ctx), spec, spec.q);
  emit_row(ctx, def, "key", "Key", pointer(spec.k, "K"),
           storage_ctype(g.tensor(spec.k.tensor).dtype, ctx), spec, spec.k);
  emit_row(ctx, def, "value", "Value", pointer(spec.v, "V"),
           storage_ctype(g.tensor(spec.v.tensor).dtype, ctx), spec, spec.v);

  // The logit of (query, key): the logit nodes over the logits' coordinates c0..cR-1
  // (batch..., query, key) and linear index i (the same in the scores and their Views).
  const TensorId scores = g.nodes[spec.scores].outputs[0];
  const Shape& score_shape = spec.logit_shape;
  const size_t rank = score_shape.size();
  def.open("__device__ float logit(int64_t head, int64_t query, int64_t key, float dot) const");
  bool coordinates = false;
  for (int32_t n : spec.logit_nodes)
    for (TensorId t : value_operands(g.nodes[n]))
      coordinates = coordinates || (t != kNoTensor && sig.inputs.count(t) > 0 &&
                                    needs_coordinates(g.tensor(t).shape, score_shape));
  if (sym) {
    // Over symbolic dims a mask reads through the logits' coordinates over the symbols.
    for (int32_t n : spec.logit_nodes)
      for (TensorId t : value_operands(g.nodes[n]))
        coordinates =
            coordinates || (t != kNoTensor && sig.inputs.count(t) > 0 &&
                            tensor_needs_coordinates(g, t, score_shape, sym->logit_shape));
    def.line("const int64_t i = (head * queries + query) * keys + key;");
  } else {
    def.linef("const int64_t i = (head * {} + query) * {} + key;", spec.queries, spec.keys);
  }
  if (coordinates) {
    std::vector<std::string> batch_dims;
    if (sym)
      for (const DimExpr& d : sym->batch)
        batch_dims.push_back(dim_code(g, d));
    else
      for (int64_t d : spec.batch)
        batch_dims.push_back(std::to_string(d));
    emit_batch_coordinates(def, batch_dims);
    for (size_t j = 0; j + 2 < rank; ++j)
      def.linef("const int64_t c{0} = b{0};", j);
    def.linef("const int64_t c{} = query;", rank - 2);
    def.linef("const int64_t c{} = key;", rank - 1);
  }
  def.line("(void)i;");
  std::vector<TensorId> score_views = {scores};
  for (int32_t n : spec.views)
    if (std::find(score_views.begin(), score_views.end(), g.nodes[n].inputs[0]) !=
        score_views.end())
      score_views.push_back(g.nodes[n].outputs[0]);
  ValueScope scope(ctx, spec.logit_nodes, def, [&](TensorId t) -> std::string {
    if (std::find(score_views.begin(), score_views.end(), t) != score_views.end()) {
      def.comment(fmt::format("the product '{}' as the graph stores it", g.tensor(t).name));
      def.linef("const float s = {};", rounded_to(g.tensor(t).dtype, "dot"));
      return "s";
    }
    return load_broadcast(ctx, sig, t, score_shape, def, "i", "c",
                          sym ? &sym->logit_shape : nullptr);
  });
  def.linef("return {};", scope.value(spec.logits));
  def.close();
  def.line("__device__ int64_t key_end(int64_t, int64_t) const { return keys; }");
  def.open("__device__ void store(int64_t head, int64_t row, int dim, float value) const");
  const OperandStrides out_strides = strides_of(ctx, spec, spec.out);
  const std::string out_row = emit_operand_coordinates(def, spec, spec.out, out_strides);
  def.linef("{}[{}] = value;", param(spec.out.tensor, "output"),
            operand_index(out_strides, out_row, "dim"));
  def.close();
  def.close(";");
  def.line();

  // Aggregate initialization in the struct's member order: sig.params', reads then writes.
  const std::vector<std::string> members = interface_members(sig, spec.io);
  const std::string problem_value =
      fmt::format("const {} p{{{}, {}, {}{}}};", problem, fmt::join(members, ", "),
                  sym ? dim_code(g, sym->queries) : std::to_string(spec.queries),
                  sym ? dim_code(g, sym->keys) : std::to_string(spec.keys),
                  symbols.empty() ? std::string() : fmt::format(", {}", fmt::join(symbols, ", ")));
  if (sym) {
    STITCH_INTERNAL_CHECK(spec.splits <= 1, "group {}: flash-decoding over symbolic dims",
                          group.id);
    std::vector<std::string> params = sig.params;
    for (const std::string& p : launch_symbol_params(ctx))
      params.push_back(p);
    out.open(kernel_head(ctx, kernel, params));
    out.line("STITCH_DYNAMIC_SHARED(float, shared);");
    out.line(problem_value);
    out.linef("const int64_t query_tiles = {};  // {}", dim_code(g, sym->query_tiles),
              sym->query_tiles.to_string());
    out.linef("const int64_t blocks = {};  // heads x query tiles", dim_code(g, group.launch.work));
    out.open("for (int64_t block = blockIdx.x; block < blocks; block += gridDim.x)");
    out.line("if (block != blockIdx.x) __syncthreads();  // the previous tile's shared memory");
    out.linef("stitch::attention::flash_attention_tile<{}>(p, block / query_tiles, block % "
              "query_tiles * {}, shared);",
              tiles, query_tile);
    out.close();
    out.close();
    out.line();
    if (sym->sm_count == 0) {
      emit_launch(ctx, out, kernel, sig.args);
      return;
    }
    emit_symbolic_splits(ctx, out, sig, kernel, tiles, problem_value);
    return;
  }
  if (spec.splits <= 1) {
    out.open(kernel_head(ctx, kernel, sig.params));
    out.line("STITCH_DYNAMIC_SHARED(float, shared);");
    out.line(problem_value);
    out.line("const int64_t block = blockIdx.x;");
    out.linef("stitch::attention::flash_attention_tile<{}>(p, block / {}, block % {} * {}, "
              "shared);",
              tiles, spec.query_tiles, spec.query_tiles, query_tile);
    out.close();
    out.line();
    emit_launch(ctx, out, kernel, sig.args);
    return;
  }

  // Flash-decoding: the splits, then their merge; partial results in the group's scratch.
  const int64_t rows = spec.partial_rows();
  std::vector<std::string> params = sig.params;
  params.push_back("stitch::attention::Partial* __restrict__ stats");
  params.push_back("float* __restrict__ partial");
  out.comment(fmt::format("Split {} of {} over the keys ({} keys each; blockIdx.y): this block's "
                          "rows' maximum, sum and unnormalized output into the scratch.",
                          "blockIdx.y", spec.splits, spec.keys_per_split));
  out.open(kernel_head(ctx, kernel, params));
  out.line("STITCH_DYNAMIC_SHARED(float, shared);");
  out.line(problem_value);
  out.line("const int64_t block = blockIdx.x;");
  out.linef("stitch::attention::flash_attention_partial<{}>(p, block / {}, block % {} * {}, block, "
            "static_cast<int>(blockIdx.y), {}, {}, stats, partial, shared);",
            tiles, spec.query_tiles, spec.query_tiles, query_tile, spec.splits,
            spec.keys_per_split);
  out.close();
  out.line();
  const std::string combine = kernel + "_combine";
  constexpr int kCombineThreads = 128;
  std::vector<std::string> combine_params = sig.params;
  combine_params.push_back("const stitch::attention::Partial* __restrict__ stats");
  combine_params.push_back("const float* __restrict__ partial");
  out.comment("The splits of each row merged in order: a thread per (query row, output dim).");
  out.open(fmt::format("__global__ void __launch_bounds__({}) {}({})", kCombineThreads, combine,
                       fmt::join(combine_params, ", ")));
  out.line(problem_value);
  out.line("const int64_t block = blockIdx.x;");
  out.linef("for (int e = threadIdx.x; e < {}; e += blockDim.x)", query_tile * spec.value_dim);
  out.linef("  stitch::attention::flash_attention_combine<{}>(p, block / {}, block % {} * {}, "
            "block, {}, stats, partial, e / {}, e % {});",
            tiles, spec.query_tiles, spec.query_tiles, query_tile, spec.splits, spec.value_dim,
            spec.value_dim);
  out.close();
  out.line();

  const LaunchConfig& l = group.launch;
  out.open(fmt::format(fmt::runtime(kGroupSignature), ctx.group_function()));
  std::vector<std::string> names;
  for (size_t k = 0; k < sig.args.size(); ++k) {
    out.linef("auto* const a{} = {};", k, sig.args[k]);
    names.push_back(fmt::format("a{}", k));
  }
  out.linef("auto* const stats = {};", ctx.scratch_pointer("stitch::attention::Partial"));
  out.linef("auto* const partial = reinterpret_cast<float*>(stats + {});  // after {} stats", rows,
            rows);
  names.push_back("stats");
  names.push_back("partial");
  emit_shared_memory_opt_in(ctx, out, kernel, l.dynamic_shared_bytes);
  out.linef(
      "cudaError_t status = STITCH_LAUNCH({}, dim3({}, {}, 1), dim3({}, 1, 1), {}, b->stream, "
      "{});",
      kernel, l.grid[0], l.grid[1], l.block[0], l.dynamic_shared_bytes, fmt::join(names, ", "));
  out.linef("if (status != cudaSuccess) return stitch_launch_result(status, \"{}\", {}, error, "
            "error_size);",
            kernel, group.id);
  out.linef("status = STITCH_LAUNCH({}, dim3({}, 1, 1), dim3({}, 1, 1), 0, b->stream, {});",
            combine, l.grid[0], kCombineThreads, fmt::join(names, ", "));
  out.linef("return stitch_launch_result(status, \"{}\", {}, error, error_size);", combine,
            group.id);
  out.close();
}

} // namespace stitch
