// A hand-written stand-in for a library stitchc compiles, for the host target: it
// implements include/stitch/stitch.h for one tiny model so stitch-run can be tested end to
// end without the compiler or a GPU.
//
//   input   x                float32 [2,3]
//   output  y                float32 [2,3]   2 * x + 1
//   output  idx              int64   [2]     argmax of each row of x (first on ties)
//   output  positive/mask:0  bool    [2,3]   x > 0 (a name that is no safe file name)
//
// Built with FAKE_MODEL_HALF it is a model with 16-bit float inputs and outputs instead,
// negating each value exactly (its sign bit) so that no conversion is involved:
//
//   input   h  float16  [2,3]      output  neg_h  float16  [2,3]   -h
//   input   b  bfloat16 [2,3]      output  neg_b  bfloat16 [2,3]   -b
//
// Like a real library it checks every tensor handed to stitch_run and reports misuse
// through stitch_last_error. Built with FAKE_MODEL_API_VERSION=N it claims another API
// version, and with FAKE_MODEL_RUN_FAILS every stitch_run fails as a CUDA error would, to
// test that stitch-run refuses the one and reports the other.
#include <cstring>
#include <new>
#include <string>

#include "stitch/stitch.h"

#ifndef FAKE_MODEL_API_VERSION
#define FAKE_MODEL_API_VERSION STITCH_API_VERSION
#endif

#ifdef FAKE_MODEL_HALF
constexpr size_t kNumInputs = 2;
constexpr size_t kNumOutputs = 2;
#else
constexpr size_t kNumInputs = 1;
constexpr size_t kNumOutputs = 3;
#endif

struct stitch_model {
  stitch_tensor_info inputs[kNumInputs];
  stitch_tensor_info outputs[kNumOutputs];
};

struct stitch_context {
  stitch_model* model;
};

namespace {

thread_local std::string last_error;

stitch_status fail(stitch_status status, const std::string& message) {
  last_error = message;
  return status;
}

stitch_tensor_info make_info(const char* name, stitch_dtype dtype, int32_t rank,
                             const int64_t* dims, uint64_t element_size) {
  stitch_tensor_info info{};
  info.name = name;
  info.dtype = dtype;
  info.rank = rank;
  uint64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    info.dims[i] = dims[i];
    count *= static_cast<uint64_t>(dims[i]);
  }
  info.bytes = count * element_size;
  return info;
}

stitch_status check_tensor(const stitch_tensor& tensor, const stitch_tensor_info& info) {
  std::string what = std::string("tensor '") + info.name + "'";
  if (tensor.data == nullptr) return fail(STITCH_ERROR_INVALID_ARGUMENT, what + " has no data");
  if (tensor.dtype != info.dtype || tensor.rank != info.rank || tensor.bytes != info.bytes ||
      (tensor.rank > 0 && tensor.dims == nullptr))
    return fail(STITCH_ERROR_SHAPE_MISMATCH, what + " has the wrong dtype, rank or size");
  for (int32_t i = 0; i < info.rank; ++i) {
    if (tensor.dims[i] != info.dims[i])
      return fail(STITCH_ERROR_SHAPE_MISMATCH, what + " has the wrong dims");
  }
  return STITCH_OK;
}

void compute(const float* x, float* y, int64_t* idx, uint8_t* mask) {
  for (int row = 0; row < 2; ++row) {
    int64_t best = 0;
    for (int col = 0; col < 3; ++col) {
      float value = x[row * 3 + col];
      y[row * 3 + col] = 2.0f * value + 1.0f;
      mask[row * 3 + col] = value > 0.0f ? 1 : 0;
      if (value > x[row * 3 + best]) best = col;
    }
    idx[row] = best;
  }
}

#ifdef FAKE_MODEL_HALF
void negate_16_bit(const void* in, void* out) {
  for (int i = 0; i < 6; ++i)
    static_cast<uint16_t*>(out)[i] = static_cast<const uint16_t*>(in)[i] ^ 0x8000u;
}
#endif

} // namespace

