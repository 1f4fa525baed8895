// model_runtime_checks.cpp: the generated model's tables checked once at create, the caller's
// tensors checked at every run.
#include "model_runtime_checks.h"

#include "arena_layout.h"

#include <cstdio>
#include <cstring>

namespace stitch::runtime {
namespace {

std::string join_dims(const int64_t* dims, int32_t rank) {
  std::string text = "[";
  for (int32_t d = 0; d < rank; ++d) {
    if (d > 0) text += ",";
    text += std::to_string(dims[d]);
  }
  return text + "]";
}

// "float32[4,8]"
std::string describe_type(const stitch_abi_tensor& tensor) {
  return dtype_name(tensor.dtype) + join_dims(tensor.dims, tensor.rank);
}

// "input 0 ('x')"
std::string describe_tensor(const char* kind, std::size_t index, const stitch_abi_tensor& tensor) {
  return std::string(kind) + " " + std::to_string(index) + " ('" + tensor.name + "')";
}

std::string describe_pointer(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", pointer);
  return text;
}

[[noreturn]] void fail_generated(const std::string& message) {
  fail(STITCH_ERROR_INTERNAL,
       "the generated model breaks the runtime ABI (a stitchc bug): " + message);
}

// `model`: the model whose symbols a dim may be -1 for (a symbolic dim; `bytes` is then the
// size at the maxima, which only inputs can check here), null where none may.
void check_generated_tensor(const char* kind, std::size_t index, const stitch_abi_tensor& tensor,
                            const stitch_abi_model* model = nullptr, bool input = false) {
  const std::string label = std::string(kind) + " " + std::to_string(index);
  if (tensor.name == nullptr) fail_generated(label + " has no name");
  const std::string named = describe_tensor(kind, index, tensor);
  if (dtype_size(tensor.dtype) == 0)
    fail_generated(named + " has the unknown dtype " + std::to_string(tensor.dtype));
  if (tensor.rank < 0 || tensor.rank > STITCH_ABI_MAX_RANK)
    fail_generated(named + " has rank " + std::to_string(tensor.rank) + " (0 to " +
                   std::to_string(STITCH_ABI_MAX_RANK) + ")");
  uint64_t bytes = dtype_size(tensor.dtype);
  bool symbolic = false;
  for (int32_t d = 0; d < tensor.rank; ++d) {
    if (tensor.dims[d] == -1 && model != nullptr && model->num_symbols > 0) {
      symbolic = true;
      const int32_t s = tensor.symbols[d];
      if (!input) {
        if (s < -1 || s >= model->num_symbols)
          fail_generated(named + " dim " + std::to_string(d) + " names symbol " +
                         std::to_string(s) + " of " + std::to_string(model->num_symbols));
        continue;
      }
      if (s < 0 || s >= model->num_symbols)
        fail_generated(named + " dim " + std::to_string(d) + " names symbol " + std::to_string(s) +
                       " of " + std::to_string(model->num_symbols));
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(model->symbols[s].max), &bytes))
        fail_generated(named + " overflows 64 bits at its symbols' maxima");
      continue;
    }
    if (tensor.dims[d] < 0)
      fail_generated(named + " has the negative dims " + join_dims(tensor.dims, tensor.rank));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(tensor.dims[d]), &bytes))
      fail_generated(named + " has dims " + join_dims(tensor.dims, tensor.rank) +
                     " whose byte size overflows 64 bits");
  }
  if (symbolic && !input) return;
  if (bytes != tensor.bytes)
    fail_generated(named + " is " + describe_type(tensor) + " (" + std::to_string(bytes) +
                   " bytes" + (symbolic ? " at its symbols' maxima" : "") + ") but claims " +
                   std::to_string(tensor.bytes) + " bytes");
}

