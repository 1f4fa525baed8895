// Errors in stitchc travel on two channels (see STYLE.md):
//  - UserError: the model or the command line is wrong. The message names the model file,
//    the ONNX node (name and op type) where there is one, and the reason. The driver prints
//    it on one line and exits non-zero.
//  - InternalError: stitchc itself is wrong. The message says it is a compiler bug.
// Validation is always real code that throws; nothing here vanishes in release builds.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace stitch {

// Where a user error happened: any field may be empty.
struct ErrorSite {
  std::string file;    // the model file
  std::string node;    // ONNX node name
  std::string op_type; // ONNX op type of that node
  // The node's first output. Exporters often leave node names empty; such a node is named
  // by the value it writes instead.
  std::string output = {};
};

class UserError : public std::runtime_error {
public:
  UserError(ErrorSite site, std::string reason);
  const ErrorSite& site() const { return site_; }
  const std::string& reason() const { return reason_; }
  // A copy with the file filled in where it was still empty (errors raised below the
  // frontend learn the file name on their way out).
  UserError with_file(const std::string& file) const;

private:
  ErrorSite site_;
  std::string reason_;
};

class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string& what);
};

// One printable line: "model.onnx: node 'n1' (Add): reason", or for a node without a name
// "model.onnx: node (Add) writing 'y': reason".
std::string format_user_error(const ErrorSite& site, const std::string& reason);

template <typename... Args>
[[noreturn]] void user_fail(ErrorSite site, fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(std::move(site), fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void internal_fail(fmt::format_string<Args...> f, Args&&... args) {
  throw InternalError(fmt::format(f, std::forward<Args>(args)...));
}

} // namespace stitch

// An invariant of the compiler itself; failing it is a stitchc bug, in every build type.
#define STITCH_INTERNAL_CHECK(cond, ...)                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::stitch::internal_fail("{}:{}: check '{}' failed: {}", __FILE__, __LINE__, #cond,           \
                              ::fmt::format(__VA_ARGS__));                                         \
  } while (0)
