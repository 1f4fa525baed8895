// The snapshot tests' line diff: common prefix and suffix trimmed, the middle aligned by a longest
// common subsequence (a plain table; generated files are a few hundred lines), then hunks.
#include "text_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace stitch::snapshots {

namespace {

constexpr size_t kContext = 3;
// Middles larger than this many table cells (lines x lines) are shown as replaced whole.
constexpr size_t kMaxTableCells = 4'000'000;

// One line of the edit script: kept (' '), only in the checked-in file ('-'), only in the
// generated one ('+'); `a` and `b` index the two files (the one a '+' or '-' line is not in
// holds the position it would take).
struct Edit {
  char op;
  size_t a, b;
};

// The edit script from a[a0, a1) to b[b0, b1), appended to `script`.
void align(const std::vector<std::string>& a, size_t a0, size_t a1,
           const std::vector<std::string>& b, size_t b0, size_t b1, std::vector<Edit>& script) {
  const size_t n = a1 - a0, m = b1 - b0;
  if (n * m > kMaxTableCells) {
    for (size_t i = a0; i < a1; ++i)
      script.push_back({'-', i, b0});
    for (size_t j = b0; j < b1; ++j)
      script.push_back({'+', a1, j});
    return;
  }
  // lcs[i][j]: the longest common subsequence of a[a0+i, a1) and b[b0+j, b1).
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) =
          a[a0 + i] == b[b0 + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      script.push_back({' ', a0 + i++, b0 + j++});
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      script.push_back({'-', a0 + i++, b0 + j}); // removals first, as diff -u prints them
    } else {
      script.push_back({'+', a0 + i, b0 + j++});
    }
  }
}

} // namespace

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      lines.push_back("\\ No newline at end of file");
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

size_t first_difference(const std::vector<std::string>& expected,
                        const std::vector<std::string>& actual) {
  const size_t common = std::min(expected.size(), actual.size());
  for (size_t i = 0; i < common; ++i)
    if (expected[i] != actual[i]) return i + 1;
  return expected.size() == actual.size() ? 0 : common + 1;
}

std::string unified_diff(const std::vector<std::string>& a, const std::vector<std::string>& b,
                         size_t max_lines) {
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix])
    ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;
  std::vector<Edit> script;
  for (size_t i = 0; i < prefix; ++i)
    script.push_back({' ', i, i});
  align(a, prefix, a.size() - suffix, b, prefix, b.size() - suffix, script);
  for (size_t k = suffix; k > 0; --k)
    script.push_back({' ', a.size() - k, b.size() - k});

  std::string out;
  size_t shown = 0, changed_left_out = 0;
  size_t k = 0;
  while (k < script.size()) {
    if (script[k].op == ' ') {
      ++k;
      continue;
    }
    // A hunk: from kContext kept lines before this change to kContext after the last change
    // that is no more than 2 * kContext kept lines from the previous one.
    const size_t begin = k >= kContext ? k - kContext : 0;
    size_t end = k, kept_run = 0;
    for (size_t e = k; e < script.size() && kept_run <= 2 * kContext; ++e) {
      kept_run = script[e].op == ' ' ? kept_run + 1 : 0;
      if (script[e].op != ' ') end = e + 1;
    }
    const size_t stop = std::min(script.size(), end + kContext);
    if (shown >= max_lines) {
      for (size_t e = begin; e < stop; ++e)
        changed_left_out += script[e].op != ' ';
      k = stop;
      continue;
    }
    size_t a_lines = 0, b_lines = 0;
    for (size_t e = begin; e < stop; ++e) {
      a_lines += script[e].op != '+';
      b_lines += script[e].op != '-';
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", script[begin].a + (a_lines > 0), a_lines,
                       script[begin].b + (b_lines > 0), b_lines);
    for (size_t e = begin; e < stop; ++e) {
      if (shown >= max_lines) {
        changed_left_out += script[e].op != ' ';
        continue;
      }
      const std::string& line = script[e].op == '+' ? b[script[e].b] : a[script[e].a];
      out += fmt::format("{}{}\n", script[e].op, line);
      ++shown;
    }
    k = stop;
  }
  if (changed_left_out > 0)
    out += fmt::format("... and {} more changed line{} not shown\n", changed_left_out,
                       changed_left_out == 1 ? "" : "s");
  return out;
}

} // namespace stitch::snapshots