void check_generated_table(const char* kind, int32_t count, const stitch_abi_tensor* table,
                           const stitch_abi_model* model = nullptr, bool input = false) {
  if (count < 0) fail_generated(std::string("it has ") + std::to_string(count) + " " + kind + "s");
  if (count > 0 && table == nullptr)
    fail_generated(std::string("its ") + kind + " table is null but it has " +
                   std::to_string(count) + " " + kind + "s");
  for (int32_t i = 0; i < count; ++i)
    check_generated_tensor(kind, static_cast<std::size_t>(i), table[i], model, input);
}

// The arena's slots (a model with symbolic dims): tables present, and the steps lay the slots
// out within the arena as the model describes it.
void check_generated_slots(const stitch_abi_model& abi) {
  if (abi.num_arena_slots < 0 || abi.num_arena_steps < 0)
    fail_generated("it has " + std::to_string(abi.num_arena_slots) + " arena slots and " +
                   std::to_string(abi.num_arena_steps) + " steps placing them");
  if (abi.num_arena_slots == 0) return;
  if (abi.num_symbols == 0)
    fail_generated("it has arena slots but no symbolic dims (fixed offsets serve fixed shapes)");
  if (abi.arena_offsets == nullptr || abi.arena_steps == nullptr || abi.arena_slot_bytes == nullptr)
    fail_generated("it has " + std::to_string(abi.num_arena_slots) +
                   " arena slots but no offsets, steps or slot sizes");
  std::vector<uint64_t> bytes(static_cast<std::size_t>(abi.num_arena_slots));
  std::vector<int64_t> maxima;
  for (int32_t s = 0; s < abi.num_symbols; ++s)
    maxima.push_back(abi.symbols[s].max);
  abi.arena_slot_bytes(maxima.data(), bytes.data());
  std::vector<int64_t> offsets(bytes.size());
  uint64_t arena_bytes = 0;
  if (!arena::lay_out(abi.arena_steps, static_cast<std::size_t>(abi.num_arena_steps), bytes.data(),
                      bytes.size(), offsets.data(), &arena_bytes))
    fail_generated("its arena steps do not place each slot once, in turn");
  for (std::size_t k = 0; k < bytes.size(); ++k)
    if (abi.arena_offsets[k] < 0 ||
        static_cast<uint64_t>(abi.arena_offsets[k]) + bytes[k] > abi.arena_bytes)
      fail_generated("arena slot " + std::to_string(k) + " (" + std::to_string(bytes[k]) +
                     " bytes at offset " + std::to_string(abi.arena_offsets[k]) +
                     ") ends past the arena's " + std::to_string(abi.arena_bytes) + " bytes");
}

void check_generated_symbols(const stitch_abi_model& abi) {
  if (abi.num_symbols < 0)
    fail_generated("it has " + std::to_string(abi.num_symbols) + " symbolic dims");
  if (abi.num_symbols == 0) {
    check_generated_slots(abi);
    return;
  }
  if (abi.symbols == nullptr || abi.output_dims == nullptr)
    fail_generated("it has " + std::to_string(abi.num_symbols) +
                   " symbolic dims but no symbol table or no output_dims function");
  for (int32_t s = 0; s < abi.num_symbols; ++s) {
    const stitch_abi_symbol& symbol = abi.symbols[s];
    if (symbol.name == nullptr) fail_generated("symbol " + std::to_string(s) + " has no name");
    if (symbol.min < 0 || symbol.min > symbol.max)
      fail_generated("symbol " + std::to_string(s) + " ('" + symbol.name + "') ranges over " +
                     std::to_string(symbol.min) + ".." + std::to_string(symbol.max));
  }
  check_generated_slots(abi);
}

