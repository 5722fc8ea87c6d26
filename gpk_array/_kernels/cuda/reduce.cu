// Reductions over the middle axis of a C-contiguous array viewed as (outer, K, inner).
//
// For every (op, dtype) four extern "C" kernels:
//   gpk_red_<op>_<dt>_row   inner == 1: rows of K contiguous elements. A group of threads (one warp,
//                           or the whole block) reduces one segment of a row with 16-byte loads
//                           (a scalar head up to 16-byte alignment, then vectors, then a scalar
//                           tail); a row may be split into `splits` segments.
//   gpk_red_<op>_<dt>_col   any inner: thread (tx, ty) of a (TX, TY) block owns output j (TX
//                           consecutive outputs per block, so loads are coalesced across the inner
//                           axis) and every TY-th k of a chunk of K; the TY partials meet in
//                           shared memory. K may be split into `splits` chunks.
//   gpk_red_<op>_<dt>_colv  the same with V = min(16 / sizeof(T), 8) adjacent outputs per thread and
//                           one V-element load per k (inner % V == 0, x aligned to V elements).
//   gpk_red_<op>_<dt>_fin   combines split partials (laid out [split][output]) and writes the result.
// With splits == 1 the row/col kernels write the final result themselves. With splits > 1 they write
// partials; then either the fin kernel combines them (counters == nullptr), or the last block to
// finish a row (a column tile) does, in the same launch: each block counts its finished unit on
// counters[unit] with an atomic increment after a __threadfence(), the block that sees the count
// reach `splits` reads every partial of the unit and sets the counter back to 0 for the next launch
// on the stream. The atomics only count blocks: every value is combined in an order fixed by the
// launch configuration (never by timing), so results are deterministic.
#include "gpk_common.cuh"

// Build settings (reduction.py CONFIG, mirrored in module_options):
#ifndef GPK_RED_UNROLL
#define GPK_RED_UNROLL 8      // 16-byte loads in flight per thread in the row kernel
#endif
#ifndef GPK_RED_COL_UNROLL
#define GPK_RED_COL_UNROLL 8  // scalar loads in flight per thread in the column kernel
#endif
#ifndef GPK_RED_VCOL_UNROLL
#define GPK_RED_VCOL_UNROLL 4 // vector loads in flight per thread in the vector column kernel
#endif
#ifndef GPK_RED_ASYNC
#define GPK_RED_ASYNC 0       // > 1: the row kernel loads through a cp.async pipeline of this many stages
#endif
#ifndef GPK_RED_LOAD
#define GPK_RED_LOAD 1        // cache treatment of the 16-byte input loads, see red_ldw
#endif
#ifndef GPK_RED_GATHER
#define GPK_RED_GATHER 4      // partials in flight per thread when they are combined
#endif
#ifndef GPK_RED_MIN_BLOCKS
#define GPK_RED_MIN_BLOCKS 3  // __launch_bounds__(block size, this) on row/col/colv (0: none)
#endif
#ifndef GPK_RED_THREADS
#define GPK_RED_THREADS 256   // threads per block of the row kernel (the column kernels take at most 256)
#endif
// An explicit bound also makes ptxas issue all of a step's loads before the first add (without one
// it interleaves them to stay under the registers of a 1024-thread block).
#if GPK_RED_MIN_BLOCKS > 0
#define GPK_RED_BOUNDS_ROW __launch_bounds__(GPK_RED_THREADS, GPK_RED_MIN_BLOCKS)
#define GPK_RED_BOUNDS_COL __launch_bounds__(256, GPK_RED_MIN_BLOCKS)
#else
#define GPK_RED_BOUNDS_ROW
#define GPK_RED_BOUNDS_COL
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
// Memory access

// One BYTES-wide load of the reduced input. GPK_RED_LOAD picks the cache treatment of 16-byte
// loads: 0 plain, 1 ld.global.nc.L1::no_allocate (read-only path, no L1 line), 2 ld.global.cs
// (evict first), 3 as 1 plus .L2::256B (the L2 fetches 256-byte blocks). The input is read-only
// while the kernel runs, which the .nc forms need.
template <int BYTES>
__device__ __forceinline__ typename RawWord<BYTES>::type red_ldw(const void* p) {
  typedef typename RawWord<BYTES>::type W;
#if GPK_RED_LOAD == 1
  if constexpr (BYTES == 16) {
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
  }
#elif GPK_RED_LOAD == 2
  if constexpr (BYTES == 16) return __ldcs(reinterpret_cast<const uint4*>(p));
#elif GPK_RED_LOAD == 3
  if constexpr (BYTES == 16) {
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
  }
#endif
  return *reinterpret_cast<const W*>(p);
}

