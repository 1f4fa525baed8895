// gemm_cuda.cpp: stitch_library_gemm_on for the CUDA target, on cuBLASLt.
//
// Row-major by the swap trick: a row-major r x c matrix with leading dimension ld is, read
// column-major, its c x r transpose with the same ld. So D = op(A) @ op(B) (row-major m x n) is
// computed as the column-major D^T = op(B)^T @ op(A)^T (n x m): cuBLASLt's A is our B with our
// trans_b, its B is our A with our trans_a, and its m and n are our n and m. The bias epilogue
// adds a vector along the rows of cuBLASLt's D, i.e. along our n, as the interface wants. (The
// swap keeps every layout in cuBLASLt's default column order, which all epilogues support;
// CUBLASLT_ORDER_ROW is not supported by every epilogue and algorithm.)
//
// Plans: per context (stitch_abi_libraries), the matmul descriptor, the four layouts and the
// algorithm cublasLtMatmulAlgoGetHeuristic chose within the workspace are cached under the
// descriptor's fields plus each pointer's alignment (the heuristic's choice depends on it), so
// a model's repeated calls do one map lookup and one cublasLtMatmul. Only the bias pointer is
// set per call. A library over symbolic dims has a plan per M it ran at: at most kMaxGemmPlans,
// the least recently used dropped.
//
// Element types: every matrix and the bias are the descriptor's dtype (CUDA_R_32F, CUDA_R_16F or
// CUDA_R_16BF; the bias type is set to it explicitly, as cuBLASLt's default would), alpha and
// beta fp32 (CUBLASLT_MATMUL_DESC_SCALE_TYPE CUDA_R_32F). Precision: CUBLAS_COMPUTE_32F (fp32
// accumulation; float16 and bfloat16 on tensor cores, whose products of them are exact) unless
// allow_tf32 (float32 only), then CUBLAS_COMPUTE_32F_FAST_TF32. The bias, ReLU and GELU
// epilogues are cuBLASLt's for all three types with this compute type.
#include "cuda_checks.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <type_traits>

namespace stitch::library::cuda {
namespace {

// The plans one context keeps at most.
constexpr std::size_t kMaxGemmPlans = 256;

// What the cuBLASLt objects of one GEMM shape and alignment are cached under.
using GemmKey = std::array<int64_t, 25>;

struct GemmPlan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t layout_a = nullptr; // cuBLASLt's A: our B
  cublasLtMatrixLayout_t layout_b = nullptr; // cuBLASLt's B: our A
  cublasLtMatrixLayout_t layout_c = nullptr; // null when C is read as D's layout
  cublasLtMatrixLayout_t layout_d = nullptr;
  cublasLtMatmulAlgo_t algo = {};
  uint64_t last_used = 0; // the plans' call count at this plan's last call

  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() {
    for (cublasLtMatrixLayout_t layout : {layout_a, layout_b, layout_c, layout_d})
      if (layout != nullptr) cublasLtMatrixLayoutDestroy(layout);
    if (operation != nullptr) cublasLtMatmulDescDestroy(operation);
  }
};

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t preference) const {
    cublasLtMatmulPreferenceDestroy(preference);
  }
};
using Preference =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, PreferenceDeleter>;

} // namespace
} // namespace stitch::library::cuda

struct stitch_library_gemm_plans {
  std::map<stitch::library::cuda::GemmKey, std::unique_ptr<stitch::library::cuda::GemmPlan>> plans;
  uint64_t calls = 0;
};

