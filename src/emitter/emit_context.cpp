// GroupEmitContext helpers: names, pointers, types and node descriptions.
#include "emitter/emit_context.h"

#include <algorithm>
#include <set>

#include <cctype>

#include "graph/error.h"

namespace stitch {

std::string GroupEmitContext::kernel_name(std::string_view suffix) const {
  std::string op(op_name(node().op));
  for (char& c : op)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return fmt::format("stitch_g{}_{}{}{}", group_.id, op, variant_suffix(), suffix);
}

std::string GroupEmitContext::group_function() const {
  return fmt::format("stitch_group_{}{}", group_.id, variant_suffix());
}

std::string storage_bytes(const Graph& graph, const MemoryPlan& memory, TensorId t) {
  const Storage& s = memory.storage.at(t);
  switch (s.kind) {
  case StorageKind::Input:
    return fmt::format("static_cast<unsigned char*>(b->inputs[{}])", s.index);
  case StorageKind::Output:
    return fmt::format("static_cast<unsigned char*>(b->outputs[{}])", s.index);
  case StorageKind::Arena:
    // A model with symbolic dims: the context's layout of the arena (memory_plan.h's slots).
    if (!graph.symbols.empty()) return fmt::format("(b->arena + b->arena_offsets[{}])", s.slot);
    return fmt::format("(b->arena + {})", s.offset);
  case StorageKind::Weights:
    return fmt::format("(b->weights + {})", s.offset);
  case StorageKind::Fallback:
    return fmt::format("(b->fallback + {})", s.offset);
  case StorageKind::None:
    break;
  }
  internal_fail("tensor '{}' has no storage", graph.tensor(t).name);
}

std::string GroupEmitContext::pointer(TensorId t, bool writable) const {
  STITCH_INTERNAL_CHECK(!writable || memory_.storage.at(t).kind != StorageKind::Weights,
                        "writing into weights tensor '{}'", tensor(t).name);
  std::string type = storage_ctype(tensor(t).dtype, *this);
  return fmt::format("reinterpret_cast<{}{}*>({})", writable ? "" : "const ", type,
                     storage_bytes(graph_, memory_, t));
}

void emit_shared_memory_opt_in(const GroupEmitContext& ctx, CodeWriter& out,
                               const std::string& kernel, int64_t bytes) {
  constexpr int64_t kWithoutOptIn = 48 * 1024;
  if (bytes <= kWithoutOptIn) return;
  const int group_id = ctx.group().id;
  ctx.record_shared_opt_in(kernel, bytes);
  out.comment(fmt::format("{} bytes of dynamic shared memory: more than the 48 KiB a kernel gets "
                          "without opting in.",
                          bytes));
  out.linef("if (const cudaError_t opt_in = cudaFuncSetAttribute({}, "
            "cudaFuncAttributeMaxDynamicSharedMemorySize, {}); opt_in != cudaSuccess)",
            kernel, bytes);
  out.linef("  return stitch_launch_result(opt_in, \"{}\", {}, error, error_size);", kernel,
            group_id);
}

std::string GroupEmitContext::scratch_pointer(const std::string& type) const {
  const size_t position = static_cast<size_t>(group_.id); // groups are numbered in plan order
  STITCH_INTERNAL_CHECK(group_.scratch_bytes > 0 && position < memory_.scratch_offset.size() &&
                            memory_.scratch_offset[position] >= 0,
                        "group {} uses scratch the memory plan did not place", group_.id);
  if (!graph_.symbols.empty())
    return fmt::format("reinterpret_cast<{}*>(b->arena + b->arena_offsets[{}])", type,
                       memory_.scratch_slot[position]);
  return fmt::format("reinterpret_cast<{}*>(b->arena + {})", type,
                     memory_.scratch_offset[position]);
}

void GroupEmitContext::spec_error(const std::string& reason) const {
  const Node& n = node();
  internal_fail("group {} ({} spec, {} node(s), first '{}' ({})) cannot be printed: {}", group_.id,
                spec_name(group_.spec), group_.nodes.size(), n.name, op_name(n.op), reason);
}

std::string ctype(DType t, const GroupEmitContext& ctx) {
  switch (t) {
  case DType::Float32:
    return "float";
  case DType::Float64:
    return "double";
  case DType::Int64:
    return "int64_t";
  case DType::Int32:
    return "int32_t";
  case DType::Int16:
    return "int16_t";
  case DType::Int8:
    return "int8_t";
  case DType::UInt64:
    return "uint64_t";
  case DType::UInt32:
    return "uint32_t";
  case DType::UInt16:
    return "uint16_t";
  case DType::UInt8:
    return "uint8_t";
  case DType::Bool:
    return "bool";
  case DType::Float16:
  case DType::BFloat16:
    return "float";
  }
  ctx.spec_error(fmt::format("dtype {} has no element type in kernels", dtype_name(t)));
}

std::string storage_ctype(DType t, const GroupEmitContext& ctx) {
  switch (t) {
  case DType::Float16:
    return "stitch::float16";
  case DType::BFloat16:
    return "stitch::bfloat16";
  default:
    return ctype(t, ctx);
  }
}

std::string rounded_to(DType t, const std::string& value) {
  switch (t) {
  case DType::Float16:
    return fmt::format("stitch::round_to_float16({})", value);
  case DType::BFloat16:
    return fmt::format("stitch::round_to_bfloat16({})", value);
  default:
    return value;
  }
}

std::string describe_node(const Graph& g, const Node& n) {
  auto typed = [&](TensorId t) {
    if (t == kNoTensor) return std::string("_");
    const Tensor& x = g.tensor(t);
    return fmt::format("{}{}", dtype_name(x.dtype), sym_shape_to_string(x.sym_shape()));
  };
  std::vector<std::string> ins, outs;
  for (TensorId t : n.inputs)
    ins.push_back(typed(t));
  for (TensorId t : n.outputs)
    outs.push_back(typed(t));
  return fmt::format("node '{}' ({}): {} <- {}", n.name, op_name(n.op), fmt::join(outs, ", "),
                     fmt::join(ins, ", "));
}

namespace {

int symbol_index(const Graph& graph, const std::string& name) {
  for (size_t k = 0; k < graph.symbols.size(); ++k)
    if (graph.symbols[k].name == name) return static_cast<int>(k);
  STITCH_INTERNAL_CHECK(false, "a dim names '{}', which is no symbol of the graph", name);
  return -1;
}

} // namespace

std::string dim_code(const Graph& graph, const DimExpr& d) {
  return d.to_code(
      [&](const std::string& name) { return fmt::format("sym{}", symbol_index(graph, name)); });
}

std::string symbolic_value_code(const Graph& graph, TensorId t, const std::string& index,
                                const std::string& type) {
  const Tensor& x = graph.tensor(t);
  if (!x.has_symbolic_values()) return "";
  std::string code = fmt::format("{}({})", type, dim_code(graph, x.sym_values.back()));
  for (size_t k = x.sym_values.size() - 1; k-- > 0;)
    code = fmt::format("({} == {} ? {}({}) : {})", index, k, type, dim_code(graph, x.sym_values[k]),
                       code);
  return code;
}

bool is_literal(const std::string& code) {
  return !code.empty() &&
         std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string index_div(bool index32, const std::string& a, const std::string& d) {
  if (index32 && !is_literal(d)) return fmt::format("stitch::dims::div32({}, {})", a, d);
  return fmt::format("{} / {}", a, d);
}

std::string index_mod(bool index32, const std::string& a, const std::string& d) {
  if (index32 && !is_literal(d)) return fmt::format("stitch::dims::mod32({}, {})", a, d);
  return fmt::format("{} % {}", a, d);
}

std::vector<int> symbols_of(const Graph& graph, const SymShape& dims) {
  std::set<int> found;
  for (const DimExpr& d : dims)
    for (const std::string& name : d.symbols())
      found.insert(symbol_index(graph, name));
  return {found.begin(), found.end()};
}

void emit_symbol_reads(const Graph& graph, const std::vector<int>& symbols, CodeWriter& out) {
  for (int k : symbols) {
    const SymbolicDim& s = graph.symbols[static_cast<size_t>(k)];
    out.linef("const int64_t sym{} = b->symbols[{}];", k, k);
    out.comment(fmt::format("  sym{}: the symbolic dim '{}', {}..{}", k, s.name, s.min, s.max));
  }
}

std::vector<int> launch_symbols(const GroupEmitContext& ctx) {
  const Graph& g = ctx.graph();
  if (g.symbols.empty()) return {};
  // The work's symbols and those of every dim and value the group's tensors hold: a kernel's
  // extents (a row's length, a gathered axis) need not be its work's.
  SymShape mentioned;
  const LaunchConfig& l = ctx.group().launch;
  if (l.work_per_block > 0) mentioned.push_back(l.work);
  for (int32_t n : ctx.group().nodes)
    for (const std::vector<TensorId>* list : {&g.nodes[n].inputs, &g.nodes[n].outputs})
      for (TensorId t : *list) {
        if (t == kNoTensor) continue;
        const Tensor& x = g.tensor(t);
        const SymShape dims = x.sym_shape();
        mentioned.insert(mentioned.end(), dims.begin(), dims.end());
        mentioned.insert(mentioned.end(), x.sym_values.begin(), x.sym_values.end());
      }
  return symbols_of(g, mentioned);
}

std::vector<std::string> launch_symbol_params(const GroupEmitContext& ctx) {
  std::vector<std::string> params;
  for (int k : launch_symbols(ctx))
    params.push_back(fmt::format("const int64_t sym{}", k));
  return params;
}

} // namespace stitch
