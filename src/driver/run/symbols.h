// Symbolic dims in stitch-run. A library compiled with `stitchc --dim NAME=MIN..MAX` serves
// every shape in range; one run binds each symbol to one value:
//   --dim NAME=VALUE         the value asked for (for random inputs; a file must agree with it)
//   an input read from file  the file's own dim, where no --dim gives the symbol
//   otherwise                the symbol's maximum (the largest shape the library serves)
// The library checks the inputs' dims against the ranges itself (stitch_model_output_shapes),
// so a file outside a range, or two files that disagree, get the library's message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "driver/run/model_library.h"

namespace stitch::run {

// A value per symbol, by the model's symbol index.
using SymbolValues = std::vector<int64_t>;

// One --dim argument "NAME=VALUE" (VALUE a decimal integer), split; refuses anything else.
std::pair<std::string, int64_t> parse_dim_arg(const std::string& arg);

// The value each --dim argument gives, by symbol index (nothing where none does). Refuses a
// name that is no symbol of the model, a value outside the symbol's range, a symbol given twice
// and any --dim for a library of fixed shapes.
std::vector<std::optional<int64_t>> requested_symbol_values(const std::vector<std::string>& args,
                                                            const std::vector<SymbolInfo>& symbols);

// Each symbol's value for one run (see the top of this file): `given[i]` are input i's dims
// where it comes from a file (`origins[i]` names the file), nothing where it is made here.
// Refuses a file whose dim differs from the value --dim asks for, and, where some input is
// made here, a file's size outside its symbol's range (a random input would take it).
SymbolValues choose_symbol_values(const std::vector<SymbolInfo>& symbols,
                                  const std::vector<std::optional<int64_t>>& requested,
                                  const std::vector<TensorInfo>& inputs,
                                  const std::vector<std::optional<std::vector<int64_t>>>& given,
                                  const std::vector<std::string>& origins);

// The dims of an input with each symbolic dim at its symbol's value.
std::vector<int64_t> dims_at(const TensorInfo& input, const SymbolValues& values);

// "batch=3 seq=12"; "" for a model without symbols.
std::string describe_binding(const std::vector<SymbolInfo>& symbols, const SymbolValues& values);

// "float32[batch,seq,64]": a tensor's type with each symbolic dim named by its symbol
// (TensorInfo::symbols), "?" for a dim computed from the symbols.
std::string describe_symbolic_type(const TensorInfo& tensor,
                                   const std::vector<SymbolInfo>& symbols);

// Each output's type as describe_symbolic_type gives it. Where the library does not name the
// outputs' symbols (the first libraries of API version 4), a symbolic dim is named by the
// symbol it equals at a few bindings, asked of the library (stitch_model_output_shapes): every
// symbol at its maximum, every one at its minimum, and each at its maximum with the others at
// their minima; "?" where it equals none.
std::vector<std::string> describe_output_types(const ModelInstance& model);

} // namespace stitch::run
