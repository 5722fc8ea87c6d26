// Reductions over the middle axis of a C-contiguous array viewed as (outer, K, inner).
//
// For every (op, dtype) three extern "C" kernels:
//   gpk_red_<op>_<dt>_row  inner == 1: rows of K contiguous elements. A group of threads (one warp,
//                          or the whole block) reduces one segment of a row with 128-bit loads
//                          (a scalar head up to 16-byte alignment, then vectors, then a scalar
//                          tail); a row may be split into `splits` segments.
//   gpk_red_<op>_<dt>_col  any inner: thread (tx, ty) of a (TX, TY) block owns output j (TX
//                          consecutive outputs per block, so loads are coalesced across the inner
//                          axis) and every TY-th k of a chunk of K; the TY partials meet in
//                          shared memory. K may be split into `splits` chunks.
//   gpk_red_<op>_<dt>_fin  combines split partials (laid out [split][output]) and writes the result.
// With splits == 1 the row/col kernels write the final result themselves. Every combination
// order is fixed by the launch configuration, so results are deterministic (no atomics).
#include "gpk_common.cuh"

#ifndef GPK_RED_UNROLL
#define GPK_RED_UNROLL 4
#endif
#ifndef GPK_RED_COL_UNROLL
#define GPK_RED_COL_UNROLL 8  // scalar loads in flight per thread in the column kernel
#endif

