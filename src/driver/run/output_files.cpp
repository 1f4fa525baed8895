// Output names -> safe, distinct .npy file names, and the writing of --output-dir.
#include "driver/run/output_files.h"

#include <filesystem>
#include <set>

#include "driver/run/npy.h"
#include "driver/run/run_error.h"

namespace stitch::run {

namespace {

constexpr size_t kMaxStemBytes = 200;

bool is_safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

} // namespace

std::string display_name(const std::string& name) {
  std::string shown;
  for (char c : name.substr(0, kMaxStemBytes)) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\')
      shown += c;
    else
      shown += fmt::format("\\x{:02x}", byte);
  }
  if (name.size() > kMaxStemBytes) shown += "...";
  return shown;
}

std::string safe_file_stem(const std::string& name) {
  std::string stem;
  for (char c : name.substr(0, kMaxStemBytes))
    stem += is_safe_char(c) ? c : '_';
  if (stem.empty()) return "output";
  if (stem[0] == '.') stem[0] = '_';
  return stem;
}

std::vector<std::string> output_file_names(const std::vector<std::string>& names) {
  std::set<std::string> taken;
  std::vector<std::string> files;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string stem = safe_file_stem(names[i]);
    std::string file = stem + ".npy";
    for (size_t attempt = 0; taken.count(file) != 0; ++attempt)
      file = attempt == 0 ? fmt::format("{}_{}.npy", stem, i)
                          : fmt::format("{}_{}_{}.npy", stem, i, attempt);
    taken.insert(file);
    files.push_back(file);
  }
  return files;
}

void write_outputs(const std::string& folder, const std::vector<std::string>& names,
                   const std::vector<HostTensor>& tensors, std::ostream& log) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) run_fail("--output-dir '{}': cannot create the folder: {}", folder, error.message());
  if (!std::filesystem::is_directory(folder)) run_fail("--output-dir '{}' is not a folder", folder);
  std::vector<std::string> files = output_file_names(names);
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string path = (std::filesystem::path(folder) / files[i]).string();
    write_npy(path, tensors[i]);
    log << fmt::format("  wrote {}\n", path);
  }
}

} // namespace stitch::run
