"""Products, diagonals and linear algebra with NumPy's signatures against NumPy."""
import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpk_array as gp
from gpk_array._numpy import linalg as nla

from .helpers import assert_match, compare, to_gpk

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


def _rand(*shape, seed=0):
    return numpy.random.default_rng(seed).normal(size=shape)


@SETTINGS
@given(data=st.data())
def test_dot_family(data, device):
    n, m, k = data.draw(st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)), label="n,m,k")
    dt = data.draw(st.sampled_from([numpy.float64, numpy.int32, numpy.complex128]), label="dtype")
    a = (numpy.arange(n * k).reshape(n, k) % 5 - 2).astype(dt)
    b = (numpy.arange(k * m).reshape(k, m) % 3 - 1).astype(dt)
    v = (numpy.arange(k) - 1).astype(dt)
    compare("dot", a, b, device=device)
    compare("dot", a, v, device=device)
    compare("dot", v, v, device=device)
    compare("dot", 2, a, device=device)
    compare("vdot", v, v, device=device)
    compare("vdot", a, a, device=device)
    compare("inner", a, a, device=device)
    compare("inner", v, v, device=device)
    compare("outer", v, a, device=device)
    compare("matmul", a, b, device=device)
    compare("kron", a, b, device=device)
    compare("tensordot", a, b, 1, device=device)
    compare("tensordot", a, a, ([0, 1], [0, 1]), device=device)
    compare("tensordot", a, b, axes=[1, 0], device=device)
    assert_match(gp.asarray(a, device=device).dot(b), a.dot(b))


def test_einsum(device):
    a = _rand(3, 4)
    b = _rand(4, 5, seed=1)
    c = _rand(3, seed=2)
    for args in [("ij,jk->ik", a, b), ("ij->ji", a), ("ii->i", _rand(3, 3)), ("ij,ij->", a, a), ("i,i", c, c),
                 ("ij,j->i", a, b[:, 0]), ("...j,jk", a, b), ("ijk->kji", _rand(2, 3, 4)), ("i,j->ij", c, c)]:
        compare("einsum", *args, device=device)
    compare("einsum", "ij,jk->ik", a, b, optimize=True, device=device)
    compare("einsum", a, [0, 1], b, [1, 2], [0, 2], device=device)
    out = gp.zeros((3, 5), device=device)
    gp.einsum("ij,jk->ik", *to_gpk([a, b], device), out=out)
    assert_match(out, a @ b)
    path = gp.einsum_path("ij,jk,kl->il", *to_gpk([a, b, _rand(5, 2)], device), optimize="greedy")
    assert path[0] == numpy.einsum_path("ij,jk,kl->il", a, b, _rand(5, 2), optimize="greedy")[0]


def test_trace_diagonal_cross(device):
    x = numpy.arange(24).reshape(2, 3, 4)
    compare("trace", x, device=device)
    compare("trace", x, 1, 1, 2, device=device)
    compare("trace", x[0], -1, device=device)
    compare("trace", x.astype(numpy.int8), dtype=numpy.float32, device=device)
    compare("diagonal", x, device=device)
    compare("diagonal", x, 1, 1, 2, device=device)
    g = gp.asarray(x, device=device)
    assert_match(g.trace(), x.trace())
    assert_match(g.diagonal(0, 0, 2), x.diagonal(0, 0, 2))
    u = _rand(4, 3)
    v = _rand(4, 3, seed=3)
    compare("cross", u, v, device=device)
    compare("cross", u.T, v.T, axisa=0, axisb=0, device=device)
    compare("cross", u.T, v.T, axis=0, device=device)
    compare("cross", u[0], v[1], device=device)


