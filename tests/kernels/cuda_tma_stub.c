/* A stand-in for libcuda's cuTensorMapEncodeTiled and cuInit (host only), for the ctypes path of
 * gpk_array/_kernels/cutlass/tma.py. Built with gcc by tests/kernels/test_cutlass_sm90_params.py, against
 * NVIDIA's cuda.h when one is found (-DGPK_REAL_HEADER), so the prototypes must match the real ones.
 * Instead of a real descriptor it writes its arguments into the 128 bytes, little-endian:
 * u32 dtype, u32 rank, u64 address, u64 dims[3], u64 strides[2], u32 box[3], u32 elem_strides[3],
 * u32 interleave, swizzle, l2_promotion, oob_fill; then zeros. Rank above 3 is refused.
 * cuTensorMapReplaceAddress rewrites the address field of such a record (misaligned: refused). */
#include <stdint.h>
#include <string.h>

#ifdef GPK_REAL_HEADER
#include <cuda.h>
#else
typedef int CUresult;
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef struct { uint64_t opaque[16]; } CUtensorMap;
typedef int CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
    CUtensorMapFloatOOBfill;
#define CUDAAPI
#endif

CUresult CUDAAPI cuInit(unsigned int flags) { return flags ? (CUresult)1 : (CUresult)0; }

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** str) {
  (void)error;
  *str = "CUDA_ERROR_INVALID_VALUE";
  return (CUresult)0;
}

CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank,
    void* addr, const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
    const cuuint32_t* estr, CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill oob) {
  unsigned char* p = (unsigned char*)map;
  uint32_t u32[10];
  uint64_t u64[6];
  if (rank < 1 || rank > 3 || ((uintptr_t)map & 63)) return (CUresult)1;
  memset(p, 0, 128);
  u32[0] = (uint32_t)dt; u32[1] = rank;
  memcpy(p, u32, 8);
  u64[0] = (uint64_t)(uintptr_t)addr;
  for (uint32_t i = 0; i < 3; ++i) u64[1 + i] = i < rank ? dims[i] : 0;
  for (uint32_t i = 0; i < 2; ++i) u64[4 + i] = i + 1 < rank ? strides[i] : 0;
  memcpy(p + 8, u64, 48);
  for (uint32_t i = 0; i < 3; ++i) { u32[i] = i < rank ? box[i] : 0; u32[3 + i] = i < rank ? estr[i] : 0; }
  u32[6] = (uint32_t)il; u32[7] = (uint32_t)sw; u32[8] = (uint32_t)l2; u32[9] = (uint32_t)oob;
  memcpy(p + 56, u32, 40);
  return (CUresult)0;
}

CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap* map, void* addr) {
  uint64_t a = (uint64_t)(uintptr_t)addr;
  if (((uintptr_t)map & 63) || (a & 15)) return (CUresult)1;
  memcpy((unsigned char*)map + 8, &a, 8);
  return (CUresult)0;
}
