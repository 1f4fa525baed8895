// model_runtime_checks.h: the checks between the runtime and its two untrusted sides.
//
//  - The generated model (stitch_model_abi.h), once at stitch_model_create: a table that breaks
//    the ABI's rules is a stitchc bug or a library linked against the wrong runtime, reported as
//    STITCH_ERROR_INTERNAL before anything reads past it.
//  - The caller's tensors, at every stitch_run: counts, null pointers and alignment are
//    STITCH_ERROR_INVALID_ARGUMENT; dtype, rank, dims and a too-small buffer are
//    STITCH_ERROR_SHAPE_MISMATCH. Each message names the tensor by position and name and says
//    what was given and what the model expects.
#pragma once

#include "model_runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace stitch::runtime {

// Generated kernels use 16-byte vector loads and stores on the caller's buffers.
inline constexpr uintptr_t kTensorAlignment = 16;

// The size of one element of an ONNX dtype code, or 0 for a code stitch.h does not list.
std::size_t dtype_size(int32_t dtype);
// "float32", "int64", ... or "dtype 42".
std::string dtype_name(int32_t dtype);

// Throws STITCH_ERROR_INTERNAL unless `abi` follows stitch_model_abi.h's rules for this
// runtime (ABI version, target, tables, weights).
void check_generated_model(const stitch_abi_model* abi);

// Throws unless the caller's tensors match the model exactly (see the banner), and no output
// overlaps an input or another output.
void check_run_tensors(const stitch_abi_model& abi, const stitch_tensor* inputs,
                       std::size_t num_inputs, const stitch_tensor* outputs,
                       std::size_t num_outputs);

// The public description of one of the model's tensors.
stitch_tensor_info tensor_info(const stitch_abi_tensor& tensor);

} // namespace stitch::runtime
