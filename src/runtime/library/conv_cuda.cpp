// conv_cuda.cpp: stitch_library_conv_on and stitch_library_conv_transpose_on for the CUDA
// target, on cuDNN 9's legacy convolution API (Nd descriptors, NCHW-packed, or NHWC-packed
// with a KRSC filter (CUDNN_TENSOR_NHWC) for a channels-last descriptor).
//
//   forward     cudnnConvolutionForward: x = X, w = W [out, in / groups, k...], y = Y.
//   transposed  cudnnConvolutionBackwardData, the gradient of the forward convolution that
//               maps Y to X: dy = X, w = W [in, out / groups, k...] (ONNX's ConvTranspose
//               layout is exactly that forward filter), dx = Y. The output padding is in Y's
//               shape; cuDNN accepts it because forward-convolving Y gives back X's shape.
//   bias        cudnnAddTensor of a [1, C, 1, 1(, 1)] tensor after the convolution.
//   epilogue    (stitch_library_conv_epilogue_on) one cudnnConvolutionBiasActivationForward:
//               act(conv + Z + bias) with Z's scale 1 (0 without a residual), act Relu or the
//               identity; with the identity cuDNN fuses only the implicit-precomputed-GEMM
//               algorithm, so the plan takes that one. Where the fused call is unavailable
//               (that algorithm's workspace does not fit, or cuDNN refuses the call for this
//               geometry, remembered per plan), the same result comes from separate calls:
//               the convolution, cudnnAddTensor of the bias and of Z, cudnnActivationForward.
//
// cuDNN needs 4-D or 5-D tensors: a 1-D conv runs as 2-D with a unit height (kernel 1, stride
// 1, dilation 1, pad 0 there).
//
// Element types and precision: X, W, bias, Z and Y are the descriptor's dtype (CUDNN_DATA_FLOAT,
// _HALF or _BFLOAT16) and the convolution's compute type is always CUDNN_DATA_FLOAT (cuDNN's
// FLOAT, PSEUDO_HALF and PSEUDO_BFLOAT16 configurations: fp32 accumulation), scaling factors
// fp32. float32: CUDNN_FMA_MATH (no TF32) unless allow_tf32, then CUDNN_TENSOR_OP_MATH (TF32
// tensor cores). float16 and bfloat16: CUDNN_TENSOR_OP_MATH (their products are exact in fp32).
// The algorithm is the first result of cudnnGet*Algorithm_v7 that succeeds, fits in the
// workspace (asked again with the result's math type set on the descriptor), is deterministic (runs
// stay bitwise repeatable, as stitch.h promises), never converts down
// (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION would compute float32 or bfloat16 in float16) and, for
// strict float32, uses no tensor-op math. Descriptors and the choice are cached per context under
// the normalized geometry and dtype.
#include "cuda_checks.h"

#include <array>
#include <climits>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

// The legacy convolution API is deprecated in cuDNN 9 but is what this file is written to.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace stitch::library::cuda {
namespace {

using ConvKey = std::array<int64_t, 29>;

// Which call a plan is for: the plain convolution, or the fused epilogue with Relu or the
// identity (the identity restricts the algorithm).
enum class EpilogueMode { None = 0, Relu = 1, Identity = 2 };

struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr; // the op's input (dy when transposed)
  cudnnTensorDescriptor_t y = nullptr; // the op's output (dx when transposed)
  cudnnTensorDescriptor_t bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t activation = nullptr; // the epilogue's
  cudnnConvolutionFwdAlgo_t forward_algo = {};
  cudnnConvolutionBwdDataAlgo_t backward_data_algo = {};
  bool fused_epilogue = false; // try cudnnConvolutionBiasActivationForward

  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() {
    for (cudnnTensorDescriptor_t tensor : {x, y, bias})
      if (tensor != nullptr) cudnnDestroyTensorDescriptor(tensor);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
    if (activation != nullptr) cudnnDestroyActivationDescriptor(activation);
  }
};

} // namespace
} // namespace stitch::library::cuda

