// The stitchc command line and its job: ONNX -> graph -> passes -> report.
#include "driver/driver.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "driver/progress.h"
#include "driver/report_html.h"
#include "driver/sha256.h"
#include "emitter/emit_model.h"
#include "graph/error.h"
#include "graph/graph_json.h"
#include "planner/code_generation_support.h"
#include "planner/legality.h"
#include "planner/plan_json.h"
#include "stitch_version.h"

namespace stitch {

namespace {

std::pair<std::string, SymShape> parse_input_shape(const std::string& arg) {
  size_t eq = arg.rfind('=');
  std::optional<SymShape> shape;
  if (eq != std::string::npos && eq > 0) shape = parse_symbolic_shape_spec(arg.substr(eq + 1));
  if (!shape)
    user_fail({},
              "--input-shape '{}' is not NAME=DIMS (for example input=1x3x224x224, or "
              "input=batchx3x224x224 with --dim batch=1..64)",
              arg);
  return {arg.substr(0, eq), *shape};
}

// The largest value a symbolic dim may take: index math on its extents stays in 32 bits.
constexpr int64_t kMaxSymbolicDim = int64_t{1} << 30;

SymbolicDim parse_dim(const std::string& arg) {
  std::optional<SymbolicDim> d = parse_dim_spec(arg);
  if (!d)
    user_fail({},
              "--dim '{}' is not NAME=MIN..MAX, NAME=MIN..MAX@TYPICAL or NAME=VALUE (for "
              "example seq=1..512@128; NAME is a letter or _ and then letters, digits or _)",
              arg);
  if (d->min > d->max)
    user_fail({}, "--dim '{}': the minimum {} is above the maximum {}", arg, d->min, d->max);
  if (d->typical < d->min || d->typical > d->max)
    user_fail({}, "--dim '{}': the typical value {} is outside {}..{}", arg, d->typical, d->min,
              d->max);
  if (d->typical < 1 && d->max > d->min)
    user_fail({}, "--dim '{}': the typical value is at least 1 (the plan's sizes are not empty)",
              arg);
  if (d->max > kMaxSymbolicDim)
    user_fail({}, "--dim '{}': the maximum {} is above the largest supported, {}", arg, d->max,
              kMaxSymbolicDim);
  return *d;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) user_fail({}, "cannot write '{}': {}", path, std::strerror(errno));
  f << text;
  if (!f.flush()) user_fail({}, "writing '{}' failed", path);
}

// The arguments as a shell would take them back: plain words bare, the others single-quoted.
std::string quoted_arguments(int argc, char** argv) {
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_=+./,:@%", c);
    });
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg)
      out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

// What the library embeds about its making (stitch_library_build_info).
BuildInfo build_info(const DriverOptions& options) {
  BuildInfo info;
  info.stitchc_version = STITCHC_VERSION;
  info.model_sha256 = sha256_file_hex(options.model_path);
  info.model_file = std::filesystem::path(options.model_path).filename().string();
  if (options.build.target == "cuda")
    info.archs = fmt::format("{}", fmt::join(options.build.archs, ","));
  info.planner = options.planner.planner;
  info.precision = std::string(precision_name(options.pipeline.precision.precision));
  info.flags = options.arguments;
  info.symbol_prefix = options.build.symbol_prefix;
  return info;
}

} // namespace