namespace gpk {

// Sum/prod accumulator and result types: floats accumulate in their compute type (float for
// f16/bf16/f32, double for f64) and return their own dtype; signed ints and bool accumulate and
// return int64, unsigned ints uint64 (NumPy's sum/prod dtypes).
template <class T, bool F = Tr<T>::is_float, bool S = Tr<T>::is_signed || IsBool<T>::value>
struct SumTypes;
template <class T, bool S> struct SumTypes<T, true, S> { typedef typename Tr<T>::C A; typedef T O; };
template <class T> struct SumTypes<T, false, true> { typedef long long A; typedef long long O; };
template <class T> struct SumTypes<T, false, false> { typedef unsigned long long A; typedef unsigned long long O; };

template <class T, class A, class O>
__device__ __forceinline__ O out_cast(A a) {
  if constexpr (Tr<T>::is_float) { return Tr<T>::from_c((typename Tr<T>::C)a); }
  else { return (O)a; }
}

template <class T_>
struct RSum {
  typedef T_ T; typedef typename Tr<T>::C C;
  typedef typename SumTypes<T>::A A; typedef typename SumTypes<T>::O O;
  static __device__ __forceinline__ A init() { return A(0); }
  static __device__ __forceinline__ A make(C x, i64, C) { return (A)x; }
  static __device__ __forceinline__ A comb(A a, A b) { return wadd(a, b); }
  static __device__ __forceinline__ O fin(A a, double, double) { return out_cast<T, A, O>(a); }
};

template <class T_>
struct RProd {
  typedef T_ T; typedef typename Tr<T>::C C;
  typedef typename SumTypes<T>::A A; typedef typename SumTypes<T>::O O;
  static __device__ __forceinline__ A init() { return A(1); }
  static __device__ __forceinline__ A make(C x, i64, C) { return (A)x; }
  static __device__ __forceinline__ A comb(A a, A b) { return wmul(a, b); }
  static __device__ __forceinline__ O fin(A a, double, double) { return out_cast<T, A, O>(a); }
};

// NaN-propagating max/min (NumPy's amax/amin).
template <class T_>
struct RMax {
  typedef T_ T; typedef typename Tr<T>::C C; typedef C A; typedef T O;
  static __device__ __forceinline__ A init() { return Tr<T>::lowest(); }
  static __device__ __forceinline__ A make(C x, i64, C) { return x; }
  static __device__ __forceinline__ A comb(A a, A b) { return (a != a) ? a : ((b != b || b > a) ? b : a); }
  static __device__ __forceinline__ O fin(A a, double, double) { return Tr<T>::from_c(a); }
};

template <class T_>
struct RMin {
  typedef T_ T; typedef typename Tr<T>::C C; typedef C A; typedef T O;
  static __device__ __forceinline__ A init() { return Tr<T>::highest(); }
  static __device__ __forceinline__ A make(C x, i64, C) { return x; }
  static __device__ __forceinline__ A comb(A a, A b) { return (a != a) ? a : ((b != b || b < a) ? b : a); }
  static __device__ __forceinline__ O fin(A a, double, double) { return Tr<T>::from_c(a); }
};

template <class T_>
struct RMean {
  typedef T_ T; typedef typename Tr<T>::C C; typedef C A; typedef T O;
  static __device__ __forceinline__ A init() { return A(0); }
  static __device__ __forceinline__ A make(C x, i64, C) { return x; }
  static __device__ __forceinline__ A comb(A a, A b) { return a + b; }
  static __device__ __forceinline__ O fin(A a, double n, double) { return Tr<T>::from_c((C)((double)a / n)); }
};

// Second pass of var/std: sums of d = x - c and d^2 around c, the mean from the first pass;
// var = (S2 - S1^2 / n) / max(n - ddof, 0), which also corrects for the rounding of c.
template <class C> struct VarAcc { C s1; C s2; };

template <class T_, bool SQRT>
struct RVar {
  typedef T_ T; typedef typename Tr<T>::C C; typedef VarAcc<C> A; typedef T O;
  static __device__ __forceinline__ A init() { A a; a.s1 = C(0); a.s2 = C(0); return a; }
  static __device__ __forceinline__ A make(C x, i64, C c) { A a; const C d = x - c; a.s1 = d; a.s2 = d * d; return a; }
  static __device__ __forceinline__ A comb(A a, A b) { A r; r.s1 = a.s1 + b.s1; r.s2 = a.s2 + b.s2; return r; }
  static __device__ __forceinline__ O fin(A a, double n, double ddof) {
    const double s1 = (double)a.s1, s2 = (double)a.s2;
    double m2 = s2 - s1 * s1 / n;
    if (m2 < 0.0) m2 = 0.0;
    double den = n - ddof;
    if (den < 0.0) den = 0.0;
    double v = m2 / den;
    if (SQRT) v = sqrt(v);
    return Tr<T>::from_c((C)v);
  }
};

// Arg reductions: (value, index) pairs; NaN beats everything, ties go to the smaller index, so
// the result is NumPy's (first occurrence; first NaN).
template <class C> struct ArgAcc { C v; long long i; };

template <class T_, bool MAX>
struct RArg {
  typedef T_ T; typedef typename Tr<T>::C C; typedef ArgAcc<C> A; typedef long long O;
  static __device__ __forceinline__ A init() {
    A a; a.v = MAX ? Tr<T>::lowest() : Tr<T>::highest(); a.i = 9223372036854775807LL; return a;
  }
  static __device__ __forceinline__ A make(C x, i64 k, C) { A a; a.v = x; a.i = k; return a; }
  static __device__ __forceinline__ A comb(A a, A b) {
    const bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) {
      if (an && bn) return (b.i < a.i) ? b : a;
      return an ? a : b;
    }
    const bool better = MAX ? (b.v > a.v) : (b.v < a.v);
    return (better || (b.v == a.v && b.i < a.i)) ? b : a;
  }
  static __device__ __forceinline__ O fin(A a, double, double) { return a.i; }
};

// ------------------------------------------------------------------------------------------

template <class R>
__device__ __forceinline__ typename R::A warp_reduce(typename R::A a) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) a = R::comb(a, shfl_down_any(a, off));
  return a;
}