// N elements of T from one naturally aligned word (the caller guarantees the alignment).
template <class T, int N>
__device__ __forceinline__ void red_vload(const T* p, T (&v)[N]) {
  const typename RawWord<sizeof(T) * N>::type r = red_ldw<sizeof(T) * N>(p);
  memcpy(&v[0], &r, sizeof(r));
}

// A partial result written by another block of this launch: read from L2 (ld.global.cg), never
// from a possibly stale L1 line.
template <class A>
__device__ __forceinline__ A ld_partial(const A* p) {
  typedef typename RawWord<sizeof(A)>::type W;
  const W w = __ldcg(reinterpret_cast<const W*>(p));
  A a;
  memcpy(&a, &w, sizeof(A));
  return a;
}

// Per-thread cp.async pipelines (GPK_RED_ASYNC = S > 1 stages; SM80 and later): a thread copies its
// next batches of U 16-byte vectors into its own slots of dynamic shared memory while it adds up an
// earlier batch, so S - 1 batches are in flight without holding registers. Each thread reads only the
// slots it wrote itself, so no barrier is needed (cp.async.wait_group orders them for that thread).
// Slots: red_stage[(stage * U + u) * nthreads + thread], 16 bytes each (S * U * nthreads * 16 bytes
// of dynamic shared memory, reduction.stage_bytes).
extern __shared__ uint4 red_stage[];

__device__ __forceinline__ void cp_async16(uint4* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned int s = (unsigned int)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
#else
  *smem = *reinterpret_cast<const uint4*>(gmem);
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
#endif
}

// Batches b = 0 .. nb - 1 of up to U vectors: vector u of batch b is at addr(b, u) when ok(b, u);
// use(b, u, word) sees them in order (b ascending, then u).
template <int U, int S, class Addr, class Ok, class Use>
__device__ __forceinline__ void async_stream(i64 nb, Addr addr, Ok ok, Use use) {
  const int nthr = blockDim.x * blockDim.y;
  uint4* const mine = red_stage + threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
  for (int st = 0; st < S - 1; ++st) {
    if (st < nb) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok((i64)st, u)) cp_async16(mine + (st * U + u) * nthr, addr((i64)st, u));
    }
    cp_async_commit();
  }
  int rd = 0, wr = S - 1;  // stages of batch b and of batch b + S - 1
  for (i64 b = 0; b < nb; ++b) {
    const i64 bn = b + S - 1;
    if (bn < nb) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok(bn, u)) cp_async16(mine + (wr * U + u) * nthr, addr(bn, u));
    }
    cp_async_commit();
    cp_async_wait<S - 1>();
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (ok(b, u)) use(b, u, mine[(rd * U + u) * nthr]);
    rd = (rd + 1 == S) ? 0 : rd + 1;
    wr = (wr + 1 == S) ? 0 : wr + 1;
  }
}

// ------------------------------------------------------------------------------------------
// Reductions inside a warp / block

template <class R>
__device__ __forceinline__ typename R::A warp_reduce(typename R::A a) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) a = R::comb(a, shfl_down_any(a, off));
  return a;
}

// Reduce over the whole (1-D) block; the result is valid in thread 0. Ends with a barrier so the
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

// Tree over the TY partials of each tx in shared memory (TY a power of two); result in sm[tx].
template <class R>
__device__ __forceinline__ void tree_over_y(typename R::A* sm) {
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x;
  for (int h = blockDim.y >> 1; h > 0; h >>= 1) {
    if (ty < h) sm[ty * TX + tx] = R::comb(sm[ty * TX + tx], sm[(ty + h) * TX + tx]);
    __syncthreads();
  }
}

// The (TX, TY) block's TY accumulators of column tx meet in sm (256 slots); the result is returned
// to the threads with ty == 0. Ends with a barrier.
template <class R>
__device__ __forceinline__ typename R::A col_block_reduce(typename R::A a, typename R::A* sm) {
  const int tx = threadIdx.x, ty = threadIdx.y, TX = blockDim.x;
  sm[ty * TX + tx] = a;
  __syncthreads();
  tree_over_y<R>(sm);
  a = sm[tx];
  __syncthreads();
  return a;
}

