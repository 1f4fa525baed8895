// Fiber stacks for emulated GPU threads: fixed-size mmap'd stacks with a PROT_NONE guard page at
// the low end (an overflow faults at once instead of corrupting a neighbour), kept in a cache
// per OS thread so that launches after the first never map memory.
//
// A fiber's stack returns to the cache the moment its thread exits, and the next thread to start
// takes the most recently returned stack. A block of threads that never block (elementwise work)
// therefore runs all of its threads on one warm stack; only threads that wait at a barrier hold
// their stacks. Memory is reserved lazily (MAP_NORESERVE), so 1024 fibers x 64 KiB cost only the
// pages they touch.
#pragma once

#include <boost/context/stack_context.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define STITCH_HOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STITCH_HOST_ASAN 1
#endif
#endif
#if defined(STITCH_HOST_ASAN)
#include <sanitizer/asan_interface.h>
#endif

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <new>
#include <vector>

namespace stitch::host {

class FiberStackCache {
public:
  FiberStackCache() = default;
  FiberStackCache(const FiberStackCache&) = delete;
  FiberStackCache& operator=(const FiberStackCache&) = delete;
  ~FiberStackCache() { trim(0); }

  // A stack with at least `usable_bytes` below its top. Throws std::bad_alloc if none can be
  // mapped.
  boost::context::stack_context take(std::size_t usable_bytes) {
    last_taken_ = take_stack(usable_bytes);
    return last_taken_;
  }

  // The stack most recently handed out (so its owner can remember where it starts).
  const boost::context::stack_context& last_taken() const { return last_taken_; }

  void give(const boost::context::stack_context& stack) noexcept {
    if (mapped_size(stack.size - page_size()) != mapped_bytes_) {
      unmap_stack(stack);
      return;
    }
    try {
      free_.push_back(stack);
    } catch (...) {
      unmap_stack(stack);
    }
  }

  // Unmaps cached stacks beyond `keep` (after a cooperative launch held thousands at once).
  void trim(std::size_t keep) noexcept {
    while (free_.size() > keep) {
      unmap_stack(free_.back());
      free_.pop_back();
    }
  }

private:
  boost::context::stack_context take_stack(std::size_t usable_bytes) {
    const std::size_t mapped = mapped_size(usable_bytes);
    if (mapped != mapped_bytes_) {
      trim(0);
      mapped_bytes_ = mapped;
    }
    if (!free_.empty()) {
      const boost::context::stack_context stack = free_.back();
      free_.pop_back();
#if defined(STITCH_HOST_ASAN)
      // A fiber that ended by an exception (a fault, or unwinding after a deadlock) leaves
      // AddressSanitizer's poison for its frames behind; the next fiber must not inherit it.
      ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(stack.sp) - stack.size, stack.size);
#endif
      return stack;
    }
    return map_stack(mapped);
  }

  static std::size_t page_size() {
    static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return page;
  }

  // Usable bytes rounded up to whole pages, plus the guard page.
  static std::size_t mapped_size(std::size_t usable_bytes) {
    const std::size_t page = page_size();
    return (usable_bytes + page - 1) / page * page + page;
  }

  boost::context::stack_context map_stack(std::size_t mapped) {
    void* base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    if (::mprotect(base, page_size(), PROT_NONE) != 0) {
      ::munmap(base, mapped);
      throw std::bad_alloc();
    }
    // Stacks are a whole number of pages apart, so without an offset every fiber's hot top
    // frames would fall into the same L1 cache set; stagger the tops by cache lines.
    constexpr std::size_t kCacheLine = 64, kColours = 32;
    const std::size_t offset = (next_colour_++ % kColours) * kCacheLine;
    boost::context::stack_context stack;
    stack.size = mapped - offset;
    stack.sp = static_cast<char*>(base) + mapped - offset; // stacks grow down from the top
    return stack;
  }

  // munmap covers whole pages, so the staggered top's partial page goes too.
  static void unmap_stack(const boost::context::stack_context& stack) noexcept {
    ::munmap(static_cast<char*>(stack.sp) - stack.size, stack.size);
  }

  boost::context::stack_context last_taken_;
  std::size_t mapped_bytes_ = 0;
  std::size_t next_colour_ = 0;
  std::vector<boost::context::stack_context> free_;
};

// After an exception has unwound frames of a fiber, AddressSanitizer (which does not know fiber
// stacks) has not cleared their poison; clear everything below the catching frame so the
// handler can use that stack again. Does nothing in builds without AddressSanitizer.
inline void forget_unwound_frames([[maybe_unused]] void* stack_low) {
#if defined(STITCH_HOST_ASAN)
  char* here = static_cast<char*>(__builtin_frame_address(0));
  char* low = static_cast<char*>(stack_low);
  if (low != nullptr && low < here)
    ASAN_UNPOISON_MEMORY_REGION(low, static_cast<std::size_t>(here - low));
#endif
}

inline FiberStackCache& this_thread_stack_cache() {
  thread_local FiberStackCache cache;
  return cache;
}

// Boost.Context's StackAllocator concept over the calling OS thread's cache. Fibers never move
// between OS threads, so allocate and deallocate always meet the same cache.
struct FiberStackLease {
  FiberStackCache* cache;
  std::size_t usable_bytes;

  boost::context::stack_context allocate() { return cache->take(usable_bytes); }
  void deallocate(boost::context::stack_context& stack) noexcept { cache->give(stack); }
};

} // namespace stitch::host