@pytest.mark.parametrize("n", [2, 4])
def test_linalg_numpy_signatures(n, device):
    a = _rand(n, n) + n * numpy.eye(n)
    b = _rand(n, 2, seed=5)
    compare("det", a, module="linalg", device=device)
    compare("inv", a, module="linalg", device=device)
    compare("solve", a, b, module="linalg", device=device)
    compare("solve", a, b[:, 0], module="linalg", device=device)
    for ord_ in (None, 1, 2, numpy.inf, -numpy.inf, "fro", "nuc"):
        if ord_ in ("fro", "nuc"):
            compare("norm", a, ord_, module="linalg", device=device)
        else:
            compare("norm", a, ord_, module="linalg", device=device)
            compare("norm", b[:, 0], ord_, module="linalg", device=device)
    compare("norm", b, axis=0, module="linalg", device=device)
    compare("norm", b, 1, 1, module="linalg", device=device)
    compare("norm", a, keepdims=True, module="linalg", device=device)
    compare("matrix_power", a, 3, module="linalg", device=device)
    compare("cholesky", a @ a.T, module="linalg", device=device)
    w, v = gp.linalg.eigh(gp.asarray(a @ a.T, device=device))
    ww, vv = numpy.linalg.eigh(a @ a.T)
    assert_match(w, ww, device)
    assert_match(abs(gp.sum(v * gp.asarray(vv, device=device), axis=0)), numpy.ones(n), device)
    compare("slogdet", a, module="linalg", device=device)
    compare("eigvalsh", a @ a.T, module="linalg", device=device)
    compare("pinv", b, module="linalg", device=device)
    compare("matrix_rank", b, module="linalg", device=device)


def test_numpy_linalg_extras(device):
    a = _rand(6, 3)
    b = _rand(6, seed=4)
    ga, gb = to_gpk([a, b], device)
    for rcond in (None, 1e-3):
        x, res, rank, s = nla.lstsq(ga, gb, rcond)
        wx, wres, wrank, ws = numpy.linalg.lstsq(a, b, rcond)
        assert_match((x, res, s), (wx, wres, ws), device)
        assert rank == wrank
    x, res, rank, s = nla.lstsq(ga, gp.asarray(numpy.stack([b, 2 * b], 1), device=device))
    wx, wres, wrank, ws = numpy.linalg.lstsq(a, numpy.stack([b, 2 * b], 1))
    assert_match((x, res), (wx, wres), device)
    m = [_rand(3, 4), _rand(4, 5, seed=1), _rand(5, 2, seed=2), _rand(2, seed=3)]
    assert_match(nla.multi_dot(to_gpk(m, device)), numpy.linalg.multi_dot(m), device)
    assert_match(nla.multi_dot(to_gpk([m[3], _rand(2, 3)], device)), numpy.linalg.multi_dot([m[3], _rand(2, 3)]))
    sq = _rand(3, 3) + 3 * numpy.eye(3)
    for p in (None, 2, -2, 1, numpy.inf, "fro"):
        assert_match(nla.cond(gp.asarray(sq, device=device), p), numpy.linalg.cond(sq, p), device)
    assert_match(nla.svd(gp.asarray(a, device=device), compute_uv=False), numpy.linalg.svd(a, compute_uv=False))
    u, s, vh = nla.svd(gp.asarray(a, device=device), False)
    assert_match(u @ (s[:, None] * vh), a, device)
    assert_match(nla.pinv(gp.asarray(a, device=device), 1e-10), numpy.linalg.pinv(a, 1e-10), device)
    assert_match(nla.matrix_rank(gp.asarray(a, device=device), 0.5), numpy.linalg.matrix_rank(a, 0.5))
    q, r = nla.qr(gp.asarray(a, device=device), "complete")
    assert_match(q @ r, a, device)
    assert_match(abs(nla.qr(gp.asarray(a, device=device), "r")), abs(numpy.linalg.qr(a, "r")), device)
    t = _rand(2, 3, 6, seed=7)
    bt = _rand(2, 3, seed=8)
    assert_match(nla.tensorsolve(*to_gpk([t, bt], device)), numpy.linalg.tensorsolve(t, bt), device)
    ti = _rand(4, 6, 8, 3, seed=9)
    assert_match(nla.tensorinv(gp.asarray(ti, device=device), ind=2), numpy.linalg.tensorinv(ti, ind=2), device)


def test_matmul_out_dtype(device):
    a = _rand(2, 3)
    b = _rand(3, 4)
    out = gp.empty((2, 4), device=device)
    r = gp.matmul(*to_gpk([a, b], device), out)
    assert r is out
    assert_match(out, a @ b)
    assert_match(gp.matmul(*to_gpk([a, b], device), dtype=numpy.float32), numpy.matmul(a, b, dtype=numpy.float32))
