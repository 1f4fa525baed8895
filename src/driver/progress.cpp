// Phase timings and the progress line on stderr.
#include "driver/progress.h"

#include <unistd.h>

#include <exception>

#include <fmt/format.h>

namespace stitch {

ProgressSettings& progress_settings() {
  static ProgressSettings settings;
  return settings;
}

bool progress_wanted(std::FILE* stream, bool quiet) {
  return !quiet && isatty(fileno(stream)) == 1;
}

void report_time(const std::string& what, double seconds) {
  if (!progress_settings().time_passes) return;
  fmt::print(stderr, "stitchc: time: {:<40} {:8.3f} s\n", what, seconds);
  std::fflush(stderr);
}

PhaseTimer::PhaseTimer(std::string what)
    : what_(std::move(what)), start_(std::chrono::steady_clock::now()),
      exceptions_at_start_(std::uncaught_exceptions()) {}

PhaseTimer::~PhaseTimer() {
  if (std::uncaught_exceptions() > exceptions_at_start_) return;
  report_time(what_, seconds());
}

double PhaseTimer::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

ProgressLine::ProgressLine(std::function<std::string()> describe)
    : describe_(std::move(describe)), start_(std::chrono::steady_clock::now()) {
  if (!progress_settings().show_progress) return;
  draw(); // at once, so that even a short phase shows what it was
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; }))
      draw();
  });
}

ProgressLine::~ProgressLine() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  // Erase the line, so that what comes next starts on a clean one.
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

void ProgressLine::draw() {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  fmt::print(stderr, "\rstitchc: {} ({:.1f} s)\033[K", describe_(), elapsed);
  std::fflush(stderr);
}

} // namespace stitch
