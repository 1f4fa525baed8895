// Runs the fuzz target (fuzz_compile.cpp) once on each input, without libFuzzer: the
// sanitizer build's regression test over the seed corpus and every saved finding.
//
//   stitch_fuzz_replay PATH...   a file is one input; a folder, every *.onnx file beneath it
//
// The target aborts on a finding and the sanitizers report their own, so reaching the end
// means every input was handled; the last line says how many ran.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs_under(const fs::path& path) {
  if (!fs::is_directory(path)) return {path};
  std::vector<fs::path> found;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(path))
    if (entry.is_regular_file() && entry.path().extension() == ".onnx") found.push_back(entry);
  std::sort(found.begin(), found.end());
  return found;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    if (!fs::exists(argv[i])) {
      std::fprintf(stderr, "stitch_fuzz_replay: %s does not exist\n", argv[i]);
      return 2;
    }
    for (const fs::path& input : inputs_under(argv[i])) {
      std::ifstream in(input, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "stitch_fuzz_replay: cannot read %s\n", input.c_str());
        return 2;
      }
      if (std::getenv("STITCH_FUZZ_REPLAY_VERBOSE")) std::fprintf(stderr, "%s\n", input.c_str());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++count;
    }
  }
  std::printf("stitch_fuzz_replay: %zu inputs ran without a finding\n", count);
  return count > 0 ? 0 : 2;
}
