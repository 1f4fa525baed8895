// Writing a model's outputs as DIR/NAME.npy. Output names come from the model and may hold
// anything ('/', '..', spaces, control bytes, thousands of characters), so each becomes a
// safe file name first: only [A-Za-z0-9._-] survive (others turn into '_'), a leading '.'
// becomes '_', the stem is cut to 200 bytes, and names that collide after this get the
// output's index appended. A file name never leaves DIR.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "driver/run/host_tensor.h"

namespace stitch::run {

// `name` for a terminal: bytes outside printable ASCII as \xNN, cut after 200 bytes.
std::string display_name(const std::string& name);

// The safe stem (no extension) for one tensor name.
std::string safe_file_stem(const std::string& name);

// "STEM.npy" for each name, all different.
std::vector<std::string> output_file_names(const std::vector<std::string>& names);

// Creates `folder` if needed and writes each tensor there; reports each file on `log`. A
// bfloat16 tensor is written as ml_dtypes saves one (descr '<V2', see npy.h).
void write_outputs(const std::string& folder, const std::vector<std::string>& names,
                   const std::vector<HostTensor>& tensors, std::ostream& log);

} // namespace stitch::run
