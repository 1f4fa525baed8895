// libraries_host.cpp: the per-context library state of the host target, which is none: the
// host routines keep no handles and need no workspace.
#include "descriptor_checks.h"

extern "C" int32_t stitch_libraries_create(stitch_abi_libraries** out, char* error,
                                           size_t error_size) {
  if (out == nullptr)
    return stitch::library::ErrorSink("stitch_libraries_create", error, error_size)
        .fail(STITCH_ERROR_INTERNAL, "null result pointer");
  *out = nullptr;
  return STITCH_OK;
}

extern "C" void stitch_libraries_destroy(stitch_abi_libraries* libraries) { (void)libraries; }

extern "C" uint64_t stitch_library_workspace_bytes(void) {
  return STITCH_LIBRARY_HOST_WORKSPACE_BYTES;
}
