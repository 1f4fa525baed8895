// build_library: write, compile, link.
#include "driver/build_library.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <thread>

#include "driver/embedded_files.h"
#include "driver/progress.h"
#include "driver/subprocess.h"
#include "graph/error.h"
#include "stitch/stitch_prefixed.h"

namespace fs = std::filesystem;

namespace stitch {

namespace {

void write_file(const fs::path& path, const char* data, size_t size) {
  fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !f.write(data, static_cast<std::streamsize>(size)) || !f.flush())
    user_fail({}, "cannot write '{}'", path.string());
}

void write_file(const fs::path& path, const std::string& text) {
  write_file(path, text.data(), text.size());
}

// A private folder removed when the build ends, unless the user asked to keep the sources.
class WorkDir {
public:
  explicit WorkDir(const std::string& emit_dir) {
    if (!emit_dir.empty()) {
      fs::create_directories(emit_dir);
      path_ = fs::absolute(emit_dir);
      return;
    }
    std::string tmpl = (fs::temp_directory_path() / "stitchc-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
      user_fail({}, "cannot create a temporary folder: {}", std::strerror(errno));
    path_ = tmpl;
    remove_ = true;
  }
  ~WorkDir() {
    std::error_code ec;
    if (remove_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

private:
  fs::path path_;
  bool remove_ = false;
};

int jobs_for(const BuildOptions& o) {
  return o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Runs one phase's commands (`phase` names it for --time-passes and the progress line).
void run_or_fail(const std::vector<Command>& commands, const fs::path& dir, const BuildOptions& o,
                 const std::string& phase) {
  if (o.verbose)
    for (const Command& c : commands)
      fmt::print(stderr, "stitchc: {}\n", command_line(c));
  std::vector<CommandResult> results;
  {
    PhaseTimer timer(phase);
    std::atomic<size_t> done = 0;
    ProgressLine progress(
        [&] { return fmt::format("{}: {}/{} done", phase, done.load(), commands.size()); });
    results = run_commands(commands, dir.string(), jobs_for(o), o.timeout_seconds,
                           [&](size_t finished, size_t) { done = finished; });
    if (commands.size() > 1)
      for (size_t i = 0; i < results.size(); ++i)
        report_time("  " + commands[i].what, results[i].seconds);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const CommandResult& r = results[i];
    if (r.exit_code == 0) continue;
    std::string why = r.timed_out       ? fmt::format("timed out after {} s", o.timeout_seconds)
                      : r.exit_code < 0 ? "did not run"
                                        : fmt::format("exit code {}", r.exit_code);
    std::string output = r.output.size() > 4000 ? r.output.substr(0, 4000) + "\n[...]" : r.output;
    user_fail({}, "{} failed ({}): {}\n{}", commands[i].what, why, command_line(commands[i]),
              output);
  }
}

std::string require_program(const std::vector<std::string>& names, const char* what) {
  std::string p = find_program(names);
  if (p.empty()) user_fail({}, "{} not found (looked for {})", what, fmt::join(names, ", "));
  return p;
}

std::string runtime_archive(const std::string& name) {
  fs::path p = fs::path(runtime_library_dir()) / name;
  if (!fs::exists(p))
    user_fail({}, "the stitchc runtime archive '{}' is missing (set STITCH_RUNTIME_DIR)",
              p.string());
  return p.string();
}

// The host target's compile flags (from CMake, shared with the precompiled runtime header).
std::vector<std::string> host_cxx_flags() {
  std::vector<std::string> flags;
  std::string_view all = STITCH_HOST_CXX_FLAGS;
  while (!all.empty()) {
    size_t bar = all.find('|');
    flags.emplace_back(all.substr(0, bar));
    all = bar == std::string_view::npos ? std::string_view{} : all.substr(bar + 1);
  }
  return flags;
}

// The folder of the precompiled stitch_generated.h built with the project, if `cxx` is the
// compiler that built it (a header precompiled by another compiler would be ignored, or worse).
std::string host_pch_dir(const std::string& cxx) {
  fs::path dir = fs::path(runtime_library_dir()) / "host_pch";
  std::ifstream stamp(dir / "compiler.txt");
  std::string built_by;
  if (!stamp || !std::getline(stamp, built_by) || !fs::exists(dir / "stitch_generated.h.gch"))
    return {};
  std::error_code ec;
  fs::path ours = fs::canonical(cxx, ec);
  if (ec || ours.string() != built_by) return {};
  return dir.string();
}

// The C API's function names without "stitch_", from the header's one list.
std::vector<std::string> api_function_names() {
#define STITCH_NAME_OF(type, name, params) #name,
  return {STITCH_API_FUNCTIONS(STITCH_NAME_OF)};
#undef STITCH_NAME_OF
}

} // namespace

int arch_compute_capability(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5 || arch.size() > 7) return -1;
  std::string digits = arch.substr(3);
  if (digits.back() == 'a') digits.pop_back();
  if (digits.size() < 2 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

bool is_symbol_prefix(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 64) return false;
  if (!std::isalpha(static_cast<unsigned char>(prefix[0])) && prefix[0] != '_') return false;
  return std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string runtime_library_dir() {
  if (const char* env = std::getenv("STITCH_RUNTIME_DIR")) return env;
  std::error_code ec;
  fs::path bin = fs::read_symlink("/proc/self/exe", ec).parent_path();
  // A build tree keeps the runtime beside stitchc; an installed stitchc (bin/) finds it in
  // lib/stitch/runtime of the same prefix.
  fs::path installed = bin.parent_path() / "lib" / "stitch" / "runtime";
  if (!fs::is_directory(bin / "runtime") && fs::is_directory(installed)) return installed.string();
  return (bin / "runtime").string();
}

void build_library(const GeneratedModel& model, const BuildOptions& o) {
  if (o.target != "cuda" && o.target != "host")
    user_fail({}, "unknown target '{}' (targets: cuda, host)", o.target);
  WorkDir work(o.emit_dir);
  const fs::path& dir = work.path();
  for (const EmbeddedFile& f : embedded_runtime_files())
    write_file(dir / "runtime" / f.path, reinterpret_cast<const char*>(f.data), f.size);
  std::vector<std::string> objects;
  for (const GeneratedFile& f : model.groups)
    write_file(dir / f.name, f.text);
  write_file(dir / model.launcher.name, model.launcher.text);
  write_file(dir / "model.bin", model.blob);
  write_file(dir / model.blob_stub.name, model.blob_stub.text);

  std::string cxx = require_program({std::getenv("CXX") ? std::getenv("CXX") : "g++", "g++", "c++"},
                                    "the host C++ compiler");
  std::vector<Command> compiles;
  compiles.push_back(
      {{cxx, "-c", model.blob_stub.name, "-o", "model_blob.o"}, "assembling the model blob"});
  objects.push_back("model_blob.o");
  // Only the C API is exported; everything else stays local, so that two compiled models can
  // live in one process. With a symbol prefix each API function is exported under its
  // prefixed name alone (an alias the linker defines), so that two libraries also link into
  // one program side by side. The SONAME is the library's file name.
  write_file(dir / "exports.map", fmt::format("{{ global: {}_*; local: *; }};\n", o.symbol_prefix));
  std::vector<std::string> link = {cxx,
                                   "-shared",
                                   "-o",
                                   fs::absolute(o.output).string(),
                                   "-Wl,--version-script=exports.map",
                                   "-Wl,-soname," + fs::path(o.output).filename().string()};
  if (o.symbol_prefix != "stitch")
    for (const std::string& name : api_function_names())
      link.push_back(fmt::format("-Wl,--defsym={}_{}=stitch_{}", o.symbol_prefix, name, name));
  if (o.target == "host") {
    // One translation unit: the host target compiles the very same sources as nvcc would.
    std::string unity = "// unity_host.cpp: every generated source, for the host target.\n";
    for (const GeneratedFile& f : model.groups)
      unity += "#include \"" + f.name + "\"\n";
    unity += "#include \"" + model.launcher.name + "\"\n";
    write_file(dir / "unity_host.cpp", unity);
    // The kernels link to the launch machinery compiled once in libstitch_runtime_host.a
    // (STITCH_HOST_LINKED_LAUNCH), and include the precompiled stitch_generated.h when this
    // compiler built it: its folder comes first on the include path, so every generated file
    // includes that same copy of the (identical) runtime headers.
    std::vector<std::string> argv = {cxx};
    for (std::string& flag : host_cxx_flags())
      argv.push_back(std::move(flag));
    if (std::string pch = host_pch_dir(cxx); !pch.empty()) {
      if (o.verbose)
        fmt::print(stderr, "stitchc: using the precompiled runtime header in {}\n", pch);
      argv.insert(argv.end(), {"-I" + pch, "-include", "stitch_generated.h"});
    }
    argv.insert(argv.end(), {"-Iruntime", "-c", "unity_host.cpp", "-o", "unity_host.o"});
    compiles.push_back({argv, "compiling the generated kernels for the host target"});
    objects.push_back("unity_host.o");
    run_or_fail(compiles, dir, o, "compile");
    for (const std::string& obj : objects)
      link.push_back(obj);
    for (const std::string& a : std::vector<std::string>{
             "-Wl,--whole-archive", runtime_archive("libstitch_runtime_host.a"),
             "-Wl,--no-whole-archive", runtime_archive("libstitch_library_host.a"),
             "-lboost_context", "-lpthread"})
      link.push_back(a);
  } else {
    std::string nvcc =
        require_program({"nvcc", "/usr/local/cuda/bin/nvcc"}, "nvcc (the CUDA compiler)");
    std::vector<std::string> arch_flags;
    for (const std::string& a : o.archs) {
      if (arch_compute_capability(a) < 0)
        user_fail({}, "--arch '{}' is not a GPU architecture like sm_90", a);
      arch_flags.push_back("-gencode=arch=compute_" + a.substr(3) + ",code=" + a);
    }
    auto nvcc_compile = [&](const std::string& src) {
      std::string obj = fs::path(src).replace_extension(".o").string();
      std::vector<std::string> argv = {nvcc,         "-std=c++20",
                                       "-O3",        "--expt-relaxed-constexpr",
                                       "-Xcompiler", "-fPIC,-fvisibility=hidden",
                                       "-Iruntime"};
      argv.insert(argv.end(), arch_flags.begin(), arch_flags.end());
      argv.insert(argv.end(), {"-c", src, "-o", obj});
      compiles.push_back({argv, "compiling " + src});
      objects.push_back(obj);
    };
    // Every nvcc run pays for the headers once: the group files (and the launcher) are
    // compiled in as many chunks as there are parallel jobs, each including its share. The
    // files with a grid barrier all go into chunk 0 (with the launcher), so that one run alone
    // pays for device/stitch_grid.cuh, which costs that run about as much as the other chunks'
    // groups; the others are dealt out in turn, over chunks 1.. when chunk 0 has barrier files.
    size_t chunks = std::min(model.groups.size(), static_cast<size_t>(jobs_for(o)));
    std::vector<std::vector<std::string>> chunk_files(chunks);
    bool any_barrier = false;
    for (const GeneratedFile& f : model.groups)
      if (f.grid_barrier) {
        chunk_files[0].push_back(f.name);
        any_barrier = true;
      }
    const size_t first = any_barrier && chunks > 1 ? 1 : 0;
    size_t dealt = 0;
    for (const GeneratedFile& f : model.groups)
      if (!f.grid_barrier) chunk_files[first + dealt++ % (chunks - first)].push_back(f.name);
    for (size_t c = 0; c < chunks; ++c) {
      if (c > 0 && chunk_files[c].empty()) continue;
      std::string text = fmt::format("// chunk_{:03}.cu: group sources compiled together.\n", c);
      for (const std::string& file : chunk_files[c])
        text += "#include \"" + file + "\"\n";
      if (c == 0) text += "#include \"" + model.launcher.name + "\"\n";
      std::string name = fmt::format("chunk_{:03}.cu", c);
      write_file(dir / name, text);
      nvcc_compile(name);
    }
    if (chunks == 0) nvcc_compile(model.launcher.name);
    run_or_fail(compiles, dir, o, "compile");
    for (const std::string& obj : objects)
      link.push_back(obj);
    for (const std::string& a : std::vector<std::string>{
             "-Wl,--whole-archive", runtime_archive("libstitch_runtime_cuda.a"),
             "-Wl,--no-whole-archive", runtime_archive("libstitch_library_cuda.a"),
             "-L/usr/local/cuda/lib64", "-Wl,-rpath,/usr/local/cuda/lib64", "-lcudart",
             "-lcublasLt", "-lcudnn", "-lpthread"})
      link.push_back(a);
  }
  run_or_fail({{link, "linking " + o.output}}, dir, o, "link");
}

} // namespace stitch
