"""Host time per call of NumPy-flavoured names on small CPU arrays, against NumPy itself.

Run: ``python -m tests.numpy_compat.overhead`` (prints one line per call: gpk_array us, NumPy us, ratio, and the
standard's own function where the name wraps one).
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


def main(number=20000):
    na = numpy.arange(9.0).reshape(3, 3)
    nb = numpy.ones((3, 3))
    no = numpy.empty((3, 3))
    nc = na > 3
    nv = numpy.array([3.0, 1.0, 2.0])
    env = {"gp": gp, "numpy": numpy, "ew": ew, "st": st, "na": na, "nb": nb, "no": no, "nc": nc, "nv": nv,
           "a": gp.asarray(na, device="cpu"), "b": gp.asarray(nb, device="cpu"), "o": gp.asarray(no, device="cpu"),
           "c": gp.asarray(nc, device="cpu"), "v": gp.asarray(nv, device="cpu")}
    print(f"{'call':24s} {'gpk us':>8s} {'numpy us':>9s} {'ratio':>6s} {'std fn us':>9s}")
    rows = []
    for label, ours, theirs, std in CASES:
        t_ours = min(timeit.repeat(ours, globals=env, number=number, repeat=3)) / number * 1e6
        t_np = min(timeit.repeat(theirs, globals=env, number=number, repeat=3)) / number * 1e6
        t_std = min(timeit.repeat(std, globals=env, number=number, repeat=3)) / number * 1e6 if std else None
        rows.append((label, t_ours, t_np, t_std))
        print(f"{label:24s} {t_ours:8.2f} {t_np:9.2f} {t_ours / t_np:6.2f} "
              f"{'' if t_std is None else f'{t_std:9.2f}'}")
    return rows


if __name__ == "__main__":
    main()
