// Binary elementwise kernels: out = op(a, b) with a, b of one dtype T; out is T or bool.
//
// For every (op, dtype) these extern "C" kernels:
//   gpk_<op>_<dt>_vv  a, b, out contiguous, same length, 16-byte aligned: 128-bit loads/stores
//   gpk_<op>_<dt>_vs  as vv with b a single element (a scalar broadcast)
//   gpk_<op>_<dt>_sv  as vv with a a single element (only subtract, divide, pow: for the other
//                     ops the caller swaps the operands, and less <-> greater etc.)
//   gpk_<op>_<dt>_b2  out (R, C) and one operand x of that shape, contiguous, and the other operand y broadcast
//                     from a row (C,) (kind 0: y[j], a bias) or a column (R, 1) (kind 1: y[i], a per-row
//                     statistic); C a multiple of the vector width, so a vector of x never crosses a row: 128-bit
//                     loads of x (and of y for a row), 128-bit stores; swap != 0 computes op(y, x)
//   gpk_<op>_<dt>_nd  any shapes/strides (broadcast dims have stride 0), up to 8 dims
// The vector kernels loop over tiles of blockDim.x * GPK_EW_UNROLL vectors (grid-stride; the default
// launch gives each block one tile, elementwise.py CONFIG "waves"; the _b2 loop's 32-bit index is
// launched only where it cannot wrap, elementwise.stride_fits_u32); the
// n % (16/sizeof(T)) tail elements go to the first threads of the grid.
#include "gpk_common.cuh"
#include "gpk_math.cuh"

#ifndef GPK_EW_UNROLL
#define GPK_EW_UNROLL 4
#endif

#ifndef GPK_EW_MATH_UNROLL
#define GPK_EW_MATH_UNROLL 2
#endif

