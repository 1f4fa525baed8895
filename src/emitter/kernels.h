// The kernel emitters, one per kernel kind. Each answers for the groups it implements: it
// writes the group's kernel(s) and its launch function into the group's source, following
// the plan's mapping and launch configuration, and returns false for groups it does not
// handle. emit_group tries them in turn.
#pragma once

#include <string>
#include <vector>

#include "emitter/emit_context.h"

namespace stitch {

bool emit_pointwise(const GroupEmitContext& ctx, CodeWriter& out);    // kernel_pointwise.cpp
bool emit_reduction(const GroupEmitContext& ctx, CodeWriter& out);    // kernel_reduction.cpp
bool emit_movement(const GroupEmitContext& ctx, CodeWriter& out);     // kernel_movement.cpp
bool emit_window(const GroupEmitContext& ctx, CodeWriter& out);       // kernel_window.cpp
bool emit_library_call(const GroupEmitContext& ctx, CodeWriter& out); // library_calls.cpp

// Writes the whole source of one group: the kernels and `int32_t stitch_group_N(...)`, by its
// spec. A spec no emitter prints is an internal error (check_code_generation and legality
// decide what reaches code generation).
void emit_group(const GroupEmitContext& ctx, CodeWriter& out);

// The group's launch function for a single kernel launched with the plan's configuration.
void emit_launch(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                 const std::vector<std::string>& args);

} // namespace stitch
