// gemm_host.cpp: stitch_library_gemm_on for the host target: the blocked kernel of
// host_matmul.h plus the epilogue D = act(alpha * S + beta * C + bias), applied in that order
// (the order cuBLASLt applies it in) in fp32, one fp32 rounding after each step, and D rounded
// once to its dtype (host_elements.h). A and B are read as their dtype says: float16 and
// bfloat16 exactly, float32 as it is or, with allow_tf32, rounded to TF32.
#include "descriptor_checks.h"
#include "host_elements.h"
#include "host_matmul.h"

#include <cmath>

namespace stitch::library::host {
namespace {

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// One batch: D = act(alpha * op(A) @ op(B) + beta * C + bias). The pointers are the batch's.
void gemm_one(const stitch_gemm_desc& desc, const void* a, const void* b, const void* c,
              const void* bias, void* d) {
  const ElementLoad operands = operand_load(desc.dtype, desc.allow_tf32);
  const ElementLoad values = value_load(desc.dtype);
  const MatrixView a_view{a, desc.lda, desc.trans_a != 0, operands};
  const MatrixView b_view{b, desc.ldb, desc.trans_b != 0, operands};
  const bool reads_c = gemm_reads_c(desc);
  multiply(desc.m, desc.n, desc.k, a_view, b_view,
           [&](int64_t row, int64_t col0, const float* sums, int64_t cols) {
             float results[kPanelColumns];
             for (int64_t j = 0; j < cols; ++j) {
               float value = desc.alpha * sums[j];
               if (reads_c) value += desc.beta * read_element(values, c, row * desc.ldc + col0 + j);
               if (bias != nullptr) value += read_element(values, bias, col0 + j);
               if (desc.epilogue == STITCH_GEMM_EPILOGUE_RELU) value = value < 0.0f ? 0.0f : value;
               if (desc.epilogue == STITCH_GEMM_EPILOGUE_GELU_TANH) value = gelu_tanh(value);
               results[j] = value;
             }
             write_elements(desc.dtype, d, row * desc.ldd + col0, results, cols);
           });
}

} // namespace
} // namespace stitch::library::host

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
    const int32_t dtype = desc->dtype;
    // K = 0 (an empty sum) reads neither A nor B, which may then be null.
    const bool reads_ab = desc->k > 0;
    for (int64_t batch = 0; batch < desc->batch_count; ++batch) {
      host::gemm_one(*desc, reads_ab ? host::element_at(a, batch * desc->stride_a, dtype) : a,
                     reads_ab ? host::element_at(b, batch * desc->stride_b, dtype) : b,
                     gemm_reads_c(*desc) ? host::element_at(c, batch * desc->stride_c, dtype)
                                         : nullptr,
                     bias, host::element_at(d, batch * desc->stride_d, dtype));
    }
    return STITCH_OK;
  });
}