// part[s * stride] combined for s = s0, s0 + step, ... < splits, in that order (B loads in flight).
template <class R>
__device__ __forceinline__ typename R::A gather_partials(const typename R::A* part, i64 stride, int s0, int step,
                                                         int splits) {
  typedef typename R::A A;
  constexpr int B = GPK_RED_GATHER;
  A acc = R::init();
  const i64 pstep = (i64)step * stride;
  const A* p = part + (i64)s0 * stride;
  for (int s = s0; s < splits; s += B * step, p += B * pstep) {
    A v[B];
#pragma unroll
    for (int b = 0; b < B; ++b)
      if (s + b * step < splits) v[b] = ld_partial(p + b * pstep);
#pragma unroll
    for (int b = 0; b < B; ++b)
      if (s + b * step < splits) acc = R::comb(acc, v[b]);
  }
  return acc;
}

// Every thread of the block calls this after the block's partials are written (by any of its
// threads). Returns, the same in the whole block, whether this block is the last of the `total`
// that count on `counter`; that block then sees every partial of the unit (its caller resets the
// counter to 0 once done).
__device__ __forceinline__ bool last_block(unsigned int* counter, unsigned int total) {
  __shared__ unsigned int ticket;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) ticket = atomicAdd(counter, 1u);
  __syncthreads();
  const bool last = ticket == total - 1u;
  if (last) __threadfence();
  return last;
}

// ------------------------------------------------------------------------------------------
// Row kernel

