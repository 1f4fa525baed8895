// One backend node test, end to end, the way a user would run it:
//
//   1. load the model in-process (frontend and passes) to learn which graph inputs feed
//      shape operands and must be frozen (tests/backend/shape_input_freezing.h), and the
//      inputs and outputs the compiled library will have;
//   2. stitchc MODEL --target host -o model.so --freeze-input NAME=input_N.pb ...
//   3. stitch-run model.so --input NAME=input_N.pb ... --expected NAME=output_N.pb ...
//      --rtol R --atol A
//
// stitchc and stitch-run run as child processes with time limits, so a crash or a hang of
// either is one failed test, not a dead runner. A model stitchc refuses as unsupported (an
// op, a dtype, a kernel not written yet) is "refused", not failed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "driver/run/compare.h"
#include "node_suite.h"

namespace stitch::conformance {

enum class Verdict { Pass, Fail, Refused };
const char* verdict_name(Verdict v); // "PASS", "FAIL", "REFUSED"

struct TestResult {
  Verdict verdict = Verdict::Fail;
  std::string detail;         // why it failed or was refused, one line; "" on a pass
  std::string log;            // the tools' output, for a failure
  double compile_seconds = 0; // wall time of stitchc
  double run_seconds = 0;     // wall time of stitch-run
  std::vector<std::string> frozen_inputs;
};

struct RunnerTools {
  std::string stitchc;
  std::string stitch_run;
  std::string target = "host";    // "cuda": compile with nvcc only (no GPU to run on)
  std::string planner;            // stitchc's --planner; empty: stitchc's default
  std::filesystem::path work_dir; // each test builds in work_dir/TEST_NAME
  bool keep_files = false;        // keep a test's folder even when it passes
  int compile_timeout_seconds = 600;
  int run_timeout_seconds = 120;
};

TestResult run_node_test(const NodeTest& test, const run::Tolerance& tolerance,
                         const RunnerTools& tools);

// A refusal's reason without the parts that differ between tests of the same cause (node
// and input names, counts): "unsupported ops: If x1 (first: 'n')" -> "unsupported ops: If".
std::string refusal_summary(const std::string& reason);

} // namespace stitch::conformance
