// descriptor_checks.h: what both targets' implementations of stitch_library.h share: the rules a
// GEMM or convolution descriptor must follow (checked identically on CUDA and host, so a
// descriptor the host target accepts is one the CUDA target accepts), the conv geometry
// normalized to three spatial dims, and how a failing call writes its message.
// Internal to src/runtime/library; depends on no CUDA library.
#pragma once

#include "stitch_library.h"

#include "stitch/stitch.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <utility>

namespace stitch::library {

// The caller's message buffer of one call, and the routine name messages start with.
class ErrorSink {
public:
  ErrorSink(const char* routine, char* buffer, std::size_t size)
      : routine_(routine), buffer_(buffer), size_(size) {}

  // Writes "<routine>: <message>" (truncated to the buffer, NUL-terminated), followed by the
  // note if there is one, " (<note>)"; returns `status`.
  int32_t fail(int32_t status, const std::string& message) const;
  // The same sink, its messages followed by `note` (what the call was run as, where that is
  // not what it was given).
  ErrorSink noted(std::string note) const {
    ErrorSink copy = *this;
    copy.note_ = std::move(note);
    return copy;
  }

private:
  const char* routine_;
  char* buffer_;
  std::size_t size_;
  std::string note_;
};

// Runs `body` (returning a status), turning an escaping exception into a status and message,
// so that none crosses the C interface.
template <typename Body> int32_t run_guarded(const ErrorSink& sink, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return sink.fail(STITCH_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& exception) {
    return sink.fail(STITCH_ERROR_INTERNAL, exception.what());
  } catch (...) {
    return sink.fail(STITCH_ERROR_INTERNAL, "unknown exception");
  }
}

// ---- Element types ----

// Whether `dtype` is a stitch_library_dtype.
bool dtype_is_known(int32_t dtype);
// Its element size in bytes (4 or 2; 0 for an unknown dtype).
std::size_t dtype_bytes(int32_t dtype);
// "float32", "float16", "bfloat16", or "dtype <n>" for an unknown one.
std::string dtype_text(int32_t dtype);

// ---- GEMM ----

// Empty when the call follows stitch_library.h's rules; otherwise the first rule it breaks.
std::string check_gemm(const stitch_gemm_desc* desc, const void* a, const void* b, const void* c,
                       const void* d);
// Whether a valid call has nothing to do (m, n or batch_count is 0).
bool gemm_is_empty(const stitch_gemm_desc& desc);
// Whether C is read (beta != 0).
bool gemm_reads_c(const stitch_gemm_desc& desc);
// "m=.. n=.. k=.. ..." for messages.
std::string describe_gemm(const stitch_gemm_desc& desc);

// ---- Convolution ----

enum class ConvDirection { Forward, Transposed };

inline constexpr int kSpatial = STITCH_CONV_MAX_SPATIAL;

// A valid descriptor's geometry with its spatial dims right-aligned in three (1-D W becomes
// 1 x 1 x W, 2-D H x W becomes 1 x H x W); the leading dims are size 1, kernel 1, stride 1,
// dilation 1, pad 0, which changes nothing. Y is [batch, out_channels, out[0..2]].
struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t groups = 1;
  int64_t in[kSpatial] = {1, 1, 1};
  int64_t out[kSpatial] = {1, 1, 1};
  int64_t kernel[kSpatial] = {1, 1, 1};
  int64_t stride[kSpatial] = {1, 1, 1};
  int64_t dilation[kSpatial] = {1, 1, 1};
  int64_t pad[kSpatial] = {0, 0, 0};

  int64_t in_positions() const { return in[0] * in[1] * in[2]; }
  int64_t out_positions() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_positions() const { return kernel[0] * kernel[1] * kernel[2]; }
};

std::string check_conv(ConvDirection direction, const stitch_conv_desc* desc, const void* x,
                       const void* w, const void* y);
// A forward convolution's epilogue (stitch_library_conv_epilogue_on): a bias, and a residual Z
// that is null or Y's shape not overlapping Y. Call after check_conv accepted `desc`.
std::string check_conv_epilogue(const stitch_conv_desc& desc, const void* bias, const void* z,
                                const void* y);
ConvGeometry conv_geometry(const stitch_conv_desc& desc);
// "conv 2-D x [1, 3, 8, 8] ..." for messages.
std::string describe_conv(ConvDirection direction, const stitch_conv_desc& desc);

} // namespace stitch::library