int parse_command_line(int argc, char** argv, DriverOptions& options) {
  CLI::App app{"stitchc: compiles an ONNX model into one CUDA shared library"};
  app.set_version_flag("--version", "stitchc " STITCHC_VERSION,
                       "print stitchc's version (every library it builds embeds it) and exit");
  options.arguments = quoted_arguments(argc, argv);
  std::vector<std::string> input_shapes, dims, print_after, disabled;
  app.add_option("model", options.model_path, "the .onnx model")->required();
  app.add_option("--input-shape", input_shapes,
                 "NAME=DIMS binds a graph input's shape, e.g. input=1x3x224x224 (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--dim", dims,
                 "NAME=MIN..MAX[@TYPICAL] keeps the model's symbolic dim NAME symbolic over "
                 "MIN..MAX (planned at TYPICAL, default MAX); NAME=VALUE binds it (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  std::vector<std::string> frozen;
  app.add_option("--freeze-input", frozen,
                 "NAME=FILE.pb makes a graph input a constant with the value in an ONNX "
                 "TensorProto file (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("-o,--output", options.build.output, "the shared library to write (libmodel.so)");
  app.add_option("--target", options.build.target, "cuda (default) or host (runs on the CPU)")
      ->check(CLI::IsMember({"cuda", "host"}));
  app.add_option("--arch", options.build.archs,
                 "GPU architectures for the CUDA target (default sm_90)")
      ->delimiter(',');
  app.add_option("--symbol-prefix", options.build.symbol_prefix,
                 "export the C API as NAME_run, NAME_model_create, ... instead of stitch_run, "
                 "... so that several models link into one program "
                 "(include/stitch/stitch_prefixed.h; default stitch)");
  app.add_option("--emit-dir", options.build.emit_dir, "keep the generated sources in DIR");
  app.add_option("--planner", options.planner.planner,
                 "fusion planner: ilp (the plan of least modeled cost, solved with GLPK; the "
                 "default), greedy (producer-consumer fusion) or none (one kernel per op)")
      ->check(CLI::IsMember({"none", "greedy", "ilp"}));
  std::string precision = "fp32", io_precision = "model";
  app.add_option("--precision", precision,
                 "fp32 (the model's own types; the default), tf32 (float32 tensors, GEMMs and "
                 "convolutions on TF32 tensor cores), fp16 or bf16 (float32 weights and "
                 "activations converted to float16 or bfloat16; statistics, sums and index math "
                 "stay float32: docs/precision.md)");
  app.add_option("--io-precision", io_precision,
                 "model (the model's inputs and outputs keep their declared types; the default) "
                 "or reduced (float32 inputs and outputs become float16 or bfloat16 too, with "
                 "--precision fp16 or bf16)");
  std::string attention = "auto";
  app.add_option("--attention", attention,
                 "auto (each attention runs as one kernel where the cost model finds it faster "
                 "than its products and softmax apart; the default), fused (wherever it can) or "
                 "unfused (never)")
      ->check(CLI::IsMember({"auto", "fused", "unfused"}));
  std::string gemm_chain = "auto";
  app.add_option("--gemm-chain", gemm_chain,
                 "auto (each GEMM, pointwise, GEMM chain of float16 or bfloat16 products runs as "
                 "one kernel in thread-block clusters (sm_90; each chain's unfused plan runs on "
                 "older devices) where the cost model finds it faster than the library calls "
                 "and kernels apart; the default), fused (wherever it can) or unfused (never)")
      ->check(CLI::IsMember({"auto", "fused", "unfused"}));
  app.add_option("--ilp-time-limit", options.planner.ilp_time_limit_s,
                 "seconds the ilp planner may search; then the best plan found (default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("-j,--jobs", options.build.jobs, "parallel compiler runs (default: all cores)");
  app.add_flag("-v,--verbose", options.build.verbose, "print each compiler command");
  app.add_option("--report", options.report_path,
                 "write the graph after the passes (and the fusion plan) as JSON");
  app.add_option("--report-html", options.report_html_path,
                 "write the fusion plan as one self-contained HTML page (the graph with its "
                 "groups, a table of the groups, the rejected fusions)");
  app.add_flag("--time-passes", options.time_passes,
               "print the wall time of each phase (load, passes, planning, emit, compile, link)");
  app.add_flag("-q,--quiet", options.quiet, "show no progress, even on a terminal");
  ModelLimits& limits = options.load.limits;
  app.add_option("--max-nodes", limits.max_nodes, "refuse models with more nodes (default 1048576)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-weight-bytes", limits.max_weight_bytes,
                 "refuse models whose constants together are larger (default 64 GiB)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-tensor-elements", limits.max_tensor_elements,
                 "refuse models with a larger tensor, given or inferred (default 2^36)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-attribute-elements", limits.max_attribute_elements,
                 "refuse attributes with more list entries and string bytes (default 2^24)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--debug-taps", options.emit.debug_taps,
               "debug build: after each fusion group, keep a copy of every tensor it writes "
               "(same plan, same kernels); `stitch-run --taps-onnx MODEL` compares them with "
               "ONNX Runtime and names the first group that differs");
  app.add_option("--no-fuse", options.planner.no_fuse,
                 "keep node NAME (its ONNX name) out of every fusion, to bisect (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  // Test only: hidden from --help (an empty group).
  app.add_option("--test-plant-wrong-group", options.emit.plant_wrong_group,
                 "make group N's output wrong on purpose (tests of the debugging tools)")
      ->group("");
  app.add_option("--print-after", print_after,
                 "print the graph after PASS (or 'all') to standard output (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--disable-pass", disabled, "skip PASS (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (const std::string& arg : input_shapes) {
    auto [name, shape] = parse_input_shape(arg);
    if (!options.load.input_shapes.emplace(name, shape).second)
      user_fail({}, "--input-shape gives '{}' twice", name);
  }
  for (const std::string& arg : dims) {
    SymbolicDim d = parse_dim(arg);
    for (const SymbolicDim& other : options.load.dims)
      if (other.name == d.name) user_fail({}, "--dim gives '{}' twice", d.name);
    options.load.dims.push_back(d);
  }
  for (const std::string& arg : frozen) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
      user_fail({}, "--freeze-input '{}' is not NAME=FILE.pb", arg);
    if (!options.load.frozen_inputs.emplace(arg.substr(0, eq), arg.substr(eq + 1)).second)
      user_fail({}, "--freeze-input gives '{}' twice", arg.substr(0, eq));
  }
  std::optional<Precision> chosen = precision_from_name(precision);
  if (!chosen) user_fail({}, "--precision '{}': expected fp32, tf32, fp16 or bf16", precision);
  std::optional<IoPrecision> io = io_precision_from_name(io_precision);
  if (!io) user_fail({}, "--io-precision '{}': expected model or reduced", io_precision);
  if (*io == IoPrecision::Reduced && !reduced_dtype(*chosen))
    user_fail({}, "--io-precision reduced needs --precision fp16 or bf16 (got {})", precision);
  options.pipeline.precision = {*chosen, *io};
  // The planner plans for the oldest architecture the library is built for (the host target
  // plans as the CUDA target would, so that both run the same plan).
  if (options.build.archs.empty()) user_fail({}, "--arch needs at least one architecture");
  int oldest = 0, newest = 0;
  int64_t shared = 0;
  for (const std::string& a : options.build.archs) {
    const int capability = arch_compute_capability(a);
    if (capability < 0) user_fail({}, "--arch '{}' is not a GPU architecture like sm_90", a);
    oldest = oldest == 0 ? capability : std::min(oldest, capability);
    newest = std::max(newest, capability);
    shared = shared == 0 ? max_shared_per_block_of(capability)
                         : std::min(shared, max_shared_per_block_of(capability));
  }
  options.planner.device.min_compute_capability = oldest;
  options.planner.device.max_compute_capability = newest;
  options.planner.device.max_shared_per_block = shared; // every architecture's kernels fit
  options.planner.tf32 = *chosen == Precision::Tf32;
  options.planner.attention = attention == "fused"     ? FusionMode::Fused
                              : attention == "unfused" ? FusionMode::Unfused
                                                       : FusionMode::Auto;
  options.planner.gemm_chain = gemm_chain == "fused"     ? FusionMode::Fused
                               : gemm_chain == "unfused" ? FusionMode::Unfused
                                                         : FusionMode::Auto;
  options.pipeline.print_after = {print_after.begin(), print_after.end()};
  options.pipeline.disabled = {disabled.begin(), disabled.end()};
  check_pipeline_options(options.pipeline);
  if (!is_symbol_prefix(options.build.symbol_prefix))
    user_fail({}, "--symbol-prefix '{}' is not a C identifier of at most 64 characters",
              options.build.symbol_prefix);
  return -1;
}

void run_driver(const DriverOptions& options, std::ostream& out) {
  progress_settings() = {options.time_passes, progress_wanted(stderr, options.quiet)};
  PhaseTimer total("total");
  Graph graph = [&] {
    PhaseTimer timer("load");
    return load_onnx(options.model_path, options.load);
  }();
  PipelineOptions pipeline = options.pipeline;
  pipeline.print_to = &out;
  pipeline.on_pass_done = [](const std::string& pass, double seconds) {
    report_time("  pass " + pass, seconds);
  };
  {
    PhaseTimer timer("passes");
    run_pipeline(graph, pipeline);
  }
  for (const std::string& name : options.planner.no_fuse)
    if (std::none_of(graph.nodes.begin(), graph.nodes.end(),
                     [&](const Node& node) { return names_node_or_its_parts(name, node.name); }))
      user_fail({options.model_path, "", ""},
                "--no-fuse: the graph has no node named '{}' "
                "after the passes (folded into a constant, removed, or misspelled; see --report)",
                name);
  if (options.emit.debug_taps && !graph.symbols.empty())
    user_fail({options.model_path, "", ""},
              "--debug-taps with symbolic dims (--dim NAME=MIN..MAX): taps hold tensors of one "
              "shape; build the debug library with each dim bound (--dim NAME=VALUE)");
  // What code generation cannot do is refused now, also when nothing is to be built: a model
  // stitchc accepts is one it can compile.
  try {
    check_code_generation(graph);
  } catch (const UserError& e) {
    if (e.site().file.empty()) throw e.with_file(options.model_path);
    throw;
  }
  nlohmann::json report = graph_to_json(graph);
  const PrecisionOptions& precision = options.pipeline.precision;
  report["precision"] = {{"precision", precision_name(precision.precision)},
                         {"io_precision", io_precision_name(precision.io)}};
  if (reduced_dtype(precision.precision))
    report["precision"]["kept_float32"] = precision_fp32_rules();
  auto write_reports = [&](const FusionPlan& plan, const MemoryPlan& memory) {
    if (!options.report_path.empty())
      write_text_file(options.report_path,
                      report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (!options.report_html_path.empty()) {
      PhaseTimer timer("html report (Graphviz layout)");
      ProgressLine progress([] { return std::string("laying out the plan with Graphviz"); });
      write_text_file(options.report_html_path, plan_report_html(graph, plan, memory, precision));
    }
  };
  // With a report alone the model is planned but not compiled; the reports are written before
  // code generation, so that they are there to inspect when generation or compilation fails.
  if (options.build.output.empty() && options.report_path.empty() &&
      options.report_html_path.empty())
    return;
  // Before the work, not at the final link: a library needs a folder to go into.
  if (!options.build.output.empty()) {
    const std::filesystem::path folder =
        std::filesystem::absolute(options.build.output).parent_path();
    if (!std::filesystem::is_directory(folder))
      user_fail({}, "cannot write '{}': the folder '{}' does not exist", options.build.output,
                folder.string());
  }
  try {
    FusionPlan plan = [&] {
      PhaseTimer timer("plan (" + options.planner.planner + " planner)");
      ProgressLine progress([ilp = options.planner.planner == "ilp"] {
        return std::string(ilp ? "solving the fusion ILP..." : "planning the fusion...");
      });
      PlannerOptions planner = options.planner;
      // The host target runs the same plan, except that a grid-barrier launch fits the
      // blocks its emulation keeps resident.
      if (options.build.target == "host")
        planner.device.cooperative_sm_count = kHostTargetMultiprocessors;
      return plan_fusion(graph, planner);
    }();
    if (plan.ilp.ran) report_time("  ILP solve (GLPK)", plan.ilp.solve_seconds);
    MemoryPlan memory = [&] {
      PhaseTimer timer("memory plan");
      return plan_memory(graph, plan);
    }();
    report["plan"] = plan_to_json(graph, plan, memory);
    write_reports(plan, memory);
    if (options.build.output.empty()) return;
    GeneratedModel model = [&] {
      PhaseTimer timer("emit");
      EmitOptions emit = options.emit;
      emit.build = build_info(options);
      return emit_model(graph, plan, memory, options.build.target, emit);
    }();
    build_library(model, options.build);
  } catch (const UserError& e) {
    if (e.site().file.empty()) throw e.with_file(options.model_path);
    throw;
  }
}

int driver_main(int argc, char** argv) {
  try {
    DriverOptions options;
    int code = parse_command_line(argc, argv, options);
    if (code >= 0) return code;
    run_driver(options, std::cout);
    return 0;
  } catch (const UserError& e) {
    std::cerr << "stitchc: error: " << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << "stitchc: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "stitchc: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "stitchc: internal compiler error (a stitchc bug, please report it): " << e.what()
              << "\n";
    return 2;
  }
}

} // namespace stitch
