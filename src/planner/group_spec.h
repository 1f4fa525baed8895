// What legality decided about one fusion group, typed by kind: the spec the emitter prints.
//
// Every structural decision about a group lives here, made once by the planner's legality
// analysis (legality_*.cpp, one file per kind, as the emitter has one kernel_fused_*.cpp per
// kind): which node plays which role, in which pass a value exists, which inputs are loaded
// once per row or kept between passes and where, the window's resolved geometry, the scratch
// layout, where each GEMM addend goes. An emitter reads the spec and writes code; it never
// walks the graph to work the structure out again, and a spec it cannot print is an internal
// error (a planner bug), never a user error.
//
// Extents, strides and dtypes are values in the spec (or in the graph tensors it names) that
// the emitter prints as constants today; reduced precision and symbolic dims change them here.
//
//   OpSpec          one node, a single-op kernel (pointwise, reduction, movement, window op)
//   LocalSpec       pointwise nodes over one iteration shape, in registers
//   WindowSpec      Local around one window op: producers per tap, consumers per output
//   RegionalSpec    row ops over rows x row_length with their pointwise producers/consumers
//   ColumnSpec      Global: a column reduction, a grid barrier, its consumers
//   RowGemvSpec     Global: row ops, a grid barrier, the one-row matrix product they feed
//   IndependentSpec unrelated Local or Regional parts in one launch
//   GemmSpec        a cuBLASLt call and its epilogue (bias, C, a fill kernel, activation)
//   ConvSpec        a cuDNN convolution and its fused epilogue (residual add, Relu)
//   AttentionSpec   softmax(logits(Q Kᵀ)) V in one pass over the keys, the scores never stored
//   GemmChainSpec   GEMM, pointwise, GEMM in one kernel of thread-block clusters, the hidden
//                   activations never stored
//   AliasSpec       views: no work
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/graph.h"

namespace stitch {

// How threads cover a kernel's iteration space.
enum class ThreadMapping {
  Flat,        // one thread per element (or per vector of elements, or per row), grid-stride
  WarpPerRow,  // a reduction row per warp, several rows per block
  BlockPerRow, // a reduction row per block
};

// What a generated kernel reads and writes, in parameter order: `reads` become pointer
// parameters (in0, in1, ...), `literals` (scalar float constants) are written into the code as
// literals, `writes` become output pointers (out0, ...). Shape-only operands (a Reduce's axes,
// Expand's shape, CastLike's target) are none of these.
struct KernelInterface {
  std::vector<TensorId> reads;
  std::vector<TensorId> literals;
  std::vector<TensorId> writes;
};

// One window op's window, resolved: pads from auto_pad, one entry per spatial axis.
struct WindowGeometry {
  Shape in, out; // spatial sizes of X and Y
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end;
  // Over symbolic spatial axes: the spatial extents of X and Y as expressions of the symbols
  // (`in` and `out` their planning values), and the pads (`pad_begin`, `pad_end` their planning
  // values: SAME's at a stride above 1 are the run's, others constants); empty where every
  // extent is fixed.
  SymShape in_dims, out_dims, pad_begin_dims, pad_end_dims;
  int64_t taps() const;
  // The spatial extents a kernel indexes by: the run's, else the fixed sizes.
  SymShape in_extents() const { return in_dims.empty() ? sym_shape_of(in) : in_dims; }
  SymShape out_extents() const { return out_dims.empty() ? sym_shape_of(out) : out_dims; }
};

// ---- What single-op kernels need decided (reduction_mapping.h, movement_mapping.h) ----

// A Reduction-category node's iteration space: the input's shape with size-1 axes dropped and
// neighbouring axes of the same kind (reduced or kept) merged.
struct ReductionSpace {
  Shape dims;                // size-1 axes dropped, neighbours of the same kind merged
  std::vector<bool> reduced; // per dim of `dims`
  int64_t lines = 1;         // the product of the kept dims: independent reductions
  int64_t length = 1;        // the product of the reduced dims: elements per line
  // When at most one dim is reduced, a line is `length` elements `inner` apart (the product of
  // the kept dims after the reduced one); with several reduced dims `inner` is 0.
  int64_t inner = 1;
  // Over symbolic dims, where the rows' length depends on the symbols (a softmax over the
  // keys): `length` as an expression; `length` is its planning value.
  std::optional<DimExpr> length_dims;
  // Over symbolic dims, where the kept axes after the reduced block depend on the symbols (a
  // mean over the channels of [batch, C, height, width]): `inner` as an expression; `inner` is
  // its planning value. The lines are then columns at every shape.
  std::optional<DimExpr> inner_dims;