// Reduce over the whole block; the result is valid in thread 0. Ends with a barrier so the
// shared buffer can be reused at once.
template <class R>
__device__ __forceinline__ typename R::A block_reduce(typename R::A a) {
  typedef typename R::A A;
  __shared__ A sm[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  a = warp_reduce<R>(a);
  if (lane == 0) sm[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = (lane < nwarps) ? sm[lane] : R::init();
    a = warp_reduce<R>(a);
  }
  __syncthreads();
  return a;
}

// One thread's share of p[start:end) in a group of G threads (gtid in [0, G)).
template <class R>
__device__ __forceinline__ typename R::A thread_reduce_row(const typename R::T* __restrict__ p, i64 start,
                                                           i64 end, int gtid, int G, typename R::C cen) {
  typedef typename R::T T;
  typedef typename R::A A;
  constexpr int N = 16 / (int)sizeof(T);
  // 16-byte loads in flight per thread: GPK_RED_UNROLL, halved for 1-byte types (16 lanes of
  // 64-bit accumulators already). Mirrored by row_unroll() in tests/kernels/test_index_sim.py.
  constexpr int U = sizeof(T) == 1 ? (GPK_RED_UNROLL + 1) / 2 : GPK_RED_UNROLL;
  A acc[N];
#pragma unroll
  for (int j = 0; j < N; ++j) acc[j] = R::init();
  const i64 len = end - start;
  if (len > 0) {
    const int mis = (int)((reinterpret_cast<unsigned long long>(p + start) & 15ull) / sizeof(T));
    i64 head = mis ? (i64)(N - mis) : 0;
    if (head > len) head = len;
    if (gtid < head) acc[0] = R::comb(acc[0], R::make(Tr<T>::to_c(p[start + gtid]), start + gtid, cen));
    const i64 b0 = start + head;
    const i64 nv = (end - b0) / N;
    const T* __restrict__ pv = p + b0;
    const i64 g = G;
    i64 v = gtid;
    for (; v + (U - 1) * g < nv; v += U * g) {
      T buf[U][N];
#pragma unroll
      for (int u = 0; u < U; ++u) vload(pv + (v + u * g) * N, buf[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int j = 0; j < N; ++j)
          acc[j] = R::comb(acc[j], R::make(Tr<T>::to_c(buf[u][j]), b0 + (v + u * g) * N + j, cen));
      }
    }
    for (; v < nv; v += g) {
      T buf[N];
      vload(pv + v * N, buf);
#pragma unroll
      for (int j = 0; j < N; ++j) acc[j] = R::comb(acc[j], R::make(Tr<T>::to_c(buf[j]), b0 + v * N + j, cen));
    }
    const i64 t = b0 + nv * N + gtid;
    if (t < end) acc[0] = R::comb(acc[0], R::make(Tr<T>::to_c(p[t]), t, cen));
  }
#pragma unroll
  for (int j = 1; j < N; ++j) acc[0] = R::comb(acc[0], acc[j]);
  return acc[0];
}

template <class R>
__device__ __forceinline__ void row_kernel(const typename R::T* __restrict__ x, i64 outer, i64 K, i64 splits,
                                           i64 seg_len, int warp_mode, typename R::A* __restrict__ partial,
                                           typename R::O* __restrict__ out, const typename R::T* __restrict__ center,
                                           double n, double ddof) {
  typedef typename R::T T;
  typedef typename R::C C;
  typedef typename R::A A;
  const i64 nseg = outer * splits;
  // A group (one warp, or the whole block) reduces one segment at a time. warp_mode is the same
  // for the whole grid, and in block mode every thread of a block runs the same iterations, so
  // the barriers in block_reduce are reached by all threads of the block.
  const int lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  const int gtid = warp_mode ? lane : (int)threadIdx.x;
  const int G = warp_mode ? 32 : (int)blockDim.x;
  const i64 g0 = warp_mode ? (i64)blockIdx.x * nwarps + (threadIdx.x >> 5) : (i64)blockIdx.x;
  const i64 gstep = warp_mode ? (i64)gridDim.x * nwarps : (i64)gridDim.x;
  for (i64 seg = g0; seg < nseg; seg += gstep) {
    const i64 row = seg / splits, s = seg - row * splits;
    const i64 start = s * seg_len;
    const i64 end = (start + seg_len < K) ? start + seg_len : K;
    const C cen = center ? Tr<T>::to_c(center[row]) : C();
    A a = thread_reduce_row<R>(x + row * K, start, end, gtid, G, cen);
    if (warp_mode) a = warp_reduce<R>(a);
    else a = block_reduce<R>(a);
    if (gtid == 0) {
      if (splits == 1) out[row] = R::fin(a, n, ddof);
      else partial[s * outer + row] = a;
    }
  }
}

// Tree over the TY partials of each tx in shared memory (TY a power of two); result in sm[tx].
template <class R>
__device__ __forceinline__ void tree_over_y(typename R::A* sm) {
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x;
  for (int h = blockDim.y >> 1; h > 0; h >>= 1) {
    if (ty < h) sm[ty * TX + tx] = R::comb(sm[ty * TX + tx], sm[(ty + h) * TX + tx]);
    __syncthreads();
  }
}

template <class R>
__device__ __forceinline__ void col_kernel(const typename R::T* __restrict__ x, i64 outer, i64 K, i64 inner,
                                           i64 splits, i64 kchunk, typename R::A* __restrict__ partial,
                                           typename R::O* __restrict__ out, const typename R::T* __restrict__ center,
                                           double n, double ddof) {
  typedef typename R::T T;
  typedef typename R::C C;
  typedef typename R::A A;
  // (value, index) and double-pair accumulators are big: half the loads in flight for them
  constexpr int U = sizeof(A) <= 8 ? GPK_RED_COL_UNROLL : (GPK_RED_COL_UNROLL + 1) / 2;
  __shared__ A sm[256];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 TX = blockDim.x, TY = blockDim.y;
  const i64 nout = outer * inner;
  const i64 ntiles = (nout + TX - 1) / TX;
  const i64 nwork = ntiles * splits;
  for (i64 w = blockIdx.x; w < nwork; w += gridDim.x) {
    const i64 tile = w / splits, s = w - tile * splits;
    const i64 j = tile * TX + tx;
    A acc = R::init();
    if (j < nout) {
      const i64 o = j / inner, i = j - o * inner;
      const T* __restrict__ base = x + o * K * inner + i;
      const C cen = center ? Tr<T>::to_c(center[j]) : C();
      const i64 k0 = s * kchunk;
      const i64 k1 = (k0 + kchunk < K) ? k0 + kchunk : K;
      A a[U];
#pragma unroll
      for (int u = 0; u < U; ++u) a[u] = R::init();
      i64 k = k0 + ty;
      for (; k + (U - 1) * TY < k1; k += U * TY) {
        T v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = base[(k + u * TY) * inner];
#pragma unroll
        for (int u = 0; u < U; ++u) a[u] = R::comb(a[u], R::make(Tr<T>::to_c(v[u]), k + u * TY, cen));
      }
      for (; k < k1; k += TY) a[0] = R::comb(a[0], R::make(Tr<T>::to_c(base[k * inner]), k, cen));
#pragma unroll
      for (int u = 0; u < U; ++u) acc = R::comb(acc, a[u]);
    }
    sm[ty * TX + tx] = acc;
    __syncthreads();
    tree_over_y<R>(sm);
    if (ty == 0 && j < nout) {
      if (splits == 1) out[j] = R::fin(sm[tx], n, ddof);
      else partial[s * nout + j] = sm[tx];
    }
    __syncthreads();
  }
}

template <class R>
__device__ __forceinline__ void fin_kernel(const typename R::A* __restrict__ partial, i64 nout, i64 splits,
                                           typename R::O* __restrict__ out, double n, double ddof) {
  typedef typename R::A A;
  __shared__ A sm[256];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 TX = blockDim.x, TY = blockDim.y;
  const i64 ntiles = (nout + TX - 1) / TX;
  for (i64 w = blockIdx.x; w < ntiles; w += gridDim.x) {
    const i64 j = w * TX + tx;
    A acc = R::init();
    if (j < nout) {
      for (i64 s = ty; s < splits; s += TY) acc = R::comb(acc, partial[s * nout + j]);
    }
    sm[ty * TX + tx] = acc;
    __syncthreads();
    tree_over_y<R>(sm);
    if (ty == 0 && j < nout) out[j] = R::fin(sm[tx], n, ddof);
    __syncthreads();
  }
}

}  // namespace gpk

