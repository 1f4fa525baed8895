// The job of stitch-run, apart from its command line: load a stitchc library, bind its
// inputs, run it once, write and compare its outputs, then optionally time further runs.
//
// Exit status: 0 when every compared output matches (or nothing was compared), 1 when an
// output mismatches, 2 for a usage error, a file or library that cannot be loaded, or a run
// that fails — anything that prevents a verdict.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "driver/run/compare.h"
#include "driver/run/taps.h"
#include "driver/run/tensor_sources.h"

namespace stitch::run {

constexpr int kExitAllMatch = 0;
constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;

struct RunOptions {
  std::string library_path;
  std::string
      symbol_prefix; // the library's C API prefix; empty: stitch, or guessed from libNAME.so
  bool info = false; // --info: print how the library was built and its tensors, run nothing
  TensorSourceOptions sources;
  bool force_random = false; // --random: every input without --input is random
  std::string output_dir;
  Tolerance tolerance;
  int warmup = 3;  // runs before timing; used only when iters > 0
  int iters = 0;   // timed runs; 0 times nothing
  TapOptions taps; // --taps-dir, --taps-onnx, --python (a library built with --debug-taps)
  // --shape-context (a library with symbolic dims): run again in a context created for this
  // run's own shape (stitch_context_create_for) and require bitwise the same outputs.
  bool shape_context = false;
};

struct LatencyStats {
  double median_ms = 0.0;
  double p90_ms = 0.0; // nearest rank: the smallest latency at or above 90% of the runs
  double min_ms = 0.0;
  double mean_ms = 0.0;
};

// Statistics of per-run latencies (at least one).
LatencyStats latency_stats(std::vector<double> latencies_ms);

// Runs the whole job, printing the report to `out` and errors to `err`; returns the exit
// status. Never throws.
int run_tool(const RunOptions& options, std::ostream& out, std::ostream& err);

} // namespace stitch::run
