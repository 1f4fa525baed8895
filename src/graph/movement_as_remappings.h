// movement-as-remappings: movement ops the planner cannot fuse become the index remappings it
// does (Slice, Concat, Expand) and views, which it fuses into the kernels reading them (a Local
// group's MovementRead), or a GEMM reads in place (its operand's offset); one that nothing can
// absorb is a copy kernel, and the ILP may launch several as one Independent group.
//
// A Split: output i is Slice(x, [offset_i, offset_i + size_i) of the axis). One Split kernel
// writes every part; as Slices, each part is read where it is used and needs no copy.
//
// A Tile (constant repeats) copies each axis of more than one element repeated r times, at most
// 8: a Concat of r copies along it; the axes of one element it repeats are a broadcast, one
// Expand: both remappings the kernel reading them indexes, where a Tile kernel would write every
// copy out.
//
// A Gather or GatherND whose constant indices pick an arithmetic progression of positions is a
// strided Slice, and reshapes around it:
//
//   Gather(x [32, 1], axis 0, indices [[0..15], [16..31]] as [2,1,1,16])
//       -> Reshape(x, [2,1,1,16,1])                        (the positions in order: a view)
//   Gather(h [B, S, H], axis 1, index 0)            -> Reshape(Slice(h, 0:1 on axis 1), [B, H])
//   GatherND(m [B, S], indices (b, s) as [B,1,1,S,2])  -> Reshape(Reshape(m, [B*S]), [B,1,1,S])
//
// Exporters write attention masks' broadcasts and a sequence's first token (BERT's pooler, a
// ViT's class token) this way. As Gathers they are kernels of their own; as Slices and views
// they are index remappings their consumers read through (a Local group's MovementRead, a
// GEMM's operand offset), and a view costs nothing.
//
// Which: a Split or a Tile of a tensor that is not a constant; a Gather (any axis) or a GatherND
// with batch_dims 0, reading a tensor that is not a constant (fold-constants folds those) with
// constant indices, every index in range (negative ones counted from the end): the positions
// picked, in order (for GatherND each index tuple's position in the data's leading axes,
// row-major), are start + step * i with step >= 1. The Gather's, a Tile's and each of a Split's
// results keep their tensors (and names).
#pragma once

#include "graph/graph.h"

namespace stitch {

// Returns true when it changed the graph.
bool movement_as_remappings(Graph& graph);

} // namespace stitch
