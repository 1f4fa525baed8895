// Binding files, test-data folders and random values to a model's inputs and outputs, with
// the checks that make a wrong binding a clear message rather than a wrong answer.
#include "driver/run/tensor_sources.h"

#include <filesystem>
#include <map>

#include "driver/run/output_files.h"
#include "driver/run/run_error.h"
#include "driver/run/symbols.h"
#include "driver/run/tensor_file.h"

namespace stitch::run {

namespace {

std::string name_list(const std::vector<TensorInfo>& infos) {
  std::vector<std::string> names;
  for (const TensorInfo& info : infos)
    names.push_back("'" + display_name(info.name) + "'");
  if (names.empty()) return "none";
  return fmt::format("{}", fmt::join(names, ", "));
}

// Reads the files of `args` (NAME=FILE) into a map from tensor index to tensor.
std::map<size_t, SourcedTensor> read_named_files(const std::vector<std::string>& args,
                                                 const std::vector<TensorInfo>& infos,
                                                 const char* flag, const char* kind) {
  std::map<size_t, SourcedTensor> tensors;
  for (const std::string& arg : args) {
    auto [index, path] = split_name_and_file(arg, infos, flag, kind);
    if (tensors.count(index) != 0)
      run_fail("{} gives the {} '{}' twice", flag, kind, display_name(infos[index].name));
    tensors[index] = SourcedTensor{read_tensor_file(path), path};
  }
  return tensors;
}

bool parse_file_index(const std::string& file_name, const std::string& prefix, size_t* out) {
  std::string head = prefix + "_";
  if (file_name.size() <= head.size() + 3 || file_name.compare(0, head.size(), head) != 0 ||
      file_name.compare(file_name.size() - 3, 3, ".pb") != 0)
    return false;
  std::string digits = file_name.substr(head.size(), file_name.size() - head.size() - 3);
  if (digits.empty() || digits.size() > 6) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  *out = std::stoul(digits);
  return true;
}

// The dtype, the rank and every fixed dim; a symbolic dim (-1) takes any size here, and the
// library checks it against its symbol's range.
void check_input(const TensorInfo& info, const std::vector<SymbolInfo>& symbols,
                 const SourcedTensor& source) {
  const HostTensor& tensor = source.tensor;
  bool matches = tensor.dtype == info.dtype && tensor.dims.size() == info.dims.size();
  for (size_t d = 0; matches && d < info.dims.size(); ++d)
    matches = info.dims[d] == -1 || tensor.dims[d] == info.dims[d];
  if (matches) return;
  run_fail("input '{}': {} holds {}, but the model expects {}", display_name(info.name),
           source.origin, describe_tensor(tensor), describe_symbolic_type(info, symbols));
}

} // namespace

std::pair<size_t, std::string> split_name_and_file(const std::string& arg,
                                                   const std::vector<TensorInfo>& infos,
                                                   const char* flag, const char* kind) {
  for (size_t eq = arg.find('='); eq != std::string::npos; eq = arg.find('=', eq + 1)) {
    std::string name = arg.substr(0, eq);
    for (size_t i = 0; i < infos.size(); ++i) {
      if (infos[i].name != name) continue;
      if (eq + 1 == arg.size()) run_fail("{} '{}' names no file after '='", flag, arg);
      return {i, arg.substr(eq + 1)};
    }
  }
  if (arg.find('=') == std::string::npos) run_fail("{} '{}' is not NAME=FILE", flag, arg);
  run_fail("{} '{}' names no {} of the model; its {}s are: {}", flag, arg, kind, kind,
           name_list(infos));
}

std::vector<std::string> test_data_files(const std::string& folder, const std::string& prefix) {
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error))
    run_fail("--test-data '{}' is not a folder", folder);
  std::map<size_t, std::string> by_index;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    size_t index = 0;
    if (parse_file_index(entry.path().filename().string(), prefix, &index))
      by_index[index] = entry.path().string();
  }
  if (error) run_fail("--test-data '{}': cannot list the folder: {}", folder, error.message());
  std::vector<std::string> files;
  for (const auto& [index, path] : by_index) {
    if (index != files.size())
      run_fail("--test-data '{}' has {}_{}.pb but no {}_{}.pb", folder, prefix, index, prefix,
               files.size());
    files.push_back(path);
  }
  return files;
}

std::vector<SourcedTensor> gather_inputs(const std::vector<TensorInfo>& inputs,
                                         const std::vector<SymbolInfo>& symbols,
                                         const TensorSourceOptions& options) {
  std::vector<std::optional<int64_t>> requested =
      requested_symbol_values(options.dim_args, symbols);
  std::map<size_t, SourcedTensor> given =
      read_named_files(options.input_args, inputs, "--input", "input");
  std::vector<std::string> folder_files;
  if (!options.test_data_dir.empty()) {
    folder_files = test_data_files(options.test_data_dir, "input");
    if (folder_files.size() != inputs.size())
      run_fail("--test-data '{}' holds {} input_N.pb files, but the model has {} inputs ({})",
               options.test_data_dir, folder_files.size(), inputs.size(), name_list(inputs));
  }
  // The files first: their dims give the symbols that --dim does not.
  std::vector<std::optional<SourcedTensor>> files(inputs.size());
  std::vector<std::optional<std::vector<int64_t>>> file_dims(inputs.size());
  std::vector<std::string> origins(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (auto it = given.find(i); it != given.end()) {
      files[i] = std::move(it->second);
    } else if (!folder_files.empty()) {
      files[i] = SourcedTensor{read_tensor_proto(folder_files[i]).tensor, folder_files[i]};
    } else {
      continue;
    }
    check_input(inputs[i], symbols, *files[i]);
    file_dims[i] = files[i]->tensor.dims;
    origins[i] = files[i]->origin;
  }
  SymbolValues values = choose_symbol_values(symbols, requested, inputs, file_dims, origins);
  std::vector<SourcedTensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& info = inputs[i];
    if (files[i]) {
      tensors.push_back(std::move(*files[i]));
      continue;
    }
    tensors.push_back(
        SourcedTensor{random_tensor(info.dtype, dims_at(info, values), options.random, i),
                      fmt::format("random (seed {})", options.random.seed)});
  }
  return tensors;
}

std::vector<std::optional<SourcedTensor>> gather_expected(const std::vector<TensorInfo>& outputs,
                                                          const TensorSourceOptions& options) {
  std::map<size_t, SourcedTensor> given =
      read_named_files(options.expected_args, outputs, "--expected", "output");
  std::vector<std::string> folder_files;
  if (!options.test_data_dir.empty()) {
    folder_files = test_data_files(options.test_data_dir, "output");
    if (folder_files.size() > outputs.size())
      run_fail("--test-data '{}' holds {} output_N.pb files, but the model has only {} outputs "
               "({})",
               options.test_data_dir, folder_files.size(), outputs.size(), name_list(outputs));
  }
  std::vector<std::optional<SourcedTensor>> expected(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (auto it = given.find(i); it != given.end()) {
      expected[i] = std::move(it->second);
    } else if (i < folder_files.size()) {
      expected[i] = SourcedTensor{read_tensor_proto(folder_files[i]).tensor, folder_files[i]};
    }
  }
  return expected;
}

} // namespace stitch::run
