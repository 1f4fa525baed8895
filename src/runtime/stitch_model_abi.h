// stitch_model_abi.h: the contract between the code stitchc generates for one model and the
// model-independent runtime (src/runtime/) that is linked into every compiled library.
//
// The generated launcher defines `stitch_generated_model()`, describing the model (its inputs
// and outputs, arena and workspace sizes, embedded weights) and pointing at `enqueue`, which
// puts every group of the fusion plan on a stream. The runtime implements the public C API
// (include/stitch/stitch.h) on top of it: argument checks, device memory, the arena, CUDA
// Graph capture and replay, library handles, thread safety and status messages.
//
// Compiled both by nvcc (CUDA target) and by the host compiler with STITCH_HOST_TARGET, where
// stitch_cuda.h supplies cudaStream_t and friends.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "stitch_cuda.h"

#define STITCH_ABI_VERSION 7
#define STITCH_ABI_MAX_RANK 8

extern "C" {

// A tensor of the model. In a model compiled with symbolic dims (`stitchc --dim NAME=MIN..MAX`),
// a dim that depends on the symbols is -1 in `dims`, and `bytes` is the size at the symbols'
// maxima. Where dims[d] is -1, `symbols[d]` is the index of the symbol the dim is in the model's
// symbol table, or -1 for a dim computed from the symbols (an output's batch*seq; an input's
// symbolic dim is always one symbol); elsewhere it is unused (0). An output's actual dims come
// from `output_dims`.
struct stitch_abi_tensor {
  const char* name;
  int32_t dtype; // ONNX TensorProto.DataType code (stitch_dtype)
  int32_t rank;
  int64_t dims[STITCH_ABI_MAX_RANK];
  uint64_t bytes;
  int32_t symbols[STITCH_ABI_MAX_RANK];
};

// A symbolic dim the model was compiled for: every value in [min, max] runs.
struct stitch_abi_symbol {
  const char* name;
  int64_t min;
  int64_t max;
};

// A debug tap (stitchc --debug-taps): one tensor a fusion group writes to memory, copied after
// the group into a buffer of its own, so that the value survives the arena's reuse and can be
// compared with a reference after the run. Taps do not change the plan or the kernels.
struct stitch_abi_tap {
  stitch_abi_tensor tensor; // the tensor, as the compiled graph holds it
  int32_t group;            // the fusion group that writes it (group_<id>.cu)
  const char* node;         // the ONNX node that produces it
};

// How the library was built (stitch_build_info of stitch.h): strings in the embedded blob.
struct stitch_abi_build_info {
  const char* stitchc_version;
  const char* model_sha256;
  const char* model_file;
  const char* target;
  const char* archs;
  const char* planner;
  const char* precision;
  const char* flags;
  const char* symbol_prefix;
};

// Per-context library state the generated code passes to library calls (null on the host
// target). Opaque to generated code.
struct stitch_abi_libraries;

// Everything one enqueue works on. Pointers are device pointers on the CUDA target.
struct stitch_abi_buffers {
  void* const* inputs;          // the caller's inputs, in model order
  void* const* outputs;         // the caller's outputs, in model order
  unsigned char* arena;         // intermediates, `arena_bytes` long, 256-byte aligned
  const unsigned char* weights; // the model's constants, `weights_bytes` long, 256-byte aligned
  void* workspace;              // scratch for library calls, `workspace_bytes` long
  cudaStream_t stream;
  stitch_abi_libraries* libraries;
  void* const* taps; // one buffer per tap, `tensor.bytes` long (null without taps)
  // GEMM chains (stitchc's "gemm_chain" groups): per chain, in plan order, nonzero where this
  // device cannot hold the chain's thread-block clusters and the launcher runs the chain's
  // unfused plan instead (null without chains); and that plan's intermediates, `fallback_bytes`
  // long (null where every chain runs as one kernel).
  const unsigned char* unfused_chains;
  unsigned char* fallback;
  // Per cooperative (grid-barrier) launch, in plan order: its blocks on this device (null without
  // such launches).
  const int32_t* cooperative_grids;
  // The value of each of the model's symbols for this run, bound from the inputs' dims (null
  // for a model without symbols).
  const int64_t* symbols;
  // A model with symbolic dims: each arena slot's offset in this context's arena (the model's
  // arena_offsets, or a layout for the smaller maxima the context serves); null for a model of
  // fixed shapes, whose code holds its offsets.
  const int64_t* arena_offsets;
};

struct stitch_abi_model {
  int32_t abi_version; // STITCH_ABI_VERSION
  const char* target;  // "cuda" or "host"
  int32_t num_inputs;
  int32_t num_outputs;
  const stitch_abi_tensor* inputs;
  const stitch_abi_tensor* outputs;
  uint64_t arena_bytes;
  uint64_t workspace_bytes;
  const unsigned char* weights; // the host copy embedded in the library
  uint64_t weights_bytes;
  // Enqueues the whole model on buffers->stream. Returns 0 (STITCH_OK) or a stitch_status,
  // with a message naming the kernel or library call that failed written to `error`.
  int32_t (*enqueue)(const stitch_abi_buffers* buffers, char* error, size_t error_size);
  // Debug taps, in the order the groups run (0 and null unless built with --debug-taps).
  int32_t num_taps;
  const stitch_abi_tap* taps;
  const stitch_abi_build_info* build_info;
  // What depends on the device: GEMM chains (how many, and the bytes their unfused plans need)
  // and cooperative (grid-barrier) launches (how many). `prepare` runs once when the model is
  // created on a device: it writes `num_chains` bytes to `unfused` (nonzero: that chain runs
  // unfused here) and `num_cooperative` grids to `grids` (each the blocks the device keeps
  // resident, at most what the plan's scratch holds), and checks that the device grants each
  // kernel its shared memory. Returns 0 or a stitch_status with a message in `error`. Null
  // where the model has nothing to ask.
  int32_t num_chains;
  uint64_t fallback_bytes;
  int32_t num_cooperative;
  int32_t (*prepare)(unsigned char* unfused, int32_t* grids, char* error, size_t error_size);
  // Symbolic dims: the symbols, and a function writing every output's dims
  // (num_outputs x STITCH_ABI_MAX_RANK, in model order) for given symbol values. 0 and null
  // for a model of fixed shapes.
  int32_t num_symbols;
  const stitch_abi_symbol* symbols;
  void (*output_dims)(const int64_t* symbols, int64_t* dims);
  // A model with symbolic dims reaches its intermediates through arena slots (each an
  // intermediate tensor, or a group's scratch): `arena_offsets` lays them out at the symbols'
  // maxima (`arena_bytes` long); `arena_steps` are the steps that placed them in the plan's
  // order (a slot's index allocates it, ~index releases it: arena_layout.h), which the runtime
  // replays with `arena_slot_bytes` (each slot's bytes for given symbol values) to lay out a
  // context for smaller maxima. 0 and null for a model of fixed shapes or without intermediates.
  int32_t num_arena_slots;
  const int64_t* arena_offsets;
  int32_t num_arena_steps;
  const int32_t* arena_steps;
  void (*arena_slot_bytes)(const int64_t* symbols, uint64_t* bytes);
};

// Defined by the generated launcher of each model.
const stitch_abi_model* stitch_generated_model(void);

} // extern "C"
