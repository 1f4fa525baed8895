// Formatting of stitchc's user and internal errors.
#include "graph/error.h"

namespace stitch {

namespace {
// Model strings may hold anything; keep an error on one printable line.
std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '\n' || c == '\r' || c == '\t')
      out += ' ';
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}
} // namespace

std::string format_user_error(const ErrorSite& site, const std::string& reason) {
  std::string out;
  if (!site.file.empty()) out += printable(site.file) + ": ";
  if (!site.node.empty() || !site.op_type.empty() || !site.output.empty()) {
    out += "node";
    if (!site.node.empty()) out += " '" + printable(site.node) + "'";
    if (!site.op_type.empty()) out += " (" + printable(site.op_type) + ")";
    if (site.node.empty() && !site.output.empty())
      out += " writing '" + printable(site.output) + "'";
    out += ": ";
  }
  out += printable(reason);
  return out;
}

UserError::UserError(ErrorSite site, std::string reason)
    : std::runtime_error(format_user_error(site, reason)), site_(std::move(site)),
      reason_(std::move(reason)) {}

UserError UserError::with_file(const std::string& file) const {
  if (!site_.file.empty()) return *this;
  ErrorSite s = site_;
  s.file = file;
  return UserError(s, reason_);
}

InternalError::InternalError(const std::string& what)
    : std::logic_error("internal compiler error (a stitchc bug, please report it): " + what) {}

} // namespace stitch
