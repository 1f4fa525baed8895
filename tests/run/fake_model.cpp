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
// Built with FAKE_MODEL_SYMBOLIC it is the first model over symbolic dims (API version 4:
// stitch_model_num_symbols ... stitch_model_output_shapes, which the other variants do not
// export), batch in 1..4 and seq in 1..5:
//
//   input   x  float32 [batch,seq]   outputs  y [batch,seq], idx [batch], positive/mask:0
//                                             [batch,seq], computed as above row by row
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

#ifdef FAKE_MODEL_SYMBOLIC
constexpr int64_t kMaxBatch = 4;
constexpr int64_t kMaxSeq = 5;
#endif

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

void compute(const float* x, float* y, int64_t* idx, uint8_t* mask, int64_t rows, int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    int64_t best = 0;
    for (int64_t col = 0; col < cols; ++col) {
      float value = x[row * cols + col];
      y[row * cols + col] = 2.0f * value + 1.0f;
      mask[row * cols + col] = value > 0.0f ? 1 : 0;
      if (value > x[row * cols + best]) best = col;
    }
    idx[row] = best;
  }
}

#ifdef FAKE_MODEL_SYMBOLIC
// The outputs' infos for an x of `dims`, refusing what the real runtime refuses.
stitch_status symbolic_outputs(const stitch_model* model, const stitch_tensor& x,
                               stitch_tensor_info* out) {
  if (x.dtype != STITCH_FLOAT32 || x.rank != 2 || x.dims == nullptr)
    return fail(STITCH_ERROR_SHAPE_MISMATCH, "input 0 ('x'): the model expects float32[batch,seq]");
  const int64_t batch = x.dims[0], seq = x.dims[1];
  if (batch < 1 || batch > kMaxBatch)
    return fail(STITCH_ERROR_SHAPE_MISMATCH, "input 0 ('x'): dim 0 ('batch') must be in 1..4");
  if (seq < 1 || seq > kMaxSeq)
    return fail(STITCH_ERROR_SHAPE_MISMATCH, "input 0 ('x'): dim 1 ('seq') must be in 1..5");
  const int64_t matrix[2] = {batch, seq};
  out[0] = make_info(model->outputs[0].name, STITCH_FLOAT32, 2, matrix, 4);
  out[1] = make_info(model->outputs[1].name, STITCH_INT64, 1, matrix, 8);
  out[2] = make_info(model->outputs[2].name, STITCH_BOOL, 2, matrix, 1);
  return STITCH_OK;
}
#endif

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
#if defined(FAKE_MODEL_SYMBOLIC)
  // Symbolic dims are -1, and the bytes are the sizes at the maxima.
  const int64_t largest[2] = {kMaxBatch, kMaxSeq};
  model->inputs[0] = make_info("x", STITCH_FLOAT32, 2, largest, 4);
  model->outputs[0] = make_info("y", STITCH_FLOAT32, 2, largest, 4);
  model->outputs[1] = make_info("idx", STITCH_INT64, 1, largest, 8);
  model->outputs[2] = make_info("positive/mask:0", STITCH_BOOL, 2, largest, 1);
  for (stitch_tensor_info* info :
       {&model->inputs[0], &model->outputs[0], &model->outputs[1], &model->outputs[2]})
    for (int32_t d = 0; d < info->rank; ++d)
      info->dims[d] = -1;
  (void)matrix;
  (void)rows;
#elif defined(FAKE_MODEL_HALF)
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
#ifdef FAKE_MODEL_SYMBOLIC
  stitch_model at_shape = *model;
  if (stitch_status s = symbolic_outputs(model, inputs[0], at_shape.outputs); s != STITCH_OK)
    return s;
  const int64_t x_dims[2] = {inputs[0].dims[0], inputs[0].dims[1]};
  at_shape.inputs[0] = make_info("x", STITCH_FLOAT32, 2, x_dims, 4);
  model = &at_shape;
#endif
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
          static_cast<int64_t*>(outputs[1].data), static_cast<uint8_t*>(outputs[2].data),
          model->inputs[0].dims[0], model->inputs[0].dims[1]);
  return STITCH_OK;
}

#ifdef FAKE_MODEL_SYMBOLIC
STITCH_API stitch_status stitch_model_num_symbols(const stitch_model* model, size_t* out_count) {
  if (model == nullptr || out_count == nullptr) return fail(STITCH_ERROR_INVALID_ARGUMENT, "null");
  *out_count = 2;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_symbol(const stitch_model* model, size_t index,
                                             stitch_symbol_info* out_info) {
  if (model == nullptr || out_info == nullptr || index >= 2)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "bad symbol index");
  *out_info = index == 0 ? stitch_symbol_info{"batch", 1, kMaxBatch}
                         : stitch_symbol_info{"seq", 1, kMaxSeq};
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_input_symbols(const stitch_model* model, size_t index,
                                                    int32_t* out_symbols) {
  if (model == nullptr || out_symbols == nullptr || index >= kNumInputs)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "bad input index");
  out_symbols[0] = 0;
  out_symbols[1] = 1;
  return STITCH_OK;
}

STITCH_API stitch_status stitch_model_output_shapes(const stitch_model* model,
                                                    const stitch_tensor* inputs, size_t num_inputs,
                                                    stitch_tensor_info* out_outputs,
                                                    size_t num_outputs) {
  if (model == nullptr || inputs == nullptr || out_outputs == nullptr)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "null model or tensors");
  if (num_inputs != kNumInputs || num_outputs != kNumOutputs)
    return fail(STITCH_ERROR_INVALID_ARGUMENT, "wrong number of inputs or outputs");
  return symbolic_outputs(model, inputs[0], out_outputs);
}
#endif

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
