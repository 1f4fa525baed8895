// Host stand-ins for CUDA's built-in types: dim3, uint3 and the vector types (float2, float4,
// int4, ...) with the size and alignment CUDA gives them, their make_* constructors, warpSize,
// and cudaStream_t. Global namespace, like CUDA's, so generated code compiles unchanged under
// STITCH_HOST_TARGET. Included through stitch_cuda.h only.
#pragma once

#if !defined(STITCH_HOST_TARGET)
#error "host/ headers are the host target's emulation; include stitch_cuda.h instead"
#endif

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

inline constexpr int warpSize = 32;

// Streams are tokens on the host target: every operation completes before its call returns.
struct CUstream_st {
  unsigned id;
};
typedef CUstream_st* cudaStream_t;

// One vector type: its struct with CUDA's alignment and its make_ function.
#define STITCH_HOST_VECTOR2(name, scalar, alignment)                                               \
  struct alignas(alignment) name {                                                                 \
    scalar x, y;                                                                                   \
  };                                                                                               \
  inline constexpr name make_##name(scalar x, scalar y) { return name{x, y}; }
#define STITCH_HOST_VECTOR3(name, scalar)                                                          \
  struct name {                                                                                    \
    scalar x, y, z;                                                                                \
  };                                                                                               \
  inline constexpr name make_##name(scalar x, scalar y, scalar z) { return name{x, y, z}; }
#define STITCH_HOST_VECTOR4(name, scalar, alignment)                                               \
  struct alignas(alignment) name {                                                                 \
    scalar x, y, z, w;                                                                             \
  };                                                                                               \
  inline constexpr name make_##name(scalar x, scalar y, scalar z, scalar w) {                      \
    return name{x, y, z, w};                                                                       \
  }

STITCH_HOST_VECTOR2(char2, signed char, 2)
STITCH_HOST_VECTOR2(uchar2, unsigned char, 2)
STITCH_HOST_VECTOR4(char4, signed char, 4)
STITCH_HOST_VECTOR4(uchar4, unsigned char, 4)
STITCH_HOST_VECTOR2(short2, short, 4)
STITCH_HOST_VECTOR4(short4, short, 8)
STITCH_HOST_VECTOR2(int2, int, 8)
STITCH_HOST_VECTOR3(int3, int)
STITCH_HOST_VECTOR4(int4, int, 16)
STITCH_HOST_VECTOR2(uint2, unsigned int, 8)
STITCH_HOST_VECTOR4(uint4, unsigned int, 16)
STITCH_HOST_VECTOR2(longlong2, long long, 16)
STITCH_HOST_VECTOR2(ulonglong2, unsigned long long, 16)
STITCH_HOST_VECTOR2(float2, float, 8)
STITCH_HOST_VECTOR3(float3, float)
STITCH_HOST_VECTOR4(float4, float, 16)
STITCH_HOST_VECTOR2(double2, double, 16)

inline constexpr uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) {
  return uint3{x, y, z};
}

#undef STITCH_HOST_VECTOR2
#undef STITCH_HOST_VECTOR3
#undef STITCH_HOST_VECTOR4

static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 must match CUDA's layout");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2 must match CUDA's layout");
static_assert(sizeof(int4) == 16 && alignof(int4) == 16, "int4 must match CUDA's layout");
static_assert(sizeof(float3) == 12 && alignof(float3) == 4, "float3 must match CUDA's layout");