  bool single_block() const { return inner > 0; }
  // Lines of contiguous elements.
  bool rows() const { return inner == 1 && !inner_dims; }
};

// A copy out[c] = in[permuted c] in canonical form: `dims` are the input's dims (after
// dropping size-1 axes and merging), output axis d reads input axis perm[d].
struct PermutedCopy {
  Shape dims;
  std::vector<int64_t> perm;
  Shape out_dims() const;
};
// The shared-memory tiling of a canonical permuted copy, when it pays.
struct TransposeTiling {
  bool tiled = false;
  int64_t vector = 1; // trailing elements both sides keep contiguous (innermost)
  int64_t x_axis = 0; // the input axis contiguous in the input (before the vector run)
  int64_t y_axis = 0; // the input axis contiguous in the output
  int64_t tile_x = 0; // x positions per tile (tile_x * vector elements span >= 32)
  int64_t tile_y = 0; // y positions per tile
  int64_t tiles = 0;  // number of tiles, all batches together
};
// TopK's per-row selection: rows whose padded length fits `capacity` are sorted whole in
// shared memory; longer rows stream through the buffer keeping the best k (k <= capacity/2);
// otherwise each element's rank is counted.
struct TopKPlan {
  int64_t rows = 0, length = 0, inner = 1, k = 0;
  int64_t capacity = 0; // a power of two; 0 when ranks are counted
  // Over symbolic dims, a row's length as an expression of the symbols where it is symbolic
  // (`length` is its planning value; the capacity serves the longest row); unset otherwise.
  std::optional<DimExpr> length_dims;
};
// One node, generated by its op's single-op kernel (kernel_pointwise, kernel_reduction,
// kernel_movement*, kernel_window): the node's attributes and the group's launch say the rest.
struct OpSpec {
  int32_t node = -1;
  // MaxPool and AveragePool: the window, pads resolved. MaxPool: whether anything reads its
  // Indices output (else the kernel does not compute them).
  std::optional<WindowGeometry> window;
  bool write_indices = false;
  // Reductions (Reduce*, ArgMax/ArgMin, CumSum, global pools): the lines and their length.
  std::optional<ReductionSpace> reduction;
  // Transpose, DepthToSpace, SpaceToDepth: the canonical copy and its tiling.
  std::optional<PermutedCopy> permutation;
  TransposeTiling tiling;
  // TopK: the selection per row.
  std::optional<TopKPlan> topk;
  // ScatterND: its update rows address distinct slices (no conflict check needed).
  bool scatter_distinct = false;
};

// How a movement node inside a Local group (Transpose, Slice, Expand, Concat, Pad, Trilu, the
// generators ConstantOfShape and Range) reads its
// operands: the element of the result at coordinates r is the element of one operand at
// coordinates a, with a[j] = offset[j] + step[j] * r[source[j]] (source[j] = -1: a[j] =
// offset[j], a broadcast axis). A Concat has one part per non-empty operand, part k covering
// result coordinates [begin, end) of `axis`; the others have one part covering the result.
//   Transpose perm [0,2,1,3]: source {0,2,1,3}, offsets 0, steps 1
//   Slice axis 3 from 32 step 1: source {0,1,2,3}, offset {0,0,0,32}
//   Expand [2,1,16,8] -> [2,2,16,8]: source {0,-1,2,3}
//   Concat on axis 3 of [.., 32] and [.., 32]: parts [0,32) offset 0 and [32,64) offset -32
// A Pad (constant mode, pads >= 0 on one axis) has one part covering [begin, end) of `axis`,
// and `fills`: a coordinate outside it is the fill value (the scalar `fill`, or 0 without it).
// A ConstantOfShape is a Pad of nothing: no part, `fills` with its value (the scalar `fill`, any
// type). A Trilu has one part and `band`, an integer Range none and `generates` (below).
//   Pad axis 3 of [.., 3] by 0 before and 5 after: part [0,3) offset 0, fills
// Over symbolic dims, a Concat or Pad whose axis is symbolic (legality_symbolic.cpp's
// moves_support) has `run_bounds`: each part covers [run_begin, run_end) of the run's axis, and
// the operand's coordinate on `axis` is the result's minus run_begin (begin, end and the offset
// on the axis are then the planning binding's values, for the cost model only).
//   Concat on axis 2 of [b,2,past,8] and [b,2,seq,8]: parts [0,past) and [past,past+seq)
struct MovementRead {
  struct Part {
    TensorId operand = kNoTensor;
    std::vector<int32_t> source;
    std::vector<int64_t> offset, step;
    int64_t begin = 0, end = 0; // along `axis` (a Concat); else unused
    DimExpr run_begin, run_end; // with run_bounds
  };
  int32_t node = -1;
  int32_t axis = -1; // a Concat's or a Pad's axis; -1 for the others
  std::vector<Part> parts;
  bool fills = false;        // a Pad: coordinates outside the parts hold the fill value
  TensorId fill = kNoTensor; // its constant_value (a scalar constant), or none: 0
  bool run_bounds = false;
  // A Trilu (`band`): the one part is read where column - row >= diagonal (upper) or <=
  // diagonal (lower) in the last two axes, and the rest is 0. The diagonal is a constant or the
  // run's expression of the symbols.
  bool band = false, upper = true;
  DimExpr diagonal;
  // An integer Range (`generates`): no part; element r is start + delta * r, each a constant or
  // the run's expression of the symbols.
  bool generates = false;
  DimExpr start, delta;
};

// Local: pointwise nodes over one flat loop over `iteration`, the shape of every write; each
// element evaluates the nodes in registers, reading each input at its broadcast index (a smaller
// intermediate is recomputed per element). vector_width 4: every read is the full shape or one
// element and every access 4 bytes: 16-byte vectors, a scalar tail.
//
// With `moves`, the group also holds movement nodes: each element of the iteration evaluates
// the outputs at its coordinates and every other value at the coordinates its consumers ask
// for (a Slice's operand at the sliced coordinates, each Concat part only where it covers the
// element), so a value read at several coordinates is evaluated once per coordinates
// (`recomputed` in the cost model), and no vectors.
struct LocalSpec {
  std::vector<int32_t> nodes; // topological order
  Shape iteration;
  // Over symbolic dims: the iteration's dims as expressions (its elements are the launch's
  // work). Empty for a fixed iteration.
  SymShape iteration_dims;
  KernelInterface io;
  int vector_width = 1;
  std::vector<MovementRead> moves; // in the order of `nodes`
  // Reads through movement: bytes of the inputs no element of the group reads (a Slice's
  // rest), and the memory sectors' extra bytes where consecutive elements of the iteration
  // read elements of an input that are not adjacent (a transposed read): the cost model
  // subtracts the first and adds the second.
  int64_t unread_bytes = 0;
  int64_t uncoalesced_bytes = 0;
};

// How a window folds its taps.
enum class WindowFold {
  Max,       // MaxPool: the first largest tap; no tap inside gives the lowest value
  Average,   // AveragePool: the sum in tap order over the taps inside (or the padded input)
  Depthwise, // depthwise Conv: the sum of tap x filter in tap order, then the bias
};

// Local around one window op: `producers` are evaluated again at every tap, reading their
// inputs at the tap's input element; the window folds the taps; `consumers` run per output
// element. The iteration space is the window's output, the shape of every write.
struct WindowSpec {
  int32_t window = -1;
  std::vector<int32_t> producers, consumers; // topological order
  WindowGeometry geometry;
  WindowFold fold = WindowFold::Max;
  bool count_include_pad = false; // Average
  TensorId filter = kNoTensor;    // Depthwise: [C, 1, k...]
  TensorId bias = kNoTensor;      // Depthwise, optional
  int64_t channels = 0;           // Depthwise: channels of the input
  KernelInterface io;
};

// Where a Regional group keeps the full-row inputs it reads in more than one pass.
enum class RowCache {
  Registers, // each thread keeps its elements of the row in an array of registers
  Shared,    // the rows live in the launch's dynamic shared memory (a block per row)
  None,      // every pass reads the row from global memory again
};

// Regional: a row space of `rows` x `row_length`, the row being `space`'s axes from
// `row_axes_from` on. Row ops reduce each row; every tensor of the group is an element value
// (it varies along the row) or a row value (one per row). A row op's result exists after the
// pass that accumulates it, so the kernel makes `passes` passes over the row:
//
//   before pass 0      row inputs and row nodes of stage 0
//   pass p             element nodes as needed, accumulating the stats of pass p; the last
//                      pass (output_pass) writes the element outputs
//   after pass p       the stats combine across the row's threads; row nodes of stage p + 1
//   after the passes   the row outputs
struct RegionalSpec {
  int64_t rows = 0, row_length = 0;
  Shape space; // the row space's shape (regional_space_shape)
  // Over symbolic dims: the space's dims as expressions (its rows, the leading axes, are the
  // launch's work). Empty for a fixed space.
  SymShape space_dims;
  // Over symbolic dims, where the row's length depends on the symbols (a softmax over the
  // keys): the length as an expression, `row_length` its planning value. The row cache is
  // sized for the longest row the kernel runs (elements_per_thread, the shared offsets).
  std::optional<DimExpr> row_length_dims;
  size_t row_axes_from = 0; // space[row_axes_from:] holds the row's elements
  // Over symbolic dims (space_dims set): the axes of the rows and those of a row's elements.
  SymShape rows_dims() const {
    return {space_dims.begin(), space_dims.begin() + static_cast<std::ptrdiff_t>(row_axes_from)};
  }
  SymShape row_dims() const {
    return {space_dims.begin() + static_cast<std::ptrdiff_t>(row_axes_from), space_dims.end()};
  }
  ThreadMapping mapping{}; // a thread, a warp or a block per row
  int64_t block = 0;       // threads per block (whole warps unless Flat)