// `data`: whether the tensor's data is checked too (a run), or only its type and shape.
void check_run_tensor(const char* kind, std::size_t index, const stitch_abi_tensor& expected,
                      const stitch_tensor& given, bool data = true) {
  const std::string label = describe_tensor(kind, index, expected);
  if (data && given.data == nullptr && expected.bytes > 0)
    fail(STITCH_ERROR_INVALID_ARGUMENT, label + ": data is null");
  if (data && reinterpret_cast<uintptr_t>(given.data) % kTensorAlignment != 0)
    fail(STITCH_ERROR_INVALID_ARGUMENT,
         label + ": data " + describe_pointer(given.data) + " is not " +
             std::to_string(kTensorAlignment) +
             "-byte aligned (generated kernels use 16-byte vector accesses)");
  // Read as the integer it is: a C caller may pass any value, which is no valid stitch_dtype.
  static_assert(sizeof(given.dtype) == sizeof(int32_t));
  int32_t given_dtype = 0;
  std::memcpy(&given_dtype, &given.dtype, sizeof(given_dtype));
  if (given_dtype != expected.dtype)
    fail(STITCH_ERROR_SHAPE_MISMATCH, label + ": dtype is " + dtype_name(given_dtype) +
                                          " but the model expects " + describe_type(expected));
  if (given.rank != expected.rank)
    fail(STITCH_ERROR_SHAPE_MISMATCH, label + ": rank is " + std::to_string(given.rank) +
                                          " but the model expects " + describe_type(expected) +
                                          " (rank " + std::to_string(expected.rank) + ")");
  if (given.rank > 0 && given.dims == nullptr)
    fail(STITCH_ERROR_INVALID_ARGUMENT,
         label + ": dims is null for rank " + std::to_string(given.rank));
  for (int32_t d = 0; d < expected.rank; ++d) {
    if (given.dims[d] != expected.dims[d])
      fail(STITCH_ERROR_SHAPE_MISMATCH, label + ": shape is " + join_dims(given.dims, given.rank) +
                                            " but the model expects " + describe_type(expected));
  }
  // A larger buffer is fine (it may come from a pool); the run touches the first bytes only.
  if (data && given.bytes < expected.bytes)
    fail(STITCH_ERROR_SHAPE_MISMATCH, label + ": the buffer is " + std::to_string(given.bytes) +
                                          " bytes but " + describe_type(expected) + " needs " +
                                          std::to_string(expected.bytes));
}

void check_run_counts(const char* kind, int32_t expected_count, const stitch_tensor* given,
                      std::size_t given_count) {
  const auto count = static_cast<std::size_t>(expected_count);
  const std::string plural = std::string(kind) + (count == 1 ? "" : "s");
  if (given_count != count)
    fail(STITCH_ERROR_INVALID_ARGUMENT, "num_" + std::string(kind) + "s is " +
                                            std::to_string(given_count) + " but the model has " +
                                            std::to_string(count) + " " + plural);
  if (count > 0 && given == nullptr)
    fail(STITCH_ERROR_INVALID_ARGUMENT,
         std::string(kind) + "s is null but the model has " + std::to_string(count) + " " + plural);
}

void check_run_group(const char* kind, const stitch_abi_tensor* expected, int32_t expected_count,
                     const stitch_tensor* given, std::size_t given_count) {
  check_run_counts(kind, expected_count, given, given_count);
  for (std::size_t i = 0; i < static_cast<std::size_t>(expected_count); ++i)
    check_run_tensor(kind, i, expected[i], given[i]);
}

// "[batch,seq,64]" for an input of the model's (a symbolic dim by its symbol's name).
std::string describe_symbolic(const stitch_abi_model& abi, const stitch_abi_tensor& tensor) {
  std::string text = dtype_name(tensor.dtype) + "[";
  for (int32_t d = 0; d < tensor.rank; ++d) {
    if (d > 0) text += ",";
    text += tensor.dims[d] == -1 ? std::string(abi.symbols[tensor.symbols[d]].name)
                                 : std::to_string(tensor.dims[d]);
  }
  return text + "]";
}

