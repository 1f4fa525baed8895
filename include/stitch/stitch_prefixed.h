/* stitch_prefixed.h — the C API of a library built with `stitchc --symbol-prefix PREFIX`.
 *
 * Such a library exports every function of stitch.h with `stitch` replaced by PREFIX
 * (bert_model_create, bert_run, bert_last_error, ...), so that several models link into one
 * program side by side. Declare one model's functions by defining STITCH_SYMBOL_PREFIX first;
 * this header may be included once per prefix:
 *
 *     #define STITCH_SYMBOL_PREFIX bert
 *     #include <stitch/stitch_prefixed.h>
 *     #undef STITCH_SYMBOL_PREFIX
 *     #define STITCH_SYMBOL_PREFIX resnet
 *     #include <stitch/stitch_prefixed.h>
 *
 *     stitch_model* model;
 *     bert_model_create(&model);
 *
 * The types (stitch_model, stitch_tensor, stitch_status, ...) are stitch.h's.
 *
 * STITCH_API_FUNCTIONS(X) lists every function of the C API once, as
 * X(return type, name without the leading "stitch_", parameter list); stitchc derives the
 * exported names from it.
 */
#include "stitch/stitch.h"

#ifndef STITCH_API_FUNCTIONS
/* clang-format off */
#define STITCH_API_FUNCTIONS(X)                                                                  \
  X(const char*, target, (void))                                                                 \
  X(int, api_version, (void))                                                                    \
  X(stitch_status, library_build_info, (stitch_build_info* out_info))                            \
  X(stitch_status, model_create, (stitch_model** out_model))                                     \
  X(stitch_status, model_destroy, (stitch_model* model))                                         \
  X(stitch_status, model_num_inputs, (const stitch_model* model, size_t* out_count))             \
  X(stitch_status, model_num_outputs, (const stitch_model* model, size_t* out_count))            \
  X(stitch_status, model_input,                                                                  \
    (const stitch_model* model, size_t index, stitch_tensor_info* out_info))                     \
  X(stitch_status, model_output,                                                                 \
    (const stitch_model* model, size_t index, stitch_tensor_info* out_info))                     \
  X(stitch_status, model_num_taps, (const stitch_model* model, size_t* out_count))               \
  X(stitch_status, model_tap, (const stitch_model* model, size_t index, stitch_tap_info* out_info)) \
  X(stitch_status, model_input_index,                                                            \
    (const stitch_model* model, const char* name, size_t* out_index))                            \
  X(stitch_status, model_output_index,                                                           \
    (const stitch_model* model, const char* name, size_t* out_index))                            \
  X(stitch_status, model_device, (const stitch_model* model, int* out_device))                   \
  X(stitch_status, model_context_memory, (const stitch_model* model, uint64_t* out_bytes))       \
  X(stitch_status, model_num_symbols, (const stitch_model* model, size_t* out_count))            \
  X(stitch_status, model_symbol,                                                                 \
    (const stitch_model* model, size_t index, stitch_symbol_info* out_info))                     \
  X(stitch_status, model_input_symbols,                                                          \
    (const stitch_model* model, size_t index, int32_t* out_symbols))                             \
  X(stitch_status, model_output_symbols,                                                         \
    (const stitch_model* model, size_t index, int32_t* out_symbols))                             \
  X(stitch_status, model_output_shapes,                                                          \
    (const stitch_model* model, const stitch_tensor* inputs, size_t num_inputs,                  \
     stitch_tensor_info* out_outputs, size_t num_outputs))                                       \
  X(stitch_status, context_create, (stitch_model* model, stitch_context** out_context))          \
  X(stitch_status, context_create_in_memory,                                                     \
    (stitch_model* model, void* memory, uint64_t bytes, stitch_context** out_context))           \
  X(stitch_status, model_context_memory_for,                                                     \
    (const stitch_model* model, const int64_t* max_symbols, size_t num_symbols,                  \
     uint64_t* out_bytes))                                                                       \
  X(stitch_status, context_create_for,                                                           \
    (stitch_model* model, const int64_t* max_symbols, size_t num_symbols, void* memory,          \
     uint64_t bytes, stitch_context** out_context))                                              \
  X(stitch_status, context_destroy, (stitch_context* context))                                   \
  X(stitch_status, run,                                                                          \
    (stitch_context* context, const stitch_tensor* inputs, size_t num_inputs,                    \
     const stitch_tensor* outputs, size_t num_outputs, void* stream))                            \
  X(stitch_status, run_with_options,                                                             \
    (stitch_context* context, const stitch_tensor* inputs, size_t num_inputs,                    \
     const stitch_tensor* outputs, size_t num_outputs, void* stream,                             \
     const stitch_run_options* options))                                                         \
  X(stitch_status, context_read_tap,                                                             \
    (stitch_context* context, size_t index, void* data, uint64_t bytes))                         \
  X(const char*, status_name, (stitch_status status))                                            \
  X(const char*, last_error, (void))
/* clang-format on */
#endif

#ifdef STITCH_SYMBOL_PREFIX
#define STITCH_PREFIXED_NAME_(prefix, name) prefix##_##name
#define STITCH_PREFIXED_NAME(prefix, name) STITCH_PREFIXED_NAME_(prefix, name)
#define STITCH_DECLARE_PREFIXED(type, name, params)                                                \
  STITCH_API type STITCH_PREFIXED_NAME(STITCH_SYMBOL_PREFIX, name) params;
#ifdef __cplusplus
extern "C" {
#endif
STITCH_API_FUNCTIONS(STITCH_DECLARE_PREFIXED)
#ifdef __cplusplus
} /* extern "C" */
#endif
#undef STITCH_DECLARE_PREFIXED
#endif
