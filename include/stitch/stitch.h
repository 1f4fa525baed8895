/* stitch.h — the C API of every library stitchc compiles.
 *
 * A library built by `stitchc model.onnx -o libmodel.so` serves one model through these
 * functions. The same API serves the CUDA target (tensors in device memory, work on a
 * CUDA stream) and the host target (`--target host`: tensors in host memory, the stream
 * argument ignored).
 *
 * Objects
 *   stitch_model    the model: its weights, loaded once (on the current CUDA device).
 *   stitch_context  what one run needs: the intermediate arena and the captured CUDA Graph.
 *
 * Thread safety
 *   A stitch_model may be used by many threads at once once created. A stitch_context must
 *   be used by one thread at a time; give each thread its own context (and stream). Runs
 *   through different contexts of one model are independent, and their results are bitwise
 *   equal to serial runs. stitch_model_destroy must not race with any other use of that
 *   model or its contexts; destroy the contexts first.
 *
 * Several models in one process
 *   Every library exports these functions under the names below. Two libraries linked into
 *   one program need different names: `stitchc --symbol-prefix bert` exports them as
 *   bert_model_create, bert_run, ... instead (the types keep their stitch_ names), declared
 *   by <stitch/stitch_prefixed.h> with STITCH_SYMBOL_PREFIX defined to bert.
 *
 * Errors
 *   Every function returns a stitch_status. On failure, stitch_last_error() returns a
 *   message for the calling thread's last failed call (naming the failed CUDA, cuBLASLt or
 *   cuDNN call where there is one). No C++ exception crosses this API, and misuse (null
 *   pointers, wrong sizes, dtypes or shapes, use after destroy) returns an error status.
 */
#ifndef STITCH_STITCH_H
#define STITCH_STITCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define STITCH_API __attribute__((visibility("default")))
#else
#define STITCH_API
#endif

/* Version 3 added stitch_library_build_info, lookups by name, the model's device, contexts in
 * caller-provided memory and runs without stitchc's CUDA Graph. Version 4 added symbolic dims
 * (a library compiled with `stitchc --dim NAME=MIN..MAX` serves every shape in range). Version 5
 * added contexts for part of that range (stitch_context_create_for), and their memory. */
#define STITCH_API_VERSION 5
#define STITCH_MAX_RANK 8

typedef enum stitch_status {
  STITCH_OK = 0,
  STITCH_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, an index out of range, ... */
  STITCH_ERROR_SHAPE_MISMATCH = 2,   /* a tensor's dtype, shape or byte size is wrong */
  STITCH_ERROR_CUDA = 3,             /* a CUDA runtime call or a kernel launch failed */
  STITCH_ERROR_CUBLAS = 4,           /* a cuBLASLt call failed */
  STITCH_ERROR_CUDNN = 5,            /* a cuDNN call failed */
  STITCH_ERROR_OUT_OF_MEMORY = 6,
  STITCH_ERROR_INTERNAL = 7 /* a bug in stitchc or the library */
} stitch_status;

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum stitch_dtype {
  STITCH_FLOAT32 = 1,
  STITCH_UINT8 = 2,
  STITCH_INT8 = 3,
  STITCH_UINT16 = 4,
  STITCH_INT16 = 5,
  STITCH_INT32 = 6,
  STITCH_INT64 = 7,
  STITCH_BOOL = 9,
  STITCH_FLOAT16 = 10,
  STITCH_FLOAT64 = 11,
  STITCH_UINT32 = 12,
  STITCH_UINT64 = 13,
  STITCH_BFLOAT16 = 16
} stitch_dtype;

typedef struct stitch_model stitch_model;
typedef struct stitch_context stitch_context;

/* A model input or output as the library was compiled for it. In a library compiled with
 * symbolic dims, a dim that depends on them is -1 and `bytes` is the size at the symbols'
 * maxima; stitch_model_output_shapes gives an output's dims for given inputs. */
typedef struct stitch_tensor_info {
  const char* name; /* valid while the model lives */
  stitch_dtype dtype;
  int32_t rank;
  int64_t dims[STITCH_MAX_RANK];
  uint64_t bytes; /* element count times element size */
} stitch_tensor_info;

/* A symbolic dim of the model (`stitchc --dim NAME=MIN..MAX`, API version 4): every run may
 * give it any value in [min, max], the same value wherever an input has it. */
typedef struct stitch_symbol_info {
  const char* name; /* the model's name for the dim; valid while the model lives */
  int64_t min;
  int64_t max;
} stitch_symbol_info;

/* A caller's tensor: where it is and what the caller believes it holds. The library checks
 * dtype, rank, dims and bytes against the compiled model before it runs. */
typedef struct stitch_tensor {
  void* data; /* device memory (CUDA target) or host memory (host target) */
  stitch_dtype dtype;
  int32_t rank;
  const int64_t* dims;
  uint64_t bytes; /* the size of the buffer at data */
} stitch_tensor;