namespace stitch::library::cuda {

void destroy_gemm_plans(stitch_library_gemm_plans* plans) { delete plans; }

namespace {

// One GEMM call with its operands resolved: C is D (with D's layout) when beta == 0.
struct GemmCall {
  const stitch_gemm_desc& desc;
  const void* a;
  const void* b;
  const void* c;
  const void* bias;
  void* d;
  int64_t ldc;
  int64_t stride_c;
};

// The largest power of two (at most 256, cuBLASLt's default expectation) dividing the address
// of every batch's matrix of `element_bytes` elements.
int64_t alignment_of(const void* pointer, int64_t batch_stride, int64_t batch_count,
                     std::size_t element_bytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(pointer) | 256u;
  if (batch_count > 1 && batch_stride != 0)
    bits |= static_cast<uint64_t>(batch_stride) * element_bytes;
  return static_cast<int64_t>(bits & (~bits + 1));
}

// cuBLASLt's type of the descriptor's matrices.
cudaDataType_t matrix_type(const stitch_gemm_desc& desc) {
  switch (desc.dtype) {
  case STITCH_LIBRARY_FLOAT16:
    return CUDA_R_16F;
  case STITCH_LIBRARY_BFLOAT16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

GemmKey key_of(const GemmCall& call, uint64_t workspace_bytes) {
  const stitch_gemm_desc& g = call.desc;
  const std::size_t bytes = dtype_bytes(g.dtype);
  return GemmKey{g.m,
                 g.n,
                 g.k,
                 g.trans_a,
                 g.trans_b,
                 g.lda,
                 g.ldb,
                 call.ldc,
                 g.ldd,
                 g.batch_count,
                 g.stride_a,
                 g.stride_b,
                 call.stride_c,
                 g.stride_d,
                 g.epilogue,
                 g.allow_tf32,
                 g.dtype,
                 call.bias != nullptr,
                 call.c == call.d,
                 alignment_of(call.a, g.stride_a, g.batch_count, bytes),
                 alignment_of(call.b, g.stride_b, g.batch_count, bytes),
                 alignment_of(call.c, call.stride_c, g.batch_count, bytes),
                 alignment_of(call.d, g.stride_d, g.batch_count, bytes),
                 call.bias != nullptr ? alignment_of(call.bias, 0, 1, bytes) : 0,
                 static_cast<int64_t>(workspace_bytes)};
}

cublasLtEpilogue_t epilogue_of(const stitch_gemm_desc& desc, bool has_bias) {
  switch (desc.epilogue) {
  case STITCH_GEMM_EPILOGUE_RELU:
    return has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  case STITCH_GEMM_EPILOGUE_GELU_TANH:
    return has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  default:
    return has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

// A column-major rows x cols layout of `type` with leading dimension ld, batched when batch > 1.
int32_t make_layout(const ErrorSink& sink, cublasLtMatrixLayout_t* layout, cudaDataType_t type,
                    int64_t rows, int64_t cols, int64_t ld, int64_t batch_count,
                    int64_t batch_stride) {
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatrixLayoutCreate, layout, type, static_cast<uint64_t>(rows),
                        static_cast<uint64_t>(cols), ld);
  if (batch_count == 1) return STITCH_OK;
  const int32_t count = static_cast<int32_t>(batch_count);
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatrixLayoutSetAttribute, *layout,
                        CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatrixLayoutSetAttribute, *layout,
                        CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                        sizeof(batch_stride));
  return STITCH_OK;
}

int32_t set_min_alignment(const ErrorSink& sink, cublasLtMatmulPreference_t preference,
                          cublasLtMatmulPreferenceAttributes_t attribute, int64_t alignment) {
  const uint32_t bytes = static_cast<uint32_t>(alignment);
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulPreferenceSetAttribute, preference, attribute, &bytes,
                        sizeof(bytes));
  return STITCH_OK;
}

// Builds the descriptors of `call` (swapped operands, see the top of this file) and picks the
// heuristic's best algorithm that fits in `workspace_bytes`.
int32_t build_plan(const ErrorSink& sink, cublasLtHandle_t handle, const GemmCall& call,
                   uint64_t workspace_bytes, GemmPlan& plan) {
  const stitch_gemm_desc& g = call.desc;
  const bool c_is_d = call.c == call.d;
  const cublasComputeType_t compute =
      g.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t type = matrix_type(g);
  const std::size_t bytes = dtype_bytes(g.dtype);
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulDescCreate, &plan.operation, compute, CUDA_R_32F);
  const cublasOperation_t transa = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t transb = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = epilogue_of(g, call.bias != nullptr);
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulDescSetAttribute, plan.operation,
                        CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa));
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulDescSetAttribute, plan.operation,
                        CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb));
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulDescSetAttribute, plan.operation,
                        CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  if (call.bias != nullptr) {
    // The heuristic reads the bias pointer's alignment from here.
    STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulDescSetAttribute, plan.operation,
                          CUBLASLT_MATMUL_DESC_BIAS_POINTER, &call.bias, sizeof(call.bias));
    const int32_t bias_type = type;
    STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulDescSetAttribute, plan.operation,
                          CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type));
  }

  if (int32_t status = make_layout(sink, &plan.layout_a, type, g.trans_b ? g.k : g.n,
                                   g.trans_b ? g.n : g.k, g.ldb, g.batch_count, g.stride_b);
      status != STITCH_OK)
    return status;
  if (int32_t status = make_layout(sink, &plan.layout_b, type, g.trans_a ? g.m : g.k,
                                   g.trans_a ? g.k : g.m, g.lda, g.batch_count, g.stride_a);
      status != STITCH_OK)
    return status;
  if (int32_t status =
          make_layout(sink, &plan.layout_d, type, g.n, g.m, g.ldd, g.batch_count, g.stride_d);
      status != STITCH_OK)
    return status;
  if (!c_is_d) {
    if (int32_t status = make_layout(sink, &plan.layout_c, type, g.n, g.m, call.ldc, g.batch_count,
                                     call.stride_c);
        status != STITCH_OK)
      return status;
  }
  cublasLtMatrixLayout_t layout_c = c_is_d ? plan.layout_d : plan.layout_c;

  cublasLtMatmulPreference_t raw_preference = nullptr;
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulPreferenceCreate, &raw_preference);
  const Preference preference(raw_preference);
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulPreferenceSetAttribute, preference.get(),
                        CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                        sizeof(workspace_bytes));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, int64_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
       alignment_of(call.b, g.stride_b, g.batch_count, bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
       alignment_of(call.a, g.stride_a, g.batch_count, bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
       alignment_of(call.c, call.stride_c, g.batch_count, bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
       alignment_of(call.d, g.stride_d, g.batch_count, bytes)},
  };
  for (const auto& [attribute, alignment] : alignments)
    if (int32_t status = set_min_alignment(sink, preference.get(), attribute, alignment);
        status != STITCH_OK)
      return status;

  cublasLtMatmulHeuristicResult_t result = {};
  int returned = 0;
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulAlgoGetHeuristic, handle, plan.operation, plan.layout_a,
                        plan.layout_b, layout_c, plan.layout_d, preference.get(), 1, &result,
                        &returned);
  if (returned == 0 || result.state != CUBLAS_STATUS_SUCCESS)
    return sink.fail(STITCH_ERROR_CUBLAS,
                     "cublasLtMatmulAlgoGetHeuristic found no algorithm within " +
                         std::to_string(workspace_bytes) + " workspace bytes (" + describe_gemm(g) +
                         ")");
  plan.algo = result.algo;
  return STITCH_OK;
}

