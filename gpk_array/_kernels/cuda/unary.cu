// Unary elementwise kernels: out = op(x), out of x's dtype.
//
// For every (op, dtype) two extern "C" kernels:
//   gpk_<op>_<dt>_v   x, out contiguous and 16-byte aligned: 128-bit loads/stores, grid-stride tiles
//   gpk_<op>_<dt>_nd  any strides, up to 8 dims
// The 16-bit floats compute in float and round once at the end.
#include "gpk_common.cuh"
#include "gpk_math.cuh"

#ifndef GPK_EW_UNROLL
#define GPK_EW_UNROLL 4
#endif

#ifndef GPK_EW_MATH_UNROLL
#define GPK_EW_MATH_UNROLL 2
#endif

namespace gpk {

// Cheap ops unroll GPK_EW_UNROLL vectors per thread and iteration; transcendental ones fewer, to
// keep code size (and compile time) down: their body is long and the memory system stays busy.
struct Cheap { static constexpr int kUnroll = GPK_EW_UNROLL; };
struct Math { static constexpr int kUnroll = GPK_EW_MATH_UNROLL; };

struct UNeg : Cheap { template <class C> static __device__ __forceinline__ C f(C x) { return wneg(x); } };
struct UAbs : Cheap {
  template <class C> static __device__ __forceinline__ C f(C x) {
    if constexpr (Tr<C>::is_float) { return m_fabs(x); }
    else if constexpr (Tr<C>::is_signed) { return x < C(0) ? wneg(x) : x; }
    else { return x; }
  }
};
struct USquare : Cheap { template <class C> static __device__ __forceinline__ C f(C x) { return wmul(x, x); } };
// max(x, 0) with NaN propagated (numpy.maximum(x, 0)); -0.0 becomes +0.0.
struct URelu : Cheap {
  template <class C> static __device__ __forceinline__ C f(C x) { return (x > C(0) || x != x) ? x : C(0); }
};
struct UInvert : Cheap {
  template <class C> static __device__ __forceinline__ C f(C x) {
    if constexpr (IsBool<C>::value) { return !x; }
    else { return (C)(~x); }
  }
};
struct UExp : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_exp(x); } };
struct ULog : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_log(x); } };
struct USqrt : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_sqrt(x); } };
struct USin : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_sin(x); } };
struct UCos : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_cos(x); } };
struct UTanh : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_tanh(x); } };
struct ULog1p : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_log1p(x); } };
struct UExpm1 : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_expm1(x); } };
struct URecip : Cheap { template <class C> static __device__ __forceinline__ C f(C x) { return C(1) / x; } };
struct URsqrt : Math { template <class C> static __device__ __forceinline__ C f(C x) { return m_rsqrt(x); } };
struct USigmoid : Math {
  template <class C> static __device__ __forceinline__ C f(C x) { return C(1) / (C(1) + m_exp(-x)); }
};
// silu and gelu at x < -1e30 are their limit -0 (the formulas give -inf * 0 = NaN at -inf), as the fused GEMM
// epilogues (gpk_epilogue.h) give.
struct USilu : Math {
  template <class C> static __device__ __forceinline__ C f(C x) {
    return x < C(-1e30) ? C(-0.0) : x / (C(1) + m_exp(-x));
  }
};
// GELU, exact form: x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))).
struct UGelu : Math {
  template <class C> static __device__ __forceinline__ C f(C x) {
    return x < C(-1e30) ? C(-0.0) : C(0.5) * x * (C(1) + m_erf(x * C(0.70710678118654752440)));
  }
};
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct UGeluTanh : Math {
  template <class C> static __device__ __forceinline__ C f(C x) {
    const C inner = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
    return C(0.5) * x * (C(1) + m_tanh(inner));
  }
};

template <class Op, class T>
__device__ __forceinline__ T apply1(T v) {
  return Tr<T>::from_c(Op::template f<typename Tr<T>::C>(Tr<T>::to_c(v)));
}

template <class Op, class T>
__device__ __forceinline__ void unary_contig(const T* __restrict__ x, T* __restrict__ out, i64 n) {
  constexpr int N = 16 / (int)sizeof(T);
  constexpr int U = unroll_for(Op::kUnroll, (int)sizeof(T));
  const i64 nvec = n / N;
  const i64 bd = blockDim.x;
  const i64 tile = bd * U;
  for (i64 base = (i64)blockIdx.x * tile + threadIdx.x; base < nvec; base += (i64)gridDim.x * tile) {
    T v[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 k = base + u * bd;
      if (k < nvec) vload(x + k * N, v[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 k = base + u * bd;
      if (k < nvec) {
#pragma unroll
        for (int j = 0; j < N; ++j) v[u][j] = apply1<Op, T>(v[u][j]);
        vstore(out + k * N, v[u]);
      }
    }
  }
  const i64 t = nvec * N + (i64)blockIdx.x * bd + threadIdx.x;
  if (t < n) out[t] = apply1<Op, T>(x[t]);
}

template <class Op, class T>
__device__ __forceinline__ void unary_nd(const T* __restrict__ x, T* __restrict__ out, const NdParams& p) {
  // p.n < 2^31 (see NdParams) and the grid has < 2^31 threads, so i + step never wraps.
  const unsigned int n = (unsigned int)p.n;
  const unsigned int step = gridDim.x * blockDim.x;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    i64 off[2];
    nd_offsets32<2>(p, i, off);
    out[off[0]] = apply1<Op, T>(x[off[1]]);
  }
}

}  // namespace gpk