// The vectors q[0], q[G * N], ... (`left` of them; element index k of the first) folded into acc.
// Loads: U in flight per full step (G and U compile-time, so the U addresses are one register pair
// plus immediate offsets), the fewer than U left after the last full step loaded together
// (predicated), so the end of a segment costs one round trip to memory, not U - 1. With
// GPK_RED_ASYNC the loads go through the cp.async pipeline instead.
template <class R, int U, int G>
__device__ __forceinline__ void row_vectors(const typename R::T* __restrict__ q, i64 k, i64 left,
                                            typename R::C cen, typename R::A (&acc)[16 / sizeof(typename R::T)]) {
  typedef typename R::T T;
  constexpr int N = 16 / (int)sizeof(T);
  constexpr i64 STEP = (i64)G * N;  // elements between a thread's consecutive vectors
#if GPK_RED_ASYNC > 1
  if (left <= 0) return;
  const i64 nb = (left + (i64)U * G - 1) / ((i64)U * G);
  async_stream<U, GPK_RED_ASYNC>(
      nb, [&](i64 b, int u) { return (const void*)(q + (b * U + u) * STEP); },
      [&](i64 b, int u) { return left - b * U * G > (i64)u * G; },
      [&](i64 b, int u, const uint4& w) {
        T v[N];
        memcpy(&v[0], &w, 16);
#pragma unroll
        for (int j = 0; j < N; ++j) acc[j] = R::comb(acc[j], R::make(Tr<T>::to_c(v[j]), k + (b * U + u) * STEP + j, cen));
      });
#else
  for (; left > (i64)(U - 1) * G; left -= (i64)U * G, q += U * STEP, k += U * STEP) {
    T buf[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) red_vload(q + u * STEP, buf[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int j = 0; j < N; ++j) acc[j] = R::comb(acc[j], R::make(Tr<T>::to_c(buf[u][j]), k + u * STEP + j, cen));
    }
  }
  if (left > 0) {
    T buf[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (left > (i64)u * G) red_vload(q + u * STEP, buf[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (left > (i64)u * G) {
#pragma unroll
        for (int j = 0; j < N; ++j) acc[j] = R::comb(acc[j], R::make(Tr<T>::to_c(buf[u][j]), k + u * STEP + j, cen));
      }
    }
  }
#endif
}

// One thread's share of p[start:end) in a group of G threads (gtid in [0, G)): a scalar head up to
// 16-byte alignment, the vectors (row_vectors), a scalar tail.
template <class R, int U, int G>
__device__ __forceinline__ typename R::A thread_reduce_row(const typename R::T* __restrict__ p, i64 start,
                                                           i64 end, int gtid, typename R::C cen) {
  typedef typename R::T T;
  typedef typename R::A A;
  constexpr int N = 16 / (int)sizeof(T);
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
    const i64 k = b0 + (i64)gtid * N;  // element index of this thread's first vector
    const T* __restrict__ q = p + k;
    row_vectors<R, U, G>(q, k, nv - gtid, cen, acc);
    const i64 t = b0 + nv * N + gtid;
    if (t < end) acc[0] = R::comb(acc[0], R::make(Tr<T>::to_c(p[t]), t, cen));
  }
#pragma unroll
  for (int j = 1; j < N; ++j) acc[0] = R::comb(acc[0], acc[j]);
  return acc[0];
}

// 16-byte loads in flight per thread of the row kernel: GPK_RED_UNROLL, halved for 1-byte types (16
// lanes of 64-bit accumulators already). Mirrored by row_unroll() in tests/kernels/test_index_sim.py.
template <class T>
__host__ __device__ constexpr int row_unroll() { return sizeof(T) == 1 ? (GPK_RED_UNROLL + 1) / 2 : GPK_RED_UNROLL; }

// Block mode runs blocks of exactly GPK_RED_THREADS threads (the host launches that many), warp mode
// any multiple of 32 up to it.
template <class R>
__device__ __forceinline__ void row_kernel(const typename R::T* __restrict__ x, i64 outer, i64 K, i64 splits,
                                           i64 seg_len, int warp_mode, typename R::A* __restrict__ partial,
                                           typename R::O* __restrict__ out, const typename R::T* __restrict__ center,
                                           double n, double ddof, unsigned int* __restrict__ counters) {
  typedef typename R::T T;
  typedef typename R::C C;
  typedef typename R::A A;
  constexpr int U = row_unroll<T>();
  const i64 nseg = outer * splits;
  // A group (one warp, or the whole block) reduces one segment at a time. warp_mode is the same
  // for the whole grid (and then splits == 1), and in block mode every thread of a block runs the
  // same iterations, so the barriers in block_reduce and last_block are reached by all threads.
  const int lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
  const int gtid = warp_mode ? lane : (int)threadIdx.x;
  const i64 g0 = warp_mode ? (i64)blockIdx.x * nwarps + (threadIdx.x >> 5) : (i64)blockIdx.x;
  const i64 gstep = warp_mode ? (i64)gridDim.x * nwarps : (i64)gridDim.x;
  for (i64 seg = g0; seg < nseg; seg += gstep) {
    i64 row = seg, s = 0;
    if (splits > 1) {
      row = seg / splits;
      s = seg - row * splits;
    }
    const i64 start = s * seg_len;
    const i64 end = (start + seg_len < K) ? start + seg_len : K;
    const C cen = center ? Tr<T>::to_c(center[row]) : C();
    A a;
    if (warp_mode) {
      a = thread_reduce_row<R, U, 32>(x + row * K, start, end, gtid, cen);
      a = warp_reduce<R>(a);
    } else {
      a = thread_reduce_row<R, U, GPK_RED_THREADS>(x + row * K, start, end, gtid, cen);
      a = block_reduce<R>(a);
    }
    if (splits == 1) {
      if (gtid == 0) out[row] = R::fin(a, n, ddof);
      continue;
    }
    if (gtid == 0) partial[s * outer + row] = a;
    if (counters != nullptr && last_block(counters + row, (unsigned int)splits)) {
      a = gather_partials<R>(partial + row, outer, (int)threadIdx.x, (int)blockDim.x, (int)splits);
      a = block_reduce<R>(a);
      if (threadIdx.x == 0) {
        out[row] = R::fin(a, n, ddof);
        counters[row] = 0u;
      }
    }
  }
}

// ------------------------------------------------------------------------------------------
// Column kernels

// Loads in flight per thread of a column kernel (U0: GPK_RED_COL_UNROLL or GPK_RED_VCOL_UNROLL),
// halved for the big (value, index) and double-pair accumulators.
template <class A, int U0>
__host__ __device__ constexpr int col_unroll() { return sizeof(A) <= 8 ? U0 : (U0 + 1) / 2; }

template <class R>
__device__ __forceinline__ void col_kernel(const typename R::T* __restrict__ x, i64 outer, i64 K, i64 inner,
                                           i64 splits, i64 kchunk, typename R::A* __restrict__ partial,
                                           typename R::O* __restrict__ out, const typename R::T* __restrict__ center,
                                           double n, double ddof, unsigned int* __restrict__ counters) {
  typedef typename R::T T;
  typedef typename R::C C;
  typedef typename R::A A;
  constexpr int U = col_unroll<A, GPK_RED_COL_UNROLL>();
  __shared__ A sm[256];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 TX = blockDim.x, TY = blockDim.y;
  const i64 nout = outer * inner;
  const i64 ntiles = (nout + TX - 1) / TX;
  const i64 nwork = ntiles * splits;
  for (i64 w = blockIdx.x; w < nwork; w += gridDim.x) {
    i64 tile = w, s = 0;
    if (splits > 1) {
      tile = w / splits;
      s = w - tile * splits;
    }
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
      if (k < k1) {
        T v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (k + u * TY < k1) v[u] = base[(k + u * TY) * inner];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (k + u * TY < k1) a[u] = R::comb(a[u], R::make(Tr<T>::to_c(v[u]), k + u * TY, cen));
      }
#pragma unroll
      for (int u = 0; u < U; ++u) acc = R::comb(acc, a[u]);
    }
    acc = col_block_reduce<R>(acc, sm);
    if (splits == 1) {
      if (ty == 0 && j < nout) out[j] = R::fin(acc, n, ddof);
      continue;
    }
    if (ty == 0 && j < nout) partial[s * nout + j] = acc;
    if (counters != nullptr && last_block(counters + tile, (unsigned int)splits)) {
      acc = (j < nout) ? gather_partials<R>(partial + j, nout, ty, (int)TY, (int)splits) : R::init();
      acc = col_block_reduce<R>(acc, sm);
      if (ty == 0 && j < nout) out[j] = R::fin(acc, n, ddof);
      if (tx == 0 && ty == 0) counters[tile] = 0u;
    }
  }
}

