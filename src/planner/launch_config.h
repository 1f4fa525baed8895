// Thread mappings and launch dimensions from shapes. The device is a parameter (Hopper's
// H100 SXM by default): the grid is sized to fill its SMs, blocks to its limits.
#pragma once

#include <cstdint>

#include "planner/fusion_plan.h"

namespace stitch {

struct DeviceParams {
  int sm_count = 132;               // H100 SXM
  int max_threads_per_sm = 2048;
  int max_threads_per_block = 1024;
  int64_t max_shared_per_block = 227 * 1024;
  int waves = 4;                    // blocks per SM a flat grid aims for before grid-striding
};

// One thread per `vector_width` elements, 256-thread blocks, grid-stride beyond `waves` full
// waves of the device.
LaunchConfig flat_launch(int64_t elements, int vector_width, const DeviceParams& device);

// Reductions of `rows` independent rows of `row_length` contiguous elements: a warp per row
// (several rows per block) for short rows, a block per row for long ones.
ThreadMapping row_mapping(int64_t row_length);
LaunchConfig row_launch(int64_t rows, int64_t row_length, ThreadMapping mapping,
                        const DeviceParams& device);

} // namespace stitch
