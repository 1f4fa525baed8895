// stitch_library.h: the library routines that generated code calls for the ops it does not
// generate kernels for: GEMM (MatMul, Gemm) and convolution (Conv, ConvTranspose).
//
// One interface, two implementations, chosen at link time:
//   - CUDA target (stitch_library_cuda): cuBLASLt for GEMM, cuDNN 9's legacy convolution API
//     for Conv / ConvTranspose. Pointers are device pointers; work is enqueued on the stream.
//   - Host target (stitch_library_host): plain C++ reference loops on host memory, with fp32
//     accumulation in a fixed order, so the same inputs give bitwise the same outputs.
//
// Two layers:
//   - `stitch_library_*_on(const stitch_library_call*, ...)`: the implemented entry points. They
//     take the stream, workspace and handles explicitly so that the CUDA implementation can be
//     compiled by a host compiler against the CUDA headers (stitch_cuda.h, and with it
//     stitch_model_abi.h, needs nvcc or STITCH_HOST_TARGET).
//   - `stitch_library_*(const stitch_abi_buffers*, ...)`: what generated code calls; static
//     inline wrappers that unpack the buffers. Defined only where stitch_model_abi.h compiles
//     (nvcc, or a host compiler with STITCH_HOST_TARGET).
//
// Every entry point returns a stitch_status (include/stitch/stitch.h) and, on failure, writes a
// NUL-terminated message into `error` (at most `error_size` bytes, truncated): the failing
// cuBLASLt / cuDNN call with its status name and text, or for a descriptor that breaks the
// rules below STITCH_ERROR_INTERNAL (such a descriptor is a stitchc bug, not a user error).
// No C++ exception leaves this interface.
//
// Workspace: `buffers->workspace` must hold at least stitch_library_workspace_bytes() bytes,
// 256-byte aligned (the runtime allocates the larger of that and the model's workspace_bytes);
// calls on one stream use it in turn. A null workspace means none: cuBLASLt and cuDNN then
// choose among the algorithms that need no workspace. On CUDA a GEMM of K = 0 takes
// max(m, n) elements of zeros from the workspace's end (rounded up to 256 bytes) and fails with
// STITCH_ERROR_INVALID_ARGUMENT where the workspace is null or shorter; the runtime's workspace
// holds any such call of up to 8 million rows of float32.
//
// Threads: a stitch_abi_libraries (one per stitch_context) is used by one thread at a time,
// as the context is; its plan caches are not locked.
#pragma once

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(STITCH_HOST_TARGET)
#include "../stitch_model_abi.h"
#define STITCH_LIBRARY_HAS_ABI_BUFFERS 1
#else
// A host compiler building the CUDA implementation: only the CUDA runtime's types.
#include <cuda_runtime_api.h>
#define STITCH_LIBRARY_HAS_ABI_BUFFERS 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

// ---- Per-context state ----------------------------------------------------------------------

// 32 MiB: what cuBLASLt wants on Hopper (NVIDIA's guidance), and the limit given to cuDNN's
// algorithm choice. The host implementations need no workspace.
#define STITCH_LIBRARY_CUDA_WORKSPACE_BYTES (32ull << 20)
#define STITCH_LIBRARY_HOST_WORKSPACE_BYTES 0ull

struct cublasLtContext;           // what cublasLtHandle_t points to
struct cudnnContext;              // what cudnnHandle_t points to
struct stitch_library_gemm_plans; // cached cuBLASLt descriptors and algorithms
struct stitch_library_conv_plans; // cached cuDNN descriptors and algorithms

// The handles one context's library calls use (CUDA target). The host target has none:
// stitch_libraries_create gives a null pointer there, which the host routines accept.
struct stitch_abi_libraries {
  struct cublasLtContext* cublaslt;
  struct cudnnContext* cudnn;
  struct stitch_library_gemm_plans* gemm_plans; // created on first use
  struct stitch_library_conv_plans* conv_plans; // created on first use
};

// Creates the handles for one context (on the current CUDA device). *out is null on failure,
// and always on the host target.
int32_t stitch_libraries_create(struct stitch_abi_libraries** out, char* error, size_t error_size);
// Destroys what stitch_libraries_create made; null is accepted. The context's work must have
// finished (its stream synchronized).
void stitch_libraries_destroy(struct stitch_abi_libraries* libraries);

