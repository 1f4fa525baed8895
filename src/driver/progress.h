// What stitchc tells a person while it works, on stderr: with --time-passes, each phase's
// wall time (load, passes, planning, emit, each compiler run, link); on a terminal, one line
// rewritten in place (\r) while a long phase runs (the ILP solve, the compiler runs done out of
// total), with its elapsed time. --quiet, or a stderr that is not a terminal, shows no
// progress (logs and pipes get no \r noise); --time-passes prints either way.
//
// The settings are process-wide (stitchc is one compile per process) so that the build
// machinery deep in the driver need not thread them through every call.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace stitch {

struct ProgressSettings {
  bool time_passes = false;   // --time-passes
  bool show_progress = false; // stderr is a terminal and no --quiet
};

// The settings stitchc runs with (all off until the driver sets them).
ProgressSettings& progress_settings();

// Whether `stream` is a terminal and `quiet` is not set: when progress lines are shown.
bool progress_wanted(std::FILE* stream, bool quiet);

// With --time-passes, prints "stitchc: time: WHAT  S.SSS s" on stderr.
void report_time(const std::string& what, double seconds);

// Times one phase for --time-passes, from construction to destruction. A phase left by an
// exception prints nothing (its time would be of a run that did not happen).
class PhaseTimer {
public:
  explicit PhaseTimer(std::string what);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;
  double seconds() const;

private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  int exceptions_at_start_;
};

// While alive, and only when progress is shown, keeps one line on stderr reading
// "stitchc: TEXT (E.E s)", where TEXT is `describe()` (called from a helper thread, so it must
// read only thread-safe state, an atomic counter say) and E.E the time since construction.
// The line is refreshed a few times a second and erased on destruction.
class ProgressLine {
public:
  explicit ProgressLine(std::function<std::string()> describe);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

private:
  void draw();

  std::function<std::string()> describe_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace stitch
