// CodeWriter: the small printer every emitter writes generated source through — lines with
// indentation, braces that open and close scopes, named temporaries, and comments that can
// safely carry strings from the model.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace stitch {

// A model string made safe for a `//` comment: printable ASCII only (others as \xNN), and
// never ending in a backslash, so no string can end the comment or splice the next line.
std::string comment_safe(std::string_view text);

class CodeWriter {
public:
  void line(std::string_view text = {});
  template <typename... Args> void linef(fmt::format_string<Args...> f, Args&&... args) {
    line(fmt::format(f, std::forward<Args>(args)...));
  }
  // "head {" and one more level of indentation; close() ends it with "}" + tail.
  void open(std::string_view head);
  void close(std::string_view tail = {});
  // Ends a block and opens the next on the same line: "} head {" ("} else {").
  void close_open(std::string_view head);
  // A `//` comment line; `text` may hold model strings.
  void comment(std::string_view text);
  // A fresh identifier "prefix" + number, unique within this writer.
  std::string temp(std::string_view prefix);
  void append(const CodeWriter& other); // another writer's text at the current indentation

  const std::string& str() const { return out_; }

private:
  std::string out_;
  int indent_ = 0;
  int next_temp_ = 0;
};

} // namespace stitch
