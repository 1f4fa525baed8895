// Debug taps: read, written, and compared with ONNX Runtime's values (see taps.h).
#include "driver/run/taps.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "driver/run/npy.h"
#include "driver/run/output_files.h"
#include "driver/run/run_error.h"
#include "driver/subprocess.h"

namespace stitch::run {

namespace {

namespace fs = std::filesystem;

std::string tap_file(size_t index) { return fmt::format("tap_{:03}.npy", index); }

std::string dump_json(const nlohmann::json& json) {
  return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) run_fail("cannot write '{}': {}", path.string(), std::strerror(errno));
  file << text;
  if (!file.flush()) run_fail("writing '{}' failed", path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) run_fail("cannot read '{}': {}", path.string(), std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// The folder the taps and the reference's files go to: --taps-dir, or a private temporary
// folder removed when the comparison is done.
class WorkFolder {
public:
  explicit WorkFolder(const std::string& dir) {
    if (!dir.empty()) {
      std::error_code error;
      fs::create_directories(dir, error);
      if (error) run_fail("--taps-dir: cannot create '{}': {}", dir, error.message());
      path_ = dir;
      return;
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        (tmp != nullptr && tmp[0] != '\0' ? std::string(tmp) : "/tmp") + "/stitch-run-taps-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr)
      run_fail("cannot make a temporary folder '{}': {}", pattern, std::strerror(errno));
    path_ = pattern;
    temporary_ = true;
  }
  ~WorkFolder() {
    std::error_code ignored;
    if (temporary_) fs::remove_all(path_, ignored);
  }
  WorkFolder(const WorkFolder&) = delete;
  WorkFolder& operator=(const WorkFolder&) = delete;
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
  bool temporary_ = false;
};

std::string python_interpreter(const TapOptions& options) {
  if (!options.python.empty()) return options.python;
  const char* from_environment = std::getenv("STITCH_PYTHON");
  if (from_environment != nullptr && from_environment[0] != '\0') return from_environment;
  return "python3";
}

// The last lines of a program's output, for an error message.
std::string output_tail(const std::string& text, size_t max_lines = 12) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (lines.size() > max_lines)
    lines.erase(lines.begin(), lines.end() - static_cast<long>(max_lines));
  return fmt::format("{}", fmt::join(lines, "\n  "));
}

// How long the reference may take: loading a large model and running it once in ONNX Runtime.
constexpr int kReferenceTimeoutSeconds = 1800;

// Runs `python script request` in `dir` (an argv list, no shell, a time limit).
void run_reference(const std::string& python, const fs::path& dir) {
  Command command{{python, (dir / "ort_reference.py").string(), (dir / "request.json").string()},
                  "the ONNX Runtime reference"};
  CommandResult result = run_commands({command}, dir.string(), 1, kReferenceTimeoutSeconds).at(0);
  if (result.exit_code == 0) return;
  const std::string how = result.timed_out
                              ? fmt::format("took longer than {} s", kReferenceTimeoutSeconds)
                          : result.exit_code < 0 ? std::string("did not start or was killed")
                                                 : fmt::format("exited with {}", result.exit_code);
  run_fail("--taps-onnx: the ONNX Runtime reference failed ('{}' {}; it needs numpy, onnx and "
           "onnxruntime: give such a Python with --python or STITCH_PYTHON):\n  {}",
           python, how, output_tail(result.output));
}

} // namespace

std::vector<TapValue> read_taps(ModelInstance& model) {
  std::vector<TapValue> taps;
  for (size_t i = 0; i < model.taps().size(); ++i) {
    const TapInfo& info = model.taps()[i];
    HostTensor value{info.tensor.dtype, info.tensor.dims, std::vector<uint8_t>(info.tensor.bytes)};
    model.read_tap(i, value.bytes.data());
    taps.push_back({info, std::move(value)});
  }
  return taps;
}

void write_taps(const std::string& dir, const std::vector<TapValue>& taps, std::ostream& out) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) run_fail("--taps-dir: cannot create '{}': {}", dir, error.message());
  nlohmann::json manifest = nlohmann::json::array();
  for (size_t i = 0; i < taps.size(); ++i) {
    const TapValue& tap = taps[i];
    write_npy((fs::path(dir) / tap_file(i)).string(), tap.value);
    manifest.push_back({{"index", i},
                        {"tensor", tap.info.tensor.name},
                        {"group", tap.info.group},
                        {"node", tap.info.node},
                        {"dtype", dtype_name(tap.info.tensor.dtype)},
                        {"dims", tap.info.tensor.dims},
                        {"file", tap_file(i)}});
  }
  write_file(fs::path(dir) / "taps.json", dump_json(manifest));
  out << fmt::format("wrote {} taps to {} (taps.json lists them)\n", taps.size(), dir);
}

