"""Host time per call of NumPy-flavoured names on small arrays: on the CPU against NumPy, on a CUDA device against
CuPy (the same expressions with ``numpy`` bound to cupy).

Run: ``python -m tests.numpy_compat.overhead [cuda:0]`` (prints one line per call: gpk_array us, baseline us, ratio,
and the standard's own function where the name wraps one).
"""
import timeit

import numpy

import gpk_array as gp
from gpk_array._ops import elementwise as ew
from gpk_array._ops import statistical as st

CASES = [
    ("add(a, b)", "gp.add(a, b)", "numpy.add(na, nb)", "ew.add(a, b)"),
    ("a + b", "a + b", "na + nb", None),
    ("sqrt(a)", "gp.sqrt(a)", "numpy.sqrt(na)", "ew.sqrt(a)"),
    ("add(a, b, out)", "gp.add(a, b, o)", "numpy.add(na, nb, no)", None),
    ("add.reduce(a)", "gp.add.reduce(a)", "numpy.add.reduce(na)", None),
    ("sum(a, 0)", "gp.sum(a, 0)", "numpy.sum(na, 0)", "st.sum(a, axis=0)"),
    ("a.sum()", "a.sum()", "na.sum()", None),
    ("mean(a)", "gp.mean(a)", "numpy.mean(na)", "st.mean(a)"),
    ("std(a, ddof=1)", "gp.std(a, ddof=1)", "numpy.std(na, ddof=1)", "st.std(a, correction=1)"),
    ("max(a, axis=1)", "gp.max(a, axis=1)", "numpy.max(na, axis=1)", "st.max(a, axis=1)"),
    ("argmax(a, 1)", "gp.argmax(a, 1)", "numpy.argmax(na, 1)", None),
    ("cumsum(a)", "gp.cumsum(a)", "numpy.cumsum(na)", None),
    ("zeros((3, 3), float)", "gp.zeros((3, 3), float)", "numpy.zeros((3, 3), float)", None),
    ("array([1, 2, 3])", "gp.array([1, 2, 3])", "numpy.array([1, 2, 3])", None),
    ("asarray(a)", "gp.asarray(a)", "numpy.asarray(na)", None),
    ("arange(10)", "gp.arange(10)", "numpy.arange(10)", None),
    ("linspace(0, 1, 5)", "gp.linspace(0, 1, 5)", "numpy.linspace(0, 1, 5)", None),
    ("a.reshape(9)", "a.reshape(9)", "na.reshape(9)", None),
    ("a.T", "a.T", "na.T", None),
    ("concatenate([a, b])", "gp.concatenate([a, b])", "numpy.concatenate([na, nb])", None),
    ("where(c, a, b)", "gp.where(c, a, b)", "numpy.where(nc, na, nb)", None),
    ("clip(a, 0, 1)", "gp.clip(a, 0, 1)", "numpy.clip(na, 0, 1)", "ew.clip(a, 0, 1)"),
    ("dot(a, b)", "gp.dot(a, b)", "numpy.dot(na, nb)", None),
    ("a[0, 1]", "a[0, 1]", "na[0, 1]", None),
    ("float(a[0, 1])", "float(a[0, 1])", "float(na[0, 1])", None),
    ("sort(v)", "gp.sort(v)", "numpy.sort(nv)", None),
    ("allclose(a, b)", "gp.allclose(a, b)", "numpy.allclose(na, nb)", None),
]


def main(number=20000, device="cpu"):
    """Time CASES on device. On the CPU, the CPU is also the default device for the duration (the calls without
    device= create their arrays there even where the default device is cuda:0), restored after."""
    if device != "cpu":
        return _main(number, device)
    saved = gp._device._default
    gp.set_default_device("cpu")
    try:
        return _main(number, device)
    finally:
        gp._device._default = saved


def _main(number, device):
    base = numpy
    if device != "cpu":
        import cupy as base
        number = min(number, 3000)
    na = base.arange(9.0).reshape(3, 3)
    nb = base.ones((3, 3))
    no = base.empty((3, 3))
    nc = na > 3
    nv = base.array([3.0, 1.0, 2.0])
    env = {"gp": gp, "numpy": base, "ew": ew, "st": st, "na": na, "nb": nb, "no": no, "nc": nc, "nv": nv}
    for k in ("a", "b", "o", "c", "v"):
        env[k] = gp.asarray(numpy.asarray(env["n" + k]) if device == "cpu" else env["n" + k].get(), device=device)
    name = "numpy" if device == "cpu" else "cupy"
    print(f"{'call':24s} {'gpk us':>8s} {name + ' us':>9s} {'ratio':>6s} {'std fn us':>9s}   ({device})")
    rows = []
    for label, ours, theirs, std in CASES:
        t_ours = min(timeit.repeat(ours, globals=env, number=number, repeat=3)) / number * 1e6
        try:
            t_np = min(timeit.repeat(theirs, globals=env, number=number, repeat=3)) / number * 1e6
        except Exception:  # the baseline library lacks the call
            t_np = None
        t_std = min(timeit.repeat(std, globals=env, number=number, repeat=3)) / number * 1e6 if std else None
        rows.append((label, t_ours, t_np, t_std))
        ratio = "" if t_np is None else f"{t_ours / t_np:6.2f}"
        print(f"{label:24s} {t_ours:8.2f} {'-' if t_np is None else f'{t_np:9.2f}':>9s} {ratio:>6s} "
              f"{'' if t_std is None else f'{t_std:9.2f}'}")
    return rows


if __name__ == "__main__":
    import sys
    main(device=sys.argv[1] if len(sys.argv) > 1 else "cpu")
