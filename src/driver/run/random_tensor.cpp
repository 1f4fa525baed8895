// SplitMix64 drives every draw: it is tiny, fully specified, and its stream for a seed is
// the same everywhere (std::uniform_*_distribution is not). A float in [-1, 1) is
// -1 + k * 2^(1-bits) for k uniform below 2^bits, where `bits` is the type's significand
// width, so no draw rounds up to 1.
#include "driver/run/random_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "driver/run/run_error.h"

namespace stitch::run {

namespace {

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [-1, 1) on a grid of 2^bits points.
  double next_signed_unit(int bits) {
    uint64_t k = next() >> (64 - bits);
    return std::ldexp(static_cast<double>(k), 1 - bits) - 1.0;
  }

  // Uniform in [0, bound) (bound > 0); the modulo bias is irrelevant for small bounds.
  uint64_t next_below(uint64_t bound) { return next() % bound; }

private:
  uint64_t state_;
};

template <typename T> void store(uint8_t* out, uint64_t index, T value) {
  std::memcpy(out + index * sizeof(T), &value, sizeof(T));
}

void fill_element(SplitMix64& random, stitch_dtype dtype, uint64_t int_bound, uint8_t* out,
                  uint64_t i) {
  switch (dtype) {
  case STITCH_FLOAT32:
    store(out, i, static_cast<float>(random.next_signed_unit(24)));
    return;
  case STITCH_FLOAT64:
    store(out, i, random.next_signed_unit(53));
    return;
  case STITCH_FLOAT16:
    store(out, i, float_to_half(static_cast<float>(random.next_signed_unit(11))));
    return;
  case STITCH_BFLOAT16:
    store(out, i, float_to_bfloat16(static_cast<float>(random.next_signed_unit(8))));
    return;
  case STITCH_BOOL:
    out[i] = static_cast<uint8_t>(random.next() >> 63);
    return;
  case STITCH_UINT8:
  case STITCH_INT8:
    out[i] = static_cast<uint8_t>(random.next_below(int_bound));
    return;
  case STITCH_UINT16:
  case STITCH_INT16:
    store(out, i, static_cast<uint16_t>(random.next_below(int_bound)));
    return;
  case STITCH_UINT32:
  case STITCH_INT32:
    store(out, i, static_cast<uint32_t>(random.next_below(int_bound)));
    return;
  case STITCH_UINT64:
  case STITCH_INT64:
    store(out, i, random.next_below(int_bound));
    return;
  }
}

// The largest value every integer dtype of that size holds, so int_max never wraps.
int64_t int_limit(stitch_dtype dtype) {
  switch (dtype_size(dtype)) {
  case 1:
    return 127;
  case 2:
    return 32767;
  case 4:
    return 2147483647;
  default:
    return INT64_MAX - 1;
  }
}

} // namespace

HostTensor random_tensor(stitch_dtype dtype, const std::vector<int64_t>& dims,
                         const RandomSpec& spec, uint64_t input_index) {
  HostTensor tensor;
  tensor.dtype = dtype;
  tensor.dims = dims;
  uint64_t count = 0;
  if (!checked_element_count(dims, dtype_size(dtype), &count))
    run_fail("cannot make a random {}: the shape is too large", describe_type(dtype, dims));
  if (spec.int_max < 0) run_fail("--random-int-max must not be negative");
  int64_t int_max = std::min(spec.int_max, int_limit(dtype));
  uint64_t int_bound = static_cast<uint64_t>(int_max) + 1;
  tensor.bytes.assign(count * dtype_size(dtype), 0);
  // Each input gets its own stream: mix the index into the seed through one SplitMix step.
  SplitMix64 random(SplitMix64(spec.seed ^ (input_index * 0xd1b54a32d192ed03ull)).next());
  for (uint64_t i = 0; i < count; ++i)
    fill_element(random, dtype, int_bound, tensor.bytes.data(), i);
  return tensor;
}

} // namespace stitch::run