bool compare_taps_with_onnx(const TapOptions& options, const ModelInstance& model,
                            const std::vector<SourcedTensor>& inputs,
                            const std::vector<TapValue>& taps, const Tolerance& tolerance,
                            std::ostream& out) {
  std::error_code error;
  const fs::path onnx_model = fs::absolute(options.onnx_model, error);
  if (error || !fs::is_regular_file(onnx_model))
    run_fail("--taps-onnx: '{}' is not a file", options.onnx_model);
  WorkFolder folder(options.dir);
  const fs::path& dir = folder.path();

  nlohmann::json request;
  request["model"] = onnx_model.string();
  request["inputs"] = nlohmann::json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const fs::path file = dir / fmt::format("input_{}.npy", i);
    write_npy(file.string(), inputs[i].tensor);
    request["inputs"].push_back({{"name", model.inputs()[i].name}, {"file", file.string()}});
  }
  request["tensors"] = nlohmann::json::array();
  for (size_t i = 0; i < taps.size(); ++i)
    request["tensors"].push_back(
        {{"name", taps[i].info.tensor.name},
         {"elem_type", static_cast<int>(taps[i].info.tensor.dtype)},
         {"file", (dir / fmt::format("reference_{:03}.npy", i)).string()}});
  request["result"] = (dir / "reference.json").string();
  write_file(dir / "request.json", dump_json(request));
  write_file(dir / "ort_reference.py", kOrtReferenceScript);
  run_reference(python_interpreter(options), dir);

  nlohmann::json result;
  try {
    result = nlohmann::json::parse(read_file(dir / "reference.json"));
  } catch (const nlohmann::json::exception& e) {
    run_fail("--taps-onnx: the reference's result is not JSON: {}", e.what());
  }
  std::vector<std::string> found = result.value("found", std::vector<std::string>{});
  out << fmt::format("taps vs ONNX Runtime {} on {} ({}), in the order the groups run:\n",
                     result.value("onnxruntime", std::string("?")), options.onnx_model,
                     tolerance.describe());
  size_t compared = 0, mismatched = 0, without_reference = 0;
  const TapValue* first_wrong = nullptr;
  std::string first_wrong_detail;
  for (size_t i = 0; i < taps.size(); ++i) {
    const TapValue& tap = taps[i];
    const std::string label = fmt::format("  group {:>3}  {} <- node {}: {}", tap.info.group,
                                          display_name(tap.info.tensor.name),
                                          display_name(tap.info.node), describe_tensor(tap.value));
    if (std::find(found.begin(), found.end(), tap.info.tensor.name) == found.end()) {
      ++without_reference;
      out << label << ": no reference (a tensor stitchc made; the model does not name it)\n";
      continue;
    }
    HostTensor reference = read_npy((dir / fmt::format("reference_{:03}.npy", i)).string());
    Comparison comparison = compare_tensors(tap.value, reference, tolerance);
    ++compared;
    const std::string detail = describe_comparison(comparison, tap.value);
    out << label << ": " << detail << ": " << (comparison.matches() ? "OK" : "MISMATCH") << "\n";
    if (!comparison.matches()) {
      ++mismatched;
      if (first_wrong == nullptr) {
        first_wrong = &tap;
        first_wrong_detail = detail;
      }
    }
  }
  if (first_wrong == nullptr) {
    out << fmt::format("taps: all {} compared taps match ONNX Runtime ({} without a reference)\n",
                       compared, without_reference);
    return true;
  }
  out << fmt::format("taps: {} of {} compared taps differ ({} without a reference)\n", mismatched,
                     compared, without_reference);
  out << fmt::format("first diverging group: {} (group_{:03}.cu), tensor {} written by node {}: "
                     "{}\n",
                     first_wrong->info.group, first_wrong->info.group,
                     display_name(first_wrong->info.tensor.name),
                     display_name(first_wrong->info.node), first_wrong_detail);
  return false;
}

} // namespace stitch::run