// The workspace the linked implementation's calls need: STITCH_LIBRARY_CUDA_WORKSPACE_BYTES or
// STITCH_LIBRARY_HOST_WORKSPACE_BYTES.
uint64_t stitch_library_workspace_bytes(void);

// ---- Element types --------------------------------------------------------------------------
//
// Every float operand of one call has the descriptor's `dtype` (ONNX's MatMul, Gemm, Conv and
// ConvTranspose take one float type for all their inputs and output, and the epilogue's adds
// keep it). float16 and bfloat16 elements are the 2-byte storage of device/stitch_half.cuh
// (stitch::float16, stitch::bfloat16: IEEE binary16 and the top half of a float32); the operand
// pointers are untyped, so generated code passes its typed pointers as they are.
//
// Precision of the 2-byte types: products of two float16 (bfloat16) values are exact in fp32,
// and they are summed in fp32 (cuBLASLt CUBLAS_COMPUTE_32F, cuDNN's float compute type, the
// host's fp32 accumulator); alpha, beta, bias and the epilogue are applied in fp32 and each
// output is rounded once to the storage type (round to nearest even).
typedef enum stitch_library_dtype {
  STITCH_LIBRARY_FLOAT32 = 0, // 0, so that a zeroed descriptor is a float32 one
  STITCH_LIBRARY_FLOAT16 = 1,
  STITCH_LIBRARY_BFLOAT16 = 2
} stitch_library_dtype;

// Where one library call runs.
typedef struct stitch_library_call {
  cudaStream_t stream;
  void* workspace;                        // may be null when workspace_bytes is 0
  uint64_t workspace_bytes;               // what the call may use of `workspace`
  struct stitch_abi_libraries* libraries; // null on the host target
} stitch_library_call;

// ---- GEMM -----------------------------------------------------------------------------------
//
//   D[b] = act(alpha * op(A[b]) @ op(B[b]) + beta * C[b] + bias)     for b in [0, batch_count)
//
// Operands of the descriptor's dtype, row-major, with leading dimensions (elements between rows):
// op(A) is m x k, op(B) is k x n, C and D are m x n. X[b] starts `stride_x * b` elements after X; a
// stride of 0 broadcasts that operand to every batch (A, B or C; D's stride must separate the
// batches). bias (optional, length n, shared by all batches) is added to every row. C may be null
// when beta == 0 and is then not read; C may be D itself (ldc == ldd and stride_c == stride_d), or
// must not overlap it. D must not overlap A, B or bias. m, n or batch_count of 0 is an empty
// call; k of 0 is an empty sum (D = act(beta * C + bias); A and B are not read and may be null;
// on CUDA it needs workspace, above), as a product over a symbolic K reaches where its range
// includes 0.
//
// Precision: fp32 accumulation. For float32, TF32 tensor cores are off unless allow_tf32 is set
// (stitchc --precision tf32), because ONNX's float MatMul is defined in fp32 and TF32's 10-bit
// mantissa changes results by ~1e-3 relative, far beyond what the host target and ONNX's test
// data agree to. With allow_tf32 the host target rounds every element of A and B to TF32 (10
// mantissa bits, round to nearest even, as CUTLASS's float-to-tfloat32 conversion does) before
// the same fp32 accumulation, so its results carry TF32's error too. allow_tf32 is for float32
// only: the 2-byte types' products are exact in fp32 already.
//
// The epilogue is applied after bias. GELU is the tanh approximation
// 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) that cuBLASLt's GELU epilogue computes, so only an
// ONNX Gelu with approximate="tanh" may be fused into it.

typedef enum stitch_gemm_epilogue {
  STITCH_GEMM_EPILOGUE_NONE = 0,
  STITCH_GEMM_EPILOGUE_RELU = 1,
  STITCH_GEMM_EPILOGUE_GELU_TANH = 2
} stitch_gemm_epilogue;

typedef struct stitch_gemm_desc {
  int64_t m, n, k;
  int32_t trans_a; // 0: A is stored m x k; 1: A is stored k x m and op(A) = A^T
  int32_t trans_b; // 0: B is stored k x n; 1: B is stored n x k and op(B) = B^T
  int64_t lda, ldb, ldc, ldd;
  int64_t batch_count;
  int64_t stride_a, stride_b, stride_c, stride_d; // elements between batches
  float alpha, beta;
  int32_t epilogue;   // stitch_gemm_epilogue
  int32_t allow_tf32; // 0 (default): exact fp32 products; 1: TF32 products (float32 only)
  int32_t dtype;      // stitch_library_dtype of A, B, C, D and bias
} stitch_gemm_desc;