#define GPK_RED(NAME, RED, T, DT)                                                                      \
  extern "C" __global__ void gpk_red_##NAME##_##DT##_row(                                              \
      const T* __restrict__ x, long long outer, long long K, long long splits, long long seg_len,      \
      int warp_mode, gpk::RED::A* __restrict__ partial, gpk::RED::O* __restrict__ out,                 \
      const T* __restrict__ center, double n, double ddof) {                                           \
    gpk::row_kernel<gpk::RED>(x, outer, K, splits, seg_len, warp_mode, partial, out, center, n, ddof); \
  }                                                                                                    \
  extern "C" __global__ void gpk_red_##NAME##_##DT##_col(                                              \
      const T* __restrict__ x, long long outer, long long K, long long inner, long long splits,        \
      long long kchunk, gpk::RED::A* __restrict__ partial, gpk::RED::O* __restrict__ out,              \
      const T* __restrict__ center, double n, double ddof) {                                           \
    gpk::col_kernel<gpk::RED>(x, outer, K, inner, splits, kchunk, partial, out, center, n, ddof);      \
  }                                                                                                    \
  extern "C" __global__ void gpk_red_##NAME##_##DT##_fin(                                              \
      const gpk::RED::A* __restrict__ partial, long long nout, long long splits,                       \
      gpk::RED::O* __restrict__ out, double n, double ddof) {                                          \
    gpk::fin_kernel<gpk::RED>(partial, nout, splits, out, n, ddof);                                    \
  }

