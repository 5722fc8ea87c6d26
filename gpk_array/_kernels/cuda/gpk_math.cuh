// float / double overloads of the CUDA math functions, so templates can call one name.
// The 16-bit floats compute in float (see Tr<>::C), so only float and double are needed.
#pragma once

namespace gpk {

#define GPK_MATH1(NAME, FF, FD)                                                  \
  __device__ __forceinline__ float NAME(float x) { return FF(x); }              \
  __device__ __forceinline__ double NAME(double x) { return FD(x); }

GPK_MATH1(m_exp, expf, exp)
GPK_MATH1(m_log, logf, log)
GPK_MATH1(m_sqrt, sqrtf, sqrt)
GPK_MATH1(m_sin, sinf, sin)
GPK_MATH1(m_cos, cosf, cos)
GPK_MATH1(m_tanh, tanhf, tanh)
GPK_MATH1(m_erf, erff, erf)
GPK_MATH1(m_log1p, log1pf, log1p)
GPK_MATH1(m_expm1, expm1f, expm1)
GPK_MATH1(m_fabs, fabsf, fabs)
GPK_MATH1(m_rsqrt, rsqrtf, rsqrt)
#undef GPK_MATH1

__device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double m_pow(double a, double b) { return pow(a, b); }

}  // namespace gpk
