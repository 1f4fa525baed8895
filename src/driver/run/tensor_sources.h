// Where each model input and each expected output comes from. For an input, in order of
// precedence: an --input NAME=FILE, the folder of --test-data (input_N.pb for the model's
// N-th input), or random values. For an output: an --expected NAME=FILE or the folder's
// output_N.pb; an output with neither is not compared.
//
// Inputs are checked here against the model — dtype, rank and every fixed dim must be exactly
// what the library was compiled for — so a wrong file is reported before anything runs. A
// symbolic dim (a library compiled with stitchc --dim) takes the file's size; random inputs
// take each symbol's value as symbols.h chooses it. Expected tensors are checked by the
// comparison, which reports a dtype or shape difference as a mismatch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/run/host_tensor.h"
#include "driver/run/model_library.h"
#include "driver/run/random_tensor.h"

namespace stitch::run {

struct TensorSourceOptions {
  std::vector<std::string> input_args;    // NAME=FILE (.npy or .pb)
  std::vector<std::string> expected_args; // NAME=FILE (.npy or .pb)
  std::string test_data_dir;              // an ONNX test-data folder, or ""
  std::vector<std::string> dim_args;      // NAME=VALUE: a symbolic dim's size (symbols.h)
  RandomSpec random;
};

// A tensor and a few words on where it came from ("x.npy", "random (seed 0)").
struct SourcedTensor {
  HostTensor tensor;
  std::string origin;
};

// The inputs of one run; `symbols` are the model's symbolic dims (none for fixed shapes).
std::vector<SourcedTensor> gather_inputs(const std::vector<TensorInfo>& inputs,
                                         const std::vector<SymbolInfo>& symbols,
                                         const TensorSourceOptions& options);
std::vector<std::optional<SourcedTensor>> gather_expected(const std::vector<TensorInfo>& outputs,
                                                          const TensorSourceOptions& options);

// Splits "NAME=FILE" at the first '=' whose left side names one of `infos` (names may hold
// '='); returns the index of that tensor and the file. `flag` names the option in errors.
std::pair<size_t, std::string> split_name_and_file(const std::string& arg,
                                                   const std::vector<TensorInfo>& infos,
                                                   const char* flag, const char* kind);

// The files input_N.pb (or output_N.pb) of an ONNX test-data folder, by N; N must run 0, 1,
// ... without gaps. `prefix` is "input" or "output".
std::vector<std::string> test_data_files(const std::string& folder, const std::string& prefix);

} // namespace stitch::run