// Adjacent outputs per thread of the vector column kernel; mirrored by reduction.col_vec_width.
template <class T>
__host__ __device__ constexpr int col_vec() { return 16 / (int)sizeof(T) < 8 ? 16 / (int)sizeof(T) : 8; }

template <class R>
__device__ __forceinline__ void colv_kernel(const typename R::T* __restrict__ x, i64 outer, i64 K, i64 inner,
                                            i64 splits, i64 kchunk, typename R::A* __restrict__ partial,
                                            typename R::O* __restrict__ out, const typename R::T* __restrict__ center,
                                            double n, double ddof, unsigned int* __restrict__ counters) {
  typedef typename R::T T;
  typedef typename R::C C;
  typedef typename R::A A;
  constexpr int V = col_vec<T>();
  constexpr int U = col_unroll<A, GPK_RED_VCOL_UNROLL>();
  __shared__ A sm[256];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const i64 TX = blockDim.x, TY = blockDim.y;
  const i64 nout = outer * inner;  // inner % V == 0: a group of V outputs never straddles two o
  const i64 nvec = nout / V;
  const i64 ntiles = (nvec + TX - 1) / TX;
  const i64 nwork = ntiles * splits;
  for (i64 w = blockIdx.x; w < nwork; w += gridDim.x) {
    i64 tile = w, s = 0;
    if (splits > 1) {
      tile = w / splits;
      s = w - tile * splits;
    }
    const i64 g = tile * TX + tx;
    const i64 j0 = g * V;
    A acc[V];
#pragma unroll
    for (int c = 0; c < V; ++c) acc[c] = R::init();
    if (g < nvec) {
      const i64 o = j0 / inner, i = j0 - o * inner;
      const T* __restrict__ base = x + o * K * inner + i;
      C cen[V];
#pragma unroll
      for (int c = 0; c < V; ++c) cen[c] = center ? Tr<T>::to_c(center[j0 + c]) : C();
      const i64 k0 = s * kchunk;
      const i64 k1 = (k0 + kchunk < K) ? k0 + kchunk : K;
      i64 k = k0 + ty;
      for (; k + (U - 1) * TY < k1; k += U * TY) {
        T v[U][V];
#pragma unroll
        for (int u = 0; u < U; ++u) red_vload(base + (k + u * TY) * inner, v[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
          for (int c = 0; c < V; ++c) acc[c] = R::comb(acc[c], R::make(Tr<T>::to_c(v[u][c]), k + u * TY, cen[c]));
        }
      }
      if (k < k1) {
        T v[U][V];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (k + u * TY < k1) red_vload(base + (k + u * TY) * inner, v[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (k + u * TY < k1) {
#pragma unroll
            for (int c = 0; c < V; ++c) acc[c] = R::comb(acc[c], R::make(Tr<T>::to_c(v[u][c]), k + u * TY, cen[c]));
          }
        }
      }
    }
#pragma unroll
    for (int c = 0; c < V; ++c) acc[c] = col_block_reduce<R>(acc[c], sm);
    if (splits == 1) {
      if (ty == 0 && g < nvec) {
#pragma unroll
        for (int c = 0; c < V; ++c) out[j0 + c] = R::fin(acc[c], n, ddof);
      }
      continue;
    }
    if (ty == 0 && g < nvec) {
#pragma unroll
      for (int c = 0; c < V; ++c) partial[s * nout + j0 + c] = acc[c];
    }
    if (counters != nullptr && last_block(counters + tile, (unsigned int)splits)) {
#pragma unroll
      for (int c = 0; c < V; ++c) {
        A a = (g < nvec) ? gather_partials<R>(partial + j0 + c, nout, ty, (int)TY, (int)splits) : R::init();
        a = col_block_reduce<R>(a, sm);
        if (ty == 0 && g < nvec) out[j0 + c] = R::fin(a, n, ddof);
      }
      if (tx == 0 && ty == 0) counters[tile] = 0u;
    }
  }
}

// ------------------------------------------------------------------------------------------
// Final pass over split partials (when the launch had no counters)

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
    A acc = (j < nout) ? gather_partials<R>(partial + j, nout, ty, (int)TY, (int)splits) : R::init();
    acc = col_block_reduce<R>(acc, sm);
    if (ty == 0 && j < nout) out[j] = R::fin(acc, n, ddof);
  }
}

}  // namespace gpk

