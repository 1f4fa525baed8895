// run_commands: posix_spawn with output to a private file, parallel jobs, time limits.
#include "driver/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace stitch {

namespace {

struct Running {
  size_t index;
  pid_t pid;
  std::chrono::steady_clock::time_point start;
  std::string log;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

pid_t spawn(const Command& c, const std::string& dir, const std::string& log, std::string& error) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> argv;
  for (const std::string& a : c.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error = fmt::format("cannot run '{}': {}", c.argv[0], std::strerror(rc));
    return -1;
  }
  return pid;
}

} // namespace

std::string command_line(const Command& command) {
  return fmt::format("{}", fmt::join(command.argv, " "));
}

std::string find_program(const std::vector<std::string>& names) {
  const char* path = std::getenv("PATH");
  for (const std::string& name : names) {
    if (name.find('/') != std::string::npos) {
      if (access(name.c_str(), X_OK) == 0) return name;
      continue;
    }
    std::string dirs = path ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::string candidate = dirs.substr(start, end - start) + "/" + name;
      struct stat st {};
      if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          access(candidate.c_str(), X_OK) == 0)
        return candidate;
      start = end + 1;
    }
  }
  return "";
}

std::vector<CommandResult> run_commands(const std::vector<Command>& commands,
                                        const std::string& dir, int jobs, int timeout_seconds,
                                        const std::function<void(size_t, size_t)>& on_done) {
  std::vector<CommandResult> results(commands.size());
  std::vector<Running> running;
  size_t next = 0, finished = 0;
  while (next < commands.size() || !running.empty()) {
    while (next < commands.size() && static_cast<int>(running.size()) < std::max(jobs, 1)) {
      std::string log = fmt::format("{}/.stitch-cmd-{}.log", dir, next);
      std::string error;
      pid_t pid = spawn(commands[next], dir, log, error);
      if (pid < 0) {
        results[next].output = error;
        if (on_done) on_done(++finished, commands.size());
      } else
        running.push_back({next, pid, std::chrono::steady_clock::now(), log});
      ++next;
    }
    bool any_done = false;
    for (size_t k = 0; k < running.size();) {
      Running& r = running[k];
      int status = 0;
      pid_t done = waitpid(r.pid, &status, WNOHANG);
      bool expired =
          std::chrono::steady_clock::now() - r.start > std::chrono::seconds(timeout_seconds);
      if (done == 0 && expired) {
        kill(-r.pid, SIGKILL);
        waitpid(r.pid, &status, 0);
        results[r.index].timed_out = true;
        done = r.pid;
      }
      if (done == 0) {
        ++k;
        continue;
      }
      CommandResult& res = results[r.index];
      res.output = read_file(r.log);
      unlink(r.log.c_str());
      if (!res.timed_out && WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
      res.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
      if (on_done) on_done(++finished, commands.size());
      running.erase(running.begin() + static_cast<long>(k));
      any_done = true;
    }
    if (!any_done && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return results;
}

} // namespace stitch
