// stitch_grid.cuh: stitch_grid_sync(), the grid-wide barrier of a cooperative launch
// (STITCH_LAUNCH_COOPERATIVE), for the Global groups' kernels.
//
// It has a header of its own because under nvcc it needs <cooperative_groups.h>, whose libcu++
// includes (cuda/atomic, cuda/std/type_traits) cost every nvcc run several seconds (CUDA 13):
// more than the rest of the runtime headers together. stitchc includes it only in the group
// sources whose plan launches cooperatively and compiles those together. On the host target
// the barrier is part of the CUDA emulation (host/device_intrinsics.h).
#pragma once

#include "stitch_cuda.h"

#if defined(__CUDACC__)
#include <cooperative_groups.h>

__device__ __forceinline__ void stitch_grid_sync() { cooperative_groups::this_grid().sync(); }
#endif