// The tensor with `dims` in place of its symbolic ones, and their bytes.
stitch_abi_tensor resolved(const stitch_abi_tensor& tensor, const int64_t* dims) {
  stitch_abi_tensor out = tensor;
  uint64_t bytes = dtype_size(tensor.dtype);
  for (int32_t d = 0; d < tensor.rank; ++d) {
    out.dims[d] = dims[d];
    if (dims[d] < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(dims[d]), &bytes))
      fail(STITCH_ERROR_INTERNAL, std::string("the generated model gives output '") + tensor.name +
                                      "' the dims " + join_dims(dims, tensor.rank) +
                                      " (a stitchc bug)");
  }
  out.bytes = bytes;
  return out;
}

bool overlaps(const stitch_tensor& a, uint64_t a_bytes, const stitch_tensor& b, uint64_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto a_begin = reinterpret_cast<uintptr_t>(a.data);
  const auto b_begin = reinterpret_cast<uintptr_t>(b.data);
  return a_begin < b_begin + b_bytes && b_begin < a_begin + a_bytes;
}

// Generated kernels read inputs and write outputs through __restrict__ pointers, and outputs
// are written in no particular order: an output must not share bytes with any other tensor.
void check_output_overlaps(const stitch_abi_model& abi, const stitch_abi_tensor* input_table,
                           const stitch_abi_tensor* output_table, const stitch_tensor* inputs,
                           const stitch_tensor* outputs) {
  for (int32_t o = 0; o < abi.num_outputs; ++o) {
    const stitch_abi_tensor& output = output_table[o];
    const auto complain = [&](const std::string& other) {
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           describe_tensor("output", o, output) + " overlaps " + other +
               ": outputs must not share memory with inputs or with each other");
    };
    for (int32_t i = 0; i < abi.num_inputs; ++i) {
      if (overlaps(outputs[o], output.bytes, inputs[i], input_table[i].bytes))
        complain(describe_tensor("input", i, input_table[i]));
    }
    for (int32_t p = 0; p < o; ++p) {
      if (overlaps(outputs[o], output.bytes, outputs[p], output_table[p].bytes))
        complain(describe_tensor("output", p, output_table[p]));
    }
  }
}

} // namespace

