// Running the compilers stitchc drives (nvcc, the host C++ compiler, the linker): an argv list
// (no shell, so no quoting or injection), a working folder, a time limit after which the
// whole process group is killed, and the combined output captured for error messages.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace stitch {

struct Command {
  std::vector<std::string> argv; // argv[0] is looked up on PATH
  std::string what;              // for messages: "compiling group_003.cu"
};

struct CommandResult {
  int exit_code = -1; // -1 when it did not start or was killed
  bool timed_out = false;
  std::string output; // stdout and stderr together
  double seconds = 0; // wall time from start to exit
};

// Runs the commands in `dir`, at most `jobs` at a time, each limited to `timeout_seconds`.
// Results are in the commands' order. `on_done(done, total)` is called as commands finish.
std::vector<CommandResult> run_commands(const std::vector<Command>& commands,
                                        const std::string& dir, int jobs, int timeout_seconds,
                                        const std::function<void(size_t, size_t)>& on_done = {});

// The first of `names` found on PATH (or as an absolute path), or "".
std::string find_program(const std::vector<std::string>& names);

// The text of a command line, for messages and --verbose.
std::string command_line(const Command& command);

} // namespace stitch
