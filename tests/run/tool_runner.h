// Running stitch-run (or stitchc) from a Catch2 test: its exit status and its whole output,
// which is attached to the test's messages so a failing check shows what the tool printed.
#pragma once

#include <catch2/catch.hpp>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

namespace stitch::run::testing {

struct ToolResult {
  int status = -1;
  std::string output; // stdout and stderr together
};

inline std::string shell_quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `program` with `args`; the output is attached to the test's messages.
inline ToolResult run_program(const std::string& program, const std::vector<std::string>& args) {
  std::string command = shell_quote(program);
  for (const std::string& arg : args)
    command += " " + shell_quote(arg);
  command += " 2>&1";
  ToolResult result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  UNSCOPED_INFO(program << " output:\n" << result.output);
  return result;
}

inline ToolResult run_stitch_run(const std::vector<std::string>& args) {
  return run_program(STITCH_RUN_TOOL, args);
}

} // namespace stitch::run::testing
