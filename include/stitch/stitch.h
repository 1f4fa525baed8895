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

#define STITCH_API_VERSION 2
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

/* A model input or output as the library was compiled for it. */
typedef struct stitch_tensor_info {
  const char* name; /* valid while the model lives */
  stitch_dtype dtype;
  int32_t rank;
  int64_t dims[STITCH_MAX_RANK];
  uint64_t bytes; /* element count times element size */
} stitch_tensor_info;

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

/* Which target the library was built for: "cuda" or "host". */
STITCH_API const char* stitch_target(void);
STITCH_API int stitch_api_version(void);

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

STITCH_API stitch_status stitch_context_create(stitch_model* model, stitch_context** out_context);
STITCH_API stitch_status stitch_context_destroy(stitch_context* context);

/* Runs the whole model on `stream` (a cudaStream_t; NULL is the legacy default stream).
 * The first run on a context captures the work as a CUDA Graph; later runs replay it.
 * Returns once the work is enqueued; synchronize the stream before reading outputs. */
STITCH_API stitch_status stitch_run(stitch_context* context, const stitch_tensor* inputs,
                                    size_t num_inputs, const stitch_tensor* outputs,
                                    size_t num_outputs, void* stream);

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