  // How one node takes part.
  enum class Role {
    Element, // pointwise, its value varies along the row: computed in the passes that need it
    Row,     // pointwise on row values (or a per-row node): computed once per row
    Reduce,  // a row op: accumulates its input over the row in pass `stage`
    Gather,  // a Gather picking one row of its data per row: loaded where used (`gathers`)
  };
  // A Gather whose result's row is one contiguous row of its data (an embedding lookup): the
  // group's row `line` is the result's row `o * count + j` (`out_rows`: the result's shape
  // without its row axes, broadcast into the space's), and reads data row `o * dim + index`,
  // index = indices[j] (negative counts from the end; out of range reads zeros). The indices
  // are a group input loaded once per row, or a row value of the group. Only the rows picked
  // are read, which is what the cost model charges for the data.
  struct GatherRow {
    int32_t node = -1;
    TensorId data = kNoTensor, indices = kNoTensor;
    Shape out_rows;                // the result's shape before its row axes, padded to the space's
    int64_t dim = 0;               // data's size along the gathered axis
    int64_t count = 0;             // index elements
    bool indices_in_group = false; // a row value of the group, not an input
    // Over symbolic dims (legality_symbolic.cpp): `out_rows` as expressions, against the
    // space's rows as RegionalSpec::space_dims has them.
    SymShape out_rows_dims;
  };
  // A per-row node's input, loaded once per row at its broadcast index into `against` (the
  // node's result: its element `line` is this row's value).
  struct PerRowLoad {
    TensorId tensor = kNoTensor;
    Shape against;
  };
  struct Member {
    int32_t node = -1;
    Role role = Role::Element;
    // Element, Row: the first pass (or, for Row, the point between passes) its value exists
    // in; Reduce: the pass accumulating it (ReduceLogSumExp: its maximum; the sum in the next).
    int stage = 0;
    // Row: per pointwise operand, the index of its load in per_row_loads, or -1 (a row value
    // or a literal).
    std::vector<int> loads;
  };
  std::vector<Member> members;           // the group's nodes, topological order
  std::vector<GatherRow> gathers;        // the Gather members, in member order
  std::vector<TensorId> row_inputs;      // inputs constant along the row: loaded once per row
  std::vector<PerRowLoad> per_row_loads; // inputs of per-row nodes
  int passes = 0;
  int output_pass = -1; // the pass writing the element outputs; -1 when there are none
  std::vector<TensorId> element_outputs, row_outputs;

