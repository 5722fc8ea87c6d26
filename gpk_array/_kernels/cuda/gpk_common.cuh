// Shared pieces of the gpk_array kernels: dtype traits, vector memory access, warp shuffles.
// Compiled by NVRTC (with -I to this folder and to the CUDA headers) and by nvcc alike.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace gpk {

typedef long long i64;
typedef unsigned long long u64;

// Dtype selection: a module built with -DGPK_SELECT instantiates only the dtypes whose
// GPK_DT_<code> macro is defined (e.g. -DGPK_SELECT -DGPK_DT_f32); without GPK_SELECT every
// dtype is instantiated (the CI compile check does that). Each .cu file spells the test out as
// `#if !defined(GPK_SELECT) || defined(GPK_DT_f32)`.

// ------------------------------------------------------------------------------------------
// Traits. C: the type arithmetic happens in (float for the 16-bit floats). W: an unsigned type
// at least as wide as int for wrap-around integer arithmetic (no signed-overflow UB).
template <class T> struct Tr;

#define GPK_PLAIN_TRAITS(T_, W_, ISF, ISS, LO, HI)                                  \
  template <> struct Tr<T_> {                                                       \
    typedef T_ C;                                                                   \
    typedef W_ W;                                                                   \
    static constexpr bool is_float = ISF;                                           \
    static constexpr bool is_signed = ISS;                                          \
    static __device__ __forceinline__ C to_c(T_ v) { return v; }                    \
    static __device__ __forceinline__ T_ from_c(C v) { return v; }                  \
    static __device__ __forceinline__ C lowest() { return LO; }                     \
    static __device__ __forceinline__ C highest() { return HI; }                    \
  };

GPK_PLAIN_TRAITS(float, float, true, true, __int_as_float(0xff800000), __int_as_float(0x7f800000))
GPK_PLAIN_TRAITS(double, double, true, true, __longlong_as_double(0xfff0000000000000LL),
                 __longlong_as_double(0x7ff0000000000000LL))
GPK_PLAIN_TRAITS(signed char, unsigned int, false, true, (signed char)(-128), (signed char)127)
GPK_PLAIN_TRAITS(short, unsigned int, false, true, (short)(-32768), (short)32767)
GPK_PLAIN_TRAITS(int, unsigned int, false, true, (int)(-2147483647 - 1), 2147483647)
GPK_PLAIN_TRAITS(long long, unsigned long long, false, true, (long long)(-9223372036854775807LL - 1),
                 9223372036854775807LL)
GPK_PLAIN_TRAITS(unsigned char, unsigned int, false, false, (unsigned char)0, (unsigned char)255)
GPK_PLAIN_TRAITS(unsigned short, unsigned int, false, false, (unsigned short)0, (unsigned short)65535)
GPK_PLAIN_TRAITS(unsigned int, unsigned int, false, false, 0u, 4294967295u)
GPK_PLAIN_TRAITS(unsigned long long, unsigned long long, false, false, 0ull, 18446744073709551615ull)
GPK_PLAIN_TRAITS(bool, unsigned int, false, false, false, true)
#undef GPK_PLAIN_TRAITS

