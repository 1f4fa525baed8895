// The host target's cudaError_t: the CUDA error codes the emulation can return (with CUDA's
// numeric values), their names, and the per-host-thread "last error" that cudaGetLastError
// reads. A failing call also keeps a detailed message ("kernel 'k': deadlock in block (1,0,0):
// ..."); cudaGetErrorString(code) returns that message while `code` is still the latest error
// on this thread, and CUDA's generic description otherwise.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorAssert = 710,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
  cudaErrorCooperativeLaunchTooLarge = 720,
  cudaErrorNotSupported = 801,
  cudaErrorInvalidClusterSize = 912,
};
typedef enum cudaError cudaError_t;

namespace stitch::host {

struct ErrorText {
  const char* name;
  const char* description;
};

inline ErrorText error_text(cudaError_t code) {
  switch (code) {
  case cudaSuccess:
    return {"cudaSuccess", "no error"};
  case cudaErrorInvalidValue:
    return {"cudaErrorInvalidValue", "invalid argument"};
  case cudaErrorMemoryAllocation:
    return {"cudaErrorMemoryAllocation", "out of memory"};
  case cudaErrorInvalidConfiguration:
    return {"cudaErrorInvalidConfiguration", "invalid configuration argument"};
  case cudaErrorInvalidSymbol:
    return {"cudaErrorInvalidSymbol", "invalid device symbol"};
  case cudaErrorInvalidDeviceFunction:
    return {"cudaErrorInvalidDeviceFunction", "invalid device function"};
  case cudaErrorInvalidDevice:
    return {"cudaErrorInvalidDevice", "invalid device ordinal"};
  case cudaErrorInvalidResourceHandle:
    return {"cudaErrorInvalidResourceHandle", "invalid resource handle"};
  case cudaErrorNotReady:
    return {"cudaErrorNotReady", "device not ready"};
  case cudaErrorIllegalAddress:
    return {"cudaErrorIllegalAddress", "an illegal memory access was encountered"};
  case cudaErrorMisalignedAddress:
    return {"cudaErrorMisalignedAddress", "misaligned address"};
  case cudaErrorLaunchOutOfResources:
    return {"cudaErrorLaunchOutOfResources", "too many resources requested for launch"};
  case cudaErrorLaunchTimeout:
    return {"cudaErrorLaunchTimeout", "the launch timed out and was terminated"};
  case cudaErrorAssert:
    return {"cudaErrorAssert", "device-side assert triggered"};
  case cudaErrorLaunchFailure:
    return {"cudaErrorLaunchFailure", "unspecified launch failure"};
  case cudaErrorCooperativeLaunchTooLarge:
    return {"cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"};
  case cudaErrorNotSupported:
    return {"cudaErrorNotSupported", "operation not supported"};
  case cudaErrorInvalidClusterSize:
    return {"cudaErrorInvalidClusterSize", "invalid cluster size"};
  }
  return {"cudaErrorUnknown", "unrecognized error code"};
}

// Per host thread, like the CUDA runtime's own error state.
struct ErrorState {
  cudaError_t last = cudaSuccess;          // what cudaGetLastError returns (then clears)
  cudaError_t detailed_code = cudaSuccess; // the code `detail` belongs to
  std::string detail;                      // "<name>: <message>" of the latest failure
};

inline ErrorState& this_thread_errors() {
  thread_local ErrorState state;
  return state;
}

// Records a failure on this host thread and returns its code, so callers can
// `return report_error(code, message);`.
inline cudaError_t report_error(cudaError_t code, std::string message) {
  ErrorState& state = this_thread_errors();
  state.last = code;
  state.detailed_code = code;
  state.detail = std::string(error_text(code).name) + ": " + std::move(message);
  return code;
}

// The detailed message of the latest failure on this thread ("" if none yet).
inline const std::string& last_error_detail() { return this_thread_errors().detail; }

// Thrown inside an emulated GPU thread when the kernel breaks a rule of the CUDA model (a
// shuffle mask without the caller, a divergent barrier, too much shared memory). It unwinds that
// thread only; the scheduler then ends the launch and reports `code` with the message.
class KernelFault : public std::runtime_error {
public:
  KernelFault(cudaError_t code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  cudaError_t code() const { return code_; }

private:
  cudaError_t code_;
};

} // namespace stitch::host
