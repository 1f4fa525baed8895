// Overflow-checked integer arithmetic for every size, count and offset stitchc computes from
// a model. A model controls dims and offsets, so an overflow is a user error, never UB.
#pragma once

#include <cstdint>
#include <string_view>

#include "graph/error.h"

namespace stitch {

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) user_fail({}, "{} overflows 64-bit arithmetic", what);
  return r;
}

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) user_fail({}, "{} overflows 64-bit arithmetic", what);
  return r;
}

inline uint64_t checked_add_u(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) user_fail({}, "{} overflows 64-bit arithmetic", what);
  return r;
}

} // namespace stitch
