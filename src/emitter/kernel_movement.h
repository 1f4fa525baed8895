// The pieces the movement emitters (kernel_movement*.cpp) share: kernel parameters, the
// grid-stride kernel skeleton, coordinate decomposition with constant shapes, and literals of
// a dtype. Each op's emitter writes one kernel (two for ScatterND) following the group's
// launch; every kernel loops grid-stride and is correct under any grid size.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "emitter/kernels.h"
#include "graph/infer_context.h"

namespace stitch {

// One kernel parameter and the launch function's argument for it.
struct KernelArg {
  std::string declaration; // "const float* __restrict__ in"
  std::string value;       // the pointer expression in the group function
};
KernelArg input_arg(const GroupEmitContext& ctx, TensorId t, const std::string& name);
KernelArg output_arg(const GroupEmitContext& ctx, TensorId t, const std::string& name);

// "__global__ void __launch_bounds__(threads) kernel(params) {", preceded by the node's
// description and `notes` as comments.
void open_kernel(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                 const std::vector<KernelArg>& args, const std::vector<std::string>& notes = {});
// "const int64_t n = count;" and "for (int64_t i = first; i < n; i += stride) {".
void open_grid_stride_loop(CodeWriter& out, int64_t count, std::string_view index = "i");
// Over symbolic dims (LaunchConfig::work): "const int64_t n = <the work>;" and the same loop.
void open_symbolic_loop(const GroupEmitContext& ctx, CodeWriter& out);
// Over symbolic dims: "c0" .. "c<rank-1>", the coordinates of element i over `dims` (divided
// out by the symbols' values where symbolic; c0 takes the rest, unbounded).
void emit_run_coordinates(const GroupEmitContext& ctx, CodeWriter& out, const SymShape& dims);
// The offset sum coords[d] * strides[d] (the strides' symbols as the run's values), innermost
// first; "0" for none.
std::string symbolic_offset(const GroupEmitContext& ctx, const std::vector<std::string>& coords,
                            const std::vector<DimExpr>& strides);
// Over symbolic dims, the loop's body of a strided copy: the coordinates c of output element i
// over `result` (divided out by the symbols' values where symbolic), and
// out[i] = in[base + sum c_d * strides[d]].
void emit_symbolic_strided_read(const GroupEmitContext& ctx, CodeWriter& out,
                                const SymShape& result, const std::vector<DimExpr>& strides,
                                const DimExpr& base);
// Closes the kernel and writes the launch function for it.
void finish_kernel(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                   const std::vector<KernelArg>& args);
// The launch function for several kernels launched in order with the group's configuration.
void emit_launches(const GroupEmitContext& ctx, CodeWriter& out,
                   const std::vector<std::pair<std::string, std::vector<KernelArg>>>& kernels);

// Lines "const int64_t c1 = rest % 5; rest /= 5;" decomposing `index` over `dims`
// (row-major) into `prefix`0 .. `prefix`R-1; size-1 axes get 0 without arithmetic.
void emit_coordinates(CodeWriter& out, const Shape& dims, std::string_view index,
                      std::string_view prefix = "c");
// "c0 * 12 + c1 * 4 + c2" (terms with a zero stride dropped; "0" when none remain).
std::string linear_index(const std::vector<std::string>& coords,
                         const std::vector<int64_t>& strides);
// "c0", "c1", ... for rank dims; with the dims, "0" stands for the coordinate of a size-1 axis.
std::vector<std::string> coordinate_names(size_t rank, std::string_view prefix = "c");
std::vector<std::string> coordinate_names(const Shape& dims, std::string_view prefix = "c");

// A strided view of the input read in output order: output dims `dims`, element c read from
// in[base + sum c_d * strides[d]] (strides may be negative). Size-1 axes are dropped and
// axes that stay contiguous merged. Writes the loop body "out[i] = in[...];" for a
// grid-stride loop over i.
struct StridedView {
  Shape dims;
  std::vector<int64_t> strides;
  int64_t base = 0;
};
StridedView simplify_view(const StridedView& view);
void emit_strided_read(CodeWriter& out, const StridedView& view);

// A C++ literal of `dtype` for `value` (floats keep a decimal point; infinities and NaN by
// name; integers cast to the type).
std::string typed_literal(DType dtype, double value, const GroupEmitContext& ctx);
std::string int_literal(DType dtype, int64_t value, const GroupEmitContext& ctx);
// Element i of a constant tensor as a literal of its dtype.
std::string constant_element_literal(const GroupEmitContext& ctx, const Tensor& t, int64_t i);

// The op emitters, each for the ops named.
void emit_permuted_copy(const GroupEmitContext& ctx,
                        CodeWriter& out); // Transpose, DepthToSpace, SpaceToDepth
void emit_copy(const GroupEmitContext& ctx, CodeWriter& out); // Identity and kin, Dropout
void emit_concat(const GroupEmitContext& ctx, CodeWriter& out);
void emit_split(const GroupEmitContext& ctx, CodeWriter& out);
void emit_slice(const GroupEmitContext& ctx, CodeWriter& out);
void emit_tile(const GroupEmitContext& ctx, CodeWriter& out);
void emit_pad(const GroupEmitContext& ctx, CodeWriter& out);
void emit_trilu(const GroupEmitContext& ctx, CodeWriter& out);
void emit_range(const GroupEmitContext& ctx, CodeWriter& out);
void emit_constant_fill(const GroupEmitContext& ctx, CodeWriter& out); // ConstantOfShape
void emit_gather(const GroupEmitContext& ctx, CodeWriter& out);
void emit_gather_elements(const GroupEmitContext& ctx, CodeWriter& out);
void emit_gather_nd(const GroupEmitContext& ctx, CodeWriter& out);
void emit_scatter_nd(const GroupEmitContext& ctx, CodeWriter& out);
void emit_resize(const GroupEmitContext& ctx, CodeWriter& out);
void emit_topk(const GroupEmitContext& ctx, CodeWriter& out);
void emit_einsum(const GroupEmitContext& ctx,
                 CodeWriter& out); // a Gemm-category op, as a loop nest

} // namespace stitch
