// What an emitter sees of one fusion group: the graph, the group's decision from the plan,
// where each tensor lives, and helpers that spell types, pointers and shapes in generated
// code. Every identifier it produces is made by stitchc; model strings only reach comments.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "emitter/code_writer.h"
#include "graph/graph.h"
#include "planner/fusion_plan.h"
#include "planner/memory_plan.h"

namespace stitch {

class GroupEmitContext {
public:
  // `cooperative_index`: a cooperative group's position among the model's cooperative launches
  // (its grid is b->cooperative_grids[cooperative_index]); -1 for any other group.
  // `variant`: a mapping variant's name ("warp_per_row"), which its kernels' and its group
  // function's names end with; "" for a group's only kernel (FusionGroup::variants).
  GroupEmitContext(const Graph& graph, const FusionGroup& group, const MemoryPlan& memory,
                   int cooperative_index = -1, std::string variant = {})
      : graph_(graph), group_(group), memory_(memory), cooperative_index_(cooperative_index),
        variant_(std::move(variant)) {}
  // "" or "_warp_per_row": what the names of a variant's kernels and function end with.
  std::string variant_suffix() const { return variant_.empty() ? "" : "_" + variant_; }
  const std::string& variant() const { return variant_; }
  int cooperative_index() const { return cooperative_index_; }
  // The kernels that opt in to more than 48 KiB of dynamic shared memory, and their bytes:
  // recorded by emit_shared_memory_opt_in, checked once when the model is created (emit_model).
  const std::vector<std::pair<std::string, int64_t>>& shared_opt_ins() const {
    return shared_opt_ins_;
  }
  void record_shared_opt_in(const std::string& kernel, int64_t bytes) const {
    shared_opt_ins_.emplace_back(kernel, bytes);
  }

  const Graph& graph() const { return graph_; }
  const FusionGroup& group() const { return group_; }
  const MemoryPlan& memory() const { return memory_; }
  const Node& node(size_t i = 0) const { return graph_.nodes[group_.nodes.at(i)]; }
  const Tensor& tensor(TensorId t) const { return graph_.tensor(t); }

  // Names of the group's kernel(s) and of its host-side launch function.
  std::string kernel_name(std::string_view suffix = {}) const;
  std::string group_function() const;

  // A typed pointer expression to tensor t inside the group function, where `b` is the
  // `const stitch_abi_buffers*`: e.g. reinterpret_cast<const float*>(b->arena + 4096).
  std::string pointer(TensorId t, bool writable) const;

  // The group's global-memory scratch (FusionGroup::scratch_bytes, placed in the arena by the
  // memory plan) as a `type*` expression inside the group function.
  std::string scratch_pointer(const std::string& type) const;

  // The group's spec (group_spec.h) as kind T; an internal error when it is another kind.
  template <typename T> const T& spec() const {
    const T* s = std::get_if<T>(&group_.spec);
    if (s == nullptr) spec_error(fmt::format("the emitter expected another kind of spec"));
    return *s;
  }

  // A spec the emitter cannot print: a compiler bug (check_code_generation and legality
  // decide what is emitted), reported as an internal error naming the group, its kind and the
  // reason.
  [[noreturn]] void spec_error(const std::string& reason) const;

private:
  const Graph& graph_;
  const FusionGroup& group_;
  const MemoryPlan& memory_;
  int cooperative_index_ = -1;
  std::string variant_;
  mutable std::vector<std::pair<std::string, int64_t>> shared_opt_ins_;
};

// The address of tensor t's first byte inside a group function or the launcher, where `b` is
// the `const stitch_abi_buffers*`: e.g. (b->arena + 4096), an unsigned char pointer (const for
// weights).
std::string storage_bytes(const Graph& graph, const MemoryPlan& memory, TensorId t);

// The C++ type a value of dtype t has in a kernel's registers ("float", "int64_t", "bool",
// ...): float for float16 and bfloat16, which kernels compute in. An internal error for a dtype
// kernels lack (check_code_generation refuses those first).
std::string ctype(DType t, const GroupEmitContext& ctx);

// The C++ type of an element of dtype t in memory (pointers, shared-memory caches):
// "stitch::float16" and "stitch::bfloat16" (device/stitch_half.cuh) for the 2-byte floats, which
// convert to and from float implicitly; ctype(t) otherwise.
std::string storage_ctype(DType t, const GroupEmitContext& ctx);

// `value`, a float expression, rounded to dtype t where t is stored in fewer bits than its
// register type ("stitch::round_to_float16(value)"); `value` itself otherwise. Every node result
// of such a dtype is rounded once where it is computed, so a fused kernel's registers hold what
// the unfused ops would have stored.
std::string rounded_to(DType t, const std::string& value);

// A one-line description of a node for comments: "'add_1' (Add): float32[2,3] <- ...".
std::string describe_node(const Graph& graph, const Node& node);

// A kernel launched with more than 48 KiB of dynamic shared memory must opt in first
// (cudaFuncSetAttribute(..MaxDynamicSharedMemorySize)); writes that call, returning its
// failure, when `bytes` needs it (and records the kernel in `ctx` for the check when the model
// is created), and nothing otherwise.
void emit_shared_memory_opt_in(const GroupEmitContext& ctx, CodeWriter& out,
                               const std::string& kernel, int64_t bytes);

// Symbolic dims (`stitchc --dim`): generated code names symbol k of Graph::symbols `symK`, an
// int64_t a group function reads from b->symbols and passes to the kernels that need it.
// `d` as C++: a literal for a constant, else an expression of the symK ("(sym0 * sym1 * 64)").
std::string dim_code(const Graph& graph, const DimExpr& d);
// A tensor holding values computed from the symbols (a Shape's dims, a Gather of them, their
// product): its element at flat `index` as C++ of the run's symK, as `type` (nested
// conditionals over the index where it holds several). "" for any other tensor, whose
// elements are in memory.
std::string symbolic_value_code(const Graph& graph, TensorId t, const std::string& index,
                                const std::string& type);
// Whether `code` is a non-negative integer literal ("64"), not an expression of the symbols.
bool is_literal(const std::string& code);
// `a / d` and `a % d` of non-negative indices as generated code: in 32 bits
// (stitch::dims::div32, mod32) where `index32` (LaunchConfig::index32: the group's indices fit)
// and `d` is a run-time extent, else C++'s (a constant divisor costs a multiply anyway).
std::string index_div(bool index32, const std::string& a, const std::string& d);
std::string index_mod(bool index32, const std::string& a, const std::string& d);
// The symbols `dims` mention, as indices into Graph::symbols, ascending.
std::vector<int> symbols_of(const Graph& graph, const SymShape& dims);
// `const int64_t symK = b->symbols[K];` for each of `symbols`, with the symbol's name and range
// in a comment (a model's name only in comments, escaped as every comment is).
void emit_symbol_reads(const Graph& graph, const std::vector<int>& symbols, CodeWriter& out);

// A kernel over symbolic dims: the symbols its work (LaunchConfig::work) and its tensors' dims
// and values name, and the kernel's parameters for them ("const int64_t sym0", appended after
// its pointers in this order). Empty for a kernel of fixed shapes.
std::vector<int> launch_symbols(const GroupEmitContext& ctx);
std::vector<std::string> launch_symbol_params(const GroupEmitContext& ctx);

// The function every group file defines and the launcher calls, in order.
inline constexpr const char* kGroupSignature =
    "int32_t {}(const stitch_abi_buffers* b, char* error, size_t error_size)";

} // namespace stitch
