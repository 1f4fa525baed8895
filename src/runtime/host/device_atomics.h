// CUDA's atomic functions for the host target (global namespace, CUDA signatures). Blocks of an
// ordinary launch run concurrently on several OS threads, so these are real atomics
// (std::atomic_ref, relaxed order, like CUDA's device-scope atomics); a float atomicAdd from many
// blocks is as order-dependent here as on a GPU. Atomics are not scheduling points: a spin-wait
// on a value another thread sets must call __nanosleep to let that thread run.
#pragma once

#include <atomic>

namespace stitch::host::detail {

template <typename T> inline std::atomic_ref<T> atomic_at(T* address) {
  return std::atomic_ref<T>(*address);
}

// Replaces *address with update(old) atomically and returns old.
template <typename T, typename Update> inline T atomic_update(T* address, Update update) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load(std::memory_order_relaxed);
  while (!ref.compare_exchange_weak(old, update(old), std::memory_order_relaxed)) {
  }
  return old;
}

template <typename T> inline T atomic_compare_exchange(T* address, T compare, T value) {
  atomic_at(address).compare_exchange_strong(compare, value, std::memory_order_relaxed);
  return compare; // the old value, whether or not it matched
}

} // namespace stitch::host::detail

#define STITCH_HOST_ATOMIC_ADD_SUB_EXCH(T)                                                         \
  inline T atomicAdd(T* address, T value) {                                                        \
    return stitch::host::detail::atomic_at(address).fetch_add(value, std::memory_order_relaxed);   \
  }                                                                                                \
  inline T atomicExch(T* address, T value) {                                                       \
    return stitch::host::detail::atomic_at(address).exchange(value, std::memory_order_relaxed);    \
  }
STITCH_HOST_ATOMIC_ADD_SUB_EXCH(int)
STITCH_HOST_ATOMIC_ADD_SUB_EXCH(unsigned int)
STITCH_HOST_ATOMIC_ADD_SUB_EXCH(unsigned long long)
STITCH_HOST_ATOMIC_ADD_SUB_EXCH(float)
#undef STITCH_HOST_ATOMIC_ADD_SUB_EXCH

inline double atomicAdd(double* address, double value) {
  return stitch::host::detail::atomic_at(address).fetch_add(value, std::memory_order_relaxed);
}
inline int atomicSub(int* address, int value) {
  return stitch::host::detail::atomic_at(address).fetch_sub(value, std::memory_order_relaxed);
}
inline unsigned int atomicSub(unsigned int* address, unsigned int value) {
  return stitch::host::detail::atomic_at(address).fetch_sub(value, std::memory_order_relaxed);
}

#define STITCH_HOST_ATOMIC_MIN_MAX(T)                                                              \
  inline T atomicMax(T* address, T value) {                                                        \
    return stitch::host::detail::atomic_update(                                                    \
        address, [value](T old) { return old < value ? value : old; });                            \
  }                                                                                                \
  inline T atomicMin(T* address, T value) {                                                        \
    return stitch::host::detail::atomic_update(                                                    \
        address, [value](T old) { return value < old ? value : old; });                            \
  }
STITCH_HOST_ATOMIC_MIN_MAX(int)
STITCH_HOST_ATOMIC_MIN_MAX(unsigned int)
STITCH_HOST_ATOMIC_MIN_MAX(long long)
STITCH_HOST_ATOMIC_MIN_MAX(unsigned long long)
#undef STITCH_HOST_ATOMIC_MIN_MAX

#define STITCH_HOST_ATOMIC_BITWISE_CAS(T)                                                          \
  inline T atomicAnd(T* address, T value) {                                                        \
    return stitch::host::detail::atomic_at(address).fetch_and(value, std::memory_order_relaxed);   \
  }                                                                                                \
  inline T atomicOr(T* address, T value) {                                                         \
    return stitch::host::detail::atomic_at(address).fetch_or(value, std::memory_order_relaxed);    \
  }                                                                                                \
  inline T atomicXor(T* address, T value) {                                                        \
    return stitch::host::detail::atomic_at(address).fetch_xor(value, std::memory_order_relaxed);   \
  }                                                                                                \
  inline T atomicCAS(T* address, T compare, T value) {                                             \
    return stitch::host::detail::atomic_compare_exchange(address, compare, value);                 \
  }
STITCH_HOST_ATOMIC_BITWISE_CAS(int)
STITCH_HOST_ATOMIC_BITWISE_CAS(unsigned int)
STITCH_HOST_ATOMIC_BITWISE_CAS(unsigned long long)
#undef STITCH_HOST_ATOMIC_BITWISE_CAS

inline unsigned short atomicCAS(unsigned short* address, unsigned short compare,
                                unsigned short value) {
  return stitch::host::detail::atomic_compare_exchange(address, compare, value);
}

// ((old >= limit) ? 0 : old + 1) and ((old == 0 || old > limit) ? limit : old - 1), as in CUDA.
inline unsigned int atomicInc(unsigned int* address, unsigned int limit) {
  return stitch::host::detail::atomic_update(
      address, [limit](unsigned int old) { return old >= limit ? 0u : old + 1u; });
}
inline unsigned int atomicDec(unsigned int* address, unsigned int limit) {
  return stitch::host::detail::atomic_update(
      address, [limit](unsigned int old) { return (old == 0 || old > limit) ? limit : old - 1u; });
}
