// RunError: the one exception type of stitch-run's library. It carries a message meant for
// the user (a bad flag, an unreadable or malformed file, a library that is not a stitchc
// library, a failed call into the model) and always names the file, tensor or call at fault.
// The tool turns it into a message on standard error and exit status 2.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace stitch::run {

class RunError : public std::runtime_error {
public:
  explicit RunError(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void run_fail(fmt::format_string<Args...> format, Args&&... args) {
  throw RunError(fmt::format(format, std::forward<Args>(args)...));
}

} // namespace stitch::run
