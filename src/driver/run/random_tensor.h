// Random inputs for a model: what stitch-run feeds an input that no file gives. The values
// are reproducible from (seed, input index) alone — the same seed gives the same tensors on
// every machine and standard library, and one input's values do not depend on the others:
//   floating types  uniform in [-1, 1), on a grid every value of which the type holds exactly
//   integer types   uniform in [0, int_max]
//   bool            true or false with equal odds
#pragma once

#include <cstdint>
#include <vector>

#include "driver/run/host_tensor.h"

namespace stitch::run {

struct RandomSpec {
  uint64_t seed = 0;
  int64_t int_max = 4; // integers are drawn from [0, int_max]
};

HostTensor random_tensor(stitch_dtype dtype, const std::vector<int64_t>& dims,
                         const RandomSpec& spec, uint64_t input_index);

} // namespace stitch::run
