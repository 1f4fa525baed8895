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
#include <vector>

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

// RunShapes (model_runtime.h): the symbols' values, bound from the inputs' dims, and the
// inputs' and outputs' tables with those values in place of -1 (dims and bytes). Kept by the
// context so that a run allocates nothing once the vectors have their sizes.
// Binds the symbols from the inputs' dims (each in its range, one value per symbol whatever
// input gives it) and resolves the tables into `shapes`. Throws STITCH_ERROR_SHAPE_MISMATCH
// for a dim outside its symbol's range or inputs disagreeing on a symbol, and for what
// check_run_tensors refuses of the inputs' counts, ranks and dims. Only for abi.num_symbols > 0.
void bind_run_shapes(const stitch_abi_model& abi, const stitch_tensor* inputs,
                     std::size_t num_inputs, RunShapes& shapes);

// Throws unless the caller's tensors match the model exactly (see the banner), and no output
// overlaps an input or another output. For a model with symbolic dims, `shapes` holds the
// tables bind_run_shapes resolved for these inputs (null for a model of fixed shapes).
void check_run_tensors(const stitch_abi_model& abi, const stitch_tensor* inputs,
                       std::size_t num_inputs, const stitch_tensor* outputs,
                       std::size_t num_outputs, const RunShapes* shapes = nullptr);

// The inputs' counts, dtypes, ranks and dims, as check_run_tensors checks them, their data
// unread (stitch_model_output_shapes).
void check_input_shapes(const stitch_abi_model& abi, const stitch_tensor* inputs,
                        std::size_t num_inputs, const RunShapes* shapes = nullptr);

// The public description of one of the model's tensors.
stitch_tensor_info tensor_info(const stitch_abi_tensor& tensor);

} // namespace stitch::runtime