#define GPK_RED(NAME, RED, T, DT)                                                                        \
  extern "C" __global__ void GPK_RED_BOUNDS_ROW gpk_red_##NAME##_##DT##_row(                               \
      const T* __restrict__ x, long long outer, long long K, long long splits, long long seg_len,        \
      int warp_mode, gpk::RED::A* __restrict__ partial, gpk::RED::O* __restrict__ out,                   \
      const T* __restrict__ center, double n, double ddof, unsigned int* __restrict__ counters) {        \
    gpk::row_kernel<gpk::RED>(x, outer, K, splits, seg_len, warp_mode, partial, out, center, n, ddof,    \
                              counters);                                                                 \
  }                                                                                                      \
  extern "C" __global__ void GPK_RED_BOUNDS_COL gpk_red_##NAME##_##DT##_col(                               \
      const T* __restrict__ x, long long outer, long long K, long long inner, long long splits,          \
      long long kchunk, gpk::RED::A* __restrict__ partial, gpk::RED::O* __restrict__ out,                \
      const T* __restrict__ center, double n, double ddof, unsigned int* __restrict__ counters) {        \
    gpk::col_kernel<gpk::RED>(x, outer, K, inner, splits, kchunk, partial, out, center, n, ddof,         \
                              counters);                                                                 \
  }                                                                                                      \
  extern "C" __global__ void GPK_RED_BOUNDS_COL gpk_red_##NAME##_##DT##_colv(                               \
      const T* __restrict__ x, long long outer, long long K, long long inner, long long splits,          \
      long long kchunk, gpk::RED::A* __restrict__ partial, gpk::RED::O* __restrict__ out,                \
      const T* __restrict__ center, double n, double ddof, unsigned int* __restrict__ counters) {        \
    gpk::colv_kernel<gpk::RED>(x, outer, K, inner, splits, kchunk, partial, out, center, n, ddof,        \
                               counters);                                                                \
  }                                                                                                      \
  extern "C" __global__ void gpk_red_##NAME##_##DT##_fin(                                                \
      const gpk::RED::A* __restrict__ partial, long long nout, long long splits,                         \
      gpk::RED::O* __restrict__ out, double n, double ddof) {                                            \
    gpk::fin_kernel<gpk::RED>(partial, nout, splits, out, n, ddof);                                      \
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