namespace gpk {

// Vectors per thread and loop iteration: fewer for pow, whose body is long.
struct Cheap { static constexpr int kUnroll = GPK_EW_UNROLL; };
struct Math { static constexpr int kUnroll = GPK_EW_MATH_UNROLL; };

struct OpAdd : Cheap { template <class C> static __device__ __forceinline__ C f(C a, C b) { return wadd(a, b); } };
struct OpSub : Cheap { template <class C> static __device__ __forceinline__ C f(C a, C b) { return wsub(a, b); } };
struct OpMul : Cheap { template <class C> static __device__ __forceinline__ C f(C a, C b) { return wmul(a, b); } };
struct OpDiv : Cheap { template <class C> static __device__ __forceinline__ C f(C a, C b) { return a / b; } };
struct OpPow : Math { template <class C> static __device__ __forceinline__ C f(C a, C b) { return m_pow(a, b); } };
// NaN-propagating like numpy.maximum / numpy.minimum (a NaN operand wins, the first one if both).
struct OpMax : Cheap {
  template <class C> static __device__ __forceinline__ C f(C a, C b) {
    return (a != a) ? a : ((b != b) ? b : (a > b ? a : b));
  }
};
struct OpMin : Cheap {
  template <class C> static __device__ __forceinline__ C f(C a, C b) {
    return (a != a) ? a : ((b != b) ? b : (a < b ? a : b));
  }
};
struct OpEq : Cheap { template <class C> static __device__ __forceinline__ bool f(C a, C b) { return a == b; } };
struct OpNe : Cheap { template <class C> static __device__ __forceinline__ bool f(C a, C b) { return a != b; } };
struct OpLt : Cheap { template <class C> static __device__ __forceinline__ bool f(C a, C b) { return a < b; } };
struct OpLe : Cheap { template <class C> static __device__ __forceinline__ bool f(C a, C b) { return a <= b; } };
struct OpGt : Cheap { template <class C> static __device__ __forceinline__ bool f(C a, C b) { return a > b; } };
struct OpGe : Cheap { template <class C> static __device__ __forceinline__ bool f(C a, C b) { return a >= b; } };
struct OpAnd : Cheap { template <class C> static __device__ __forceinline__ C f(C a, C b) { return (C)(a & b); } };
struct OpOr : Cheap { template <class C> static __device__ __forceinline__ C f(C a, C b) { return (C)(a | b); } };
struct OpXor : Cheap { template <class C> static __device__ __forceinline__ C f(C a, C b) { return (C)(a ^ b); } };

template <class Op, class T, class O>
__device__ __forceinline__ O apply2(typename Tr<T>::C x, typename Tr<T>::C y) {
  return Tr<O>::from_c(Op::template f<typename Tr<T>::C>(x, y));
}

// MODE 0: a and b are arrays; 1: b is one element; 2: a is one element.
template <class Op, class T, class O, int MODE>
__device__ __forceinline__ void binary_contig(const T* __restrict__ a, const T* __restrict__ b,
                                              O* __restrict__ out, i64 n) {
  typedef typename Tr<T>::C C;
  constexpr int N = 16 / (int)sizeof(T);
  constexpr int U = unroll_for(Op::kUnroll, (int)sizeof(T));
  const i64 nvec = n / N;
  const i64 bd = blockDim.x;
  const i64 tile = bd * U;
  C sa = C(), sb = C();
  if constexpr (MODE == 2) sa = Tr<T>::to_c(a[0]);
  if constexpr (MODE == 1) sb = Tr<T>::to_c(b[0]);
  for (i64 base = (i64)blockIdx.x * tile + threadIdx.x; base < nvec; base += (i64)gridDim.x * tile) {
    T va[U][N];
    T vb[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 v = base + u * bd;
      if (v < nvec) {
        if constexpr (MODE != 2) vload(a + v * N, va[u]);
        if constexpr (MODE != 1) vload(b + v * N, vb[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 v = base + u * bd;
      if (v < nvec) {
        O r[N];
#pragma unroll
        for (int j = 0; j < N; ++j) {
          C x, y;
          if constexpr (MODE == 2) x = sa; else x = Tr<T>::to_c(va[u][j]);
          if constexpr (MODE == 1) y = sb; else y = Tr<T>::to_c(vb[u][j]);
          r[j] = apply2<Op, T, O>(x, y);
        }
        vstore(out + v * N, r);
      }
    }
  }
  const i64 t = nvec * N + (i64)blockIdx.x * bd + threadIdx.x;
  if (t < n) {
    C x, y;
    if constexpr (MODE == 2) x = sa; else x = Tr<T>::to_c(a[t]);
    if constexpr (MODE == 1) y = sb; else y = Tr<T>::to_c(b[t]);
    out[t] = apply2<Op, T, O>(x, y);
  }
}

// The _b2 kernels: vector v of x lies in row q = v / cvec (magic division: v < 2^31), its y is the vector
// v - q * cvec of the row (kind 0) or the element q (kind 1).
template <class Op, class T, class O>
__device__ __forceinline__ void binary_bcast2(const T* __restrict__ x, const T* __restrict__ y, O* __restrict__ out,
                                              unsigned int nvec, unsigned int cvec, unsigned int magic,
                                              unsigned int shift, int kind, int swap) {
  typedef typename Tr<T>::C C;
  constexpr int N = 16 / (int)sizeof(T);
  constexpr int U = unroll_for(Op::kUnroll, (int)sizeof(T));
  const unsigned int bd = blockDim.x;
  const unsigned int tile = bd * U;
  for (unsigned int base = blockIdx.x * tile + threadIdx.x; base < nvec; base += gridDim.x * tile) {
    T vx[U][N];
    T vy[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const unsigned int v = base + u * bd;
      if (v < nvec) {
        vload(x + (i64)v * N, vx[u]);
        const unsigned int q = (__umulhi(v, magic) + v) >> shift;
        if (kind == 0) {
          vload(y + (i64)(v - q * cvec) * N, vy[u]);
        } else {
          const T s = y[q];
#pragma unroll
          for (int j = 0; j < N; ++j) vy[u][j] = s;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const unsigned int v = base + u * bd;
      if (v < nvec) {
        O r[N];
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const C a = Tr<T>::to_c(vx[u][j]), b = Tr<T>::to_c(vy[u][j]);
          r[j] = swap ? apply2<Op, T, O>(b, a) : apply2<Op, T, O>(a, b);
        }
        vstore(out + (i64)v * N, r);
      }
    }
  }
}

template <class Op, class T, class O>
__device__ __forceinline__ void binary_nd(const T* __restrict__ a, const T* __restrict__ b,
                                          O* __restrict__ out, const NdParams& p) {
  // p.n < 2^31 (see NdParams) and the grid has < 2^31 threads, so i + step never wraps.
  const unsigned int n = (unsigned int)p.n;
  const unsigned int step = gridDim.x * blockDim.x;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    i64 off[3];
    nd_offsets32<3>(p, i, off);
    out[off[0]] = apply2<Op, T, O>(Tr<T>::to_c(a[off[1]]), Tr<T>::to_c(b[off[2]]));
  }
}

}  // namespace gpk

#define GPK_BINARY_VV(NAME, OP, T, O, DT, MODE, M)                                                    \
  extern "C" __global__ void GPK_BOUNDS gpk_##NAME##_##DT##_##MODE(const T* __restrict__ a,           \
                                                        const T* __restrict__ b, O* __restrict__ out, \
                                                        long long n) {                                \
    gpk::binary_contig<gpk::OP, T, O, M>(a, b, out, n);                                               \
  }
#define GPK_BINARY_ND(NAME, OP, T, O, DT)                                                                        \
  extern "C" __global__ void GPK_BOUNDS gpk_##NAME##_##DT##_nd(const T* __restrict__ a, const T* __restrict__ b, \
                                                    O* __restrict__ out, gpk::NdParams p) {                      \
    gpk::binary_nd<gpk::OP, T, O>(a, b, out, p);                                                                 \
  }
#define GPK_BINARY_B2(NAME, OP, T, O, DT)                                                                      \
  extern "C" __global__ void GPK_BOUNDS gpk_##NAME##_##DT##_b2(                                                  \
      const T* __restrict__ x, const T* __restrict__ y, O* __restrict__ out, unsigned int nvec, unsigned int cvec, \
      unsigned int magic, unsigned int shift, int kind, int swap) {                                              \
    gpk::binary_bcast2<gpk::OP, T, O>(x, y, out, nvec, cvec, magic, shift, kind, swap);                          \
  }
