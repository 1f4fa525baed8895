// The pieces reduction kernels share: how their threads walk the lines of a
// ReductionSpace (reduction_mapping.h) under the plan's mapping, spelled in generated code.
//
// A line is one independent reduction (one output of ReduceSum, one row of ArgMax). Under
// the plan's mapping a line belongs to one thread (Flat), one warp (WarpPerRow) or one block
// (BlockPerRow); `LineLoop` writes the loop over a thread's lines, the loops over its
// elements of a line, and the combination of the per-thread partial results:
//
//   for (int64_t line = first_line; line < lines; line += line_stride) {   // open_lines
//     const int64_t base = line * 512;                                     // line_base()
//     for (int64_t k = lane; k < length; k += 32) {                        // open_elements
//       ... x[base + k] ...                                                // element_offset()
//     }
//     acc = stitch::rows::warp_allreduce(acc, stitch::rows::Sum{});         // combine()
//     if (lane == 0) y[line] = acc;                                        // leader()
//   }

#pragma once

#include <string>
#include <vector>

#include "emitter/emit_context.h"
#include "planner/group_spec.h"
#include "planner/launch_config.h"

namespace stitch {

class LineLoop {
public:
  LineLoop(const GroupEmitContext& ctx, ReductionSpace space);

  const ReductionSpace& space() const { return space_; }
  ThreadMapping mapping() const { return mapping_; }
  int64_t threads_per_line() const;
  // A comment line saying how threads cover the lines: "64 lines of 512 contiguous elements, a
  // warp per line".
  std::string describe() const;

  // The kernel's opening declarations and `for (line ...) {`; also `const int64_t base`.
  void open_lines(CodeWriter& out) const;
  // `for (k ...) {` over this thread's elements of the line, in increasing k.
  void open_elements(CodeWriter& out) const;
  // The offset of the line's first element from the tensor start, and of element `k` from it.
  std::string line_base() const;
  std::string element_offset(const std::string& k = "k") const;
  // `value` combined across the threads of the line with functor `op` (every thread gets it).
  std::string combine(const std::string& value, const std::string& op) const;
  // The condition under which one thread writes the line's results; empty for Flat.
  std::string leader() const;
  // Writes `statement` guarded by leader().
  void leader_writes(CodeWriter& out, const std::string& statement) const;

private:
  std::string element_start() const;
  std::string element_step() const;

  const GroupEmitContext& ctx_;
  ReductionSpace space_;
  ThreadMapping mapping_;
  std::vector<int64_t> strides_; // row-major strides of space_.dims
};

// A linear index `var` decomposed over `dims` (outermost first, each {size, stride}) and
// recombined with the strides: "(i / 6) * 30 + i % 6". "0" when nothing varies.
std::string offset_expression(const std::string& var,
                              const std::vector<std::pair<int64_t, int64_t>>& dims);

// The element of `operand` (numpy-broadcast to `full`) at element `linear` of `full`.
std::string broadcast_offset(const Shape& operand, const Shape& full, const std::string& linear);

// broadcast_offset over symbolic dims: `operand` (right-aligned to `full`, each dim 1 or
// full's) at element `linear` of `full`, the extents the run's (dim_code).
std::string symbolic_broadcast_offset(const Graph& graph, const SymShape& operand,
                                      const SymShape& full, const std::string& linear);

// A literal of dtype t (an accumulator's initial value or a constant) in generated code.
std::string float_literal(double value, DType t);

// The kernel's signature line: "__global__ void __launch_bounds__(256) name(params)".
std::string kernel_head(const GroupEmitContext& ctx, const std::string& kernel,
                        const std::vector<std::string>& params);

// ---- how Reduce* ops fold their elements (reduction kernels and fused row groups) ----

// The accumulator of a reduction over elements of dtype t: fp32 for float32, double for
// float64, 64-bit integers otherwise.
std::string accumulator_type(DType t);

// `value` (of type `from`) stored as an element of type `to`.
std::string convert(const std::string& value, const std::string& from, const std::string& to);

// How one Reduce* op (or global pool) folds its elements: the value each element `v`
// contributes, how contributions combine (functor and in-thread statement), the empty-set
// identity, and the final expression of the combined accumulator `acc`.
struct ReduceForm {
  std::string functor;  // "stitch::rows::Sum{}"
  std::string step;     // in-thread accumulation of `contribution` into acc ("acc += {};")
  std::string identity; // initial value
  std::string contribution = "v";
  std::string finish = "acc";
};

// The form of `op` (ReduceSum ... ReduceLogSum, GlobalAveragePool, GlobalMaxPool; not
// ReduceLogSumExp) over lines of `length` elements of dtype t; with `runtime_length`, of the
// kernel's variable `length` (lines whose length depends on the symbols).
ReduceForm reduce_form(const GroupEmitContext& ctx, OpKind op, DType t, int64_t length,
                       bool runtime_length = false);

} // namespace stitch
