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
    const std::size_t mapped = mapped_size(usable_bytes);
    if (mapped != mapped_bytes_) {
      trim(0);
      mapped_bytes_ = mapped;
    }
    if (!free_.empty()) {
      const boost::context::stack_context stack = free_.back();
      free_.pop_back();
      return stack;
    }
    return map_stack(mapped);
  }

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

  std::size_t mapped_bytes_ = 0;
  std::size_t next_colour_ = 0;
  std::vector<boost::context::stack_context> free_;
};

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