int32_t run_gemm(const ErrorSink& sink, const stitch_library_call& where, const GemmCall& call) {
  const stitch_gemm_desc& g = call.desc;
  stitch_abi_libraries* libraries = where.libraries;
  if (libraries == nullptr || libraries->cublaslt == nullptr)
    return sink.fail(STITCH_ERROR_INTERNAL,
                     "no cuBLASLt handle: the context's stitch_libraries_create did not run");
  if (g.batch_count > INT32_MAX)
    return sink.fail(STITCH_ERROR_CUBLAS,
                     "batch_count exceeds cuBLASLt's int32 limit (" + describe_gemm(g) + ")");
  const uint64_t workspace_bytes = where.workspace != nullptr ? where.workspace_bytes : 0;

  if (libraries->gemm_plans == nullptr) libraries->gemm_plans = new stitch_library_gemm_plans;
  auto& plans = libraries->gemm_plans->plans;
  const GemmKey key = key_of(call, workspace_bytes);
  auto found = plans.find(key);
  if (found == plans.end()) {
    // A library over symbolic dims calls with a new M per shape: past kMaxGemmPlans the least
    // recently used plan goes (captured CUDA Graphs hold no reference to it).
    if (plans.size() >= kMaxGemmPlans)
      plans.erase(std::min_element(plans.begin(), plans.end(), [](const auto& a, const auto& b) {
        return a.second->last_used < b.second->last_used;
      }));
    auto built = std::make_unique<GemmPlan>();
    if (int32_t status = build_plan(sink, libraries->cublaslt, call, workspace_bytes, *built);
        status != STITCH_OK)
      return status;
    found = plans.emplace(key, std::move(built)).first;
  }
  GemmPlan& plan = *found->second;
  plan.last_used = ++libraries->gemm_plans->calls;

  if (call.bias != nullptr) {
    STITCH_CHECK_CUBLASLT(sink, cublasLtMatmulDescSetAttribute, plan.operation,
                          CUBLASLT_MATMUL_DESC_BIAS_POINTER, &call.bias, sizeof(call.bias));
  }
  cublasLtMatrixLayout_t layout_c = plan.layout_c != nullptr ? plan.layout_c : plan.layout_d;
  STITCH_CHECK_CUBLASLT(sink, cublasLtMatmul, libraries->cublaslt, plan.operation, &g.alpha, call.b,
                        plan.layout_a, call.a, plan.layout_b, &g.beta, call.c, layout_c, call.d,
                        plan.layout_d, &plan.algo, where.workspace, workspace_bytes, where.stream);
  return STITCH_OK;
}

} // namespace
} // namespace stitch::library::cuda

