// Loads every model of the ONNX backend node test suite and checks stitchc's frontend and
// passes against it: each model either loads and runs the pass pipeline, or is refused with
// an "unsupported" error (an op, domain or data type stitchc does not support). For every
// model that loads, the inferred dtype and shape of each graph output must equal those of
// the test's expected output (test_data_set_0/output_N.pb). Anything else — another error,
// a crash, a mismatch — fails.
//
// usage: stitch_backend_shapes NODE_TEST_DIR [--verbose]
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/infer_context.h"
#include "graph/pipeline.h"
#include "shape_input_freezing.h"

namespace fs = std::filesystem;
using namespace stitch;

namespace {

struct Expected {
  int elem_type;
  Shape dims;
};

bool read_expected(const fs::path& pb, Expected& out) {
  std::ifstream f(pb, std::ios::binary);
  onnx::TensorProto t;
  if (!t.ParseFromIstream(&f)) return false;
  out.elem_type = t.data_type();
  out.dims.assign(t.dims().begin(), t.dims().end());
  return true;
}

// "" when the graph matches the expected outputs, else what differs.
std::string compare_outputs(const Graph& g, const fs::path& data_dir) {
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    fs::path pb = data_dir / ("output_" + std::to_string(i) + ".pb");
    Expected e{};
    if (!fs::exists(pb)) return "missing " + pb.filename().string();
    if (!read_expected(pb, e)) return pb.filename().string() + " is not a TensorProto";
    const Tensor& t = g.tensor(g.outputs[i]);
    if (e.elem_type != dtype_onnx_code(t.dtype) || e.dims != t.shape)
      return fmt::format("output {} '{}': inferred {}{}, expected {}{}", i, t.name,
                         dtype_name(t.dtype), shape_to_string(t.shape),
                         onnx_dtype_code_name(e.elem_type), shape_to_string(e.dims));
  }
  return "";
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: stitch_backend_shapes NODE_TEST_DIR [--verbose]\n";
    return 2;
  }
  fs::path root = argv[1];
  bool verbose = argc > 2 && std::string(argv[2]) == "--verbose";
  if (!fs::is_directory(root)) {
    std::cerr << "no ONNX backend node tests at " << root
              << " (install the test requirements: scripts/install-deps.sh)\n";
    return 2;
  }
  std::vector<fs::path> tests;
  for (const auto& entry : fs::directory_iterator(root))
    if (fs::exists(entry.path() / "model.onnx")) tests.push_back(entry.path());
  std::sort(tests.begin(), tests.end());

  int passed = 0, refused = 0, failed = 0, frozen_tests = 0;
  std::map<std::string, int> refusal_reasons;
  for (const fs::path& dir : tests) {
    std::string name = dir.filename().string();
    std::string problem;
    std::vector<std::string> frozen;
    try {
      LoadOptions options;
      Graph g = testing::load_freezing_shape_inputs(dir, options, frozen);
      problem = compare_outputs(g, dir / "test_data_set_0");
      if (problem.empty()) {
        ++passed;
        frozen_tests += !frozen.empty();
        if (verbose)
          std::cout << "PASS    " << name
                    << (frozen.empty()
                            ? ""
                            : fmt::format(" (frozen inputs: {})", fmt::join(frozen, ", ")))
                    << "\n";
        continue;
      }
    } catch (const UserError& e) {
      if (e.reason().find("unsupported") != std::string::npos) {
        ++refused;
        ++refusal_reasons[e.reason().substr(0, e.reason().find(" (first"))];
        if (verbose) std::cout << "REFUSED " << name << ": " << e.reason() << "\n";
        continue;
      }
      problem = std::string("error: ") + e.what();
    } catch (const std::exception& e) {
      problem = std::string("crash: ") + e.what();
    }
    ++failed;
    std::cout << "FAIL    " << name << ": " << problem << "\n";
  }
  std::cout << "\nrefusals by reason:\n";
  for (const auto& [reason, n] : refusal_reasons)
    std::cout << "  " << n << "  " << reason << "\n";
  std::cout << "\nONNX backend node suite: " << tests.size() << " models; " << passed
            << " loaded with matching output shapes (" << frozen_tests
            << " with shape inputs frozen), " << refused << " refused as unsupported, " << failed
            << " failed\n";
  return failed == 0 && passed > 0 ? 0 : 1;
}