/* A debug tap of a library built with `stitchc --debug-taps`: one tensor a fusion group
 * writes to memory, copied after that group into a buffer of the context's own, so that it
 * can be read after the run and compared with a reference (`stitch-run --taps-onnx`). Taps
 * change neither the fusion plan nor the kernels. */
typedef struct stitch_tap_info {
  stitch_tensor_info tensor; /* the tensor's name is the ONNX model's name for it */
  int32_t group;             /* the fusion group that writes it: group_<group>.cu, the
                              * group's "id" in the plan report */
  const char* node;          /* the ONNX node that produces it; valid while the model lives */
} stitch_tap_info;

/* How the library was built: what `stitchc --version` printed, the model file's SHA-256, and
 * the choices that shaped the code. Every string is non-null and lives as long as the library
 * is loaded. */
typedef struct stitch_build_info {
  const char* stitchc_version; /* the stitchc that compiled it, e.g. "0.9.0" */
  const char* model_sha256;    /* SHA-256 of the .onnx file, 64 lowercase hex digits */
  const char* model_file;      /* the model's file name, without its folder */
  const char* target;          /* "cuda" or "host" */
  const char* archs;           /* the CUDA target's GPU architectures ("sm_90"); "" for host */
  const char* planner;         /* "ilp", "greedy" or "none" */
  const char* precision;       /* "fp32", "tf32", "fp16" or "bf16" */
  const char* flags;           /* stitchc's arguments, as given */
  const char* symbol_prefix;   /* the prefix of the exported C API: "stitch", or --symbol-prefix */
} stitch_build_info;

/* Which target the library was built for: "cuda" or "host". */
STITCH_API const char* stitch_target(void);
STITCH_API int stitch_api_version(void);
/* Fills `out_info` (API version 3). */
STITCH_API stitch_status stitch_library_build_info(stitch_build_info* out_info);

STITCH_API stitch_status stitch_model_create(stitch_model** out_model);
STITCH_API stitch_status stitch_model_destroy(stitch_model* model);

STITCH_API stitch_status stitch_model_num_inputs(const stitch_model* model, size_t* out_count);
STITCH_API stitch_status stitch_model_num_outputs(const stitch_model* model, size_t* out_count);
STITCH_API stitch_status stitch_model_input(const stitch_model* model, size_t index,
                                            stitch_tensor_info* out_info);
STITCH_API stitch_status stitch_model_output(const stitch_model* model, size_t index,
                                             stitch_tensor_info* out_info);

/* Taps, in the order their groups run; a library built without --debug-taps has none. */
STITCH_API stitch_status stitch_model_num_taps(const stitch_model* model, size_t* out_count);
STITCH_API stitch_status stitch_model_tap(const stitch_model* model, size_t index,
                                          stitch_tap_info* out_info);

/* The index, in model order, of the input or output named `name` (API version 3);
 * STITCH_ERROR_INVALID_ARGUMENT when the model has none of that name. */
STITCH_API stitch_status stitch_model_input_index(const stitch_model* model, const char* name,
                                                  size_t* out_index);
STITCH_API stitch_status stitch_model_output_index(const stitch_model* model, const char* name,
                                                   size_t* out_index);

/* The CUDA device the model lives on: the one current at stitch_model_create (0 on the host
 * target). Every call switches to it for its duration. */
STITCH_API stitch_status stitch_model_device(const stitch_model* model, int* out_device);

/* The device memory one context of this model works in: its arena of intermediates, the
 * workspace of its cuBLASLt and cuDNN calls, the intermediates of GEMM chains that run unfused
 * on this device (a chain whose thread-block clusters the device cannot hold, as before sm_90:
 * decided once at stitch_model_create) and its debug taps, each part 256-byte aligned.
 * The libraries' handles allocate a little of their own besides. */
STITCH_API stitch_status stitch_model_context_memory(const stitch_model* model,
                                                     uint64_t* out_bytes);

/* Symbolic dims (API version 4). A library compiled for fixed shapes has none. A run takes each
 * input's actual dims (stitch_tensor.dims): each symbolic dim within its symbol's range, equal
 * wherever one symbol appears; the outputs then have the dims stitch_model_output_shapes gives.
 * A context's memory is sized once: for the symbols' maxima (stitch_context_create), or for
 * smaller maxima of the caller's (stitch_context_create_for). */
STITCH_API stitch_status stitch_model_num_symbols(const stitch_model* model, size_t* out_count);
STITCH_API stitch_status stitch_model_symbol(const stitch_model* model, size_t index,
                                             stitch_symbol_info* out_info);
/* For each dim of input `index`, the index of its symbol, or -1 for a fixed dim: `out_symbols`
 * has room for STITCH_MAX_RANK entries; the input's rank are written. */
STITCH_API stitch_status stitch_model_input_symbols(const stitch_model* model, size_t index,
                                                    int32_t* out_symbols);
