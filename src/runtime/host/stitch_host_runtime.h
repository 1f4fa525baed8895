// The host target's emulation of CUDA, in one include for stitch_cuda.h. Header-only, so a
// generated .cu compiles on its own:
//   g++ -std=c++20 -x c++ -DSTITCH_HOST_TARGET -I <dir of stitch_cuda.h> k.cu -lboost_context
//       -pthread
// How it fits together:
//   host_types.h        dim3, uint3, float4, ... (CUDA's layouts)
//   error_status.h      cudaError_t, the per-thread last error, KernelFault
//   host_config.h       emulated device limits and emulation knobs (thread order, workers)
//   fiber_stacks.h      guarded, cached fiber stacks
//   shared_memory.h     per-block shared memory arenas, 0xFF-filled
//   warp_collectives.h  shuffle / vote semantics (PTX rules)
//   thread_state.h      launch geometry, block and thread state, the running thread
//   stall_report.h      the deadlock message
//   fiber_scheduler.h   runs resident blocks' threads as fibers; barriers, collectives
//   worker_pool.h       OS threads for the blocks of ordinary launches
//   launch_request.h    what a launch asks for; per-kernel attributes
//   launch_run.h        launch checks, ordinary and cooperative launches (compiled once into
//                       libstitch_runtime_host.a when STITCH_HOST_LINKED_LAUNCH is defined)
//   launch.h            binds a kernel's arguments and runs the launch
//   runtime_api.h       cudaMalloc, cudaMemcpyAsync, cudaGetLastError, ...
//   device_intrinsics.h __syncthreads, __shfl*_sync, votes, fences, shared memory accessors
//   device_atomics.h    atomicAdd, atomicCAS, ...
//   device_math.h       rsqrtf, min/max, __float_as_int, __popc, ...
#pragma once

#if !defined(STITCH_HOST_TARGET)
#error "the host emulation is only for -DSTITCH_HOST_TARGET builds; include stitch_cuda.h"
#endif

#include "host_types.h"

#include "device_atomics.h"
#include "device_intrinsics.h"
#include "device_math.h"
#include "error_status.h"
#include "launch.h"
#include "runtime_api.h"
