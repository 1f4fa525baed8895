// header_check.cpp: stitch_library.h compiles on its own, first in a translation unit, for the
// target this library is built for (the host target's ABI wrappers included there; nvcc's view
// is checked by tests/library).
#include "stitch_library.h"

static_assert(sizeof(stitch_gemm_desc) > 0 && sizeof(stitch_conv_desc) > 0,
              "stitch_library.h declares its descriptors");
