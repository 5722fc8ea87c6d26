// gpk_epilogue.h: activation functors of the fused SM90 epilogues (hand-written, not generated).
//
// scripts/gen_cutlass.py emits the instances gemm/<f16|bf16>/tn/ppt_bias_<gelu|silu>/sm90 with these functors in
// their epilogue visitor tree (Sm90Compute<gpk::epilogue::Gelu, ...>, Sm90Compute<gpk::epilogue::Silu, ...>) in
// place of CUTLASS's cutlass::epilogue::thread::GELU (0.5 x (1 + erff(x / sqrt 2))) and SiLu (x / (1 + expf(-x)),
// an IEEE division). Same interface as CUTLASS's activations (a functor template over the compute type, with a
// cutlass::Array specialization that the visitor calls on each fragment), no Arguments, so the kernels' Params are
// the ones the CUTLASS functors give. Evaluated in float32 (the instances' ElementCompute), rounded once to the
// output type by the visitor.
//
// In the ping-pong kernel one consumer warpgroup's epilogue has to hide under the other's mainloop; what costs is
// issued instructions per element and MUFU (special-function unit) ops, an eighth of the FFMA rate on sm_90.
// Per element, SASS of sm_90a (scripts/epilogue_sass.py counts them):
//   Gelu: 7 FFMA + 1 MUFU.EX2 + 2 FMNMX + 1 FFMA = 11, no branch (CUTLASS's GELU with erff: ~26, 9 of them FSEL);
//   Silu: FMUL + MUFU.EX2 + FADD + MUFU.RCP + FMNMX + FMUL = 6, no branch (CUTLASS's SiLu: ~26 on the fast path,
//         with a divergent branch to the IEEE division's slow path per element).
//
// Gelu(x) = x Phi(x) (torch.nn.functional.gelu's default, the erf form, not the tanh approximation). With t = |x|
// and q = Phi(-t) = erfc(t / sqrt 2) / 2:  gelu(x) = max(x, 0) - t q  (x >= 0: x (1 - q); x < 0: x q).
// q = 2^P(t), P of degree 7, a weighted minimax fit of log2 Phi(-t) on [0, 6] (error of q within 2e-7 absolute
// and 5e-5 relative in the tail) with P(t) <= log2 Phi(-t) + 1 above 6 and a negative leading coefficient (so P
// falls to -inf and q to +0 for large t, and for t = inf); scripts/fit_epilogue.py fits the coefficients and
// checks that this header holds them (--check).
// Error (float32, before the rounding to f16/bf16), against float64 x Phi(x) on a dense grid of [-10, 10] plus
// tiny and huge |x|: |y - gelu(x)| <= 3.4e-7 max(1, |x|), with 2^p exact or ex2.approx at its 2^-22 bound, and at
// most 0.14 f16 ulps of the exact value everywhere (the relative error in the tail, x in [-5, -3], is what keeps
// it there; float32's own 0.5 x (1 + erff(x / sqrt 2)) is about one f16 ulp off at x = -4 and 0 below -5.5).
// Special values: gelu(+-0) = +-0, gelu(+inf) = +inf, gelu(-inf) = -0, gelu(NaN) = NaN, gelu(x) = -0 below
// x ~ -11 (x Phi(x) < 1e-28 there; ex2.approx.ftz flushes q below 2^-126).
//
// Silu(x) = x sigmoid(x) = x * rcp(1 + 2^(-x log2 e)) with ex2.approx.ftz and rcp.approx.ftz. Error: <= 1.5e-7
// max(1, |x|) with exact 2^p and 1/d, 2.7e-7 with both MUFU ops at their bounds (0.001 f16 ulps). silu(+inf) = +inf,
// silu(-inf) = -0 (x is clamped to -FLT_MAX before the product: -inf * 0 would be NaN), silu(x) = -0 for
// x < about -88 (2^(-x log2 e) overflows to inf, its reciprocal is 0), silu(NaN) = NaN.
//
// Host code (CPU tests: tests/kernels/test_gpk_epilogue.py compiles this header with the host compiler) takes
// exp2f and 1/d, results below FLT_MIN flushed to zero as the .ftz MUFU forms do; GPK_EPILOGUE_HOST_EX2 and
// GPK_EPILOGUE_HOST_RCP replace them (the tests perturb them by the MUFU ops' error bounds).
// GPK_EPILOGUE_SCALAR_ONLY: the float functors alone, without the CUTLASS headers (the cutlass::Array
// specializations need cutlass/array.h).

#pragma once

#if !defined(GPK_EPILOGUE_SCALAR_ONLY)
#include "cutlass/cutlass.h"
#include "cutlass/array.h"
#define GPK_EPI_HD CUTLASS_HOST_DEVICE
#elif defined(__CUDACC__)
#define GPK_EPI_HD __forceinline__ __host__ __device__
#else
#define GPK_EPI_HD inline
#endif

#if !defined(__CUDACC_RTC__)
#include <math.h>
#endif