#define GPK_UNARY(NAME, OP, T, DT)                                                                           \
  extern "C" __global__ void GPK_BOUNDS gpk_##NAME##_##DT##_v(const T* __restrict__ x, T* __restrict__ out,  \
                                                   long long n) {                                            \
    gpk::unary_contig<gpk::OP, T>(x, out, n);                                                                \
  }                                                                                                          \
  extern "C" __global__ void GPK_BOUNDS gpk_##NAME##_##DT##_nd(const T* __restrict__ x, T* __restrict__ out, \
                                                    gpk::NdParams p) {                                       \
    gpk::unary_nd<gpk::OP, T>(x, out, p);                                                                    \
  }

// Op groups; the Python side (elementwise.py) lists the same groups per dtype.
#define GPK_UN_NUMERIC(T, DT)       \
  GPK_UNARY(negative, UNeg, T, DT)  \
  GPK_UNARY(abs, UAbs, T, DT)       \
  GPK_UNARY(square, USquare, T, DT) \
  GPK_UNARY(relu, URelu, T, DT)
#define GPK_UN_MATH(T, DT)             \
  GPK_UNARY(exp, UExp, T, DT)          \
  GPK_UNARY(log, ULog, T, DT)          \
  GPK_UNARY(sqrt, USqrt, T, DT)        \
  GPK_UNARY(sin, USin, T, DT)          \
  GPK_UNARY(cos, UCos, T, DT)          \
  GPK_UNARY(tanh, UTanh, T, DT)        \
  GPK_UNARY(log1p, ULog1p, T, DT)      \
  GPK_UNARY(expm1, UExpm1, T, DT)      \
  GPK_UNARY(reciprocal, URecip, T, DT) \
  GPK_UNARY(rsqrt, URsqrt, T, DT)      \
  GPK_UNARY(sigmoid, USigmoid, T, DT)  \
  GPK_UNARY(silu, USilu, T, DT)        \
  GPK_UNARY(gelu, UGelu, T, DT)        \
  GPK_UNARY(gelu_tanh, UGeluTanh, T, DT)
#define GPK_UN_BITS(T, DT) GPK_UNARY(bitwise_invert, UInvert, T, DT)

// A module built with -DGPK_GROUP_basic holds only the cheap ops (numeric and bitwise groups),
// -DGPK_GROUP_math only the transcendental ones; with neither, both.
#if defined(GPK_GROUP_math) && !defined(GPK_GROUP_basic)
#undef GPK_UN_NUMERIC
#undef GPK_UN_BITS
#define GPK_UN_NUMERIC(T, DT)
#define GPK_UN_BITS(T, DT)
#endif
#if defined(GPK_GROUP_basic) && !defined(GPK_GROUP_math)
#undef GPK_UN_MATH
#define GPK_UN_MATH(T, DT)
#endif

#define GPK_UN_FLOATS(T, DT) GPK_UN_NUMERIC(T, DT) GPK_UN_MATH(T, DT)
#define GPK_UN_INTS(T, DT) GPK_UN_NUMERIC(T, DT) GPK_UN_BITS(T, DT)
#define GPK_UN_BOOLS(T, DT) GPK_UN_BITS(T, DT)

#if !defined(GPK_SELECT) || defined(GPK_DT_f16)
GPK_UN_FLOATS(__half, f16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_bf16)
GPK_UN_FLOATS(__nv_bfloat16, bf16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_f32)
GPK_UN_FLOATS(float, f32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_f64)
GPK_UN_FLOATS(double, f64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i8)
GPK_UN_INTS(signed char, i8)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i16)
GPK_UN_INTS(short, i16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i32)
GPK_UN_INTS(int, i32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_i64)
GPK_UN_INTS(long long, i64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u8)
GPK_UN_INTS(unsigned char, u8)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u16)
GPK_UN_INTS(unsigned short, u16)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u32)
GPK_UN_INTS(unsigned int, u32)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_u64)
GPK_UN_INTS(unsigned long long, u64)
#endif
#if !defined(GPK_SELECT) || defined(GPK_DT_b)
GPK_UN_BOOLS(bool, b)
#endif
