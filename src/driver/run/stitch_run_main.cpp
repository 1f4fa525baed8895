// stitch-run: runs a library stitchc compiled — on its inputs from .npy/.pb files, an ONNX
// test-data folder, or random values — then writes, compares and times its outputs.
// The command line lives here; the job is run_tool (driver/run/run_tool.h).
#include <CLI/CLI.hpp>

#include <iostream>

#include "driver/run/run_tool.h"
#include "stitch_version.h"

namespace {

constexpr const char* kDescription =
    "stitch-run: runs a model library built by stitchc (CUDA or host target).\n"
    "Inputs without --input come from --test-data, else are random (seeded by --seed).\n"
    "A library compiled with symbolic dims (stitchc --dim NAME=MIN..MAX) runs at any shape in\n"
    "range: an input file gives its own dims, random inputs take each symbolic dim from --dim,\n"
    "else from an input file that has it, else its maximum; the outputs take the shape the\n"
    "library gives for the inputs' (stitch_model_output_shapes), and --info names the dims.\n"
    "A library built with stitchc --debug-taps also keeps every tensor each fusion group wrote:\n"
    "--taps-onnx MODEL compares them with ONNX Runtime and names the first group that differs.\n"
    "Tensor files: .npy (numpy dtypes f2 f4 f8 i1..i8 u1..u8 b1; bfloat16 as ml_dtypes saves it:\n"
    "descr '<V2', read back with numpy.load(f).view(ml_dtypes.bfloat16)) or .pb (an ONNX\n"
    "TensorProto, raw_data or typed fields; float16 and bfloat16 as bit patterns in int32_data).\n"
    "Each compared output gets its max abs, max rel and relative L2 error (||got-ref||/||ref||,\n"
    "in double). It passes within --rtol/--atol, or with --max-rel-l2 alone within that bound;\n"
    "NaN and inf must sit where the reference has the same value. A float16 or bfloat16 output\n"
    "may be compared with a float32 reference: values are compared as double.\n"
    "Exit status: 0 all compared outputs (and taps) match, 1 a mismatch, 2 a usage, load or run "
    "error.";

// Fills `options` from the command line; returns an exit status when the tool should stop
// (after --help or a usage error), or -1 to go on.
int parse_command_line(int argc, char** argv, stitch::run::RunOptions& options) {
  CLI::App app{kDescription, "stitch-run"};
  app.set_version_flag("--version", "stitch-run " STITCHC_VERSION, "print the version and exit");
  stitch::run::TensorSourceOptions& sources = options.sources;
  app.add_option("library", options.library_path, "the model library (libmodel.so)")->required();
  app.add_flag("--info", options.info,
               "print how the library was built (stitchc's version, the model's SHA-256, target, "
               "architectures, planner, precision, stitchc's arguments), its symbolic dims with "
               "their ranges, and its inputs and outputs (a symbolic dim by its name, or ? for "
               "a dim computed from them); run nothing");
  app.add_option("--symbol-prefix", options.symbol_prefix,
                 "the library's C API prefix (stitchc --symbol-prefix; default stitch, or NAME "
                 "for a libNAME.so that exports NAME_*)");
  app.add_option("--input", sources.input_args,
                 "NAME=FILE: the input NAME from a .npy or .pb (ONNX TensorProto) file "
                 "(repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--test-data", sources.test_data_dir,
                 "an ONNX test-data folder: input_N.pb feed the inputs and output_N.pb are "
                 "expected, by position");
  app.add_flag("--random", options.force_random,
               "random values for every input without --input (the default)");
  app.add_option(
         "--dim", sources.dim_args,
         "NAME=SIZE: the size of the library's symbolic dim NAME for this run (repeatable); "
         "an input file must agree with it; default: the size an input file gives, else "
         "the symbol's maximum")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--seed", sources.random.seed, "seed of the random inputs (default 0)");
  app.add_option("--random-int-max", sources.random.int_max,
                 "random integer inputs are drawn from [0, N] (default 4)");
  app.add_option("--expected", sources.expected_args,
                 "NAME=FILE: compare the output NAME with a .npy or .pb file (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  CLI::Option* rtol = app.add_option("--rtol", options.tolerance.rtol,
                                     "element-wise relative tolerance (default 1e-3)");
  CLI::Option* atol = app.add_option("--atol", options.tolerance.atol,
                                     "element-wise absolute tolerance (default 1e-5)");
  double max_rel_l2 = 0.0;
  CLI::Option* rel_l2 = app.add_option(
      "--max-rel-l2", max_rel_l2,
      "pass a floating output when ||got-ref||_2 / ||ref||_2 <= X; without --rtol or --atol this "
      "replaces the element-wise check, with either both must hold (integer and bool outputs "
      "still match exactly)");
  app.add_option("--output-dir", options.output_dir,
                 "write each output as DIR/NAME.npy (bfloat16 as ml_dtypes saves it, descr '<V2')");
  app.add_option("--taps-dir", options.taps.dir,
                 "write every debug tap as DIR/tap_NNN.npy, listed in DIR/taps.json (with "
                 "--taps-onnx, the reference's files go there too)");
  app.add_option("--taps-onnx", options.taps.onnx_model,
                 "compare every debug tap with ONNX Runtime's value of the same tensor of this "
                 "ONNX model on the same inputs, and name the first group that differs");
  app.add_option("--python", options.taps.python,
                 "the Python (with numpy, onnx, onnxruntime) that runs the --taps-onnx "
                 "reference (default: $STITCH_PYTHON, else python3)");
  app.add_flag("--shape-context", options.shape_context,
               "a library with symbolic dims: also run in a context created for this run's shape "
               "alone (stitch_context_create_for, its arena laid out for these dims), print both "
               "contexts' memory, and fail unless its outputs are bitwise the same");
  app.add_option("--warmup", options.warmup, "untimed runs before timing (default 3)");
  app.add_option("--iters", options.iters,
                 "timed runs; prints median and p90, and the symbolic dims' sizes it timed at "
                 "(default 0: none)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    int status = app.exit(error);
    return status == 0 ? 0 : stitch::run::kExitError;
  }
  if (rel_l2->count() > 0) {
    options.tolerance.max_rel_l2 = max_rel_l2;
    options.tolerance.elementwise = rtol->count() > 0 || atol->count() > 0;
  }
  return -1;
}

} // namespace

int main(int argc, char** argv) {
  stitch::run::RunOptions options;
  int status = parse_command_line(argc, argv, options);
  if (status >= 0) return status;
  return stitch::run::run_tool(options, std::cout, std::cerr);
}
