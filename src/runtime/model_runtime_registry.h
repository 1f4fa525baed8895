// model_runtime_registry.h: the process-wide table of live models and contexts. Every API entry
// point looks its handle up here before touching it, so that a null, stale or made-up handle is
// an error status and never a read of freed memory.
//
// Handles are tokens, not addresses. A destroyed object's address is soon reused by the next
// allocation, so a set of live pointers would take a destroyed model's handle for the new model
// that happens to live at the same address, and a double destroy would destroy that one. A
// token is never handed out twice while it (or its wrap-around twin) is live; its top bits are
// ones no user-space address has, so a stray pointer is never found; and each copy of the
// runtime (one per model library) numbers its tokens from its own base, so a handle passed to
// another model library's functions is not found there either.
//
// Lookups take a shared lock; create and destroy an exclusive one, held only to edit the table
// (device memory is allocated and freed outside it). Objects returned by a lookup are used after
// the lock is released: stitch.h makes destroying a model or context while another thread uses
// it the caller's error, and that race is not detected.
#pragma once

#include "model_runtime.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

namespace stitch::runtime {

class HandleRegistry {
public:
  // The one registry of this model library.
  static HandleRegistry& instance();
  // At exit or unload, handles still live are abandoned, not destroyed: the CUDA runtime may
  // already have shut down, and their memory goes with the process.
  ~HandleRegistry();

  stitch_model* add_model(std::unique_ptr<Model> model);
  // The live model of `handle`; throws STITCH_ERROR_INVALID_ARGUMENT otherwise.
  const Model& model(const stitch_model* handle) const;
  // Unregisters the model and hands it over for destruction. Throws, leaving it registered,
  // when the handle is not live or contexts of the model are.
  std::unique_ptr<Model> take_model(stitch_model* handle);

  // Registers a context of the live model `owner` (throws when `owner` is no longer live).
  stitch_context* add_context(const stitch_model* owner, std::unique_ptr<Context> context);
  Context& context(const stitch_context* handle) const;
  std::unique_ptr<Context> take_context(stitch_context* handle);
  // Whether no model (and so no context) of this library is live.
  bool empty() const;

private:
  HandleRegistry();

  struct ModelEntry {
    std::unique_ptr<Model> model;
    std::size_t live_contexts = 0;
  };
  struct ContextEntry {
    std::unique_ptr<Context> context;
    uintptr_t model_token = 0;
  };

  uintptr_t next_token(); // with mutex_ held exclusively

  mutable std::shared_mutex mutex_;
  std::unordered_map<uintptr_t, ModelEntry> models_;
  std::unordered_map<uintptr_t, ContextEntry> contexts_;
  uintptr_t base_ = 0;
  uintptr_t counter_ = 0;
};

} // namespace stitch::runtime
