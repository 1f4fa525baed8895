// What the legality analyses of the different group kinds share (legality_*.cpp): shape
// predicates, the kernel interface, resource estimates, and each kind's analysis entry point.
// Internal to the planner.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/legality.h"

namespace stitch::legality {

constexpr int64_t kBlock = 256;
// A rough register budget: a fixed base for indices and loop state, a few per node for its
// operands and result, and the cached row elements each thread holds.
constexpr int64_t kBaseRegisters = 24;
constexpr int64_t kRegistersPerNode = 3;
// A cooperative (grid-barrier) kernel is planned for this many registers per thread: its grid
// is what fits resident at that budget, and its __launch_bounds__ holds nvcc to it.
constexpr int64_t kCooperativeRegisters = 64;
// Flash-decoding: each split takes at least this many key tiles, and an attention at most this
// many splits (legality_attention.cpp; over symbolic dims the run applies the same rule).
constexpr int64_t kTilesPerSplit = 2;
constexpr int64_t kMaxSplits = 32;

inline bool contains(const std::vector<int32_t>& sorted, int32_t n) {
  return std::binary_search(sorted.begin(), sorted.end(), n);
}

inline std::string shape_str(const Shape& s) { return shape_to_string(s); }

// `s` without its size-1 axes.
Shape squeezed(const Shape& s);
// The same elements in the same order, up to size-1 axes.
inline bool same_layout(const Shape& a, const Shape& b) { return squeezed(a) == squeezed(b); }
// `s` right-aligned against `to` broadcasts to it (each dim equal or 1, rank at most to's).
bool broadcasts_to(const Shape& s, const Shape& to);
// `s` with leading 1s to the rank of `to` (s no longer than to).
Shape padded_to(const Shape& s, const Shape& to);

// A scalar float constant: kernels write it as a literal, so it broadcasts anywhere.
bool is_scalar_float_literal(const Tensor& t);
// value_operands(node) without the omitted ones.
std::vector<TensorId> present_operands(const Node& node);

// The kernel's parameters for a group of `nodes` with boundary `inputs` and `outputs`: the value
// operands read from memory in the order of `inputs`, the scalar float constants as literals,
// the outputs in order.
KernelInterface kernel_interface(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                                 const std::vector<TensorId>& inputs,
                                 const std::vector<TensorId>& outputs);

// The tensors a set of nodes reads from outside it (a.inputs) and writes for others (a.outputs).
void boundary(const FusionContext& ctx, const std::vector<int32_t>& nodes, GroupAnalysis& a);

// The group's estimated registers per thread fit the device's.
FusionDecision fits_registers(const FusionContext& ctx, const GroupAnalysis& a);

// The SMs a cooperative launch may fill, and the blocks of `block` threads each keeps resident.
int cooperative_sms(const DeviceParams& device);
int64_t cooperative_blocks_per_sm(const DeviceParams& device, int64_t block);

std::string_view class_sentence(NodeClass c);

// Bytes moved beyond a tensor's own `bytes` when it is read or written in adjacent runs of
// `run_bytes`: every access moves whole 32-byte sectors.
int64_t sector_overhead(int64_t bytes, int64_t run_bytes);

// A Transpose, Expand, Concat, Slice with constant parameters or a constant_pad, which a Local
// group reads through as an index remapping (NodeClass::Movement, or Layout for a Transpose of
// a library dtype).
bool remapping_op(const Graph& g, const Node& node);

// A one-element integer tensor as an expression: its value where it is a constant, its
// expression where it is computed from the symbols; nullopt where only the run knows it (a model
// input, a value computed from data).
std::optional<DimExpr> scalar_dim_value(const Graph& g, TensorId t);
// A Trilu's diagonal k: 0 without the input, else scalar_dim_value.
std::optional<DimExpr> trilu_diagonal(const Graph& g, const Node& node);
// An integer Range's start and delta (scalar_dim_value each); nullopt for a floating Range.
std::optional<std::pair<DimExpr, DimExpr>> range_terms(const Graph& g, const Node& node);

// The index remapping of a remapping_op node (group_spec.h's MovementRead; legality_local.cpp).
MovementRead movement_read(const Graph& g, int32_t n);
// A View that only adds or drops axes of 1 (over symbolic dims: of the constant 1) as an index
// remapping: each other axis of its operand read at the coordinate of the result's axis of
// the same extent, in order. nullopt for any other reshape.
std::optional<MovementRead> unit_axes_view_read(const Graph& g, int32_t n);

// A Pad a Local group reads through: constant mode, constant pads >= 0 on at most one axis
// (`axis`, -1 when none; `begin` before it), a fill that is absent (0) or a float scalar
// constant (`fill`).
struct ConstantPad {
  int32_t axis = -1;
  int64_t begin = 0;
  TensorId fill = kNoTensor;
};
std::optional<ConstantPad> constant_pad(const Graph& g, const Node& node);

// The lanes of a 16-byte vector access (4 for 4-byte elements, 8 for 2-byte ones) when every
// output is `iteration` and every input `iteration` or one element, all of one element size of
// 4 or 2 bytes; else 1 (scalar accesses).
int vector_width_for(const Graph& g, const std::vector<TensorId>& inputs,
                     const std::vector<TensorId>& outputs, const Shape& iteration);

// Each kind's analysis of a.nodes (a.inputs and a.outputs filled), filling `a` when legal.
FusionDecision analyze_local(const FusionContext& ctx, GroupAnalysis& a);
FusionDecision analyze_window(const FusionContext& ctx, GroupAnalysis& a);
FusionDecision analyze_regional(const FusionContext& ctx, GroupAnalysis& a,
                                const AnalysisOverrides& overrides);
FusionDecision analyze_column(const FusionContext& ctx, GroupAnalysis& a);
FusionDecision analyze_row_gemv(const FusionContext& ctx, GroupAnalysis& a,
                                const AnalysisOverrides& overrides);
FusionDecision analyze_independent(const FusionContext& ctx, GroupAnalysis& a,
                                   std::vector<std::vector<int32_t>> parts,
                                   const AnalysisOverrides& overrides);
FusionDecision analyze_gemm(const FusionContext& ctx, GroupAnalysis& a);
FusionDecision analyze_attention(const FusionContext& ctx, GroupAnalysis& a);
// Over symbolic queries, an attention group (`group`, its symbolic support done) gets the tile
// geometry of each end of the queries' range that differs from the planned one as a mapping
// variant (legality_attention.cpp).
void attention_variants(const FusionContext& ctx, FusionGroup& group);
FusionDecision analyze_gemm_chain(const FusionContext& ctx, GroupAnalysis& a);
FusionDecision analyze_conv(const FusionContext& ctx, GroupAnalysis& a);

// The Regional spec of a.nodes, without deciding the group (analyze_regional and the head of a
// matrix-vector group both use it): fills a's spec, launch, mapping and estimates.
FusionDecision regional_spec(const FusionContext& ctx, GroupAnalysis& a,
                             const AnalysisOverrides& overrides, RegionalSpec& spec);

// Where a Regional group's cached rows (the full-row inputs read by several passes, `cached`,
// their offsets not yet set) live for rows of up to `longest` elements with spec.mapping and
// spec.block: registers where each thread's share of every row fits, else shared memory where
// a block runs each row and the rows fit the device, else nowhere (RowCache::None, re-read in
// each pass). Sets spec.cache, spec.cached and spec.elements_per_thread; returns the registers
// per thread and the dynamic shared bytes the cache takes.
struct RowCachePlacement {
  int64_t registers = 0, shared_bytes = 0;
};
RowCachePlacement place_row_cache(const Graph& g, RegionalSpec& spec,
                                  std::vector<RegionalSpec::CachedRow> cached, int64_t longest,
                                  const DeviceParams& device);

// Over symbolic dims, a Regional group's launch for `lines` rows (an expression of the
// symbols) with the block sized for rows of `length` elements, and its row cache placed again
// for rows of up to `longest` (legality_symbolic.cpp); the launch's index width is kept.
void size_symbolic_rows(const Graph& g, const DimExpr& lines, int64_t length, int64_t longest,
                        const DeviceParams& device, RegionalSpec& spec, LaunchConfig& launch);

// The library specs of one node and its epilogue nodes (legality_library.cpp); the
// single-node groups use them too.
FusionDecision gemm_spec(const Graph& g, const std::vector<int32_t>& nodes,
                         const DeviceParams& device, GemmSpec& spec);
// Where each addend of a product goes: bias, C or the fill kernel (legality_library.cpp).
// `columns_are_n`: the result's last axis is N; `empty_sum_in_epilogue`: a K of 0 still
// gives the library call's epilogue its addends.
void place_addends(const Graph& g, GemmSpec& spec, bool columns_are_n, bool empty_sum_in_epilogue);
FusionDecision conv_spec(const Graph& g, const std::vector<int32_t>& nodes,
                         const DeviceParams& device, ConvSpec& spec);
// The element types the library calls take (float32, float16, bfloat16).
bool library_dtype(DType t);

// A MatMul operand or result as it is stored: its logical axes (batch..., rows, columns) and
// each axis's element stride in the stored tensor (legality_library.cpp; library calls and
// attention read and write through Slices and Transposes this way).
struct StridedMatrix {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0; // of element 0, in elements of the stored tensor (a Slice's start)
};
// A tensor of `shape` stored packed (row-major).
StridedMatrix packed(const Shape& shape);
// Transpose(view, perm): axis j is the view's axis perm[j].
StridedMatrix permuted(const StridedMatrix& view, const std::vector<int64_t>& perm);
// The product P written so that Transpose(P, perm) is stored contiguously: P's axis perm[j]
// has the stride of the stored result's axis j.
StridedMatrix into_transpose(const Shape& product, const std::vector<int64_t>& perm);
// The view read in `to`'s shape, as a View (a reshape) reads it; nullopt where the strides
// cannot describe it (a copy would be needed).
std::optional<StridedMatrix> reshaped(const StridedMatrix& view, const Shape& to);

// A window op's geometry, pads resolved (legality_window.cpp).
WindowGeometry window_geometry(const Graph& g, const Node& node);

} // namespace stitch::legality