/* The same for output `index`: the symbol's index where the dim is one symbol, -1 for a fixed
 * dim, and -2 for a dim computed from the symbols (batch*seq after a Reshape, say). */
STITCH_API stitch_status stitch_model_output_symbols(const stitch_model* model, size_t index,
                                                     int32_t* out_symbols);
/* The outputs' dims and bytes for inputs of the given dims (`inputs[i].dims` and rank are read,
 * their data is not), checked as stitch_run checks them: one stitch_tensor_info per output, in
 * model order. For a library of fixed shapes, the outputs as compiled. */
STITCH_API stitch_status stitch_model_output_shapes(const stitch_model* model,
                                                    const stitch_tensor* inputs, size_t num_inputs,
                                                    stitch_tensor_info* out_outputs,
                                                    size_t num_outputs);

STITCH_API stitch_status stitch_context_create(stitch_model* model, stitch_context** out_context);
/* A context that works in caller-provided device memory (host memory on the host target):
 * `memory` is 256-byte aligned and `bytes` at least stitch_model_context_memory(). The caller
 * keeps it alive and does not touch it until the context is destroyed. (API version 3) */
STITCH_API stitch_status stitch_context_create_in_memory(stitch_model* model, void* memory,
                                                         uint64_t bytes,
                                                         stitch_context** out_context);
/* Contexts for part of a symbolic model's range (API version 5). A context created for maxima
 * `max_symbols` (num_symbols values, one per symbol in the model's order, each within its range)
 * runs every shape whose symbols are at most those, in memory laid out for them: its arena holds
 * the intermediates of the largest such run, not of the model's maxima. A run with a symbol above
 * the context's maximum fails with STITCH_ERROR_SHAPE_MISMATCH. With a run's own symbols as the
 * maxima, stitch_model_context_memory_for answers what a context for that one shape needs.
 *
 * stitch_model_context_memory_for: the bytes of such a context (the parts
 * stitch_model_context_memory lists; the debug taps stay sized for the model's maxima).
 * stitch_context_create_for: such a context, on allocations of its own (`memory` NULL) or in
 * caller-provided memory as stitch_context_create_in_memory takes it (256-byte aligned, `bytes`
 * at least stitch_model_context_memory_for's).
 * A model of fixed shapes takes num_symbols 0 (max_symbols may be NULL), and the model's
 * maxima give what stitch_model_context_memory and stitch_context_create give. */
STITCH_API stitch_status stitch_model_context_memory_for(const stitch_model* model,
                                                         const int64_t* max_symbols,
                                                         size_t num_symbols, uint64_t* out_bytes);
STITCH_API stitch_status stitch_context_create_for(stitch_model* model, const int64_t* max_symbols,
                                                   size_t num_symbols, void* memory, uint64_t bytes,
                                                   stitch_context** out_context);
STITCH_API stitch_status stitch_context_destroy(stitch_context* context);

/* Runs the whole model on `stream` (a cudaStream_t; NULL is the legacy default stream).
 * The first run on a context captures the work as a CUDA Graph; later runs replay it.
 * Returns once the work is enqueued; synchronize the stream before reading outputs. */
STITCH_API stitch_status stitch_run(stitch_context* context, const stitch_tensor* inputs,
                                    size_t num_inputs, const stitch_tensor* outputs,
                                    size_t num_outputs, void* stream);

/* Options of stitch_run_with_options (API version 3). Zero-initialize, then set. */
typedef struct stitch_run_options {
  uint32_t flags; /* STITCH_RUN_* bits */
} stitch_run_options;

/* Enqueue the model's kernels and library calls on `stream` directly instead of capturing and
 * replaying the context's CUDA Graph, so that the application can capture the run into a graph
 * of its own (cudaStreamBeginCapture ... stitch_run_with_options ... cudaStreamEndCapture),
 * which then replays with the same inputs, outputs and context. The caller orders such runs of
 * one context (one stream, or events) and synchronizes before destroying the context or reading
 * its taps. A no-op on the host target, whose runs are synchronous. */
#define STITCH_RUN_NO_GRAPH 1u

/* stitch_run with options; `options` NULL is stitch_run. */
STITCH_API stitch_status stitch_run_with_options(stitch_context* context,
                                                 const stitch_tensor* inputs, size_t num_inputs,
                                                 const stitch_tensor* outputs, size_t num_outputs,
                                                 void* stream, const stitch_run_options* options);

/* Copies tap `index` as the context's last run left it into host memory at `data` (`bytes`
 * at least the tap's size). Waits for that run to finish first. */
STITCH_API stitch_status stitch_context_read_tap(stitch_context* context, size_t index, void* data,
                                                 uint64_t bytes);

STITCH_API const char* stitch_status_name(stitch_status status);
/* The message of the calling thread's last failed call ("" if none). */
STITCH_API const char* stitch_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STITCH_STITCH_H */