// A single (batch_count 1), untransposed, packed GEMM with alpha 1, beta 0, no epilogue.
static inline stitch_gemm_desc stitch_gemm_desc_packed(int64_t m, int64_t n, int64_t k) {
  stitch_gemm_desc desc;
  desc.m = m;
  desc.n = n;
  desc.k = k;
  desc.trans_a = 0;
  desc.trans_b = 0;
  desc.lda = k;
  desc.ldb = n;
  desc.ldc = n;
  desc.ldd = n;
  desc.batch_count = 1;
  desc.stride_a = m * k;
  desc.stride_b = k * n;
  desc.stride_c = m * n;
  desc.stride_d = m * n;
  desc.alpha = 1.0f;
  desc.beta = 0.0f;
  desc.epilogue = STITCH_GEMM_EPILOGUE_NONE;
  desc.allow_tf32 = 0;
  desc.dtype = STITCH_LIBRARY_FLOAT32;
  return desc;
}

int32_t stitch_library_gemm_on(const stitch_library_call* call, const stitch_gemm_desc* desc,
                               const void* a, const void* b, const void* c, const void* bias,
                               void* d, char* error, size_t error_size);

// ---- Convolution ----------------------------------------------------------------------------
//
// X, W, bias, Z and Y of the descriptor's dtype, NC + spatial layout (NCW, NCHW, NCDHW), 1 to 3
// spatial dims, cross-correlation as in ONNX. `in_*` describe the op's input X, `out_*` its
// output Y, whichever way the op runs.
//
// Forward (ONNX Conv):  X [batch, in_channels, in_spatial], W [out_channels,
//   in_channels / groups, kernel], Y [batch, out_channels, out_spatial] with
//   out = floor((in + pads_begin + pads_end - dilation * (kernel - 1) - 1) / stride) + 1.
// Transposed (ONNX ConvTranspose, cuDNN's backward data): W [in_channels,
//   out_channels / groups, kernel]; out = (in - 1) * stride - pads_begin - pads_end +
//   dilation * (kernel - 1) + 1 + output_padding, where output_padding (0 <= output_padding <
//   stride) is given by out_spatial alone.
//
// Pads must be symmetric (pads_begin == pads_end), as cuDNN's are: callers pre-pad the input of
// an asymmetric Conv, and compute an asymmetric ConvTranspose with the smaller pad into a larger
// output and crop. Y is overwritten, then bias (optional, one value per output channel) is
// added. X, W and Y must not overlap. Entries past spatial_rank in the arrays are ignored.
//
// Channels-last (channels_last = 1): X, Z and Y are stored with the channel axis innermost
// (NWC, NHWC, NDHWC: [batch, spatial..., channels]) and W with its second axis innermost
// ([out_channels, kernel..., in_channels / groups] forward, [in_channels, kernel...,
// out_channels / groups] transposed); the sizes above keep their meaning. This is the layout
// cuDNN's tensor-core kernels read, so it needs no transform (nor its workspace).
//
// Precision of the 2-byte types: the host target computes the sum, the bias and the epilogue in
// fp32 and rounds Y once. cuDNN (PSEUDO_HALF / PSEUDO_BFLOAT16 configurations: float compute
// type, tensor cores allowed, whose float16 and bfloat16 products are exact) rounds Y once in
// the fused epilogue call, but after the convolution and again after each separate add
// (cudnnAddTensor of the bias, the epilogue's fallback), which may move an output by one more
// unit in the last place.

#define STITCH_CONV_MAX_SPATIAL 3