template <> struct Tr<__half> {
  typedef float C;
  typedef float W;
  static constexpr bool is_float = true;
  static constexpr bool is_signed = true;
  static __device__ __forceinline__ float to_c(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from_c(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ float lowest() { return __int_as_float(0xff800000); }
  static __device__ __forceinline__ float highest() { return __int_as_float(0x7f800000); }
};

template <> struct Tr<__nv_bfloat16> {
  typedef float C;
  typedef float W;
  static constexpr bool is_float = true;
  static constexpr bool is_signed = true;
  static __device__ __forceinline__ float to_c(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from_c(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ float lowest() { return __int_as_float(0xff800000); }
  static __device__ __forceinline__ float highest() { return __int_as_float(0x7f800000); }
};

template <class T> struct IsBool { static constexpr bool value = false; };
template <> struct IsBool<bool> { static constexpr bool value = true; };

// Wrap-around integer arithmetic (for floats: plain arithmetic).
template <class C> __device__ __forceinline__ C wadd(C a, C b) {
  if constexpr (Tr<C>::is_float) { return a + b; }
  else { typedef typename Tr<C>::W W; return (C)((W)a + (W)b); }
}
template <class C> __device__ __forceinline__ C wsub(C a, C b) {
  if constexpr (Tr<C>::is_float) { return a - b; }
  else { typedef typename Tr<C>::W W; return (C)((W)a - (W)b); }
}
template <class C> __device__ __forceinline__ C wmul(C a, C b) {
  if constexpr (Tr<C>::is_float) { return a * b; }
  else { typedef typename Tr<C>::W W; return (C)((W)a * (W)b); }
}
template <class C> __device__ __forceinline__ C wneg(C a) {
  if constexpr (Tr<C>::is_float) { return -a; }
  else { typedef typename Tr<C>::W W; return (C)((W)0 - (W)a); }
}

// ------------------------------------------------------------------------------------------
// Launch bounds of the elementwise kernels: any block size up to 1024 threads, and at least
// GPK_MIN_BLOCKS such blocks per SM, i.e. at most 64 registers per thread by default (left alone,
// nvcc gives the unrolled float add 96 registers and 2 blocks of 256 threads per SM).
// -DGPK_MIN_BLOCKS=0 drops the bound.
#ifndef GPK_MIN_BLOCKS
#define GPK_MIN_BLOCKS 1
#endif
#if GPK_MIN_BLOCKS > 0
#define GPK_BOUNDS __launch_bounds__(1024, GPK_MIN_BLOCKS)
#else
#define GPK_BOUNDS
#endif

// Vectors per thread and loop iteration for a kernel tuned at `u` for 4-byte types: scaled with
// the element size so every dtype unrolls about the same number of elements (code size and
// compile time stay flat), never more than `u`. The Python launchers mirror this.
__host__ __device__ constexpr int unroll_for(int u, int itemsize) {
  return (u * itemsize / 4) < 1 ? 1 : ((u * itemsize / 4) > u ? u : (u * itemsize / 4));
}

// Vector memory access: N elements of T moved as one naturally aligned word of N*sizeof(T) bytes
// (16 bytes -> one 128-bit load/store). The caller guarantees the address alignment.
template <int BYTES> struct RawWord;
template <> struct RawWord<16> { typedef uint4 type; };
template <> struct RawWord<8> { typedef uint2 type; };
template <> struct RawWord<4> { typedef unsigned int type; };
template <> struct RawWord<2> { typedef unsigned short type; };
template <> struct RawWord<1> { typedef unsigned char type; };

// Cache treatment of the 16-byte accesses (build settings of the elementwise kernels; the defaults
// are plain ld/st). -DGPK_EW_LOAD: 0 plain, 1 ld.global.L1::no_allocate, 2 ld.global.cs (evict
// first), 3 as 1 plus .L2::256B (the L2 fetches 256-byte blocks), 4 ld.global.L2::256B.
// 5 ld.global.nc.L1::no_allocate.L2::256B, 6 ld.global.nc.L2::256B (plain loads through __restrict__
// const pointers compile to LDG.CONSTANT, the .nc path, already). -DGPK_EW_STORE: 0 plain,
// 1 st.global.cs, 2 st.global.L1::no_allocate.
#ifndef GPK_EW_LOAD
#define GPK_EW_LOAD 0
#endif
#ifndef GPK_EW_STORE
#define GPK_EW_STORE 0
#endif
#if GPK_EW_LOAD < 0 || GPK_EW_LOAD > 6
#error "GPK_EW_LOAD must be 0..6"
#endif
#if GPK_EW_STORE < 0 || GPK_EW_STORE > 2
#error "GPK_EW_STORE must be 0..2"
#endif

__device__ __forceinline__ uint4 ldw16(const void* p) {
#if GPK_EW_LOAD == 2
  return __ldcs(reinterpret_cast<const uint4*>(p));
#else
  uint4 r;
#if GPK_EW_LOAD == 1
  asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
#elif GPK_EW_LOAD == 3
  asm volatile("ld.global.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
#elif GPK_EW_LOAD == 4
  asm volatile("ld.global.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
#elif GPK_EW_LOAD == 5
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
#else
  asm volatile("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
#endif
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
#endif
}

__device__ __forceinline__ void stw16(void* p, const uint4& r) {
#if GPK_EW_STORE == 1
  __stcs(reinterpret_cast<uint4*>(p), r);
#else
  asm volatile("st.global.L1::no_allocate.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "l"(p), "r"(r.x), "r"(r.y), "r"(r.z), "r"(r.w));
#endif
}

template <class T, int N>
__device__ __forceinline__ void vload(const T* __restrict__ p, T (&v)[N]) {
  typedef typename RawWord<sizeof(T) * N>::type R;
  R r;
  if constexpr (GPK_EW_LOAD != 0 && sizeof(R) == 16) {
    r = ldw16(p);
  } else {
    r = *reinterpret_cast<const R*>(p);
  }
  memcpy(&v[0], &r, sizeof(R));
}

template <class T, int N>
__device__ __forceinline__ void vstore(T* __restrict__ p, const T (&v)[N]) {
  typedef typename RawWord<sizeof(T) * N>::type R;
  R r;
  memcpy(&r, &v[0], sizeof(R));
  if constexpr (GPK_EW_STORE != 0 && sizeof(R) == 16) {
    stw16(p, r);
  } else {
    *reinterpret_cast<R*>(p) = r;
  }
}

// Programmatic dependent launch (SM90+; no-ops before): a kernel launched with PDL (loader.launch(pdl=True))
// calls pdl_wait() before it reads what an earlier kernel wrote and before any global write; until then it may
// only read data no kernel of the stream writes (weights). pdl_trigger() lets the next PDL kernel start launching.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Shuffle any trivially copyable value down a warp, 32 bits at a time.
template <class A>
__device__ __forceinline__ A shfl_down_any(const A& v, int delta) {
  constexpr int NW = (int)((sizeof(A) + 3) / 4);
  unsigned int w[NW];
#pragma unroll
  for (int i = 0; i < NW; ++i) w[i] = 0u;
  memcpy(&w[0], &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < NW; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], delta);
  A r;
  memcpy(&r, &w[0], sizeof(A));
  return r;
}

// Strided/broadcast addressing for up to GPK_MAX_NDIM dims. Dims are in C order (last fastest).
// The kernels split the linear index with multiply-high division: for a dim of extent d,
// q = (umulhi(r, magic) + r) >> shift (magic and shift are computed on the host), exact for
// r < 2^31. So n < 2^31 always holds here: the host splits larger strided launches into chunks.
// Offsets are 64-bit.
#define GPK_MAX_NDIM 8
#define GPK_MAX_OPERANDS 3

struct NdParams {
  i64 n;                                   // number of output elements
  i64 ndim;
  i64 shape[GPK_MAX_NDIM];
  i64 magic[GPK_MAX_NDIM];
  i64 shift[GPK_MAX_NDIM];
  i64 stride[GPK_MAX_OPERANDS][GPK_MAX_NDIM];  // in elements; operand 0 is the output
};

// Offsets (in elements) of linear output index i for the first NOPS operands.
template <int NOPS>
__device__ __forceinline__ void nd_offsets32(const NdParams& p, unsigned int i, i64 (&off)[NOPS]) {
#pragma unroll
  for (int k = 0; k < NOPS; ++k) off[k] = 0;
  unsigned int r = i;
#pragma unroll
  for (int d = GPK_MAX_NDIM - 1; d >= 0; --d) {
    if (d < p.ndim) {
      unsigned int q = (__umulhi(r, (unsigned int)p.magic[d]) + r) >> (unsigned int)p.shift[d];
      i64 idx = (i64)(r - q * (unsigned int)p.shape[d]);
#pragma unroll
      for (int k = 0; k < NOPS; ++k) off[k] += idx * p.stride[k][d];
      r = q;
    }
  }
}

}  // namespace gpk
