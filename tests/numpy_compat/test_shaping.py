"""Joining, splitting and rearranging with NumPy's signatures against NumPy."""
import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpk_array as gp

from .helpers import assert_match, compare

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def arr(draw, min_dims=1, max_dims=3):
    dt = draw(st.sampled_from([numpy.int32, numpy.float64, numpy.bool_, numpy.uint8, numpy.float32]))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, max_side=4))
    return draw(hnp.arrays(dt, shape, elements=st.integers(0, 9).map(lambda v: v).filter(lambda v: True)
                           if numpy.dtype(dt).kind in "iu" else None))


@SETTINGS
@given(data=st.data())
def test_concat_stack(data, device):
    x = data.draw(arr(), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    y = (x * 2).astype(x.dtype) if x.dtype != numpy.bool_ else ~x
    z = numpy.ones(x.shape, dtype=numpy.float32)
    compare("concatenate", (x, y), axis, device=device)
    compare("concatenate", [x, y, z], axis=axis, device=device)
    compare("concatenate", (x, y), None, device=device)
    compare("concat", [x, y], axis, device=device)
    compare("stack", [x, y], axis, device=device)
    compare("stack", (x, z), -1, device=device)
    compare("hstack", (x, y), device=device)
    compare("vstack", [x, y], device=device)
    compare("dstack", (x, y), device=device)
    compare("column_stack", [x, y], device=device) if x.ndim <= 2 else None


def test_stacks_special(device):
    a = numpy.arange(3)
    b = numpy.arange(3, 6)
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        compare(name, (a, b), device=device)
    compare("hstack", (a, 7.0 * numpy.ones(1)), device=device)
    compare("concatenate", [a, b], dtype=numpy.float32, device=device)
    compare("block", [[numpy.eye(2), numpy.zeros((2, 1))], [numpy.ones((1, 2)), numpy.full((1, 1), 5.0)]],
            device=device)
    compare("block", [a, b], device=device)
    compare("atleast_1d", 5.0, device=device)
    compare("atleast_2d", a, device=device)
    compare("atleast_3d", numpy.ones((2, 3)), device=device)
    compare("atleast_2d", a, b, device=device)


@SETTINGS
@given(n=st.integers(1, 12), sections=st.integers(1, 5))
def test_split(n, sections):
    x = numpy.arange(n * 2).reshape(n, 2)
    compare("array_split", x, sections)
    compare("array_split", x, [1, 3], axis=0)
    if n % sections == 0:
        compare("split", x, sections)
    else:
        with pytest.raises(ValueError):
            gp.split(gp.asarray(x), sections)


def test_split_variants(device):
    x = numpy.arange(24.0).reshape(4, 6)
    compare("split", x, [2, 3], axis=1, device=device)
    compare("hsplit", x, 3, device=device)
    compare("vsplit", x, [1], device=device)
    compare("dsplit", x.reshape(2, 2, 6), 2, device=device)
    compare("split", x, numpy.array([1, 3]), device=device)


@SETTINGS
@given(data=st.data())
def test_reshape_transpose(data, device):
    x = data.draw(arr(), label="x")
    g = gp.asarray(x, device=device)
    assert_match(gp.reshape(g, (-1,)), numpy.reshape(x, (-1,)))
    assert_match(gp.reshape(g, x.size), numpy.reshape(x, x.size))
    assert_match(gp.reshape(g, x.shape[::-1], order="F"), numpy.reshape(x, x.shape[::-1], order="F"))
    assert_match(g.reshape(*x.shape[::-1]), x.reshape(*x.shape[::-1]))
    assert_match(g.reshape(x.shape[::-1]), x.reshape(x.shape[::-1]))
    assert_match(gp.ravel(g), numpy.ravel(x))
    assert_match(gp.ravel(g, "F"), numpy.ravel(x, "F"))
    assert_match(gp.transpose(g), numpy.transpose(x))
    assert_match(g.T, x.T)
    perm = data.draw(st.permutations(range(x.ndim)), label="perm")
    assert_match(gp.transpose(g, perm), numpy.transpose(x, perm))
    assert_match(g.transpose(*perm), x.transpose(*perm))
    assert_match(g.transpose(perm), x.transpose(perm))
    assert_match(gp.swapaxes(g, 0, -1), numpy.swapaxes(x, 0, -1))
    assert_match(gp.moveaxis(g, 0, -1), numpy.moveaxis(x, 0, -1))
    assert_match(gp.rollaxis(g, x.ndim - 1), numpy.rollaxis(x, x.ndim - 1))
    assert_match(gp.expand_dims(g, 1), numpy.expand_dims(x, 1))
    assert_match(gp.squeeze(gp.expand_dims(g, 0)), numpy.squeeze(numpy.expand_dims(x, 0)))
    assert_match(g.flatten(), x.flatten())
    assert_match(g.ravel(), x.ravel())


@SETTINGS
@given(data=st.data())
def test_flip_roll_repeat_tile(data, device):
    x = data.draw(arr(), label="x")
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    shift = data.draw(st.integers(-5, 5), label="shift")
    for args, kw in [((), {}), ((axis,), {}), ((), {"axis": axis})]:
        compare("flip", x, *args, device=device, **kw)
    compare("roll", x, shift, device=device)
    compare("roll", x, shift, axis, device=device)
    compare("roll", x, (shift, 1), (0, -1), device=device)
    compare("repeat", x, 2, device=device)
    compare("repeat", x, 3, axis, device=device)
    compare("repeat", x, [1] * x.shape[axis], axis=axis, device=device)
    compare("tile", x, 2, device=device)
    compare("tile", x, (2, 1), device=device)
    if x.ndim >= 2:
        compare("fliplr", x, device=device)
        compare("rot90", x, device=device)
        compare("rot90", x, 3, (1, 0), device=device)
    compare("flipud", x, device=device)


def test_pad(device):
    x = numpy.arange(12.0).reshape(3, 4)
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap", "maximum", "mean", "minimum", "linear_ramp"):
        compare("pad", x, 2, mode, device=device)
        compare("pad", x, ((1, 2), (0, 3)), mode=mode, device=device)
    compare("pad", x, 1, constant_values=-1.0, device=device)
    compare("pad", x, ((1, 1), (2, 2)), "constant", constant_values=((1, 2), (3, 4)), device=device)
    compare("pad", numpy.arange(5), (2, 3), device=device)


def test_append_insert_delete_resize(device):
    x = numpy.arange(12).reshape(3, 4)
    compare("append", x, [1, 2], device=device)
    compare("append", x, [[9, 9, 9, 9]], axis=0, device=device)
    compare("insert", x, 1, 99, device=device)
    compare("insert", x, 1, 99, axis=1, device=device)
    compare("insert", x, [0, 2, 2], [7, 8, 9], axis=1, device=device)
    compare("insert", x, slice(0, 3), -1, axis=0, device=device)
    compare("insert", x.ravel(), [1, 5, -1], [100, 200, 300], device=device)
    compare("insert", x, 2, [5, 6, 7, 8], axis=0, device=device)
    compare("insert", x, [1], [[5], [6], [7]], axis=1, device=device)
    compare("delete", x, 1, device=device)
    compare("delete", x, [0, 2], axis=0, device=device)
    compare("delete", x, slice(1, 3), axis=1, device=device)
    compare("resize", x, (2, 7), device=device)
    compare("trim_zeros", numpy.array([0, 0, 1, 2, 0, 3, 0]), device=device)
    compare("trim_zeros", numpy.array([0, 0, 1, 2, 0, 3, 0]), "f", device=device)


def test_standard_forms_still_work(device):
    g = gp.asarray(numpy.arange(6).reshape(2, 3), device=device)
    assert gp.reshape(g, (3, 2), copy=True).shape == (3, 2)
    assert gp.squeeze(gp.reshape(g, (1, 6)), axis=0).shape == (6,)
    assert gp.roll(g, 1, axis=1).shape == (2, 3)
    assert gp.repeat(g, 2, axis=0).shape == (4, 3)
    assert gp.flip(g, axis=(0, 1)).shape == (2, 3)
    assert gp.concat([g, g], axis=None).shape == (12,)
    assert gp.stack([g, g], axis=2).shape == (2, 3, 2)
    with pytest.raises(ValueError):
        gp.squeeze(g, axis=0)
