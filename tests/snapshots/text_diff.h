// A line diff for the snapshot tests: where a generated file differs from its checked-in copy,
// a unified-diff excerpt (hunks with three lines of context, "-" the checked-in line, "+" the
// generated one, with line numbers) short enough to read in a ctest log.
#pragma once

#include <string>
#include <vector>

namespace stitch::snapshots {

// The text's lines, without their '\n'. A final line without '\n' is marked with a trailing
// "\ No newline at end of file" line, so that a missing newline shows in the diff.
std::vector<std::string> split_lines(const std::string& text);

// The first line (1-based) where `expected` and `actual` differ; 0 when they are equal.
size_t first_difference(const std::vector<std::string>& expected,
                        const std::vector<std::string>& actual);

// Hunks "@@ -a,b +c,d @@" of the changes from `expected` to `actual`, at most `max_lines` lines
// of them, then a line saying how many changed lines were left out.
std::string unified_diff(const std::vector<std::string>& expected,
                         const std::vector<std::string>& actual, size_t max_lines);

} // namespace stitch::snapshots