namespace gpk {
namespace epilogue {
namespace detail {

constexpr float kFltMax = 0x1.fffffep+127f;
constexpr float kFltMin = 0x1.0p-126f;

#if !defined(__CUDA_ARCH__)
inline float host_ex2_ftz(float p) {
  float r = ::exp2f(p);
  return r < kFltMin ? 0.0f : r;
}
inline float host_rcp_ftz(float d) {
  float r = 1.0f / d;
  return ::fabsf(r) < kFltMin ? ::copysignf(0.0f, r) : r;
}
// fmaxf / fminf as the GPU's FMNMX has them (what ptxas folds constants to): a NaN operand gives the other one,
// and -0 < +0 (host compilers may return either zero: x86's maxss returns its second operand on a tie)
inline float host_fmax(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return ::signbit(a) ? b : a;
  return a > b ? a : b;
}
inline float host_fmin(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return ::signbit(a) ? a : b;
  return a < b ? a : b;
}
#if !defined(GPK_EPILOGUE_HOST_EX2)
#define GPK_EPILOGUE_HOST_EX2(p) ::gpk::epilogue::detail::host_ex2_ftz(p)
#endif
#if !defined(GPK_EPILOGUE_HOST_RCP)
#define GPK_EPILOGUE_HOST_RCP(d) ::gpk::epilogue::detail::host_rcp_ftz(d)
#endif
#endif

// 2^p: one MUFU.EX2 (max relative error about 2^-22; results below 2^-126 are +0, 2^-inf = +0, 2^NaN = NaN)
GPK_EPI_HD float ex2_approx(float p) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(p));
  return r;
#else
  return GPK_EPILOGUE_HOST_EX2(p);
#endif
}

// 1/d: one MUFU.RCP (max error 1 ulp; 1/inf = 0, results below 2^-126 flushed to 0)
GPK_EPI_HD float rcp_approx(float d) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
#else
  return GPK_EPILOGUE_HOST_RCP(d);
#endif
}

GPK_EPI_HD float fmax(float a, float b) {
#if defined(__CUDA_ARCH__)
  return ::fmaxf(a, b);
#else
  return host_fmax(a, b);
#endif
}

GPK_EPI_HD float fmin(float a, float b) {
#if defined(__CUDA_ARCH__)
  return ::fminf(a, b);
#else
  return host_fmin(a, b);
#endif
}

}  // namespace detail

// P(t) ~ log2 Phi(-t): c0 + c1 t + ... + c7 t^7 (scripts/fit_epilogue.py; c0 = -1 pins Phi(0) = 1/2)
constexpr float kGeluC0 = -0x1p+0f;
constexpr float kGeluC1 = -0x1.26b078p+0f;
constexpr float kGeluC2 = -0x1.d5fcf4p-2f;
constexpr float kGeluC3 = -0x1.b3d406p-5f;
constexpr float kGeluC4 = 0x1.065422p-7f;
constexpr float kGeluC5 = -0x1.958db6p-11f;
constexpr float kGeluC6 = 0x1.4c2c84p-15f;
constexpr float kGeluC7 = -0x1.a8830cp-21f;

constexpr float kMinusLog2e = -0x1.715476p+0f;   // -log2(e) rounded to float

template <typename T>
struct Gelu;

template <>
struct Gelu<float> {
  static const bool kIsHeavy = true;

  GPK_EPI_HD float operator()(float x) const {
    float t = ::fabsf(x);
    float p = ::fmaf(kGeluC7, t, kGeluC6);
    p = ::fmaf(p, t, kGeluC5);
    p = ::fmaf(p, t, kGeluC4);
    p = ::fmaf(p, t, kGeluC3);
    p = ::fmaf(p, t, kGeluC2);
    p = ::fmaf(p, t, kGeluC1);
    p = ::fmaf(p, t, kGeluC0);                       // log2 Phi(-|x|)
    float q = detail::ex2_approx(p);                 // Phi(-|x|); NaN for NaN, +0 for |x| = inf
    float r = detail::fmax(x, -0.0f);                // x for x > 0, else -0 (+0 for x = +0)
    float tc = detail::fmin(t, detail::kFltMax);     // |x| without inf: inf * 0 would be NaN
    return ::fmaf(-tc, q, r);                        // max(x, 0) - |x| Phi(-|x|)
  }
};

template <typename T>
struct Silu;

template <>
struct Silu<float> {
  static const bool kIsHeavy = true;

  GPK_EPI_HD float operator()(float x) const {
    float e = detail::ex2_approx(x * kMinusLog2e);   // e^-x: inf below x ~ -88, +0 above ~ 88
    float s = detail::rcp_approx(1.0f + e);          // sigmoid(x)
    return detail::fmax(x, -detail::kFltMax) * s;    // -inf * 0 would be NaN: silu(-inf) = -0
  }
};

#if !defined(GPK_EPILOGUE_SCALAR_ONLY)
// What the epilogue visitor calls (Sm90Compute: ComputeFn<cutlass::Array<ElementCompute, FragmentSize>>)
template <int N>
struct Gelu<cutlass::Array<float, N>> {
  static const bool kIsHeavy = true;

  GPK_EPI_HD cutlass::Array<float, N> operator()(cutlass::Array<float, N> const& x) const {
    cutlass::Array<float, N> y;
    Gelu<float> op;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) {
      y[i] = op(x[i]);
    }
    return y;
  }
};

template <int N>
struct Silu<cutlass::Array<float, N>> {
  static const bool kIsHeavy = true;

  GPK_EPI_HD cutlass::Array<float, N> operator()(cutlass::Array<float, N> const& x) const {
    cutlass::Array<float, N> y;
    Silu<float> op;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) {
      y[i] = op(x[i]);
    }
    return y;
  }
};
#endif

}  // namespace epilogue
}  // namespace gpk

#undef GPK_EPI_HD
