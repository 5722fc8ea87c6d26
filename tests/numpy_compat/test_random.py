"""gpk_array.random gives NumPy's numbers for a given seed, on every device."""
import numpy
import pytest

import gpk_array as gp
import gpk_array.random as grandom

from .helpers import assert_match

LEGACY_CALLS = [
    ("rand", (3, 2), {}), ("randn", (4,), {}), ("random", (5,), {}), ("random_sample", ((2, 3),), {}),
    ("randint", (0, 10, 6), {}), ("randint", (5,), {"size": (2, 2)}), ("uniform", (-1, 2, 5), {}),
    ("normal", (1.0, 2.0, (3, 3)), {}), ("standard_normal", (7,), {}), ("exponential", (2.0, 4), {}),
    ("poisson", (3.0, 5), {}), ("binomial", (10, 0.3, 5), {}), ("beta", (2.0, 3.0, 4), {}),
    ("gamma", (2.0, 1.5, 4), {}), ("lognormal", (0.0, 0.5, 3), {}), ("laplace", (0.0, 1.0, 3), {}),
    ("geometric", (0.3, 4), {}), ("chisquare", (3, 4), {}), ("standard_t", (5, 3), {}),
    ("multinomial", (10, [0.2, 0.3, 0.5], 3), {}), ("dirichlet", ([1.0, 2.0, 3.0], 2), {}),
    ("multivariate_normal", ([0.0, 1.0], [[1.0, 0.5], [0.5, 2.0]], 4), {}), ("permutation", (8,), {}),
    ("choice", (10, 4), {}), ("choice", (5, 3), {"replace": False}), ("choice", (4, 6), {"p": [0.1, 0.2, 0.3, 0.4]}),
    ("triangular", (0.0, 0.5, 1.0, 3), {}), ("weibull", (2.0, 3), {}), ("standard_cauchy", (3,), {}),
    ("rand", (), {}), ("randn", (), {}), ("randint", (3, 9), {}), ("normal", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", LEGACY_CALLS, ids=[f"{c[0]}{i}" for i, c in enumerate(LEGACY_CALLS)])
def test_legacy_functions(name, args, kwargs, dev):
    numpy.random.seed(1234)
    want = getattr(numpy.random, name)(*args, **kwargs)
    grandom.seed(1234)
    got = getattr(gp.random, name)(*args, **kwargs)
    if isinstance(want, numpy.ndarray):
        assert isinstance(got, gp.Array) and got.device == dev
        assert_match(got, want, rtol=0)
    else:
        assert got == want and type(got) is type(want)


def test_legacy_sequence_and_state(dev):
    numpy.random.seed(7)
    want = [numpy.random.rand(3), numpy.random.randint(0, 5, 4), numpy.random.normal(size=2)]
    gp.random.seed(7)
    got = [gp.random.rand(3), gp.random.randint(0, 5, 4), gp.random.normal(size=2)]
    assert_match(got, want, rtol=0)
    st = gp.random.get_state()
    a = gp.random.rand(4)
    gp.random.set_state(st)
    assert_match(gp.random.rand(4), numpy.asarray(a.to_device("cpu")), rtol=0)


def test_shuffle_permutation_choice_on_arrays(dev):
    x = numpy.arange(20.0).reshape(10, 2)
    rs = numpy.random.RandomState(3)
    want = x.copy()
    rs.shuffle(want)
    g = gp.asarray(x.copy())
    grs = gp.random.RandomState(3)
    grs.shuffle(g)
    assert_match(g, want)
    assert_match(grs.permutation(gp.asarray(x)), rs.permutation(x))
    assert_match(grs.choice(gp.asarray(x[:, 0]), 5, replace=False), rs.choice(x[:, 0], 5, replace=False))
    assert_match(grs.choice(gp.asarray(x[:, 0])), numpy.asarray(rs.choice(x[:, 0])))
    gp.random.seed(11)
    numpy.random.seed(11)
    lst, nlst = [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]
    gp.random.shuffle(lst)
    numpy.random.shuffle(nlst)
    assert lst == nlst
    g = gp.arange(9)
    gp.random.shuffle(g)
    n = numpy.arange(9)
    numpy.random.shuffle(n)
    assert_match(g, n)


GEN_CALLS = [
    ("random", (4,), {}), ("random", ((2, 2),), {"dtype": numpy.float32}), ("integers", (0, 10, 5), {}),
    ("integers", (5,), {"size": 3, "endpoint": True}), ("normal", (0.0, 2.0, 6), {}),
    ("standard_normal", (5,), {"dtype": numpy.float32}), ("uniform", (1, 3, (2, 3)), {}),
    ("exponential", (1.5, 4), {}), ("poisson", (4.0, 6), {}), ("binomial", (20, 0.25, 3), {}),
    ("beta", (0.5, 0.5, 3), {}), ("gamma", (3.0, 2.0, 3), {}), ("choice", (10, 3), {}),
    ("choice", (6, 4), {"replace": False}), ("permutation", (7,), {}),
    ("multivariate_normal", ([1.0, 2.0], [[2.0, 0.3], [0.3, 1.0]], 3), {}), ("dirichlet", ([1.0, 1.0], 2), {}),
    ("random", (), {}), ("integers", (100,), {}), ("normal", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", GEN_CALLS, ids=[f"{c[0]}{i}" for i, c in enumerate(GEN_CALLS)])
def test_generator(name, args, kwargs, dev):
    want = getattr(numpy.random.default_rng(42), name)(*args, **kwargs)
    got = getattr(gp.random.default_rng(42), name)(*args, **kwargs)
    if isinstance(want, numpy.ndarray):
        assert isinstance(got, gp.Array) and got.device == dev
        assert_match(got, want, rtol=0)
    else:
        assert got == want


def test_generator_arrays(dev):
    x = numpy.arange(24.0).reshape(6, 4)
    for axis in (0, 1):
        r = numpy.random.default_rng(5)
        want = x.copy()
        r.shuffle(want, axis=axis)
        g = gp.asarray(x.copy())
        gp.random.default_rng(5).shuffle(g, axis=axis)
        assert_match(g, want)
        assert_match(gp.random.default_rng(5).permutation(gp.asarray(x), axis=axis),
                     numpy.random.default_rng(5).permutation(x, axis=axis))
        assert_match(gp.random.default_rng(5).choice(gp.asarray(x), 3, axis=axis, replace=False),
                     numpy.random.default_rng(5).choice(x, 3, axis=axis, replace=False))
        assert_match(gp.random.default_rng(5).permuted(gp.asarray(x), axis=axis),
                     numpy.random.default_rng(5).permuted(x, axis=axis))
    assert_match(gp.random.default_rng(5).permuted(gp.asarray(x)), numpy.random.default_rng(5).permuted(x))
    out = gp.empty((2, 3))
    gp.random.default_rng(9).random(out=out)
    assert_match(out, numpy.random.default_rng(9).random((2, 3)), rtol=0)
    kids = gp.random.default_rng(1).spawn(2)
    nkids = numpy.random.default_rng(1).spawn(2)
    assert_match(kids[1].normal(size=3), nkids[1].normal(size=3), rtol=0)
    assert_match(gp.random.Generator(gp.random.PCG64(3)).random(2), numpy.random.Generator(numpy.random.PCG64(3))
                 .random(2), rtol=0)


def test_parameters_from_device_arrays(dev):
    mean = gp.asarray([0.0, 10.0])
    want = numpy.random.default_rng(2).normal(numpy.array([0.0, 10.0]), 1.0)
    assert_match(gp.random.default_rng(2).normal(mean, 1.0), want, rtol=0)
    p = gp.asarray([0.5, 0.25, 0.25])
    assert_match(gp.random.default_rng(2).choice(3, 5, p=p), numpy.random.default_rng(2).choice(3, 5, p=[0.5, 0.25,
                                                                                                     0.25]))


def test_explicit_device_keyword(device):
    gp.random.seed(0)
    r = gp.random.rand(3, device=device)
    assert r.device == device
    numpy.random.seed(0)
    assert_match(r, numpy.random.rand(3), rtol=0)
    g = gp.random.default_rng(0, device=device)
    assert g.normal(size=2).device == device
    assert gp.random.default_rng(0).integers(0, 5, 3, device=device).device == device


def test_fast_rng_cpu():
    f = gp.random.fast_rng(0, device="cpu")
    a = f.random(5)
    assert a.shape == (5,) and a.device == gp.Device("cpu")
    assert bool(gp.all((a >= 0) & (a < 1)))
    assert f.integers(0, 3, 10).dtype == gp.int64
    assert f.standard_normal((2, 2), dtype=gp.float32).dtype == gp.float32
    assert f.normal(1.0, 2.0, 4, dtype=gp.float32).dtype == gp.float32
    b = gp.random.fast_rng(0, device="cpu").random(5)
    assert_match(b, numpy.asarray(a))
    x = gp.arange(10, device="cpu")
    f.shuffle(x)
    assert sorted(x.tolist()) == list(range(10))
    assert f.permutation(5).shape == (5,) and f.choice(5, 2).shape == (2,)


@pytest.mark.gpu
@pytest.mark.skipif(not any(d.kind == "cuda" for d in gp.__array_namespace_info__().devices()), reason="no GPU")
def test_fast_rng_gpu():
    f = gp.random.fast_rng(0, device="cuda:0")
    a = f.random(1000)
    assert a.device == gp.Device("cuda:0") and a.shape == (1000,)
    assert 0.4 < float(gp.mean(a)) < 0.6
    b = gp.random.fast_rng(0, device="cuda:0").random(1000)
    assert bool(gp.all(a == b))
    assert f.standard_normal(10, dtype=gp.float32).dtype == gp.float32
    assert f.integers(0, 10, 5, endpoint=True).shape == (5,)
    x = gp.arange(10, device="cuda:0")
    f.shuffle(x)
    assert sorted(x.tolist()) == list(range(10))
