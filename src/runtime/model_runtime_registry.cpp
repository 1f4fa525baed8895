// model_runtime_registry.cpp: the table of live models and contexts (see the header for why
// handles are tokens).
#include "model_runtime_registry.h"

#include <cstdio>
#include <mutex>

namespace stitch::runtime {
namespace {

static_assert(sizeof(uintptr_t) == 8, "handle tokens assume 64-bit pointers");

// The top 16 bits of every token. User-space addresses on 64-bit Linux are below 2^47.
constexpr uintptr_t kTokenTag = uintptr_t{0x57C7} << 48;
constexpr uintptr_t kTokenCountMask = (uintptr_t{1} << 48) - 1;

// SplitMix64's finalizer: spreads nearby inputs (load addresses) over all 64 bits.
uintptr_t mix(uintptr_t value) {
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

// Where this copy of the runtime is loaded, which differs between model libraries.
const char kLoadAddressAnchor = 0;

std::string describe_handle(const void* handle) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", handle);
  return text;
}

[[noreturn]] void fail_not_live(const char* kind, const void* handle) {
  fail(STITCH_ERROR_INVALID_ARGUMENT,
       std::string(kind) + " " + describe_handle(handle) + " is not a live " + kind +
           " of this library (already destroyed, never created, or from another model library)");
}

} // namespace

HandleRegistry::HandleRegistry()
    : base_(mix(reinterpret_cast<uintptr_t>(&kLoadAddressAnchor)) & kTokenCountMask) {}

HandleRegistry::~HandleRegistry() {
  for (auto& entry : contexts_)
    (void)entry.second.context.release();
  for (auto& entry : models_)
    (void)entry.second.model.release();
}

HandleRegistry& HandleRegistry::instance() {
  static HandleRegistry registry;
  return registry;
}

uintptr_t HandleRegistry::next_token() {
  for (;;) {
    const uintptr_t token = kTokenTag | ((base_ + ++counter_) & kTokenCountMask);
    if (!models_.contains(token) && !contexts_.contains(token)) return token;
  }
}

stitch_model* HandleRegistry::add_model(std::unique_ptr<Model> model) {
  std::unique_lock lock(mutex_);
  const uintptr_t token = next_token();
  models_.emplace(token, ModelEntry{std::move(model), 0});
  return reinterpret_cast<stitch_model*>(token);
}

const Model& HandleRegistry::model(const stitch_model* handle) const {
  if (handle == nullptr) fail(STITCH_ERROR_INVALID_ARGUMENT, "model is null");
  std::shared_lock lock(mutex_);
  const auto found = models_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == models_.end()) fail_not_live("model", handle);
  return *found->second.model;
}

bool HandleRegistry::empty() const {
  std::shared_lock lock(mutex_);
  return models_.empty();
}

std::unique_ptr<Model> HandleRegistry::take_model(stitch_model* handle) {
  if (handle == nullptr) fail(STITCH_ERROR_INVALID_ARGUMENT, "model is null");
  std::unique_lock lock(mutex_);
  const auto found = models_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == models_.end()) fail_not_live("model", handle);
  if (const std::size_t live = found->second.live_contexts; live != 0)
    fail(STITCH_ERROR_INVALID_ARGUMENT,
         "model " + describe_handle(handle) + " still has " + std::to_string(live) +
             " live context" + (live == 1 ? "" : "s") + "; destroy its contexts first");
  std::unique_ptr<Model> model = std::move(found->second.model);
  models_.erase(found);
  return model;
}

stitch_context* HandleRegistry::add_context(const stitch_model* owner,
                                            std::unique_ptr<Context> context) {
  std::unique_lock lock(mutex_);
  const auto found = models_.find(reinterpret_cast<uintptr_t>(owner));
  if (found == models_.end()) fail_not_live("model", owner);
  const uintptr_t token = next_token();
  contexts_.emplace(token, ContextEntry{std::move(context), found->first});
  ++found->second.live_contexts;
  return reinterpret_cast<stitch_context*>(token);
}

Context& HandleRegistry::context(const stitch_context* handle) const {
  if (handle == nullptr) fail(STITCH_ERROR_INVALID_ARGUMENT, "context is null");
  std::shared_lock lock(mutex_);
  const auto found = contexts_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == contexts_.end()) fail_not_live("context", handle);
  return *found->second.context;
}

std::unique_ptr<Context> HandleRegistry::take_context(stitch_context* handle) {
  if (handle == nullptr) fail(STITCH_ERROR_INVALID_ARGUMENT, "context is null");
  std::unique_lock lock(mutex_);
  const auto found = contexts_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == contexts_.end()) fail_not_live("context", handle);
  std::unique_ptr<Context> context = std::move(found->second.context);
  const auto owner = models_.find(found->second.model_token);
  if (owner != models_.end()) --owner->second.live_contexts;
  contexts_.erase(found);
  return context;
}

} // namespace stitch::runtime
