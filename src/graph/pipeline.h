// The pass pipeline: one straight-line list of graph passes, each a free function
// `bool pass(Graph&)` returning "changed", with the graph verified after every pass.
//
//   infer-shapes    dtypes, shapes and compile-time values of every tensor (required)
//   fold-constants  nodes with compile-time outputs become constants
//   convert-precision  --precision fp16|bf16: float32 values become float16 or bfloat16,
//                   statistics and index math stay float32 (convert_precision.h)
//   lower-composites   Softmax, LayerNorm and the other composites become primitive ops
//   canonicalize    one spelling for computations exporters write several ways
//   channels-last   activations between float16/bfloat16 (or tf32) convolutions stored
//                   [N, spatial..., C], as cuDNN's tensor cores read them (channels_last.h)
//   remove-identity Identity, Dropout and no-op reshapes disappear
//   eliminate-dead  nodes that reach no graph output disappear
//   make-views      Reshape/Flatten/Squeeze/Unsqueeze become views of their input
#pragma once

#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "graph/convert_precision.h"
#include "graph/graph.h"

namespace stitch {

struct PipelineOptions {
  std::set<std::string> disabled;    // --disable-pass
  std::set<std::string> print_after; // --print-after ("all" prints after every pass)
  std::ostream* print_to = nullptr;  // where --print-after writes
  PrecisionOptions precision;        // --precision, --io-precision (convert-precision)
  // Called after each pass that ran, with its wall time including verification
  // (stitchc --time-passes).
  std::function<void(const std::string& pass, double seconds)> on_pass_done;
};

const std::vector<std::string>& pass_names();
// Unknown or required pass names in the options are user errors.
void check_pipeline_options(const PipelineOptions& options);
void run_pipeline(Graph& graph, const PipelineOptions& options);

} // namespace stitch
