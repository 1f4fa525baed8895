// run_pipeline: the passes in order, verification after each, optional printing.
#include "graph/pipeline.h"

#include <chrono>

#include "graph/align_gemm_columns.h"
#include "graph/canonicalize.h"
#include "graph/channels_last.h"
#include "graph/convert_precision.h"
#include "graph/copy_shared_ranges.h"
#include "graph/eliminate_dead.h"
#include "graph/error.h"
#include "graph/fold_constants.h"
#include "graph/fold_repeated_heads.h"
#include "graph/fold_residual_bias.h"
#include "graph/graph_printer.h"
#include "graph/infer_dims.h"
#include "graph/infer_shapes.h"
#include "graph/lower_composites.h"
#include "graph/make_views.h"
#include "graph/merge_matmuls.h"
#include "graph/movement_as_remappings.h"
#include "graph/remove_identity.h"
#include "graph/verify.h"
#include "graph/views_after_epilogues.h"

namespace stitch {

namespace {

struct Pass {
  const char* name;
  bool (*run)(Graph&, const PipelineOptions&);
  bool required;
};

// A pass that takes no options.
template <bool (*pass)(Graph&)> bool plain(Graph& graph, const PipelineOptions&) {
  return pass(graph);
}

bool convert_precision_pass(Graph& graph, const PipelineOptions& options) {
  if (options.precision.precision != Precision::Fp16 &&
      options.precision.precision != Precision::Bf16)
    return false;
  const bool raised = raise_gelu(graph); // one node, not a Pow the rules keep in float32
  return convert_precision(graph, options.precision) || raised;
}

bool channels_last_pass(Graph& graph, const PipelineOptions& options) {
  return channels_last(graph, options.precision.precision);
}

constexpr Pass kPasses[] = {
    {"infer-shapes", plain<infer_shapes>, true},
    {"fold-constants", plain<fold_constants>, false},
    // After folding, so that it converts each weight once, as folded; before lowering, so that
    // it sees the composites whole (lower-composites computes their statistics in float32)
    // and an exporter's Pow and Exp before canonicalize rewrites Pow(x, 2) as x * x (GELU
    // chains become Gelu first: canonicalize's raise_gelu). Does nothing unless --precision is
    // fp16 or bf16.
    {"convert-precision", convert_precision_pass, false},
    // After folding, so that the lowering reads constant scales and statistics as values and
    // makes its own constants (epsilon, BatchNormalization's folded factors) directly; it
    // leaves nothing for a second folding. Required: the emitter has no kernel for the
    // composites.
    {"lower-composites", plain<lower_composites>, true},
    // After lowering, so that lowered and exporter-expanded composites meet in one form;
    // before eliminate-dead, which drops what it leaves unread.
    {"canonicalize", plain<canonicalize>, false},
    // Before channels-last, whose Transposes would sit between the Convs and their Add.
    {"fold-residual-bias", plain<fold_residual_bias>, false},
    // After canonicalize, which would compose a Conv's own Transposes away; before
    // remove-identity and eliminate-dead, which drop the pairs it cancels.
    {"channels-last", channels_last_pass, false},
    // After canonicalize and channels-last (a converted weight is merged as converted);
    // before make-views, so that the head-split Reshapes it moves are still Reshapes.
    {"merge-matmuls", plain<merge_matmuls>, false},
    // Before make-views and eliminate-dead, like merge-matmuls.
    {"fold-repeated-heads", plain<fold_repeated_heads>, false},
    // After convert-precision (half weights) and merge-matmuls (a merged weight is aligned as
    // one); before make-views.
    {"align-gemm-columns", plain<align_gemm_columns>, false},
    // After fold-constants (indices computed from constants are constant) and merge-matmuls
    // (which makes a Split read by head splits head slices of its own); before make-views,
    // which makes the Reshapes it writes views.
    {"movement-as-remappings", plain<movement_as_remappings>, false},
    {"remove-identity", plain<remove_identity>, false},
    {"eliminate-dead", plain<eliminate_dead>, false},
    {"make-views", plain<make_views>, false},
    // After make-views, whose Views it moves past the epilogue nodes after a product.
    {"views-after-epilogues", plain<views_after_epilogues>, false},
    // After make-views, whose views it copies with each Range.
    {"copy-shared-ranges", plain<copy_shared_ranges>, false},
};

} // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Pass& p : kPasses)
      n.push_back(p.name);
    return n;
  }();
  return names;
}

void check_pipeline_options(const PipelineOptions& options) {
  auto known = [](const std::string& name) {
    for (const Pass& p : kPasses)
      if (name == p.name) return true;
    return false;
  };
  for (const std::string& name : options.disabled) {
    if (!known(name))
      user_fail({}, "--disable-pass: unknown pass '{}' (passes: {})", name,
                fmt::join(pass_names(), ", "));
    for (const Pass& p : kPasses)
      if (name == p.name && p.required)
        user_fail({}, "--disable-pass: pass '{}' is required and cannot be disabled", name);
  }
  for (const std::string& name : options.print_after)
    if (name != "all" && !known(name))
      user_fail({}, "--print-after: unknown pass '{}' (passes: {})", name,
                fmt::join(pass_names(), ", "));
}

void run_pipeline(Graph& graph, const PipelineOptions& options) {
  check_pipeline_options(options);
  verify_graph(graph, "the frontend", /*require_types=*/false);
  for (const Pass& pass : kPasses) {
    if (options.disabled.count(pass.name)) continue;
    const auto start = std::chrono::steady_clock::now();
    try {
      pass.run(graph, options);
    } catch (const UserError& e) {
      if (e.site().file.empty()) throw e.with_file(graph.source_file);
      throw; // keeps the error's own type
    }
    if (pass.run != plain<infer_shapes>) derive_dims(graph, pass.name);
    verify_graph(graph, pass.name);
    if (options.on_pass_done)
      options.on_pass_done(
          pass.name,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (options.print_to &&
        (options.print_after.count(pass.name) || options.print_after.count("all")))
      *options.print_to << "// ---- after " << pass.name << " ----\n" << print_graph(graph);
  }
}

} // namespace stitch
