// Symbolic dims in stitch-run: --dim, the value of each symbol for one run, and the names of
// symbolic dims in what the tool prints.
#include "driver/run/symbols.h"

#include <cerrno>
#include <cstdlib>

#include "driver/run/output_files.h"
#include "driver/run/run_error.h"

namespace stitch::run {

namespace {

std::string symbol_list(const std::vector<SymbolInfo>& symbols) {
  std::vector<std::string> items;
  for (const SymbolInfo& symbol : symbols)
    items.push_back(fmt::format("{} in {}..{}", symbol.name, symbol.min, symbol.max));
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string type_with_names(stitch_dtype dtype, const std::vector<std::string>& dims) {
  return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(dims, ","));
}

// Inputs of the given dims, as stitch_model_output_shapes reads them (no data).
std::vector<stitch_tensor> shape_records(const std::vector<TensorInfo>& inputs,
                                         const std::vector<std::vector<int64_t>>& dims) {
  std::vector<stitch_tensor> records;
  for (size_t i = 0; i < inputs.size(); ++i) {
    uint64_t count = 0;
    if (!checked_element_count(dims[i], dtype_size(inputs[i].dtype), &count)) count = 0;
    records.push_back(stitch_tensor{nullptr, inputs[i].dtype, static_cast<int32_t>(dims[i].size()),
                                    dims[i].data(), count * dtype_size(inputs[i].dtype)});
  }
  return records;
}

} // namespace

std::pair<std::string, int64_t> parse_dim_arg(const std::string& arg) {
  size_t eq = arg.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    run_fail("--dim '{}' is not NAME=VALUE (a symbolic dim of the library and its size)", arg);
  std::string text = arg.substr(eq + 1);
  bool digits = text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  char* end = nullptr;
  long long value = digits ? std::strtoll(text.c_str(), &end, 10) : 0;
  if (!digits || errno == ERANGE || end == nullptr || *end != '\0')
    run_fail("--dim '{}': the size '{}' is not a non-negative integer", arg, text);
  return {arg.substr(0, eq), static_cast<int64_t>(value)};
}

std::vector<std::optional<int64_t>>
requested_symbol_values(const std::vector<std::string>& args,
                        const std::vector<SymbolInfo>& symbols) {
  std::vector<std::optional<int64_t>> requested(symbols.size());
  for (const std::string& arg : args) {
    auto [name, value] = parse_dim_arg(arg);
    if (symbols.empty())
      run_fail("--dim '{}': the library has no symbolic dims (it serves fixed shapes only)", arg);
    size_t s = 0;
    while (s < symbols.size() && symbols[s].name != name)
      ++s;
    if (s == symbols.size())
      run_fail("--dim '{}' names no symbolic dim of the library; its symbolic dims are: {}", arg,
               symbol_list(symbols));
    if (requested[s]) run_fail("--dim gives the symbolic dim '{}' twice", name);
    if (value < symbols[s].min || value > symbols[s].max)
      run_fail("--dim '{}': {} must be in {}..{}", arg, name, symbols[s].min, symbols[s].max);
    requested[s] = value;
  }
  return requested;
}

SymbolValues choose_symbol_values(const std::vector<SymbolInfo>& symbols,
                                  const std::vector<std::optional<int64_t>>& requested,
                                  const std::vector<TensorInfo>& inputs,
                                  const std::vector<std::optional<std::vector<int64_t>>>& given,
                                  const std::vector<std::string>& origins) {
  std::vector<std::optional<int64_t>> chosen = requested;
  chosen.resize(symbols.size());
  // A size a random input takes from a file is checked here, before anything is made at it;
  // the library checks the files' own sizes.
  bool random_inputs = given.size() < inputs.size();
  for (const auto& dims : given)
    random_inputs = random_inputs || !dims;
  for (size_t i = 0; i < inputs.size() && i < given.size(); ++i) {
    if (!given[i]) continue;
    const std::vector<int64_t>& dims = *given[i];
    const std::vector<int32_t>& dim_symbols = inputs[i].symbols;
    for (size_t d = 0; d < dim_symbols.size() && d < dims.size(); ++d) {
      if (dim_symbols[d] < 0) continue;
      auto s = static_cast<size_t>(dim_symbols[d]);
      const SymbolInfo& symbol = symbols[s];
      if (!chosen[s]) {
        if (random_inputs && (dims[d] < symbol.min || dims[d] > symbol.max))
          run_fail("input '{}': {} has {} in dim {} ('{}'), but {} must be in {}..{}",
                   display_name(inputs[i].name), origins[i], dims[d], d, symbol.name, symbol.name,
                   symbol.min, symbol.max);
        chosen[s] = dims[d];
      } else if (requested[s] && *requested[s] != dims[d]) {
        run_fail("input '{}': {} has {} in dim {} ('{}'), but --dim asks for {}={}",
                 display_name(inputs[i].name), origins[i], dims[d], d, symbol.name, symbol.name,
                 *requested[s]);
      }
    }
  }
  SymbolValues values;
  for (size_t s = 0; s < symbols.size(); ++s)
    values.push_back(chosen[s] ? *chosen[s] : symbols[s].max);
  return values;
}

std::vector<int64_t> dims_at(const TensorInfo& input, const SymbolValues& values) {
  std::vector<int64_t> dims = input.dims;
  for (size_t d = 0; d < dims.size() && d < input.symbols.size(); ++d)
    if (input.symbols[d] >= 0 && static_cast<size_t>(input.symbols[d]) < values.size())
      dims[d] = values[static_cast<size_t>(input.symbols[d])];
  return dims;
}

std::string describe_binding(const std::vector<SymbolInfo>& symbols, const SymbolValues& values) {
  std::vector<std::string> items;
  for (size_t s = 0; s < symbols.size() && s < values.size(); ++s)
    items.push_back(fmt::format("{}={}", symbols[s].name, values[s]));
  return fmt::format("{}", fmt::join(items, " "));
}

std::string describe_symbolic_type(const TensorInfo& tensor,
                                   const std::vector<SymbolInfo>& symbols) {
  std::vector<std::string> dims;
  for (size_t d = 0; d < tensor.dims.size(); ++d) {
    int32_t s = d < tensor.symbols.size() ? tensor.symbols[d] : -1;
    if (s >= 0 && static_cast<size_t>(s) < symbols.size())
      dims.push_back(symbols[static_cast<size_t>(s)].name);
    else
      dims.push_back(tensor.dims[d] == -1 ? "?" : std::to_string(tensor.dims[d]));
  }
  return type_with_names(tensor.dtype, dims);
}

std::vector<std::string> describe_output_types(const ModelInstance& model) {
  const std::vector<SymbolInfo>& symbols = model.symbols();
  bool named = true;
  for (const TensorInfo& output : model.outputs())
    named = named && (!output.is_symbolic() || !output.symbols.empty());
  if (named) {
    std::vector<std::string> types;
    for (const TensorInfo& output : model.outputs())
      types.push_back(describe_symbolic_type(output, symbols));
    return types;
  }
  std::vector<SymbolValues> bindings;
  if (!symbols.empty()) {
    SymbolValues maxima, minima;
    for (const SymbolInfo& symbol : symbols) {
      maxima.push_back(symbol.max);
      minima.push_back(symbol.min);
    }
    bindings = {maxima, minima};
    for (size_t s = 0; symbols.size() > 1 && s < symbols.size(); ++s) {
      bindings.push_back(minima);
      bindings.back()[s] = symbols[s].max;
    }
  }
  // The outputs' dims at each binding the library accepts.
  std::vector<std::pair<SymbolValues, std::vector<TensorInfo>>> probes;
  for (const SymbolValues& binding : bindings) {
    std::vector<std::vector<int64_t>> dims;
    for (const TensorInfo& input : model.inputs())
      dims.push_back(dims_at(input, binding));
    try {
      probes.emplace_back(binding, model.output_shapes(shape_records(model.inputs(), dims)));
    } catch (const RunError&) {
      // A binding the library refuses names nothing; the others still may.
    }
  }
  std::vector<std::string> types;
  for (size_t o = 0; o < model.outputs().size(); ++o) {
    const TensorInfo& output = model.outputs()[o];
    std::vector<std::string> dims;
    for (size_t d = 0; d < output.dims.size(); ++d) {
      if (output.dims[d] != -1) {
        dims.push_back(std::to_string(output.dims[d]));
        continue;
      }
      std::string name = "?";
      for (size_t s = 0; s < symbols.size() && name == "?" && !probes.empty(); ++s) {
        bool equal = true;
        for (const auto& [binding, outputs] : probes)
          equal = equal && d < outputs[o].dims.size() && outputs[o].dims[d] == binding[s];
        if (equal) name = symbols[s].name;
      }
      dims.push_back(name);
    }
    types.push_back(type_with_names(output.dtype, dims));
  }
  return types;
}

} // namespace stitch::run