// Ops whose scalar-first form is another op with the operands swapped (add, maximum, less ->
// greater, ...) get no _sv kernel: the Python side swaps.
#define GPK_BINARY_C(NAME, OP, T, O, DT)                                                                      \
  GPK_BINARY_VV(NAME, OP, T, O, DT, vv, 0) GPK_BINARY_VV(NAME, OP, T, O, DT, vs, 1) GPK_BINARY_ND(NAME, OP, T, O, DT) \
  GPK_BINARY_B2(NAME, OP, T, O, DT)
#define GPK_BINARY(NAME, OP, T, O, DT) GPK_BINARY_C(NAME, OP, T, O, DT) GPK_BINARY_VV(NAME, OP, T, O, DT, sv, 2)

// Op groups; the Python side (elementwise.py) lists the same groups per dtype.
#define GPK_BIN_ARITH(T, DT)            \
  GPK_BINARY_C(add, OpAdd, T, T, DT)    \
  GPK_BINARY(subtract, OpSub, T, T, DT) \
  GPK_BINARY_C(multiply, OpMul, T, T, DT)
#define GPK_BIN_MAXMIN(T, DT)            \
  GPK_BINARY_C(maximum, OpMax, T, T, DT) \
  GPK_BINARY_C(minimum, OpMin, T, T, DT)