std::size_t dtype_size(int32_t dtype) {
  switch (dtype) {
  case STITCH_UINT8:
  case STITCH_INT8:
  case STITCH_BOOL:
    return 1;
  case STITCH_UINT16:
  case STITCH_INT16:
  case STITCH_FLOAT16:
  case STITCH_BFLOAT16:
    return 2;
  case STITCH_FLOAT32:
  case STITCH_INT32:
  case STITCH_UINT32:
    return 4;
  case STITCH_INT64:
  case STITCH_UINT64:
  case STITCH_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

std::string dtype_name(int32_t dtype) {
  switch (dtype) {
  case STITCH_FLOAT32:
    return "float32";
  case STITCH_UINT8:
    return "uint8";
  case STITCH_INT8:
    return "int8";
  case STITCH_UINT16:
    return "uint16";
  case STITCH_INT16:
    return "int16";
  case STITCH_INT32:
    return "int32";
  case STITCH_INT64:
    return "int64";
  case STITCH_BOOL:
    return "bool";
  case STITCH_FLOAT16:
    return "float16";
  case STITCH_FLOAT64:
    return "float64";
  case STITCH_UINT32:
    return "uint32";
  case STITCH_UINT64:
    return "uint64";
  case STITCH_BFLOAT16:
    return "bfloat16";
  default:
    return "dtype " + std::to_string(dtype);
  }
}

void check_generated_model(const stitch_abi_model* abi) {
  if (abi == nullptr) fail_generated("stitch_generated_model() returned null");
  if (abi->abi_version != STITCH_ABI_VERSION)
    fail(STITCH_ERROR_INTERNAL, "the generated code speaks ABI version " +
                                    std::to_string(abi->abi_version) +
                                    " but the runtime linked with it speaks version " +
                                    std::to_string(STITCH_ABI_VERSION) +
                                    "; rebuild the model with the stitchc that ships this runtime");
  if (abi->target == nullptr || std::strcmp(abi->target, kRuntimeTarget) != 0)
    fail(STITCH_ERROR_INTERNAL, std::string("the generated code is for target '") +
                                    (abi->target != nullptr ? abi->target : "(null)") +
                                    "' but is linked with the '" + kRuntimeTarget +
                                    "' runtime (stitch_runtime_" + kRuntimeTarget + ")");
  check_generated_symbols(*abi);
  check_generated_table("input", abi->num_inputs, abi->inputs, abi, true);
  check_generated_table("output", abi->num_outputs, abi->outputs, abi, false);
  if (abi->weights_bytes > 0 && abi->weights == nullptr)
    fail_generated("it has " + std::to_string(abi->weights_bytes) +
                   " bytes of weights but no data");
  if (abi->enqueue == nullptr) fail_generated("its enqueue function is null");
  if (abi->num_taps < 0) fail_generated("it has " + std::to_string(abi->num_taps) + " taps");
  if (abi->num_taps > 0 && abi->taps == nullptr)
    fail_generated("its tap table is null but it has " + std::to_string(abi->num_taps) + " taps");
  for (int32_t t = 0; t < abi->num_taps; ++t) {
    check_generated_tensor("tap", static_cast<std::size_t>(t), abi->taps[t].tensor);
    if (abi->taps[t].node == nullptr) fail_generated("tap " + std::to_string(t) + " names no node");
  }
  if (abi->num_chains < 0)
    fail_generated("it has " + std::to_string(abi->num_chains) + " GEMM chains");
  if (abi->num_cooperative < 0)
    fail_generated("it has " + std::to_string(abi->num_cooperative) + " cooperative launches");
  if ((abi->num_chains > 0 || abi->num_cooperative > 0) && abi->prepare == nullptr)
    fail_generated("it has " + std::to_string(abi->num_chains) + " GEMM chains and " +
                   std::to_string(abi->num_cooperative) +
                   " cooperative launches but no function asking the device about them");
  const stitch_abi_build_info* info = abi->build_info;
  if (info == nullptr) fail_generated("it has no build info");
  for (const char* text :
       {info->stitchc_version, info->model_sha256, info->model_file, info->target, info->archs,
        info->planner, info->precision, info->flags, info->symbol_prefix})
    if (text == nullptr) fail_generated("a string of its build info is null");
}

void bind_run_shapes(const stitch_abi_model& abi, const stitch_tensor* inputs,
                     std::size_t num_inputs, RunShapes& shapes) {
  check_run_counts("input", abi.num_inputs, inputs, num_inputs);
  const auto num_symbols = static_cast<std::size_t>(abi.num_symbols);
  shapes.symbols.assign(num_symbols, -1);
  // Which input first bound each symbol, for the message when another disagrees.
  constexpr std::size_t kNone = ~std::size_t{0};
  std::vector<std::size_t>& binder = shapes.binder;
  binder.assign(num_symbols, kNone);
  for (std::size_t i = 0; i < num_inputs; ++i) {
    const stitch_abi_tensor& expected = abi.inputs[i];
    const stitch_tensor& given = inputs[i];
    const std::string label = describe_tensor("input", i, expected);
    if (given.rank != expected.rank)
      fail(STITCH_ERROR_SHAPE_MISMATCH,
           label + ": rank is " + std::to_string(given.rank) + " but the model expects " +
               describe_symbolic(abi, expected) + " (rank " + std::to_string(expected.rank) + ")");
    if (given.rank > 0 && given.dims == nullptr)
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           label + ": dims is null for rank " + std::to_string(given.rank));
    for (int32_t d = 0; d < expected.rank; ++d) {
      if (expected.dims[d] != -1) continue;
      const auto s = static_cast<std::size_t>(expected.symbols[d]);
      const stitch_abi_symbol& symbol = abi.symbols[s];
      const int64_t value = given.dims[d];
      if (value < symbol.min || value > symbol.max)
        fail(STITCH_ERROR_SHAPE_MISMATCH,
             label + ": shape is " + join_dims(given.dims, given.rank) + " but dim " +
                 std::to_string(d) + " ('" + symbol.name + "') must be in " +
                 std::to_string(symbol.min) + ".." + std::to_string(symbol.max) +
                 " (the range the library was compiled for; the model expects " +
                 describe_symbolic(abi, expected) + ")");
      if (binder[s] == kNone) {
        binder[s] = i;
        shapes.symbols[s] = value;
      } else if (shapes.symbols[s] != value) {
        fail(STITCH_ERROR_SHAPE_MISMATCH,
             label + ": shape is " + join_dims(given.dims, given.rank) + ", so '" + symbol.name +
                 "' is " + std::to_string(value) + ", but " +
                 describe_tensor("input", binder[s], abi.inputs[binder[s]]) + " makes it " +
                 std::to_string(shapes.symbols[s]) + " (both are " +
                 describe_symbolic(abi, expected) + " and " +
                 describe_symbolic(abi, abi.inputs[binder[s]]) + ")");
      }
    }
  }
  for (std::size_t s = 0; s < num_symbols; ++s)
    if (binder[s] == kNone)
      fail(STITCH_ERROR_INTERNAL,
           std::string("no input binds the symbol '") + abi.symbols[s].name + "' (a stitchc bug)");
  shapes.inputs.resize(num_inputs);
  for (std::size_t i = 0; i < num_inputs; ++i) {
    int64_t dims[STITCH_ABI_MAX_RANK] = {};
    for (int32_t d = 0; d < abi.inputs[i].rank; ++d)
      dims[d] = abi.inputs[i].dims[d] == -1
                    ? shapes.symbols[static_cast<std::size_t>(abi.inputs[i].symbols[d])]
                    : abi.inputs[i].dims[d];
    shapes.inputs[i] = resolved(abi.inputs[i], dims);
  }
  const auto num_outputs = static_cast<std::size_t>(abi.num_outputs);
  std::vector<int64_t>& dims = shapes.output_dims;
  dims.assign(num_outputs * STITCH_ABI_MAX_RANK, 0);
  abi.output_dims(shapes.symbols.data(), dims.data());
  shapes.outputs.resize(num_outputs);
  for (std::size_t o = 0; o < num_outputs; ++o)
    shapes.outputs[o] = resolved(abi.outputs[o], dims.data() + o * STITCH_ABI_MAX_RANK);
}

void check_run_tensors(const stitch_abi_model& abi, const stitch_tensor* inputs,
                       std::size_t num_inputs, const stitch_tensor* outputs,
                       std::size_t num_outputs, const RunShapes* shapes) {
  const stitch_abi_tensor* input_table = shapes != nullptr ? shapes->inputs.data() : abi.inputs;
  const stitch_abi_tensor* output_table = shapes != nullptr ? shapes->outputs.data() : abi.outputs;
  check_run_group("input", input_table, abi.num_inputs, inputs, num_inputs);
  check_run_group("output", output_table, abi.num_outputs, outputs, num_outputs);
  check_output_overlaps(abi, input_table, output_table, inputs, outputs);
}

void check_input_shapes(const stitch_abi_model& abi, const stitch_tensor* inputs,
                        std::size_t num_inputs, const RunShapes* shapes) {
  check_run_counts("input", abi.num_inputs, inputs, num_inputs);
  const stitch_abi_tensor* table = shapes != nullptr ? shapes->inputs.data() : abi.inputs;
  for (std::size_t i = 0; i < num_inputs; ++i)
    check_run_tensor("input", i, table[i], inputs[i], false);
}

stitch_tensor_info tensor_info(const stitch_abi_tensor& tensor) {
  stitch_tensor_info info{};
  info.name = tensor.name;
  info.dtype = static_cast<stitch_dtype>(tensor.dtype);
  info.rank = tensor.rank;
  for (int32_t d = 0; d < tensor.rank; ++d)
    info.dims[d] = tensor.dims[d];
  info.bytes = tensor.bytes;
  return info;
}

} // namespace stitch::runtime
