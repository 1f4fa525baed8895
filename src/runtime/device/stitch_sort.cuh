// TopK's per-row selection for generated kernels, one block per row, deterministic and stable:
//
//   comes_before<largest>(a, ia, b, ib)   TopK's total order: larger (or smaller) values first,
//                                         NaN as the largest value (numpy's sort puts it
//                                         last), equal values by ascending index, as ONNX asks.
//   block_bitonic_sort                    sorts `count` (a power of two) key/slot pairs in
//                                         shared memory in that order; empty slots (-1) last.
//   block_top_k                           the k first elements of a strided row through a
//                                         shared buffer of kCapacity pairs: the row is loaded
//                                         in chunks behind the k best so far and the buffer is
//                                         sorted after each chunk (needs k <= kCapacity / 2 or
//                                         length <= kCapacity).
//   block_top_k_by_rank                   any k and length: every element counts the elements
//                                         that come before it and, when fewer than k do, is
//                                         written at that rank (O(length^2 / threads)).
//
// Every thread of the block calls, with the same arguments; any block size works.
#pragma once

#include <stdint.h>

#include "stitch_cuda.h"
#include "stitch_reduce.cuh"

namespace stitch {
namespace sort {

template <bool kLargest, typename T>
__device__ __forceinline__ bool comes_before(T a, int64_t ia, T b, int64_t ib) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return ia < ib;
    return kLargest ? a_nan : b_nan;
  }
  if (a != b) return kLargest ? a > b : a < b;
  return ia < ib;
}

// Like comes_before, with empty slots (index -1) after every element.
template <bool kLargest, typename T>
__device__ __forceinline__ bool slot_before(T a, int64_t ia, T b, int64_t ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  return comes_before<kLargest>(a, ia, b, ib);
}

template <bool kLargest, typename T>
__device__ void block_bitonic_sort(T* keys, int64_t* slots, int count) {
  const int thread = static_cast<int>(linear_thread_index());
  const int threads = static_cast<int>(block_thread_count());
  __syncthreads(); // the pairs were just written by other threads
  for (int size = 2; size <= count; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int pair = thread; pair < count / 2; pair += threads) {
        const int lo = 2 * stride * (pair / stride) + pair % stride;
        const int hi = lo + stride;
        const bool forward = (lo & size) == 0; // this run sorts in order, else reversed
        const bool swap = forward ? slot_before<kLargest>(keys[hi], slots[hi], keys[lo], slots[lo])
                                  : slot_before<kLargest>(keys[lo], slots[lo], keys[hi], slots[hi]);
        if (swap) {
          const T key = keys[lo];
          keys[lo] = keys[hi];
          keys[hi] = key;
          const int64_t slot = slots[lo];
          slots[lo] = slots[hi];
          slots[hi] = slot;
        }
      }
      __syncthreads();
    }
  }
}

// values[j * out_stride] and indices[j * out_stride] for j < k receive the k first elements of
// row[i * stride], i < length. keys/slots: shared buffers of kCapacity (a power of two) pairs.
template <bool kLargest, int kCapacity, typename T>
__device__ void block_top_k(const T* row, int64_t length, int64_t stride, int64_t k, T* values,
                            int64_t* indices, int64_t out_stride, T* keys, int64_t* slots) {
  const int64_t thread = linear_thread_index();
  const int64_t threads = block_thread_count();
  int64_t kept = 0; // sorted candidates at the front of the buffer
  int64_t next = 0; // the next row element to load
  // A row the buffer holds whole is sorted in the power of two that holds it, not the whole
  // buffer (a capacity sized for the longest row of a range of lengths costs short rows nothing).
  int count = kCapacity;
  if (length < kCapacity) {
    count = 1;
    while (count < length)
      count <<= 1;
  }
  do {
    for (int64_t s = kept + thread; s < count; s += threads) {
      const int64_t e = next + (s - kept);
      if (e < length) {
        keys[s] = row[e * stride];
        slots[s] = e;
      } else {
        slots[s] = -1;
      }
    }
    next += count - kept;
    block_bitonic_sort<kLargest>(keys, slots, count);
    const int64_t loaded = next < length ? next : length;
    kept = k < loaded ? k : loaded;
  } while (next < length);
  for (int64_t j = thread; j < k; j += threads) {
    values[j * out_stride] = keys[j];
    indices[j * out_stride] = slots[j];
  }
  __syncthreads(); // the buffer is reused for the next row only after every read
}

template <bool kLargest, typename T>
__device__ void block_top_k_by_rank(const T* row, int64_t length, int64_t stride, int64_t k,
                                    T* values, int64_t* indices, int64_t out_stride) {
  const int64_t threads = block_thread_count();
  for (int64_t i = linear_thread_index(); i < length; i += threads) {
    const T v = row[i * stride];
    int64_t rank = 0;
    for (int64_t j = 0; j < length && rank < k; ++j)
      rank += comes_before<kLargest>(row[j * stride], j, v, i) ? 1 : 0;
    if (rank < k) {
      values[rank * out_stride] = v;
      indices[rank * out_stride] = i;
    }
  }
}

} // namespace sort
} // namespace stitch