extern "C" {

STITCH_API const char* stitch_target(void) { return "host"; }
STITCH_API int stitch_api_version(void) { return FAKE_MODEL_API_VERSION; }

STITCH_API stitch_status stitch_library_build_info(stitch_build_info* out_info) {
  if (out_info == nullptr) return STITCH_ERROR_INVALID_ARGUMENT;
  *out_info = {"0.0.0-fake", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
               "fake.onnx",  "host",
               "",           "none",
               "fp32",       "fake_model.cpp",
               "stitch"};
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_create(stitch_model** out_model) {
  if (out_model == nullptr) return fail(STITCH_ERROR_INVALID_ARGUMENT, "out_model is null");
  auto* model = new (std::nothrow) stitch_model{};
  if (model == nullptr) return fail(STITCH_ERROR_OUT_OF_MEMORY, "no memory for the model");
  const int64_t matrix[2] = {2, 3};
  const int64_t rows[1] = {2};
#ifdef FAKE_MODEL_HALF
  (void)rows;
  model->inputs[0] = make_info("h", STITCH_FLOAT16, 2, matrix, 2);
  model->inputs[1] = make_info("b", STITCH_BFLOAT16, 2, matrix, 2);
  model->outputs[0] = make_info("neg_h", STITCH_FLOAT16, 2, matrix, 2);
  model->outputs[1] = make_info("neg_b", STITCH_BFLOAT16, 2, matrix, 2);
#else
  model->inputs[0] = make_info("x", STITCH_FLOAT32, 2, matrix, 4);
  model->outputs[0] = make_info("y", STITCH_FLOAT32, 2, matrix, 4);
  model->outputs[1] = make_info("idx", STITCH_INT64, 1, rows, 8);
  model->outputs[2] = make_info("positive/mask:0", STITCH_BOOL, 2, matrix, 1);
#endif
  *out_model = model;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_destroy(stitch_model* model) {
  delete model;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_num_inputs(const stitch_model* model, size_t* out_count) {
  if (model == nullptr || out_count == nullptr) return fail(STITCH_ERROR_INVALID_ARGUMENT, "null");
  *out_count = kNumInputs;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_num_outputs(const stitch_model* model, size_t* out_count) {
  if (model == nullptr || out_count == nullptr) return fail(STITCH_ERROR_INVALID_ARGUMENT, "null");
  *out_count = kNumOutputs;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_input(const stitch_model* model, size_t index,
                                            stitch_tensor_info* out_info) {
  if (model == nullptr || out_info == nullptr || index >= kNumInputs)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "bad input index");
  *out_info = model->inputs[index];
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_output(const stitch_model* model, size_t index,
                                             stitch_tensor_info* out_info) {
  if (model == nullptr || out_info == nullptr || index >= kNumOutputs)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "bad output index");
  *out_info = model->outputs[index];
  return STITCH_OK;
}

// Built without debug taps.
STITCH_API stitch_status stitch_model_num_taps(const stitch_model* model, size_t* out_count) {
  if (model == nullptr || out_count == nullptr) return fail(STITCH_ERROR_INVALID_ARGUMENT, "null");
  *out_count = 0;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_tap(const stitch_model*, size_t, stitch_tap_info*) {
  return fail(STITCH_ERROR_INVALID_ARGUMENT, "the model has no debug taps");
}

STITCH_API stitch_status stitch_context_read_tap(stitch_context*, size_t, void*, uint64_t) {
  return fail(STITCH_ERROR_INVALID_ARGUMENT, "the model has no debug taps");
}

STITCH_API stitch_status stitch_context_create(stitch_model* model, stitch_context** out_context) {
  if (model == nullptr || out_context == nullptr)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "null");
  *out_context = new (std::nothrow) stitch_context{model};
  if (*out_context == nullptr) return fail(STITCH_ERROR_OUT_OF_MEMORY, "no memory");
  return STITCH_OK;
}

STITCH_API stitch_status stitch_context_destroy(stitch_context* context) {
  delete context;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_run(stitch_context* context, const stitch_tensor* inputs,
                                    size_t num_inputs, const stitch_tensor* outputs,
                                    size_t num_outputs, void* stream) {
  if (context == nullptr || inputs == nullptr || outputs == nullptr)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "null context or tensors");
  if (num_inputs != kNumInputs || num_outputs != kNumOutputs)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "wrong number of inputs or outputs");
#ifdef FAKE_MODEL_RUN_FAILS
  return fail(STITCH_ERROR_CUDA, "simulated failure: cudaGraphLaunch: an illegal memory access");
#endif
  const stitch_model* model = context->model;
  for (size_t i = 0; i < kNumInputs; ++i) {
    if (stitch_status s = check_tensor(inputs[i], model->inputs[i]); s != STITCH_OK) return s;
  }
  for (size_t i = 0; i < kNumOutputs; ++i) {
    if (stitch_status s = check_tensor(outputs[i], model->outputs[i]); s != STITCH_OK) return s;
  }
#ifdef FAKE_MODEL_HALF
  negate_16_bit(inputs[0].data, outputs[0].data);
  negate_16_bit(inputs[1].data, outputs[1].data);
  return STITCH_OK;
#endif
  compute(static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data),
          static_cast<int64_t*>(outputs[1].data), static_cast<uint8_t*>(outputs[2].data));
  return STITCH_OK;
}

STITCH_API const char* stitch_status_name(stitch_status status) {
  switch (status) {
  case STITCH_OK:
    return "STITCH_OK";
  case STITCH_ERROR_INVALID_ARGUMENT:
    return "STITCH_ERROR_INVALID_ARGUMENT";
  case STITCH_ERROR_SHAPE_MISMATCH:
    return "STITCH_ERROR_SHAPE_MISMATCH";
  case STITCH_ERROR_CUDA:
    return "STITCH_ERROR_CUDA";
  case STITCH_ERROR_CUBLAS:
    return "STITCH_ERROR_CUBLAS";
  case STITCH_ERROR_CUDNN:
    return "STITCH_ERROR_CUDNN";
  case STITCH_ERROR_OUT_OF_MEMORY:
    return "STITCH_ERROR_OUT_OF_MEMORY";
  case STITCH_ERROR_INTERNAL:
    return "STITCH_ERROR_INTERNAL";
  }
  return "STITCH_ERROR_UNKNOWN";
}

STITCH_API const char* stitch_last_error(void) { return last_error.c_str(); }

} // extern "C"