struct stitch_library_conv_plans {
  std::map<stitch::library::cuda::ConvKey, std::unique_ptr<stitch::library::cuda::ConvPlan>> plans;
};

namespace stitch::library::cuda {

void destroy_conv_plans(stitch_library_conv_plans* plans) { delete plans; }

namespace {

ConvKey key_of(ConvDirection direction, EpilogueMode mode, const stitch_conv_desc& desc,
               const ConvGeometry& g, uint64_t workspace_bytes) {
  ConvKey key = {direction == ConvDirection::Forward ? 0 : 1,
                 desc.spatial_rank,
                 desc.allow_tf32,
                 g.batch,
                 g.in_channels,
                 g.out_channels,
                 g.groups,
                 static_cast<int64_t>(workspace_bytes)};
  std::size_t next = 8;
  for (const int64_t* field : {g.in, g.out, g.kernel, g.stride, g.dilation, g.pad})
    for (int i = 0; i < kSpatial; ++i)
      key[next++] = field[i];
  key[next++] = static_cast<int64_t>(mode);
  key[next++] = desc.dtype;
  key[next] = desc.channels_last;
  return key;
}

// cuDNN's type of the descriptor's tensors.
cudnnDataType_t tensor_type(const stitch_conv_desc& desc) {
  switch (desc.dtype) {
  case STITCH_LIBRARY_FLOAT16:
    return CUDNN_DATA_HALF;
  case STITCH_LIBRARY_BFLOAT16:
    return CUDNN_DATA_BFLOAT16;
  default:
    return CUDNN_DATA_FLOAT;
  }
}

// Whether the convolution may run on tensor cores: the 2-byte types always, float32 as TF32
// only when allowed.
bool tensor_ops_allowed(const stitch_conv_desc& desc) {
  return desc.dtype != STITCH_LIBRARY_FLOAT32 || desc.allow_tf32 != 0;
}

// cuDNN's view of one convolution: tensors of rank nd = 2 + spatial, with the 1-D case as 2-D.
struct CudnnShape {
  int spatial = 0;                // 2 or 3
  std::vector<int> x, y, w, bias; // dims
  std::vector<int> pad, stride, dilation;
};

// Whether every value fits cuDNN's int.
bool values_fit_int(const std::vector<int64_t>& values) {
  for (int64_t value : values)
    if (value > INT_MAX) return false;
  return true;
}

// Whether a packed tensor's element count (its largest stride and offset) fits cuDNN's int.
bool elements_fit_int(const std::vector<int64_t>& dims) {
  int64_t elements = 1;
  for (int64_t dim : dims)
    if (__builtin_mul_overflow(elements, dim, &elements) || elements > INT_MAX) return false;
  return true;
}

bool cudnn_shape(ConvDirection direction, const stitch_conv_desc& desc, const ConvGeometry& g,
                 CudnnShape* shape) {
  shape->spatial = desc.spatial_rank == 3 ? 3 : 2;
  const int first = kSpatial - shape->spatial; // the right-aligned dims that are kept
  std::vector<int64_t> x = {g.batch, g.in_channels}, y = {g.batch, g.out_channels};
  std::vector<int64_t> w = direction == ConvDirection::Forward
                               ? std::vector<int64_t>{g.out_channels, g.in_channels / g.groups}
                               : std::vector<int64_t>{g.in_channels, g.out_channels / g.groups};
  std::vector<int64_t> bias = {1, g.out_channels};
  std::vector<int64_t> pad, stride, dilation;
  for (int i = first; i < kSpatial; ++i) {
    x.push_back(g.in[i]);
    y.push_back(g.out[i]);
    w.push_back(g.kernel[i]);
    bias.push_back(1);
    pad.push_back(g.pad[i]);
    stride.push_back(g.stride[i]);
    dilation.push_back(g.dilation[i]);
  }
  for (const auto* dims : {&x, &y, &w})
    if (!elements_fit_int(*dims)) return false;
  for (const auto* values : {&pad, &stride, &dilation})
    if (!values_fit_int(*values)) return false;
  auto narrow = [](const std::vector<int64_t>& values) {
    return std::vector<int>(values.begin(), values.end());
  };
  shape->x = narrow(x);
  shape->y = narrow(y);
  shape->w = narrow(w);
  shape->bias = narrow(bias);
  shape->pad = narrow(pad);
  shape->stride = narrow(stride);
  shape->dilation = narrow(dilation);
  return true;
}

// A tensor descriptor of `dims` ([N, C, spatial...]) stored packed, channels-first or, with
// `channels_last`, as [N, spatial..., C] (the strides say which; cuDNN reads NHWC-packed
// strides as its NHWC layout).
int32_t make_tensor(const ErrorSink& sink, cudnnTensorDescriptor_t* tensor, cudnnDataType_t type,
                    const std::vector<int>& dims, bool channels_last = false) {
  std::vector<int> strides(dims.size(), 1);
  if (channels_last) {
    int step = dims[1]; // the channel axis is innermost
    for (std::size_t i = dims.size() - 1; i >= 2; --i) {
      strides[i] = step;
      step *= dims[i];
    }
    strides[0] = step;
  } else {
    for (std::size_t i = dims.size() - 1; i > 0; --i)
      strides[i - 1] = strides[i] * dims[i];
  }
  STITCH_CHECK_CUDNN(sink, cudnnCreateTensorDescriptor, tensor);
  STITCH_CHECK_CUDNN(sink, cudnnSetTensorNdDescriptor, *tensor, type, static_cast<int>(dims.size()),
                     dims.data(), strides.data());
  return STITCH_OK;
}

// Whether a heuristic result is one this library may run.
template <typename Perf>
bool acceptable(const Perf& perf, uint64_t workspace_bytes, bool tensor_ops) {
  if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > workspace_bytes) return false;
  if (perf.determinism != CUDNN_DETERMINISTIC) return false;
  if (perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
  return tensor_ops || perf.mathType != CUDNN_TENSOR_OP_MATH;
}

// Whether a heuristic result runs in `workspace_bytes` as it will be called: the result is for
// its own math type, which the convolution descriptor takes on (cuDNN runs the descriptor's
// math type, and a result measured for another can need more workspace than it reports: seen on
// an H200 as cudnnConvolutionForward's "workSpaceSizeInBytes < requiredWorkspace" for a float16
// ResNet-50), and the workspace is asked again for exactly that call.
template <typename WorkspaceQuery>
bool runs_within(ConvPlan& plan, cudnnMathType_t math, uint64_t workspace_bytes,
                 WorkspaceQuery query) {
  if (cudnnSetConvolutionMathType(plan.conv, math) != CUDNN_STATUS_SUCCESS) return false;
  size_t needed = 0;
  return query(&needed) == CUDNN_STATUS_SUCCESS && needed <= workspace_bytes;
}

int32_t choose_algorithm(const ErrorSink& sink, cudnnHandle_t handle, ConvDirection direction,
                         EpilogueMode mode, const stitch_conv_desc& desc, uint64_t workspace_bytes,
                         ConvPlan& plan) {
  const bool tensor_ops = tensor_ops_allowed(desc);
  int returned = 0;
  plan.fused_epilogue = mode != EpilogueMode::None;
  if (mode == EpilogueMode::Identity) {
    // The one algorithm cuDNN fuses an identity activation with (deterministic, FMA math);
    // if its workspace does not fit, the epilogue runs as separate calls after any algorithm.
    size_t needed = 0;
    const cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
        handle, plan.x, plan.w, plan.conv, plan.y, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
        &needed);
    if (status == CUDNN_STATUS_SUCCESS && needed <= workspace_bytes) {
      plan.forward_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
      return STITCH_OK;
    }
    plan.fused_epilogue = false;
  }
  if (direction == ConvDirection::Forward) {
    cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
    STITCH_CHECK_CUDNN(sink, cudnnGetConvolutionForwardAlgorithm_v7, handle, plan.x, plan.w,
                       plan.conv, plan.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results);
    for (int i = 0; i < returned; ++i) {
      if (!acceptable(results[i], workspace_bytes, tensor_ops)) continue;
      if (!runs_within(plan, results[i].mathType, workspace_bytes, [&](size_t* needed) {
            return cudnnGetConvolutionForwardWorkspaceSize(handle, plan.x, plan.w, plan.conv,
                                                           plan.y, results[i].algo, needed);
          }))
        continue;
      plan.forward_algo = results[i].algo;
      return STITCH_OK;
    }
  } else {
    cudnnConvolutionBwdDataAlgoPerf_t results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {};
    STITCH_CHECK_CUDNN(sink, cudnnGetConvolutionBackwardDataAlgorithm_v7, handle, plan.w, plan.x,
                       plan.conv, plan.y, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned,
                       results);
    for (int i = 0; i < returned; ++i) {
      if (!acceptable(results[i], workspace_bytes, tensor_ops)) continue;
      if (!runs_within(plan, results[i].mathType, workspace_bytes, [&](size_t* needed) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, plan.w, plan.x, plan.conv,
                                                                plan.y, results[i].algo, needed);
          }))
        continue;
      plan.backward_data_algo = results[i].algo;
      return STITCH_OK;
    }
  }
  return sink.fail(STITCH_ERROR_CUDNN,
                   std::string(direction == ConvDirection::Forward
                                   ? "cudnnGetConvolutionForwardAlgorithm_v7"
                                   : "cudnnGetConvolutionBackwardDataAlgorithm_v7") +
                       " offered no deterministic algorithm within " +
                       std::to_string(workspace_bytes) + " workspace bytes for " +
                       describe_conv(direction, desc));
}