// Two-parameter reducer templates get typedefs (a comma would split a macro argument).
namespace gpk {
#define GPK_DECLARE_2(T, DT)          \
  typedef RArg<T, true> ArgMax_##DT;  \
  typedef RArg<T, false> ArgMin_##DT; \
  typedef RVar<T, false> Var_##DT;    \
  typedef RVar<T, true> Std_##DT;
GPK_DECLARE_2(__half, f16)
GPK_DECLARE_2(__nv_bfloat16, bf16)
GPK_DECLARE_2(float, f32)
GPK_DECLARE_2(double, f64)
GPK_DECLARE_2(signed char, i8)
GPK_DECLARE_2(short, i16)
GPK_DECLARE_2(int, i32)
GPK_DECLARE_2(long long, i64)
GPK_DECLARE_2(unsigned char, u8)
GPK_DECLARE_2(unsigned short, u16)
GPK_DECLARE_2(unsigned int, u32)
GPK_DECLARE_2(unsigned long long, u64)
GPK_DECLARE_2(bool, b)
#undef GPK_DECLARE_2
}  // namespace gpk

// Op groups; the Python side (reduction.py) lists the same groups per dtype. A module built with
// -DGPK_GROUP_basic holds sum/prod/max/min/mean, -DGPK_GROUP_stat argmax/argmin/var/std; with
// neither, all of them.
#if !defined(GPK_GROUP_stat) || defined(GPK_GROUP_basic)
#define GPK_RED_BASIC(T, DT)   \
  GPK_RED(sum, RSum<T>, T, DT) \
  GPK_RED(max, RMax<T>, T, DT) \
  GPK_RED(min, RMin<T>, T, DT)
#define GPK_RED_PROD(T, DT) GPK_RED(prod, RProd<T>, T, DT)
#define GPK_RED_MEAN(T, DT) GPK_RED(mean, RMean<T>, T, DT)
#else
#define GPK_RED_BASIC(T, DT)
#define GPK_RED_PROD(T, DT)
#define GPK_RED_MEAN(T, DT)
#endif
#if !defined(GPK_GROUP_basic) || defined(GPK_GROUP_stat)
#define GPK_RED_ARG(T, DT)            \
  GPK_RED(argmax, ArgMax_##DT, T, DT) \
  GPK_RED(argmin, ArgMin_##DT, T, DT)
#define GPK_RED_VAR(T, DT)      \
  GPK_RED(var, Var_##DT, T, DT) \
  GPK_RED(std, Std_##DT, T, DT)
#else
#define GPK_RED_ARG(T, DT)
#define GPK_RED_VAR(T, DT)
#endif

#define GPK_RED_FLOATS(T, DT) \
  GPK_RED_BASIC(T, DT) GPK_RED_PROD(T, DT) GPK_RED_MEAN(T, DT) GPK_RED_ARG(T, DT) GPK_RED_VAR(T, DT)
#define GPK_RED_INTS(T, DT) GPK_RED_BASIC(T, DT) GPK_RED_PROD(T, DT) GPK_RED_ARG(T, DT)
#define GPK_RED_BOOLS(T, DT) GPK_RED_BASIC(T, DT) GPK_RED_ARG(T, DT)

#if !defined(GPK_SELECT) || defined(GPK_DT_f16)
GPK_RED_FLOATS(__half, f16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_bf16)
GPK_RED_FLOATS(__nv_bfloat16, bf16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_f32)
GPK_RED_FLOATS(float, f32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_f64)
GPK_RED_FLOATS(double, f64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i8)
GPK_RED_INTS(signed char, i8)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i16)
GPK_RED_INTS(short, i16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i32)
GPK_RED_INTS(int, i32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i64)
GPK_RED_INTS(long long, i64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u8)
GPK_RED_INTS(unsigned char, u8)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u16)
GPK_RED_INTS(unsigned short, u16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u32)
GPK_RED_INTS(unsigned int, u32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u64)
GPK_RED_INTS(unsigned long long, u64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_b)
GPK_RED_BOOLS(bool, b)
#endif
