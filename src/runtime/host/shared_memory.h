// Per-block shared memory for the host target.
//
// Each resident block owns one arena: the launch's dynamic shared bytes first, then the static
// arrays that STITCH_SHARED declarations allocate the first time any thread of the block reaches
// them. A declaration is identified by its SharedSlot, a function-local static, so every thread
// of a block gets the same storage for one declaration and different declarations never alias.
// Fresh shared memory is filled with 0xFF bytes: read before written, a float is NaN and an int
// is -1, so a missing barrier or a missing initialisation shows up in the results.
//
// The blocks of a thread-block cluster reach each other's arenas (distributed shared memory):
// same_place_in maps an address of one block's shared memory to the same place in a peer's, and
// a block that has exited has its arena refilled with garbage, as a peer that reads it after
// the exit (without a cluster barrier before it) may see on a GPU.
#pragma once

#include "error_status.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace stitch::host {

// The identity of one STITCH_SHARED declaration (its address is the key); `function` names the
// declaring function for error messages.
struct SharedSlot {
  const char* function;
};

inline constexpr unsigned char kSharedGarbageByte = 0xFF;
inline constexpr std::size_t kSharedAlignment = 16;

class SharedMemoryArena {
public:
  // Starts a block: `dynamic_bytes` of garbage and no static arrays yet. Static arrays may use
  // up to `static_limit` bytes and, with the dynamic bytes, no more than `total_limit`.
  void reset(std::size_t dynamic_bytes, std::size_t static_limit, std::size_t total_limit) {
    dynamic_bytes_ = dynamic_bytes;
    static_begin_ = round_up(dynamic_bytes, kSharedAlignment);
    static_limit_ = static_limit;
    total_limit_ = total_limit;
    static_used_ = 0;
    slots_.clear();
    const std::size_t needed = static_begin_ + static_limit_;
    if (capacity_ < needed) {
      // operator new[] aligns to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (16 on x86-64), enough for
      // float4 / double2 accesses.
      storage_.reset(new std::byte[needed]);
      capacity_ = needed;
    }
    std::memset(storage_.get(), kSharedGarbageByte, dynamic_bytes_);
  }

  void* dynamic_base() { return storage_.get(); }
  std::size_t dynamic_bytes() const { return dynamic_bytes_; }
  std::size_t static_bytes() const { return static_used_; }

  // The block's storage for `slot`, allocated and filled with garbage on first use. Throws
  // KernelFault when the kernel's static shared memory outgrows what CUDA allows.
  void* static_array(const SharedSlot& slot, std::size_t bytes, std::size_t alignment) {
    for (const Allocation& allocation : slots_)
      if (allocation.slot == &slot) return storage_.get() + allocation.offset;
    const std::size_t begin = round_up(static_used_, std::max(alignment, kSharedAlignment));
    const std::size_t end = begin + bytes;
    if (end > static_limit_)
      throw KernelFault(cudaErrorLaunchOutOfResources,
                        "static shared memory of the kernel grows to " + std::to_string(end) +
                            " bytes at STITCH_SHARED in " + slot.function + "(), over the " +
                            std::to_string(static_limit_) + "-byte limit");
    if (static_begin_ + end > total_limit_)
      throw KernelFault(cudaErrorLaunchOutOfResources,
                        "static (" + std::to_string(end) + " bytes) plus dynamic (" +
                            std::to_string(dynamic_bytes_) + " bytes) shared memory exceeds " +
                            std::to_string(total_limit_) + " bytes per block");
    std::byte* storage = storage_.get() + static_begin_ + begin;
    std::memset(storage, kSharedGarbageByte, bytes);
    slots_.push_back(Allocation{&slot, static_begin_ + begin, bytes, alignment});
    static_used_ = end;
    return storage;
  }

  // Where `address` (in this arena) is in `peer`: the same offset of the dynamic bytes, or the
  // same offset in the same STITCH_SHARED declaration (which the peer allocates now if it has
  // not reached it yet). nullptr if `address` is not in this arena's shared memory.
  void* same_place_in(const void* address, SharedMemoryArena& peer) const {
    const auto* byte = static_cast<const std::byte*>(address);
    const std::byte* const base = storage_.get();
    if (base == nullptr || byte < base) return nullptr;
    const auto offset = static_cast<std::size_t>(byte - base);
    if (offset < dynamic_bytes_) return peer.storage_.get() + offset;
    for (const Allocation& allocation : slots_)
      if (offset >= allocation.offset && offset < allocation.offset + allocation.bytes)
        return static_cast<std::byte*>(
                   peer.static_array(*allocation.slot, allocation.bytes, allocation.alignment)) +
               (offset - allocation.offset);
    return nullptr;
  }

  // Every byte in use becomes garbage again (the block has exited).
  void poison() {
    if (storage_ != nullptr)
      std::memset(storage_.get(), kSharedGarbageByte, static_begin_ + static_used_);
  }

private:
  struct Allocation {
    const SharedSlot* slot;
    std::size_t offset; // in storage_
    std::size_t bytes;
    std::size_t alignment;
  };

  static std::size_t round_up(std::size_t value, std::size_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
  }

  std::unique_ptr<std::byte[]> storage_;
  std::size_t capacity_ = 0;
  std::size_t dynamic_bytes_ = 0;
  std::size_t static_begin_ = 0; // offset of the static region (after the dynamic bytes)
  std::size_t static_used_ = 0;  // bytes of the static region in use
  std::size_t static_limit_ = 0;
  std::size_t total_limit_ = 0;
  std::vector<Allocation> slots_;
};

} // namespace stitch::host
