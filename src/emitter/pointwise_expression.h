// What the pointwise kernel (kernel_pointwise.cpp) and the fused kernels (kernel_fused*.cpp)
// share about pointwise nodes (which nodes are pointwise and which inputs are their operands is
// the graph's op_is_pointwise and value_operands): the C++ expression of one result element from
// its operands' values, and how an operand broadcast against a larger shape is indexed from the
// larger shape's coordinates.
#pragma once

#include <string>
#include <vector>

#include "emitter/emit_context.h"

namespace stitch {

// The expression of one element of the node's output, given the expression of each operand's
// value (`values[k]` for value_operands(node)[k]; ignored where that is kNoTensor):
// "stitch::ops::add(v0, v1)", "stitch::ops::clip<float>(t3, (float)(-INFINITY), (float)(x1))".
std::string pointwise_expression(const GroupEmitContext& ctx, const Node& node,
                                 const std::vector<std::string>& values);

// The index into a tensor of shape `in`, numpy-broadcast against `out`, of the element of `out`
// at linear index `i` with coordinates c0..cR-1: "i" for the same shape, "0" for one element,
// else a sum of coordinates times strides ("c0 * 4 + c2"). `linear` and `coordinate` rename
// the index and the coordinates' prefix (a window's tap: "at", "a0 * 4 + a2").
std::string broadcast_index(const Shape& in, const Shape& out, const std::string& linear = "i",
                            const std::string& coordinate = "c");
// The elements of a shape as C++: "2048", or over the symbols "(sym0 * sym1 * 64)"
// (`dims` empty or fixed: the planning shape's count).
std::string element_count_code(const Graph& g, const SymShape& dims);

// broadcast_index for graph tensor `t` against an iteration of shape `against` (planning values)
// and `against_dims` (its dims over the symbols): the shapes compare as expressions, so that a
// tensor equal to the iteration only at the planning binding ([1,64] against [batch,64] planned
// at batch 1) is indexed by its coordinates, and only a fixed one-element tensor by 0.
std::string tensor_index(const Graph& g, TensorId t, const Shape& against,
                         const SymShape& against_dims, const std::string& linear = "i",
                         const std::string& coordinate = "c");
// Over symbolic dims, whether tensor_index reads `t` through the coordinates of the symbolic
// axes (it broadcasts along them: a mask [batch,1,1,seq] against [batch,heads,seq,seq]), which
// emit_symbolic_coordinates writes, after emit_coordinates, dividing by the symbols' values.
bool needs_symbolic_coordinates(const Graph& g, TensorId t, const SymShape& against_dims);
void emit_symbolic_coordinates(CodeWriter& out, const Graph& g, const SymShape& dims,
                               const std::string& linear = "i", const std::string& coordinate = "c",
                               bool index32 = false);
// Whether tensor_index reads the coordinates.
bool tensor_needs_coordinates(const Graph& g, TensorId t, const Shape& against,
                              const SymShape& against_dims);
// Whether a vector body may read `t` whole per vector (the iteration's shape, over the symbols
// too) or as one element (a fixed one-element tensor).
bool tensor_is_whole(const Graph& g, TensorId t, const SymShape& against_dims);
bool tensor_is_scalar(const Graph& g, TensorId t);
// Whether broadcast_index(in, out) reads the coordinates.
bool needs_coordinates(const Shape& in, const Shape& out);
// `int64_t rest = i;` and `const int64_t cD = ...;` decomposing `i` over `shape` (with another
// `linear` index, its remainder is `<linear>_rest`).
// Over symbolic dims (`dims` given), the coordinates of the axes up to the last symbolic one
// are not written: nothing reads them (legality: tensor_index reads fixed coordinates only).
void emit_coordinates(CodeWriter& out, const Shape& shape, const std::string& linear = "i",
                      const std::string& coordinate = "c", const SymShape* dims = nullptr);

// How a vector body accesses elements of dtype t, `width` lanes per 16-byte vector: the vector
// type and each lane's member: float4/int4/uint4 with x, y, z, w for 4-byte elements;
// stitch::lanes8<element> with lane[0] to lane[7] for 2-byte ones. Lanes hold the storage type;
// `widen` says a lane must be converted to its register type (ctype) before use.
struct VectorAccess {
  std::string type;
  std::vector<std::string> lanes;
  bool widen = false;
};
VectorAccess vector_access(DType t, int width, const GroupEmitContext& ctx);

} // namespace stitch
