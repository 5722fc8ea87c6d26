#!/usr/bin/env python3
"""Fit and check the constants of gpk_array/_kernels/cutlass/gpk_epilogue.h (the fused epilogues' GELU and SiLU).

    python scripts/fit_epilogue.py            # fit, print the C++ constants and the float32 error table
    python scripts/fit_epilogue.py --check    # exit 1 unless the header holds exactly the fitted constants

Needs NumPy and SciPy (scipy.special.ndtr/log_ndtr for the float64 references, scipy.optimize.linprog for the
minimax fit); no GPU, no compiler.

GELU (erf, torch's default): gelu(x) = x Phi(x), Phi the standard normal CDF. With t = |x| and
q(t) = Phi(-t) = erfc(t / sqrt 2) / 2:

    gelu(x) = max(x, 0) - t q(t)          (x >= 0: x (1 - q); x < 0: x q)

q(t) = 2^P(t), P a degree-7 polynomial (Horner, 7 FMAs), 2^p by ex2.approx (one MUFU op). P is the weighted
minimax fit of log2 Phi(-t) on [0, T0]: an error d of P is a relative error d ln 2 of q, an absolute error
q d ln 2 of Phi (what x Phi(x) multiplies by |x|), and the fit keeps that below E * allowed(t), allowed(t) =
max(min(A_ABS, R_REL q), F_FLOOR): absolute 2e-7 where q is large, relative 5e-5 in the tail where gelu's value is
small (an f16 ulp is 4.9e-4 relative: float32's own 0.5 x (1 + erff(x / sqrt 2)) is about one f16 ulp off at
x = -4 by cancellation, and 0 below -5.5), absolute 1e-9 in the far tail; E comes out near 1.2 (a degree-5 fit
of the absolute error alone reaches 3e-7 but is 0.6% off at x = -4, several f16 ulps). Beyond T0 (Phi(-6) ~ 1e-9)
the fit is only constrained from above,
P(t) <= log2 Phi(-t) + 1 (q at most twice the true tail, so |error| <= t Phi(-t) < 6e-9), up to 1e4 on a log grid,
with a negative leading coefficient: P falls to -inf, q to +0 and every Horner step stays finite or -inf in
float32 (checked below up to FLT_MAX and inf). No clamp of t is then needed for the polynomial; the final FMA uses
min(t, FLT_MAX) so that gelu(+-inf) is inf * 1 / -0, not inf * 0.

The linear programme runs on a scaled monomial basis (u = t / T0) and on the residual of a least-squares start
(scaled by 1e-6), which keeps HiGHS's tolerances well below the 1e-7 level being fitted. The coefficients are then
rounded to float32 one at a time from the highest degree down, re-fitting the lower ones after each rounding.

SiLU: silu(x) = x sigmoid(x) = x * rcp(1 + 2^(-x log2 e)): ex2.approx and rcp.approx (two MUFU ops), no constants
to fit. Both are checked here in a float32 emulation of the device code (FMA = product exact in float64, one
rounding; 2^p and 1/d correctly rounded, results below FLT_MIN flushed to zero as the .ftz MUFU forms do) against
float64 references; tests/kernels/test_gpk_epilogue.py checks the header itself, compiled for the host, the same
way, and with the MUFU ops' own error bounds (2^-22 relative for ex2.approx, 2^-23 for rcp.approx).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "gpk_array" / "_kernels" / "cutlass" / "gpk_epilogue.h"

DEG = 7          # degree of P (7 FMAs)
A_ABS, R_REL, F_FLOOR = 2e-7, 5e-5, 1e-9   # allowed(t) = max(min(A_ABS, R_REL q), F_FLOOR)
T0 = 6.0         # end of the weighted fit; one-sided above it
T_TAIL = 1e4     # the one-sided constraint's grid ends here (the negative leading term rules beyond)
LN2 = float(np.log(2.0))
LOG2E = float(np.float32(1.0 / np.log(2.0)))


# ----------------------------------------------------------------------------------------------------------------
# fit
# ----------------------------------------------------------------------------------------------------------------
def _lp(A_ub, b_ub, n_free, fixed=None):
    """min E s.t. A_ub [c, E] <= b_ub; c free except ``fixed`` {index: value}."""
    from scipy.optimize import linprog
    cost = np.zeros(n_free + 1)
    cost[-1] = 1.0
    bounds = [(None, None)] * n_free + [(0, None)]
    for i, v in (fixed or {}).items():
        bounds[i] = (v, v)
    r = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if r.status != 0:
        raise RuntimeError(f"linprog: {r.message}")
    return r.x[:n_free], r.x[-1]


def _fit_gelu(fixed_c: dict[int, float] | None = None) -> np.ndarray:
    """Monomial coefficients c[0..DEG] of P(t) (t, not u); ``fixed_c`` pins some of them."""
    from scipy.special import log_ndtr, ndtr
    fixed_c = fixed_c or {}
    t = np.concatenate([np.linspace(0.0, T0, 6001), T0 / 2 * (1 - np.cos(np.linspace(0, np.pi, 2001)))])
    f = log_ndtr(-t) / LN2
    q = ndtr(-t)
    w = q * LN2 / np.maximum(np.minimum(A_ABS, R_REL * q), F_FLOOR)
    tt = np.geomspace(T0, T_TAIL, 3001)
    ft = log_ndtr(-tt) / LN2 + 1.0
    scale = T0 ** np.arange(DEG + 1)                   # c_k = a_k / T0^k, a in the u = t / T0 basis
    V = np.vander(t / T0, DEG + 1, increasing=True)
    Vt = np.vander(tt / T0, DEG + 1, increasing=True)
    free = [k for k in range(DEG + 1) if k not in fixed_c]
    fixed_part = sum(fixed_c[k] * t ** k for k in fixed_c) if fixed_c else 0.0 * t
    fixed_tail = sum(fixed_c[k] * tt ** k for k in fixed_c) if fixed_c else 0.0 * tt
    Vf, Vtf = V[:, free], Vt[:, free]
    # least-squares start (weighted), then the minimax LP on the residual, scaled
    a0, *_ = np.linalg.lstsq(w[:, None] * Vf, w * (f - fixed_part), rcond=None)
    S = 1e-4
    res = (f - fixed_part - Vf @ a0) / S
    tail = (ft - fixed_tail - Vtf @ a0) / S
    rows_scale = np.maximum(np.abs(Vtf).max(axis=1), 1.0)
    n = len(free)
    A = np.vstack([np.hstack([w[:, None] * Vf, -np.ones((len(t), 1))]),
                   np.hstack([-w[:, None] * Vf, -np.ones((len(t), 1))]),
                   np.hstack([Vtf / rows_scale[:, None], np.zeros((len(tt), 1))])])
    b = np.concatenate([w * res, -w * res, tail / rows_scale])
    lead_fixed = DEG in fixed_c
    if not lead_fixed:                                  # leading coefficient <= 0
        row = np.zeros(n + 1)
        row[free.index(DEG)] = 1.0
        A = np.vstack([A, row])
        b = np.concatenate([b, [-a0[free.index(DEG)] / S]])
    d, _ = _lp(A, b, n)
    a = a0 + S * d
    c = np.zeros(DEG + 1)
    for k, v in fixed_c.items():
        c[k] = v
    for j, k in enumerate(free):
        c[k] = a[j] / scale[k]
    return c


def fit_gelu_f32() -> list[float]:
    """The float32 coefficients c0..c7 (P(0) = c0 pinned to -1: Phi(0) = 1/2 exactly in the polynomial)."""
    fixed = {0: -1.0}
    c = _fit_gelu(fixed)
    for k in range(DEG, 0, -1):
        fixed[k] = float(np.float32(c[k]))
        if k > 1:
            c = _fit_gelu(fixed)
    return [fixed[k] for k in range(DEG + 1)]


# ----------------------------------------------------------------------------------------------------------------
# float32 emulation of the device code
# ----------------------------------------------------------------------------------------------------------------
F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
FLT_MIN = float(np.finfo(np.float32).tiny)


def _f(a):
    return np.asarray(a, dtype=np.float32)


def fma32(a, b, c):
    with np.errstate(invalid="ignore", over="ignore"):
        return _f(np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64))


def _perturb(exact, rel):
    """exact * (1 + rel) rounded to float32, except where the exact result is a power of two (or 0, inf, NaN),
    which the MUFU ops return exactly (2^integer, 1/2^k)."""
    with np.errstate(over="ignore", invalid="ignore"):
        m, _ = np.frexp(exact)
        keep = (m == 0.5) | ~np.isfinite(exact) | (exact == 0)
        return _f(np.where(keep, exact, exact * (1.0 + rel)))


def ex2_ftz(p, rel=0.0):
    with np.errstate(over="ignore", invalid="ignore"):
        r = _perturb(np.exp2(np.asarray(p, np.float64)), rel)
    return np.where(np.abs(r) < FLT_MIN, F32(0.0), r).astype(np.float32)


def rcp_ftz(d, rel=0.0):
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = _perturb(1.0 / np.asarray(d, np.float64), rel)
    return np.where(np.abs(r) < FLT_MIN, np.copysign(F32(0.0), r), r).astype(np.float32)


def gelu_f32(x, c, ex2_rel=0.0):
    x = _f(x)
    t = np.abs(x)
    p = F32(c[DEG])
    for k in range(DEG - 1, -1, -1):
        p = fma32(p, t, F32(c[k]))
    q = ex2_ftz(p, ex2_rel)
    r = np.where(np.isnan(x), F32(-0.0), np.maximum(x, F32(-0.0)))
    r = np.where(x == 0, x, r).astype(np.float32)      # max(+-0, -0): the sign of x (GPU FMNMX: -0 < +0)
    tc = np.where(np.isnan(t), F32(FLT_MAX), np.minimum(t, F32(FLT_MAX))).astype(np.float32)
    return fma32(-tc, q, r)


def silu_f32(x, ex2_rel=0.0, rcp_rel=0.0):
    x = _f(x)
    with np.errstate(over="ignore"):
        a = _f(x * F32(-LOG2E))
    e = ex2_ftz(a, ex2_rel)
    d = _f(F32(1.0) + e)
    r = rcp_ftz(d, rcp_rel)
    xm = np.where(np.isnan(x), F32(-FLT_MAX), np.maximum(x, F32(-FLT_MAX))).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        return _f(xm * r)


def gelu_ref(x):
    from scipy.special import ndtr
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        y = x * ndtr(x)
    return np.where(x == -np.inf, -0.0, y)


def silu_ref(x):
    from scipy.special import expit
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        y = x * expit(x)
    return np.where(x == -np.inf, -0.0, y)


def grid() -> np.ndarray:
    """A dense float32 grid on [-10, 10], every float32 near 0, powers of two up to FLT_MAX and special values."""
    dense = np.linspace(-10.0, 10.0, 2_000_001)
    tiny = np.concatenate([np.geomspace(1e-38, 1e-3, 2001), -np.geomspace(1e-38, 1e-3, 2001)])
    big = np.concatenate([np.geomspace(10.0, FLT_MAX, 2001), -np.geomspace(10.0, FLT_MAX, 2001)])
    return _f(np.concatenate([dense, tiny, big]))


SPECIALS = {"+0": 0.0, "-0": -0.0, "+inf": np.inf, "-inf": -np.inf, "nan": np.nan, "FLT_MAX": FLT_MAX,
            "-FLT_MAX": -FLT_MAX, "1e30": 1e30, "-1e30": -1e30, "65504": 65504.0, "-65504": -65504.0,
            "-20": -20.0, "-100": -100.0, "100": 100.0, "FLT_MIN": FLT_MIN, "-FLT_MIN": -FLT_MIN}


def special_ok(fn, ref) -> list[str]:
    """Names of special inputs where fn differs from ref (NaN matches NaN, zeros match in sign)."""
    bad = []
    for name, v in SPECIALS.items():
        y, r = float(fn(_f([v]))[0]), float(_f(ref(np.array([v])))[0])
        same = (np.isnan(y) and np.isnan(r)) or (y == r and np.signbit(y) == np.signbit(r)) or \
               (np.isfinite(r) and r != 0 and abs(y - r) <= 1e-6 * max(1.0, abs(v)))
        if not same:
            bad.append(f"{name}: {y!r} (want {r!r})")
    return bad


def f16_ulps(y, ref):
    """|y - ref| in units of the f16 spacing at ref (2^-24 below f16's normal range), where |ref| <= 65504."""
    a = np.maximum(np.abs(ref), 2.0 ** -14)
    ulp = 2.0 ** (np.floor(np.log2(a)) - 10)
    ok = np.abs(ref) <= 65504.0
    return np.abs(y - ref)[ok] / ulp[ok]


def error_table(c) -> dict:
    x = grid()
    xf = x.astype(np.float64)
    fin = np.isfinite(xf)
    out = {}
    for name, fn, ref in (("gelu", lambda v, s=0.0: gelu_f32(v, c, s), gelu_ref),
                          ("silu", lambda v, s=0.0: silu_f32(v, s, s / 2), silu_ref)):
        worst = 0.0
        for s in (0.0, 2.0 ** -22, -2.0 ** -22):
            y = fn(x, s).astype(np.float64)
            err = np.abs(y[fin] - ref(xf[fin])) / np.maximum(1.0, np.abs(xf[fin]))
            worst = max(worst, float(err.max()))
            if s == 0.0:
                exact = float(err.max())
                i = int(np.argmax(err))
                at = float(xf[fin][i])
        y = fn(x).astype(np.float64)
        r = ref(xf[fin])
        out[name] = {"max_err_exact_mufu": exact, "at": at, "max_err_mufu_bounds": worst,
                     "max_f16_ulps": float(np.max(f16_ulps(y[fin], r))),
                     "specials_bad": special_ok(fn, ref)}
    return out


def cxx_constants(c) -> str:
    return "\n".join(f"  constexpr float kC{k} = {float(np.float32(v)).hex()}f;   // {np.float32(v)!r}"
                     .replace("np.float32(", "").replace(")!r", "") for k, v in enumerate(c))


def header_constants() -> list[float] | None:
    if not HEADER.is_file():
        return None
    found = dict(re.findall(r"kGeluC(\d)\s*=\s*([-+0-9a-fA-Fxp.]+)f", HEADER.read_text()))
    if len(found) != DEG + 1:
        return None
    return [float.fromhex(found[str(k)]) for k in range(DEG + 1)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the constants in the header")
    args = ap.parse_args(argv)
    c = fit_gelu_f32()
    if args.check:
        have = header_constants()
        if have != c:
            print(f"{HEADER.name}: GELU constants {have} differ from the fit {c}")
            return 1
        print(f"{HEADER.name}: GELU constants match the fit")
        return 0
    print("GELU P(t) coefficients (float32), for gpk_epilogue.h:")
    for k, v in enumerate(c):
        print(f"  kGeluC{k} = {float(v).hex()}f   // {float(np.float32(v))!r}")
    tab = error_table(c)
    for name, r in tab.items():
        print(f"{name}: max |y - ref| / max(1, |x|) = {r['max_err_exact_mufu']:.3g} at x = {r['at']:.6g} "
              f"(exact ex2/rcp); {r['max_err_mufu_bounds']:.3g} with ex2.approx/rcp.approx at their error bounds; "
              f"at most {r['max_f16_ulps']:.3f} f16 ulps of the exact value; "
              f"special values {'ok' if not r['specials_bad'] else r['specials_bad']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