#define GPK_BIN_FLOAT(T, DT)          \
  GPK_BINARY(divide, OpDiv, T, T, DT) \
  GPK_BINARY(pow, OpPow, T, T, DT)
#define GPK_BIN_CMP(T, DT)                    \
  GPK_BINARY_C(equal, OpEq, T, bool, DT)      \
  GPK_BINARY_C(not_equal, OpNe, T, bool, DT)  \
  GPK_BINARY_C(less, OpLt, T, bool, DT)       \
  GPK_BINARY_C(less_equal, OpLe, T, bool, DT) \
  GPK_BINARY_C(greater, OpGt, T, bool, DT)    \
  GPK_BINARY_C(greater_equal, OpGe, T, bool, DT)
#define GPK_BIN_BITS(T, DT)                  \
  GPK_BINARY_C(bitwise_and, OpAnd, T, T, DT) \
  GPK_BINARY_C(bitwise_or, OpOr, T, T, DT)   \
  GPK_BINARY_C(bitwise_xor, OpXor, T, T, DT)

// A module built with -DGPK_GROUP_arith holds only the arithmetic groups, -DGPK_GROUP_cmp only
// comparisons and bitwise ops; with neither, both.
#if !defined(GPK_GROUP_cmp) || defined(GPK_GROUP_arith)
#define GPK_BIN_FLOATS_A(T, DT) GPK_BIN_ARITH(T, DT) GPK_BIN_MAXMIN(T, DT) GPK_BIN_FLOAT(T, DT)
#define GPK_BIN_INTS_A(T, DT) GPK_BIN_ARITH(T, DT) GPK_BIN_MAXMIN(T, DT)
#define GPK_BIN_BOOLS_A(T, DT) GPK_BIN_MAXMIN(T, DT)
#else
#define GPK_BIN_FLOATS_A(T, DT)
#define GPK_BIN_INTS_A(T, DT)
#define GPK_BIN_BOOLS_A(T, DT)
#endif
#if !defined(GPK_GROUP_arith) || defined(GPK_GROUP_cmp)
#define GPK_BIN_FLOATS_C(T, DT) GPK_BIN_CMP(T, DT)
#define GPK_BIN_INTS_C(T, DT) GPK_BIN_CMP(T, DT) GPK_BIN_BITS(T, DT)
#define GPK_BIN_BOOLS_C(T, DT) GPK_BIN_CMP(T, DT) GPK_BIN_BITS(T, DT)
#else
#define GPK_BIN_FLOATS_C(T, DT)
#define GPK_BIN_INTS_C(T, DT)
#define GPK_BIN_BOOLS_C(T, DT)
#endif
#define GPK_BIN_FLOATS(T, DT) GPK_BIN_FLOATS_A(T, DT) GPK_BIN_FLOATS_C(T, DT)
#define GPK_BIN_INTS(T, DT) GPK_BIN_INTS_A(T, DT) GPK_BIN_INTS_C(T, DT)
#define GPK_BIN_BOOLS(T, DT) GPK_BIN_BOOLS_A(T, DT) GPK_BIN_BOOLS_C(T, DT)

#if !defined(GPK_SELECT) || defined(GPK_DT_f16)
GPK_BIN_FLOATS(__half, f16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_bf16)
GPK_BIN_FLOATS(__nv_bfloat16, bf16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_f32)
GPK_BIN_FLOATS(float, f32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_f64)
GPK_BIN_FLOATS(double, f64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i8)
GPK_BIN_INTS(signed char, i8)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i16)
GPK_BIN_INTS(short, i16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i32)
GPK_BIN_INTS(int, i32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i64)
GPK_BIN_INTS(long long, i64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u8)
GPK_BIN_INTS(unsigned char, u8)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u16)
GPK_BIN_INTS(unsigned short, u16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u32)
GPK_BIN_INTS(unsigned int, u32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u64)
GPK_BIN_INTS(unsigned long long, u64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_b)
GPK_BIN_BOOLS(bool, b)
#endif