int32_t build_plan(const ErrorSink& sink, cudnnHandle_t handle, ConvDirection direction,
                   EpilogueMode mode, const stitch_conv_desc& desc, const ConvGeometry& g,
                   uint64_t workspace_bytes, ConvPlan& plan) {
  CudnnShape shape;
  if (!cudnn_shape(direction, desc, g, &shape))
    return sink.fail(STITCH_ERROR_CUDNN,
                     "a tensor exceeds cuDNN's 32-bit sizes in " + describe_conv(direction, desc));
  const cudnnDataType_t type = tensor_type(desc);
  const bool channels_last = desc.channels_last != 0;
  for (auto [tensor, dims, last] :
       {std::tuple{&plan.x, &shape.x, channels_last}, std::tuple{&plan.y, &shape.y, channels_last},
        std::tuple{&plan.bias, &shape.bias, false}})
    if (int32_t status = make_tensor(sink, tensor, type, *dims, last); status != STITCH_OK)
      return status;
  STITCH_CHECK_CUDNN(sink, cudnnCreateFilterDescriptor, &plan.w);
  STITCH_CHECK_CUDNN(sink, cudnnSetFilterNdDescriptor, plan.w, type,
                     channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                     static_cast<int>(shape.w.size()), shape.w.data());
  STITCH_CHECK_CUDNN(sink, cudnnCreateConvolutionDescriptor, &plan.conv);
  STITCH_CHECK_CUDNN(sink, cudnnSetConvolutionNdDescriptor, plan.conv, shape.spatial,
                     shape.pad.data(), shape.stride.data(), shape.dilation.data(),
                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  STITCH_CHECK_CUDNN(sink, cudnnSetConvolutionGroupCount, plan.conv, static_cast<int>(g.groups));
  STITCH_CHECK_CUDNN(sink, cudnnSetConvolutionMathType, plan.conv,
                     tensor_ops_allowed(desc) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH);

  // cuDNN's own shape arithmetic must agree with the descriptor checks: the forward
  // convolution of the larger tensor (X forward, Y transposed) gives the other.
  const bool forward = direction == ConvDirection::Forward;
  std::vector<int> derived(shape.x.size());
  STITCH_CHECK_CUDNN(sink, cudnnGetConvolutionNdForwardOutputDim, plan.conv,
                     forward ? plan.x : plan.y, plan.w, static_cast<int>(derived.size()),
                     derived.data());
  if (derived != (forward ? shape.y : shape.x))
    return sink.fail(STITCH_ERROR_INTERNAL,
                     "cuDNN derives different output dims for " + describe_conv(direction, desc));
  if (mode != EpilogueMode::None) {
    STITCH_CHECK_CUDNN(sink, cudnnCreateActivationDescriptor, &plan.activation);
    STITCH_CHECK_CUDNN(sink, cudnnSetActivationDescriptor, plan.activation,
                       mode == EpilogueMode::Relu ? CUDNN_ACTIVATION_RELU
                                                  : CUDNN_ACTIVATION_IDENTITY,
                       CUDNN_PROPAGATE_NAN, 0.0);
  }
  return choose_algorithm(sink, handle, direction, mode, desc, workspace_bytes, plan);
}

// The fused epilogue of stitch_library_conv_epilogue_on; `active` false for the plain calls.
struct Epilogue {
  bool active = false;
  const void* z = nullptr;
  bool relu = false;
};

int32_t run_conv(const ErrorSink& sink, ConvDirection direction, const stitch_library_call& where,
                 const stitch_conv_desc& desc, const void* x, const void* w, const void* bias,
                 const Epilogue& epilogue, void* y) {
  stitch_abi_libraries* libraries = where.libraries;
  if (libraries == nullptr || libraries->cudnn == nullptr)
    return sink.fail(STITCH_ERROR_INTERNAL,
                     "no cuDNN handle: the context's stitch_libraries_create did not run");
  const ConvGeometry g = conv_geometry(desc);
  const uint64_t workspace_bytes = where.workspace != nullptr ? where.workspace_bytes : 0;

  if (libraries->conv_plans == nullptr) libraries->conv_plans = new stitch_library_conv_plans;
  auto& plans = libraries->conv_plans->plans;
  const EpilogueMode mode = !epilogue.active ? EpilogueMode::None
                            : epilogue.relu  ? EpilogueMode::Relu
                                             : EpilogueMode::Identity;
  const ConvKey key = key_of(direction, mode, desc, g, workspace_bytes);
  auto found = plans.find(key);
  if (found == plans.end()) {
    auto built = std::make_unique<ConvPlan>();
    if (int32_t status =
            build_plan(sink, libraries->cudnn, direction, mode, desc, g, workspace_bytes, *built);
        status != STITCH_OK)
      return status;
    found = plans.emplace(key, std::move(built)).first;
  }
  ConvPlan& plan = *found->second;

  const float one = 1.0f, zero = 0.0f;
  cudnnHandle_t handle = libraries->cudnn;
  STITCH_CHECK_CUDNN(sink, cudnnSetStream, handle, where.stream);
  if (plan.fused_epilogue) {
    // Without a residual Z's scale is 0 and Y stands in for it (not read).
    const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
        handle, &one, plan.x, x, plan.w, w, plan.conv, plan.forward_algo, where.workspace,
        workspace_bytes, epilogue.z != nullptr ? &one : &zero, plan.y,
        epilogue.z != nullptr ? epilogue.z : y, plan.bias, bias, plan.activation, plan.y, y);
    if (status == CUDNN_STATUS_SUCCESS) return STITCH_OK;
    if (status != CUDNN_STATUS_NOT_SUPPORTED && status != CUDNN_STATUS_BAD_PARAM)
      return sink.fail(STITCH_ERROR_CUDNN,
                       cudnn_failure("cudnnConvolutionBiasActivationForward", status));
    // Refused for this geometry: separate calls from now on, on the algorithm the heuristic
    // picks for the plain convolution (the identity epilogue had fixed one for the fused call).
    plan.fused_epilogue = false;
    if (mode == EpilogueMode::Identity)
      if (int32_t chosen = choose_algorithm(sink, handle, direction, EpilogueMode::None, desc,
                                            workspace_bytes, plan);
          chosen != STITCH_OK)
        return chosen;
  }
  if (direction == ConvDirection::Forward) {
    STITCH_CHECK_CUDNN(sink, cudnnConvolutionForward, handle, &one, plan.x, x, plan.w, w, plan.conv,
                       plan.forward_algo, where.workspace, workspace_bytes, &zero, plan.y, y);
  } else {
    STITCH_CHECK_CUDNN(sink, cudnnConvolutionBackwardData, handle, &one, plan.w, w, plan.x, x,
                       plan.conv, plan.backward_data_algo, where.workspace, workspace_bytes, &zero,
                       plan.y, y);
  }
  if (bias != nullptr)
    STITCH_CHECK_CUDNN(sink, cudnnAddTensor, handle, &one, plan.bias, bias, &one, plan.y, y);
  // The epilogue as separate calls (the fused one unavailable), in the fused call's order.
  if (epilogue.z != nullptr)
    STITCH_CHECK_CUDNN(sink, cudnnAddTensor, handle, &one, plan.y, epilogue.z, &one, plan.y, y);
  if (mode == EpilogueMode::Relu)
    STITCH_CHECK_CUDNN(sink, cudnnActivationForward, handle, plan.activation, &one, plan.y, y,
                       &zero, plan.y, y);
  return STITCH_OK;
}

