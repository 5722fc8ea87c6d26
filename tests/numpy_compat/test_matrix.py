"""np.matrix, asmatrix, bmat and r_['r'/'c', ...] against NumPy's (found missing by conformance/numpy_probe.py:
the docstrings of matrix, asmatrix, bmat, r_, linalg.inv/cholesky/eigh use them), on every device."""
import numpy
import pytest

import gpk_array as gp

from .helpers import assert_match

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # NumPy's matrix is discouraged


def same(got, want, dev):
    """got is a gpk_array matrix equal to NumPy's matrix want (values, dtype, 2-D shape), or 0-d for a scalar."""
    if isinstance(want, numpy.matrix):
        assert isinstance(got, gp.matrix), type(got)
        assert_match(got.A, numpy.asarray(want), dev)
    else:
        assert_match(got, want, dev)


@pytest.mark.parametrize("data", ["1 2; 3 4", "1, 2, 3", [[1.5, 2], [3, 4]], [1, 2, 3], 7])
def test_creation(dev, data):
    want = numpy.matrix(data)
    got = gp.matrix(gp.asarray(data) if isinstance(data, list) else data)
    same(got, want, dev)
    assert repr(got) == repr(want)
    assert isinstance(got, gp.ndarray) and not isinstance(gp.asarray([1]), gp.matrix)


def test_creation_refuses_more_dimensions(dev):
    with pytest.raises(ValueError, match="2-dimensional"):
        numpy.matrix([[[1], [2]]])
    with pytest.raises(ValueError, match="2-dimensional"):
        gp.matrix(gp.asarray([[[1], [2]]]))
    with pytest.raises(ValueError, match="Rows not the same size"):
        gp.matrix("1 2; 3")


def test_products_powers_and_elementwise(dev):
    a, b = numpy.matrix("1 2; 3 4"), numpy.matrix("0 1; 1 0")
    ga, gb = gp.matrix("1 2; 3 4"), gp.matrix("0 1; 1 0")
    cases = [(ga * gb, a * b), (ga * 2, a * 2), (2 * ga, 2 * a), (ga ** 3, a ** 3), (ga + gb, a + b),
             (ga - 1, a - 1), (ga / 2, a / 2), (-ga, -a), (ga @ gb, a @ b), (ga == gb, a == b),
             (ga * gp.asarray([[1], [2]]), a * numpy.array([[1], [2]])), (ga.T, a.T), (ga.H, a.H), (ga.I, a.I)]
    for got, want in cases:
        same(got, want, dev)
    c = gp.matrix("1 2; 3 4")
    c *= gb
    same(c, a * b, dev)
    assert_match(ga.A, a.A, dev)
    assert_match(ga.A1, a.A1, dev)
    same(gp.matrix("1 2 3; 4 5 6").I, numpy.matrix("1 2 3; 4 5 6").I, dev)   # pseudo-inverse


def test_indexing_keeps_two_dimensions(dev):
    a = numpy.matrix(numpy.arange(12).reshape(3, 4))
    ga = gp.matrix(gp.arange(12).reshape(3, 4))
    for key in [0, (slice(None), 1), (1, slice(1, 3)), slice(0, 2), (1, 2), (slice(None), slice(None, None, 2))]:
        same(ga[key], a[key], dev)
    ga[0, 0] = 99
    a[0, 0] = 99
    same(ga, a, dev)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "std", "var", "any", "all", "ptp", "argmax",
                                  "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions(dev, name, axis):
    a = numpy.matrix([[3.0, 1, 4], [1, 5, 9]])
    ga = gp.matrix([[3.0, 1, 4], [1, 5, 9]])
    same(getattr(ga, name)(axis), getattr(a, name)(axis), dev)


def test_asmatrix_views_and_bmat(dev):
    x = gp.asarray([[1, 2], [3, 4]])
    m = gp.asmatrix(x)
    x[0, 0] = 5
    same(m, numpy.matrix([[5, 2], [3, 4]]), dev)
    blocks = ["1 1; 1 1", "2 2; 2 2", "3 4; 5 6", "7 8; 9 0"]
    A, B, C, D = (gp.asmatrix(s) for s in blocks)
    nA, nB, nC, nD = (numpy.asmatrix(s) for s in blocks)
    want = numpy.bmat([[nA, nB], [nC, nD]])
    same(gp.bmat([[A, B], [C, D]]), want, dev)
    same(gp.bmat("A,B; C,D"), want, dev)
    same(gp.bmat("A,B; C,D", ldict={"A": A, "B": B, "C": C, "D": D}, gdict={}), want, dev)
    same(gp.bmat([A, B]), numpy.bmat([nA, nB]), dev)


@pytest.mark.parametrize("d", ["r", "c"])
def test_r_matrix_directives(dev, d):
    same(gp.r_[d, gp.asarray([1, 2, 3]), [4, 5, 6]], numpy.r_[d, [1, 2, 3], [4, 5, 6]], dev)


def test_linalg_on_a_matrix(dev):
    a = numpy.matrix([[1.0, 2.0], [3.0, 4.0]])
    ga = gp.matrix([[1.0, 2.0], [3.0, 4.0]])
    assert_match(gp.linalg.inv(ga), numpy.asarray(numpy.linalg.inv(a)), dev)
    assert_match(gp.linalg.det(ga), numpy.linalg.det(a), dev)