extern "C" int32_t stitch_library_gemm_on(const stitch_library_call* call,
                                          const stitch_gemm_desc* desc, const void* a,
                                          const void* b, const void* c, const void* bias, void* d,
                                          char* error, size_t error_size) {
  using namespace stitch::library;
  const ErrorSink sink("stitch_library_gemm", error, error_size);
  return run_guarded(sink, [&]() -> int32_t {
    if (call == nullptr) return sink.fail(STITCH_ERROR_INTERNAL, "null call");
    if (const std::string problem = check_gemm(desc, a, b, c, d); !problem.empty())
      return sink.fail(STITCH_ERROR_INTERNAL, problem);
    if (gemm_is_empty(*desc)) return STITCH_OK;
    stitch_gemm_desc g = *desc;
    stitch_library_call where = *call;
    if (g.k == 0) {
      // An empty sum, which cuBLASLt does not take: it computes act(beta * C + bias) as a
      // product of K = 1 of an m x 1 and a 1 x n of zeros (one region of max(m, n) zeros serves
      // both, every batch the same), set at the workspace's end on 256 bytes; the rest of the
      // workspace is left to the call.
      const uint64_t zero_bytes =
          (static_cast<uint64_t>(std::max(g.m, g.n)) * dtype_bytes(g.dtype) + 255u) &
          ~uint64_t{255u};
      const auto base = reinterpret_cast<uintptr_t>(call->workspace);
      const uint64_t usable = call->workspace_bytes - ((256u - base % 256u) % 256u);
      if (call->workspace == nullptr || call->workspace_bytes < 256u || zero_bytes > usable)
        return sink.fail(STITCH_ERROR_INVALID_ARGUMENT,
                         "a product with K = 0 needs " + std::to_string(zero_bytes) +
                             " workspace bytes of zeros, more than the call's " +
                             std::to_string(call->workspace_bytes) + " (" + describe_gemm(g) + ")");
      const uintptr_t zeros_at = (base + call->workspace_bytes - zero_bytes) & ~uintptr_t{255u};
      void* zeros = reinterpret_cast<void*>(zeros_at);
      const cudaError_t set = cudaMemsetAsync(zeros, 0, zero_bytes, call->stream);
      if (set != cudaSuccess)
        return sink.fail(STITCH_ERROR_CUDA, std::string("cudaMemsetAsync failed: ") +
                                                cudaGetErrorName(set) + " (" +
                                                cudaGetErrorString(set) + ")");
      a = zeros;
      b = zeros;
      g.k = 1;
      g.trans_a = 0;
      g.trans_b = 0;
      g.lda = 1;
      g.ldb = g.n;
      g.stride_a = 0;
      g.stride_b = 0;
      where.workspace_bytes = zeros_at - base;
    }
    // A failure of the K = 1 substitute says what it stands for.
    const ErrorSink run_sink = desc->k == 0
                                   ? sink.noted("a product of K = 0 (" + describe_gemm(*desc) +
                                                "), run as K = 1 over zeros")
                                   : sink;
    // When C is not read, cuBLASLt is given D in its place (beta 0, D's layout).
    const bool reads_c = gemm_reads_c(g);
    const cuda::GemmCall resolved{g,
                                  a,
                                  b,
                                  reads_c ? c : d,
                                  bias,
                                  d,
                                  reads_c ? g.ldc : g.ldd,
                                  reads_c ? g.stride_c : g.stride_d};
    return cuda::run_gemm(run_sink, where, resolved);
  });
}