int32_t conv_entry(const char* routine, ConvDirection direction, const stitch_library_call* call,
                   const stitch_conv_desc* desc, const void* x, const void* w, const void* bias,
                   const Epilogue& epilogue, void* y, char* error, size_t error_size) {
  const ErrorSink sink(routine, error, error_size);
  return run_guarded(sink, [&]() -> int32_t {
    if (call == nullptr) return sink.fail(STITCH_ERROR_INTERNAL, "null call");
    if (const std::string problem = check_conv(direction, desc, x, w, y); !problem.empty())
      return sink.fail(STITCH_ERROR_INTERNAL, problem);
    if (epilogue.active)
      if (const std::string problem = check_conv_epilogue(*desc, bias, epilogue.z, y);
          !problem.empty())
        return sink.fail(STITCH_ERROR_INTERNAL, problem);
    if (desc->batch == 0) return STITCH_OK;
    return run_conv(sink, direction, *call, *desc, x, w, bias, epilogue, y);
  });
}

} // namespace
} // namespace stitch::library::cuda

extern "C" int32_t stitch_library_conv_on(const stitch_library_call* call,
                                          const stitch_conv_desc* desc, const void* x,
                                          const void* w, const void* bias, void* y, char* error,
                                          size_t error_size) {
  return stitch::library::cuda::conv_entry("stitch_library_conv",
                                           stitch::library::ConvDirection::Forward, call, desc, x,
                                           w, bias, {}, y, error, error_size);
}

extern "C" int32_t stitch_library_conv_epilogue_on(const stitch_library_call* call,
                                                   const stitch_conv_desc* desc, const void* x,
                                                   const void* w, const void* bias, const void* z,
                                                   int32_t relu, void* y, char* error,
                                                   size_t error_size) {
  return stitch::library::cuda::conv_entry("stitch_library_conv_epilogue",
                                           stitch::library::ConvDirection::Forward, call, desc, x,
                                           w, bias, {true, z, relu != 0}, y, error, error_size);
}

extern "C" int32_t stitch_library_conv_transpose_on(const stitch_library_call* call,
                                                    const stitch_conv_desc* desc, const void* x,
                                                    const void* w, const void* bias, void* y,
                                                    char* error, size_t error_size) {
  return stitch::library::cuda::conv_entry("stitch_library_conv_transpose",
                                           stitch::library::ConvDirection::Transposed, call, desc,
                                           x, w, bias, {}, y, error, error_size);
}
