// CodeWriter and comment_safe.
#include "emitter/code_writer.h"

#include "graph/error.h"

namespace stitch {

std::string comment_safe(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

void CodeWriter::line(std::string_view text) {
  if (!text.empty()) out_.append(static_cast<size_t>(indent_) * 2, ' ');
  out_.append(text);
  out_ += '\n';
}

void CodeWriter::open(std::string_view head) {
  line(head.empty() ? std::string("{") : fmt::format("{} {{", head));
  ++indent_;
}

void CodeWriter::close(std::string_view tail) {
  STITCH_INTERNAL_CHECK(indent_ > 0, "CodeWriter::close without open");
  --indent_;
  line(fmt::format("}}{}", tail));
}

void CodeWriter::close_open(std::string_view head) {
  STITCH_INTERNAL_CHECK(indent_ > 0, "CodeWriter::close_open without open");
  --indent_;
  line(fmt::format("}} {} {{", head));
  ++indent_;
}

void CodeWriter::comment(std::string_view text) { line("// " + comment_safe(text)); }

std::string CodeWriter::temp(std::string_view prefix) {
  return fmt::format("{}{}", prefix, next_temp_++);
}

void CodeWriter::append(const CodeWriter& other) {
  size_t start = 0;
  const std::string& s = other.str();
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    line(std::string_view(s).substr(start, end - start));
    start = end + 1;
  }
}

} // namespace stitch