  // Full-row inputs read in more than one pass, loaded in `first_pass` and kept.
  struct CachedRow {
    TensorId tensor = kNoTensor;
    int first_pass = 0;
    int64_t shared_offset = 0; // Shared: byte offset in the dynamic shared memory
  };
  RowCache cache = RowCache::None;
  std::vector<CachedRow> cached;
  // Full-row inputs read by several passes that no cache holds (RowCache::None), each read from
  // global memory by every pass that reads it; kept so that the rows can be placed again for
  // shorter rows (size_symbolic_rows).
  std::vector<CachedRow> uncached;
  int64_t elements_per_thread = 0; // ceil(row_length / threads per row): a cached array's size
  // Extra HBM reads of full-row inputs read again in later passes (RowCache::None), for the
  // cost model.
  int64_t reread_bytes = 0;
  KernelInterface io;
};

// Global around a column reduction: the reduction (over the leading axes of `full`, keeping the
// trailing `columns`) first, then consumers of its result broadcast back. One cooperative
// launch, partial results through scratch:
//   phase 1  block b reduces its slice of rows for each column into scratch[b][column]
//   phase 2  each column's partials combine in block order into scratch[blocks][column]; the
//            per-column consumers (results of the reduced layout) are evaluated per column
//   phase 3  the element consumers, per element of `full`, reading the column values
struct ColumnSpec {
  int32_t reduction = -1;
  int64_t rows = 0, columns = 0;
  Shape full;                         // the reduction's input
  Shape column_shape;                 // the per-column iteration shape (highest rank)
  std::vector<int32_t> column_nodes;  // consumers whose results hold one value per column
  std::vector<int32_t> element_nodes; // consumers whose results have the full layout
  std::vector<TensorId> column_outputs, element_outputs;
  DType accumulator = DType::Float32; // fp32 for float32 data, else double or 64-bit integers
  int64_t blocks = 0;                 // the launch's grid
  KernelInterface io;
};

// A one-row MatMul/Gemm as a matrix-vector product: y[N] = alpha * x[K] B + beta * C, B read as
// [K,N] (row k holds the K-th weights of every output) or, transposed, as [N,K] (row j holds
// output j's weights: Gemm's transB, a Linear layer's layout).
struct MatrixVector {
  TensorId x = kNoTensor, b = kNoTensor, c = kNoTensor; // c: kNoTensor, or N or 1 values
  int64_t k = 0, n = 0;
  bool b_rows_are_outputs = false; // B is [N,K]
  double alpha = 1.0, beta = 1.0;
};

// Global around a matrix-vector product: the head (row ops, a Regional body with its own
// mapping) whose per-row values are, through views, the vector of a one-row float32 MatMul/Gemm;
// a grid barrier; the product (a warp per output when B's rows are the outputs, in 16-byte
// vectors when `vectors`; else a thread per output); its pointwise consumers per output.
struct RowGemvSpec {
  RegionalSpec head;          // phase 1; `vector` is among its row outputs
  std::vector<int32_t> views; // between the vector and the product
  int32_t product = -1;
  TensorId vector = kNoTensor;
  bool vector_is_output = false; // the vector is also written to memory
  MatrixVector mv;
  std::vector<int32_t> consumers; // pointwise, per output element
  // Views of the product's result the consumers read it through (a 1 x 1 convolution's pixels
  // [N, C', 1, 1] of the product [N, C']): the same elements in the same order, so the consumers
  // still run per output j, reading nothing else than those values and scalars.
  std::vector<int32_t> result_views;
  Shape output_shape;   // the product's result
  bool vectors = false; // 16-byte vectors of B
  KernelInterface io;
};

// Independent: unrelated parts, each on its own range of blocks of one launch (every part runs
// with the group's 256-thread blocks).
struct IndependentSpec {
  struct Part {
    std::variant<LocalSpec, RegionalSpec> body;
    int64_t blocks = 0; // over symbolic dims: the most, at the symbols' maxima
    // Over symbolic dims: the part's blocks per run, clamp(ceil(work / work per block), 1,
    // blocks) of the launch its own kernel would have (legality_symbolic.cpp); unset for fixed
    // shapes.
    std::optional<DimExpr> run_blocks;
  };
  std::vector<Part> parts;
  KernelInterface io;
};

// The activation a library call applies last.
enum class EpilogueActivation { None, Relu, GeluTanh };

// How a library call multiplies (stitch_library.h's allow_tf32): Fp32, exact products summed in
// fp32 (float16 and bfloat16 products are exact in fp32, so their calls are always Fp32); Tf32,
// float32 operands rounded to TF32 on tensor cores, summed in fp32 (PlannerOptions::tf32).
enum class LibraryMath { Fp32, Tf32 };

// GemmLibrary: MatMul or Gemm through the GEMM library, D = act(alpha * A @ B + beta * C + bias).
struct GemmSpec {
  int32_t product = -1;
  DType dtype = DType::Float32; // of A, B, every addend and the result
  LibraryMath math = LibraryMath::Fp32;
  TensorId a = kNoTensor, b = kNoTensor; // as stored: a Transpose's input where one is absorbed
  TensorId result = kNoTensor;           // what the group writes: its last node's output
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0; // leading dimensions as stored
  int64_t ldd = 0;          // the result's: n, or wider when an output Transpose is absorbed
  double alpha = 1.0;
  // MatMul's batch axes: `batch_count` batched GEMMs with strides (0: broadcast), inside a loop
  // over `outer` axes that strides cannot express; or, when only A has batches, one GEMM with
  // M = batches x m (rows_folded). Strides count elements of the stored tensors.
  int64_t batch_count = 1;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  bool rows_folded = false;
  // B shared by A's trailing batch axes (one key head read by several query heads): A's
  // matrices each call's M stacks, the product of those axes; 1 where none fold.
  int64_t stacked = 1;
  // Over symbolic dims: the call's extents as expressions of the symbols (the fields above
  // are their values at the planning binding), for a call of packed operands with no outer
  // loop (legality_symbolic.cpp). Unset for a call of fixed shapes.
  struct SymbolicExtents {
    DimExpr m, n, k, lda, ldb, ldd, batch_count, stride_a, stride_b, stride_d;
    DimExpr stacked = 1; // GemmSpec::stacked over the symbols
  };
  std::optional<SymbolicExtents> symbolic;
  Shape outer;
  std::vector<int64_t> outer_stride_a, outer_stride_b, outer_stride_d;
  // Transposes the call reads or writes through instead of a copy (MatMul only): the Transpose
  // producing A or B (its input is `a` / `b`, read with the strides above), and a Transpose of
  // the result (the product is written straight into its layout). -1: none.
  int32_t layout_a = -1, layout_b = -1, layout_result = -1;
  // Slices (of step 1) the call reads A or B through, before their Transposes: `a` / `b` is
  // then the Slice's input, read from element offset_a / offset_b on. -1: none.
  int32_t slice_a = -1, slice_b = -1;
  int64_t offset_a = 0, offset_b = 0;
  // Bytes the cost model adds for strided operands whose unit-stride runs are shorter than a
  // 32-byte memory sector (each such access moves a whole sector).
  int64_t uncoalesced_bytes = 0;
  // Tensors added to the product, scaled, broadcast to the result; where each goes.
  struct Addend {
    TensorId tensor = kNoTensor;
    double scale = 1.0;
    int epilogue_index = 0; // the epilogue node adding it (1, 2, ...), or 0 for Gemm's own C
  };
  std::vector<Addend> addends;
  int bias = -1;           // an addend that is a row of N: the library's bias epilogue
  int c = -1;              // the lone addend of the result's full shape: the library's C
  std::vector<int> fill;   // the rest: summed into the result by a fill kernel before the GEMM
  int64_t fill_blocks = 0; // the fill kernel's grid of 256-thread blocks
  EpilogueActivation activation = EpilogueActivation::None;
  std::vector<int32_t> epilogue; // the nodes after the product
};

// ConvLibrary: Conv or ConvTranspose through the convolution library, with the library's
// symmetric pads; a biased Conv may take a residual add and then a Relu (one fused call).
struct ConvSpec {
  int32_t conv = -1;
  DType dtype = DType::Float32; // of X, W, bias, the residual and the result
  LibraryMath math = LibraryMath::Fp32;
  bool transpose = false;
  TensorId x = kNoTensor, w = kNoTensor, bias = kNoTensor, residual = kNoTensor;
  TensorId result = kNoTensor;
  bool relu = false;
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  // Over symbolic dims: the batch as an expression of the symbols (`batch` is its planning
  // value), unset for a fixed batch; and the spatial extents of X and the result as
  // expressions (`in_spatial` and `out_spatial` their planning values), empty where every one
  // is fixed. The channels, W and the bias are fixed.
  std::optional<DimExpr> batch_dims;
  SymShape in_spatial_dims, out_spatial_dims;
  Shape in_spatial, out_spatial, kernel, strides, dilations, pads; // pads: symmetric
  // Channels-last: the group holds the Transposes producing X and W from channels-last
  // tensors ([N, spatial..., C]; W with its second axis last: [out, kernel..., in / groups],
  // a ConvTranspose's [in, kernel..., out / groups]) and the
  // Transpose of the result to channels-last; the call reads `x` and `w` and writes `result`
  // in that layout, with no copy kernel. -1: none (the three come together or not at all).
  bool channels_last = false;
  int32_t layout_x = -1, layout_w = -1, layout_result = -1;
  std::vector<int32_t> epilogue;
  // A forward Conv whose padding the library cannot take as it pads (symmetrically): pads
  // asymmetric where the symmetric begin pad would give other windows (tf2onnx writes [0, 1]
  // for TF's SAME at stride 2 over an even extent), and over symbolic spatial extents any
  // asymmetric pads and SAME at a stride above 1, whose pads are the run's. A generated kernel
  // first copies X (in its layout) into the group's scratch with `pre_pad_begin` and
  // `pre_pad_end` zeros around each spatial axis (expressions of the symbols where they depend
  // on them), X's spatial extents becoming `padded_spatial_dims` (`padded_spatial` at the
  // planning values); the call convolves that copy with `pads` zero. Empty: no copy, the call
  // pads X by `pads`.
  SymShape pre_pad_begin, pre_pad_end, padded_spatial_dims;
  Shape padded_spatial;
  int64_t pre_pad_blocks = 0; // the copy's grid: 256 threads a block, a grid-stride loop
  // The elements the copy writes at the run, as factors: the batch, the channels and each
  // padded spatial extent (expressions of the symbols where they depend on them). Its launch
  // covers their product with at most pre_pad_blocks blocks.
  SymShape pre_pad_work;
  bool pre_pads() const { return !pre_pad_begin.empty(); }
  // The elements and bytes of that copy (0 without one): at the planning values, or (at least)
  // the most any shape in `ranges` needs.
  int64_t pre_pad_elements(const SymbolRanges* ranges = nullptr) const {
    if (!pre_pads()) return 0;
    if (ranges == nullptr) return batch * in_channels * shape_elements(padded_spatial);
    // Each factor's largest value (the product of the maxima bounds the maximum of the product:
    // no factor is negative).
    int64_t elements = (batch_dims ? batch_dims->largest(*ranges) : batch) * in_channels;
    for (const DimExpr& d : padded_spatial_dims)
      elements *= d.largest(*ranges);
    return elements;
  }
  int64_t pre_pad_bytes(const SymbolRanges* ranges = nullptr) const {
    return pre_pad_elements(ranges) * dtype_size(dtype);
  }
  // A ConvTranspose whose output the library cannot give (it computes with the begin pad on both
  // sides and an output padding in [0, stride)): the call writes the whole unpadded output,
  // `full_spatial_dims` (stride * (in - 1) + dilated kernel per axis; `full_spatial` at the
  // planning values), into the group's scratch, and a generated kernel copies the result's
  // window of it, starting at `crop_begin` on each axis, into the result (the bias alone past
  // its end: an output padding's positions, which no input reaches). Empty: the call writes
  // the result.
  Shape crop_begin;
  SymShape full_spatial_dims;
  Shape full_spatial;
  int64_t crop_blocks = 0; // the crop's grid: 256 threads a block, a grid-stride loop
  // The elements the crop writes at the run, as factors: the batch, the channels and each of
  // the result's spatial extents; its launch covers their product with at most crop_blocks.
  SymShape crop_work;
  bool crops() const { return !crop_begin.empty(); }
  // The factors of those elements, as the spec's dims give them: the batch, `channels`, then
  // `spatial` (at the run where the dims are symbolic).
  SymShape image_elements(int64_t channels, const SymShape& spatial) const {
    SymShape factors = {batch_dims ? *batch_dims : DimExpr(batch), DimExpr(channels)};
    factors.insert(factors.end(), spatial.begin(), spatial.end());
    return factors;
  }
  int64_t crop_bytes(const SymbolRanges* ranges = nullptr) const {
    if (!crops()) return 0;
    if (ranges == nullptr)
      return batch * out_channels * shape_elements(full_spatial) * dtype_size(dtype);
    int64_t elements = (batch_dims ? batch_dims->largest(*ranges) : batch) * out_channels;
    for (const DimExpr& d : full_spatial_dims)
      elements *= d.largest(*ranges);
    return elements * dtype_size(dtype);
  }
  // The group's scratch: the padded copy of X or the uncropped output.
  int64_t scratch_bytes(const SymbolRanges* ranges = nullptr) const {
    return pre_pad_bytes(ranges) + crop_bytes(ranges);
  }
};

// Attention: softmax(logits(Q Kᵀ)) V of every head in one kernel (kernel_attention.cpp over
// stitch_attention.cuh), a block per (head, tile of queries) streaming the keys and values
// through shared memory; the scores, the logits and the probabilities never reach memory. The
// group holds the two MatMuls, the Slices and Transposes Q, Kᵀ and V are read and the output
// written through, the pointwise nodes from the scores to the softmax's input (the logit
// nodes: the scale, biases and masks broadcast against the scores, a cap), the softmax as
// lowering writes it (ReduceMax, Sub, Exp, ReduceSum, Div over the keys) and Casts of the
// probabilities. The logit nodes are evaluated per (query, key) in registers from the product
// rounded to the scores' type, as the unfused graph computes them; the softmax and P·V run in
// fp32 (the probabilities are not rounded to a 2-byte type before P·V, as FlashAttention).
struct AttentionSpec {
  // An operand as the kernel reads it (q: query x dim, k: key x dim, v: key x dim) or writes it
  // (out: query x dim): element (batch..., row, col) of `tensor`, the stored tensor (the input
  // of the Slice or Transpose it is read through; the output of the Transpose it is written
  // through) at offset + Σ_j batch_j * batch_strides[j] + row * row_stride + col * col_stride.
  //
  // Grouped-query heads folded into fewer, taller products (fold_repeated_heads: Q viewed as
  // [B, KV, G * S, D] against K [B, KV, T, D]) are read in the attention's own heads [B, H = KV *
  // G] and queries S: an operand of the grouped products indexes its own `batch` (the grouped
  // heads) with head / head_divisor (K and V: head_divisor G), or, with rows_per_head (Q, an
  // output written before the heads are unfolded), as flat row r = head * queries + row split
  // into its head r / rows_per_head and row r % rows_per_head.
  struct Operand {
    TensorId tensor = kNoTensor;
    int64_t offset = 0;
    Shape batch;                        // the batch axes `batch_strides` index
    std::vector<int64_t> batch_strides; // per axis of `batch`; 0 where the operand broadcasts
    int64_t row_stride = 0, col_stride = 0;
    int64_t head_divisor = 1;
    int64_t rows_per_head = 0; // 0: rows are the attention's rows
    // Scalar Muls and Divs on the way from the stored tensor (an exporter's fourth-root scale
    // on Q and Kᵀ), applied to each element as it loads, in this order, and their scalars.
    std::vector<int32_t> scalings;
    std::vector<TensorId> scalars;
    // Elements of a row the kernel loads at once: a 16-byte vector (4 floats, 8 of a 2-byte
    // type) where the row's dims are adjacent, start 16 bytes aligned in every row and head,
    // and take no scaling or prologue; else 1.
    int vector = 1;
    // A prologue: `tensor` is no stored tensor but computed by these nodes of the group
    // (pointwise nodes and index remappings, `moves`, as a Local group holds them, and Views:
    // rotary embedding's Slices, Neg, Concat, Muls and Add, say) from the group's inputs. Each
    // element the kernel loads is evaluated at its coordinates in `tensor` (packed: offset and
    // strides index it row-major) as it loads: Q once per block, K and V once per block and key
    // tile.
    std::vector<int32_t> prologue; // node order
    std::vector<MovementRead> moves;
  };
  int32_t scores = -1;                    // MatMul(Q, Kᵀ)
  int32_t product = -1;                   // MatMul(P, V)
  std::vector<int32_t> layouts;           // Slices, Transposes, Views read or written through
  std::vector<int32_t> logit_nodes;       // pointwise, scores to the softmax input, in order
  TensorId logits = kNoTensor;            // the softmax's input (the scores without logit nodes)
  std::vector<int32_t> softmax;           // ReduceMax, Sub, Exp, ReduceSum, Div
  std::vector<int32_t> probability_casts; // Casts from the softmax to P·V
  std::vector<int32_t> views;             // Views of the scores, the probabilities, the output
  Shape logit_shape;                      // the logit nodes' shape: [batch..., queries, keys]
  Shape batch;                            // its batch axes, [batch, heads]
  int64_t heads = 0;                      // their product: the kernel's flat head index
  int64_t queries = 0, keys = 0, head_dim = 0, value_dim = 0;
  Operand q, k, v, out;
  // The tile geometry (stitch::attention::FlashConfig): warps of `rows_per_warp` query rows
  // each, `key_tile` keys per tile; the launch is heads x query_tiles blocks of warps x 32
  // threads with `shared_bytes` of dynamic shared memory.
  int warps = 0, rows_per_warp = 0, key_tile = 0;
  int64_t query_tiles = 0;
  int64_t shared_bytes = 0;
  // Q·Kᵀ and P·V on tensor cores (stitch::attention::FlashMmaConfig: 16 query rows per warp,
  // tiles of `element`, float16 or bfloat16, with fp32 accumulators) when both products read
  // that type and every target architecture has them; else fp32 FMA (FlashConfig).
  bool tensor_cores = false;
  DType element = DType::Float32;
  // Flash-decoding, when heads x query tiles would leave SMs idle and the keys are many: the keys
  // in `splits` ranges of `keys_per_split` (whole key tiles), a block per (head, query tile,
  // split) leaving each row's maximum, sum and unnormalized output in the group's scratch (the
  // stats, then the outputs: FusionGroup::scratch_bytes), and a second kernel merging the splits
  // in order. splits 1: one kernel.
  int splits = 1;
  int64_t keys_per_split = 0;
  int64_t query_tile() const { return int64_t{warps} * rows_per_warp; }
  // Flash-decoding's partial rows (a query row of each block and split) and their scratch: a
  // stitch::attention::Partial (8 bytes) each, then value_dim floats each.
  int64_t partial_rows() const { return heads * query_tiles * splits * query_tile(); }
  int64_t partial_bytes() const { return partial_rows() * (8 + 4 * value_dim); }
  // Bytes the cost model adds for operands whose rows have fewer adjacent bytes than a sector,
  // and for each operand with a prologue (loaded element by element and evaluated: its bytes
  // once more).
  int64_t uncoalesced_bytes = 0;
  KernelInterface io; // reads: the stored Q, K, V and the logit nodes' inputs; writes: out
  // Over symbolic dims (legality_symbolic.cpp): the extents and strides as expressions of the
  // symbols, the fields above their planning values; the launch covers the run's heads x
  // query tiles (LaunchConfig::work). Unset for fixed shapes.
  struct SymbolicOperand {
    SymShape batch;        // the batch axes its strides index (Operand::batch)
    DimExpr rows_per_head; // Operand::rows_per_head where it is not 0
    DimExpr offset;
    SymShape batch_strides;
    DimExpr row_stride, col_stride;
  };
  struct Symbolic {
    SymShape logit_shape; // [batch..., queries, keys]
    SymShape batch;       // its batch axes (the heads)
    DimExpr heads, queries, keys;
    DimExpr query_tiles; // ceil(queries / query_tile())
    SymbolicOperand q, k, v, out;
    // Flash-decoding by the run's shape (`splits` above is 1): where a run's heads x query
    // tiles are fewer than `sm_count` blocks and its keys many, the keys split as the planner
    // splits them at a fixed shape, min(ceil(2 * sm_count / blocks), key tiles /
    // tiles_per_split, max_splits) ranges of whole key tiles when that is 2 or more, the
    // partial results (at most `split_rows` rows) in the group's scratch; else one kernel.
    // sm_count 0: never.
    int64_t sm_count = 0;
    int64_t tiles_per_split = 0, max_splits = 0; // kTilesPerSplit and kMaxSplits
    int64_t split_rows = 0;
  };
  std::optional<Symbolic> symbolic;
};

// GemmChain: Y = epilogue(activation(X·W1 [, X·W3]) · W2) in one kernel (kernel_gemm_chain.cpp
// over stitch_gemm_chain.cuh): a feed-forward block (MatMul/Gemm, a bias and GELU, MatMul/Gemm)
// or a gated MLP (the gate and up products of one X, often merged into one product whose
// column halves two Slices take, SiLU of one times the other, the down product). A
// thread-block cluster per tile of rows: each block computes the hidden activations of its
// slice of the hidden dim into shared memory, multiplies them by its rows of W2, and the
// cluster sums the partial tiles through distributed shared memory. The hidden activations
// (and the products before them) never reach memory.
struct GemmChainSpec {
  // A matrix as the kernel reads it: element (row, col) of the stored `tensor` at offset +
  // row * row_stride + col * col_stride; `vector` 8 (16 bytes of the element type) where
  // columns are adjacent and every row and tile starts 16-byte aligned, else 1.
  struct Matrix {
    TensorId tensor = kNoTensor;
    int64_t offset = 0, row_stride = 0, col_stride = 1;
    int vector = 1;
  };
  // One of the first products: X·W (X is `x`, shared), with Gemm's alpha and beta * C; the
  // hidden values read it as `value` (the product's output, or the Slice of a merged product
  // taking columns from `column_offset` on).
  struct Product {
    int32_t node = -1;
    Matrix w;
    double alpha = 1.0;
    TensorId c = kNoTensor; // Gemm's C, broadcast against the product's output
    double beta = 0.0;
    TensorId value = kNoTensor;
    int64_t column_offset = 0;
  };
  Matrix x;                        // [rows, inner]
  Product first;                   // X·W1
  std::optional<Product> gate;     // X·W3: the hidden values take both products
  std::vector<int32_t> slices;     // Slices taking a merged product's columns apart
  std::vector<int32_t> activation; // pointwise nodes from the products to `hidden`, in order
  TensorId hidden = kNoTensor;     // the second product's A: [rows, hidden_dim] values
  int32_t second = -1;             // hidden · W2
  Matrix w2;                       // [hidden_dim, columns]
  double second_alpha = 1.0;       // Gemm's alpha and beta * C of the second product
  TensorId second_c = kNoTensor;
  double second_beta = 0.0;
  std::vector<int32_t> epilogue; // pointwise nodes after the second product, in order
  TensorId result = kNoTensor;   // what the group writes (the last node's output)
  // Views (reshapes) between the products, the activation and the epilogue: each value keeps
  // its row-major order, so (row, column) is element row * width + column of any of them. The
  // activation's nodes share `hidden_shape`, the epilogue's `result_shape`; operands broadcast
  // against those.
  std::vector<int32_t> views;
  Shape hidden_shape, result_shape;
  DType element = DType::Float16; // of X, the weights, the products and the hidden values
  int64_t rows = 0, inner = 0, hidden_dim = 0, columns = 0; // M, K, N1, N2
  // The tile geometry (stitch::chain::ChainConfig<element, warps_m, warps_n, block_k,
  // hidden_tile, out_tile, gated>): tiles of 16 * warps_m rows, a cluster of `cluster_blocks`
  // blocks each, each block a `slice` of the hidden dim; the launch is row_tiles *
  // cluster_blocks blocks of 32 * warps_m * warps_n threads with `shared_bytes` of dynamic
  // shared memory.
  int warps_m = 0, warps_n = 0, block_k = 0, hidden_tile = 0, out_tile = 0;
  int cluster_blocks = 0; // over 8: the non-portable size, which the launcher allows first
  int64_t slice = 0, row_tiles = 0, shared_bytes = 0;
  // Over symbolic dims (legality_symbolic.cpp): the rows as an expression of the symbols (X's
  // leading dims; `rows` is their planning value), the grid the run's row tiles
  // (LaunchConfig::work). Unset for fixed shapes.
  std::optional<DimExpr> symbolic_rows;
  // The configuration search (cost_model.h chain_traffic): how many configurations fit, and the
  // chosen one's modeled time and bytes at each memory level.
  int64_t configurations = 0;
  double modeled_us = 0;
  int64_t hbm_bytes = 0, l2_bytes = 0, dsm_bytes = 0;
  // The HBM bytes the unfused plan moves for the products and hidden values the chain keeps on
  // chip (written once and read once each), for the report.
  int64_t saved_bytes = 0;
  KernelInterface io; // reads: X, the weights, the activation's and epilogue's other operands
};

// Alias: views, no work.
struct AliasSpec {};

using GroupSpec =
    std::variant<OpSpec, LocalSpec, WindowSpec, RegionalSpec, ColumnSpec, RowGemvSpec,
                 IndependentSpec, GemmSpec, ConvSpec, AttentionSpec, GemmChainSpec, AliasSpec>;

// The spec's name for the report and for messages: "op", "local", "window", "regional",
// "column", "row_gemv", "independent", "gemm", "conv", "attention", "gemm_chain", "alias".
std::string_view spec_name(const GroupSpec& spec);

} // namespace stitch
