// The stitchc driver: command-line options and the compile job they describe.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "driver/build_library.h"
#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/pipeline.h"
#include "planner/planner.h"

namespace stitch {

struct DriverOptions {
  std::string model_path;
  std::string report_path;      // --report: the graph and the fusion plan as JSON
  std::string report_html_path; // --report-html: the fusion plan drawn, one HTML page
  bool time_passes = false;     // --time-passes: each phase's wall time on stderr
  bool quiet = false;           // --quiet: no progress line even on a terminal
  LoadOptions load;
  PipelineOptions pipeline;
  PlannerOptions planner;
  BuildOptions build;    // build.output empty: stop after the passes
  EmitOptions emit;      // --debug-taps, --test-plant-wrong-group
  std::string arguments; // the command line after the program name, for the build info
};

// Parses argv; returns the process exit code to use now when parsing ends the run (help,
// a bad flag), or -1 to go on.
int parse_command_line(int argc, char** argv, DriverOptions& options);

// Loads the model, runs the passes and writes what was asked for. Throws UserError.
void run_driver(const DriverOptions& options, std::ostream& out);

// main's body: parse, run, print errors on one line; returns the exit code
// (0 success, 1 user error, 2 internal error).
int driver_main(int argc, char** argv);

} // namespace stitch
