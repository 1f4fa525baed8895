// build_library: from generated sources to one shared library. It writes the sources and the
// embedded runtime headers into a private folder (or --emit-dir), compiles them — nvcc for
// the CUDA target, one file per group in parallel; the host C++ compiler for the host target,
// all groups in one translation unit — and links them with the prebuilt runtime.
#pragma once

#include <string>
#include <vector>

#include "emitter/emit_model.h"

namespace stitch {

struct BuildOptions {
  std::string target = "cuda"; // "cuda" or "host"
  std::vector<std::string> archs = {"sm_90"};
  std::string output;        // the .so to write
  std::string emit_dir;      // keep the sources here ("" = a private temp dir)
  int jobs = 0;              // parallel compiles (0 = the number of cores)
  int timeout_seconds = 900; // per compiler run
  bool verbose = false;      // print each command
  // The exported C API's names: "stitch" (stitch_run, ...) or --symbol-prefix's NAME
  // (NAME_run, ...; include/stitch/stitch_prefixed.h).
  std::string symbol_prefix = "stitch";
};

void build_library(const GeneratedModel& model, const BuildOptions& options);

// The folder holding the prebuilt runtime archives: $STITCH_RUNTIME_DIR, or "runtime" beside
// the stitchc executable (a build tree), or else lib/stitch/runtime of the prefix stitchc is
// installed in (bin/stitchc).
std::string runtime_library_dir();

// Whether `prefix` can prefix the exported C API's names: a C identifier, at most 64 chars.
bool is_symbol_prefix(const std::string& prefix);

// The compute capability of an --arch like sm_90 (90) or sm_90a (90); -1 when `arch` is not
// one.
int arch_compute_capability(const std::string& arch);

} // namespace stitch