typedef struct stitch_conv_desc {
  int32_t spatial_rank; // 1, 2 or 3
  int32_t allow_tf32;   // 0 (default): exact fp32 products; 1: TF32 (float32 only, see GEMM)
  int64_t batch;        // 0 is an empty call
  int64_t in_channels;
  int64_t out_channels;
  int64_t groups; // divides both channel counts; groups == in_channels == out_channels is depthwise
  int64_t in_spatial[STITCH_CONV_MAX_SPATIAL];
  int64_t out_spatial[STITCH_CONV_MAX_SPATIAL];
  int64_t kernel[STITCH_CONV_MAX_SPATIAL];
  int64_t strides[STITCH_CONV_MAX_SPATIAL];
  int64_t dilations[STITCH_CONV_MAX_SPATIAL];
  int64_t pads_begin[STITCH_CONV_MAX_SPATIAL];
  int64_t pads_end[STITCH_CONV_MAX_SPATIAL]; // must equal pads_begin
  int32_t dtype;                             // stitch_library_dtype of X, W, bias, Z and Y
  int32_t channels_last;                     // 0 (default): NC + spatial; 1: see above
} stitch_conv_desc;

int32_t stitch_library_conv_on(const stitch_library_call* call, const stitch_conv_desc* desc,
                               const void* x, const void* w, const void* bias, void* y, char* error,
                               size_t error_size);
int32_t stitch_library_conv_transpose_on(const stitch_library_call* call,
                                         const stitch_conv_desc* desc, const void* x, const void* w,
                                         const void* bias, void* y, char* error, size_t error_size);

// Forward with an epilogue: Y = act(conv(X, W) + bias + Z). The bias is required; Z (optional)
// is a residual of Y's shape that must not overlap Y; act is max(0, .) (NaN passing through)
// when `relu` is nonzero, else the identity. The CUDA target runs one
// cudnnConvolutionBiasActivationForward (with the identity, on the implicit-precomputed-GEMM
// algorithm, the only one cuDNN fuses it with), or, where cuDNN cannot fuse this geometry,
// the convolution, the two adds and the activation as separate calls, in that order. The host
// target adds the bias, then Z, then applies act, rounding after each as the separate ops do.
int32_t stitch_library_conv_epilogue_on(const stitch_library_call* call,
                                        const stitch_conv_desc* desc, const void* x, const void* w,
                                        const void* bias, const void* z, int32_t relu, void* y,
                                        char* error, size_t error_size);

// ---- The entry points of generated code -----------------------------------------------------

#if STITCH_LIBRARY_HAS_ABI_BUFFERS

static inline stitch_library_call stitch_library_call_of(const struct stitch_abi_buffers* buffers) {
  stitch_library_call call;
  call.stream = buffers != NULL ? buffers->stream : NULL;
  call.workspace = buffers != NULL ? buffers->workspace : NULL;
  call.workspace_bytes = call.workspace != NULL ? stitch_library_workspace_bytes() : 0;
  call.libraries = buffers != NULL ? buffers->libraries : NULL;
  return call;
}

static inline int32_t stitch_library_gemm(const struct stitch_abi_buffers* buffers,
                                          const stitch_gemm_desc* desc, const void* a,
                                          const void* b, const void* c, const void* bias, void* d,
                                          char* error, size_t error_size) {
  const stitch_library_call call = stitch_library_call_of(buffers);
  return stitch_library_gemm_on(&call, desc, a, b, c, bias, d, error, error_size);
}

static inline int32_t stitch_library_conv(const struct stitch_abi_buffers* buffers,
                                          const stitch_conv_desc* desc, const void* x,
                                          const void* w, const void* bias, void* y, char* error,
                                          size_t error_size) {
  const stitch_library_call call = stitch_library_call_of(buffers);
  return stitch_library_conv_on(&call, desc, x, w, bias, y, error, error_size);
}

static inline int32_t stitch_library_conv_epilogue(const struct stitch_abi_buffers* buffers,
                                                   const stitch_conv_desc* desc, const void* x,
                                                   const void* w, const void* bias, const void* z,
                                                   int32_t relu, void* y, char* error,
                                                   size_t error_size) {
  const stitch_library_call call = stitch_library_call_of(buffers);
  return stitch_library_conv_epilogue_on(&call, desc, x, w, bias, z, relu, y, error, error_size);
}

static inline int32_t stitch_library_conv_transpose(const struct stitch_abi_buffers* buffers,
                                                    const stitch_conv_desc* desc, const void* x,
                                                    const void* w, const void* bias, void* y,
                                                    char* error, size_t error_size) {
  const stitch_library_call call = stitch_library_call_of(buffers);
  return stitch_library_conv_transpose_on(&call, desc, x, w, bias, y, error, error_size);
}

#endif // STITCH_LIBRARY_HAS_ABI_BUFFERS

#ifdef __cplusplus
} // extern "C"
#endif
