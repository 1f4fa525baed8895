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
#if defined(__SANITIZE_THREAD__)
#define STITCH_HOST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STITCH_HOST_TSAN 1
#endif
#endif
#if defined(STITCH_HOST_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(STITCH_HOST_TSAN)
#include <sanitizer/tsan_interface.h>
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
      // A finished fiber's bottom frame (Boost's entry function) never returns, so its
      // AddressSanitizer redzones stay poisoned; a recycled stack holds no live frame at all.
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

  // munmap covers whole pages, so the staggered top's partial page goes too. Under ASan the
  // range is unpoisoned first: munmap leaves its shadow as the fibers' frames left it, and a
  // stack mapped there later would inherit their poisoned redzones.
  static void unmap_stack(const boost::context::stack_context& stack) noexcept {
    char* const base = static_cast<char*>(stack.sp) - stack.size;
#if defined(STITCH_HOST_ASAN)
    __asan_unpoison_memory_region(base, stack.size);
#endif
    ::munmap(base, stack.size);
  }

  boost::context::stack_context last_taken_;
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

// ---- Fiber switches, announced to the sanitizers ------------------------------------------
//
// AddressSanitizer must know which stack runs (an exception unwinding a fiber's frames
// unpoisons that stack, and reports describe stack addresses by it); ThreadSanitizer needs a
// fiber context per emulated thread (its own call stack; a switch orders what the fibers of one
// OS thread do, as running them one after another does). FiberScheduler announces every switch
// with the calls below, which compile to nothing without those sanitizers. The protocol, with
// `from` and `to` the contexts of the two sides:
//
//   leave(from, to, exiting)   right before a switch; `exiting` when `from` never runs again
//   land(self, came_from)      right after landing in `self` (came_from gets the stack we came
//                              from when it is the scheduler's own, whose bounds it learns so)
//
// ThreadSanitizer counts calls and returns on the current fiber's call stack, so what runs
// between the two calls of a switch must neither call nor return. That holds for resume()
// (inlined) and for starting a new fiber (leave() switches first: its first frames are its
// own), but not for a fiber's exit (its last frames return after its last line of our code):
// under TSan an exiting thread therefore always returns to the scheduler, which lands with
// land() and only then starts the next thread (FiberScheduler::thread_main).
struct FiberSwitchContext {
  const void* stack_bottom = nullptr; // ASan: the lowest address of its stack
  std::size_t stack_size = 0;
  void* fake_stack = nullptr; // ASan: its fake stack (use-after-return) while switched out
  void* tsan_fiber = nullptr; // TSan: its fiber; the scheduler's is its OS thread's own
};

#if defined(STITCH_HOST_TSAN)
inline constexpr bool kExitThroughScheduler = true;
#else
inline constexpr bool kExitThroughScheduler = false;
#endif

inline void leave([[maybe_unused]] FiberSwitchContext& from,
                  [[maybe_unused]] const FiberSwitchContext& to, [[maybe_unused]] bool exiting) {
#if defined(STITCH_HOST_ASAN)
  __sanitizer_start_switch_fiber(exiting ? nullptr : &from.fake_stack, to.stack_bottom,
                                 to.stack_size);
#endif
#if defined(STITCH_HOST_TSAN)
  if (!exiting) __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
}

inline void land([[maybe_unused]] FiberSwitchContext& self,
                 [[maybe_unused]] FiberSwitchContext* came_from) {
#if defined(STITCH_HOST_ASAN)
  const void* from_bottom = nullptr;
  std::size_t from_size = 0;
  __sanitizer_finish_switch_fiber(self.fake_stack, &from_bottom, &from_size);
  self.fake_stack = nullptr;
  if (came_from != nullptr) {
    came_from->stack_bottom = from_bottom;
    came_from->stack_size = from_size;
  }
#endif
#if defined(STITCH_HOST_TSAN)
  if (__tsan_get_current_fiber() != self.tsan_fiber) __tsan_switch_to_fiber(self.tsan_fiber, 0);
#endif
}

// The scheduler's own context: under TSan, its OS thread's fiber.
inline void adopt_current_context([[maybe_unused]] FiberSwitchContext& context) {
#if defined(STITCH_HOST_TSAN)
  context.tsan_fiber = __tsan_get_current_fiber();
#endif
}

// Runs `create`, which makes the Boost fiber of `context` (Boost's entry function runs on the
// new stack and comes straight back), inside the new TSan fiber, whose call stack its entry
// frame belongs to.
template <typename Create>
decltype(auto) create_in_context([[maybe_unused]] FiberSwitchContext& context, Create&& create) {
#if defined(STITCH_HOST_TSAN)
  void* creator = __tsan_get_current_fiber();
  if (context.tsan_fiber == nullptr) context.tsan_fiber = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(context.tsan_fiber, 0);
  struct SwitchBack {
    void* creator;
    ~SwitchBack() { __tsan_switch_to_fiber(creator, 0); }
  } switch_back{creator};
#endif
  return create();
}

// Forgets a finished fiber's TSan context (never the current one).
inline void retire_context([[maybe_unused]] FiberSwitchContext& context) {
#if defined(STITCH_HOST_TSAN)
  if (context.tsan_fiber != nullptr) __tsan_destroy_fiber(context.tsan_fiber);
#endif
  context = {};
}

} // namespace stitch::host
