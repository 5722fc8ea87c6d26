"""The direct CUDA call of a cached specialization (gpk_array/_pykernel/launch.py), without a GPU: the binder
runs against a stand-in for CuPy's driver call that records the parameter buffer, and that buffer is read back
through a ctypes Structure of the generated kernel's C parameter list (ctypes lays it out as the C ABI does, an
oracle independent of the ``struct`` format the binder packs with). Also the guards (a call that differs from the
specialization in any part goes to the general path) and the launch class's CUDA source."""
import ctypes
import re
import types

import numpy as np
import pytest

import gpk_array as gk
from gpk_array._array import Array
from gpk_array._device import Device
from gpk_array._pykernel import launch
from gpk_array._pykernel.api import Specialization
from gpk_array._pykernel.codegen import Generator

from .examples import saxpy, stencil

DEV = Device("cpu")   # the binder only compares identities with the device it was made for


@gk.kernel
def mix(flag, k8, h, n, f, x, y2, out):
    for i in range(out.shape[0]):
        if flag:
            out[i] = x[i] * f + n + k8 + h + y2[1, i]


class _Data:
    """The CuPy array attributes the binder reads, over a NumPy array's memory."""

    def __init__(self, a):
        self.a = a
        self.dtype, self.ndim, self.size, self.itemsize, self.nbytes = a.dtype, a.ndim, a.size, a.itemsize, a.nbytes
        self.shape, self.strides = a.shape, a.strides
        self._shape, self._strides = a.shape, a.strides
        self._c_contiguous, self._f_contiguous = a.flags.c_contiguous, a.flags.f_contiguous
        self.data = types.SimpleNamespace(ptr=a.__array_interface__["data"][0])


def _arr(a, device=DEV):
    x = object.__new__(Array)
    x._data, x._device, x._base, x._ro = _Data(a), device, None, False
    return x


class _Cuda:
    """cupy.cuda's driver.launchKernel, runtime and current stream, recording each launch."""

    def __init__(self, devices=1):
        self.launches = []
        self.driver = types.SimpleNamespace(launchKernel=self._launch)
        self.runtime = types.SimpleNamespace(getDevice=lambda: 0, getDeviceCount=lambda: devices)
        self.stream = types.SimpleNamespace(ptr=0x5157)
        self.get_current_stream = lambda: self.stream

    def _launch(self, f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
        ex = (ctypes.c_void_p * 5).from_address(extra)
        assert ex[0] == 1 and ex[2] == 2 and not ex[4]
        size = ctypes.c_size_t.from_address(ex[3]).value
        self.launches.append({"f": f, "grid": (gx, gy, gz), "block": (bx, by, bz), "shmem": shmem,
                              "stream": stream, "params": params, "buf": ctypes.string_at(ex[1], size)})


_CT = {"bool": ctypes.c_bool, "signed char": ctypes.c_byte, "unsigned char": ctypes.c_ubyte,
       "short": ctypes.c_short, "unsigned short": ctypes.c_ushort, "int": ctypes.c_int,
       "unsigned int": ctypes.c_uint, "long long": ctypes.c_longlong, "i64": ctypes.c_longlong,
       "unsigned long long": ctypes.c_ulonglong, "float": ctypes.c_float, "double": ctypes.c_double}


def _c_params(source, cname):
    """[(name, ctypes type)] of the kernel's parameter list in the generated source."""
    m = re.search(r'extern "C" __global__ void ' + cname + r"\((.*?)\) \{", source)
    out = []
    for p in m.group(1).split(", "):
        p = p.replace("const ", "").replace("__restrict__", "").strip()
        if "*" in p:
            out.append((p.split("*")[1].strip(), ctypes.c_void_p))
        else:
            t, name = p.rsplit(" ", 1)
            out.append((name, _CT[t]))
    return out


def _decode(buf, source, cname):
    fields = _c_params(source, cname)
    S = type("Params", (ctypes.Structure,), {"_fields_": fields})
    raw = buf + bytes(ctypes.sizeof(S) - len(buf))
    assert len(buf) <= ctypes.sizeof(S) < len(buf) + 8   # the buffer is the parameters, no more
    s = S.from_buffer_copy(raw)
    return {name: getattr(s, name) for name, _ in fields}


def _spec(kernel, args, lclass):
    """A CUDA specialization of ``kernel`` for the CPU arrays ``args`` with launch class ``lclass``."""
    _, key, _, _ = kernel._prepare(args)
    return Specialization(kernel, key + (lclass,), 90)


def _bind(kernel, spec, cuda, device=DEV):
    b = launch.make_binder(kernel, spec, 0, types.SimpleNamespace(ptr=0xF00D), device, cuda=cuda)
    assert b is not None
    return b


def _mix_args():
    x = np.arange(10, dtype=np.float32)
    y2 = np.asfortranarray(np.arange(30, dtype=np.float64).reshape(3, 10))
    out = np.zeros(20)[::2]
    return [True, np.int8(-3), np.float16(0.5), -7, 2.5, x, y2, out]


def test_parameters_are_packed_as_the_c_abi_lays_them_out():
    args = _mix_args()
    spec = _spec(mix, args, ("R", 1, True, True))
    cuda = _Cuda()
    b = _bind(mix, spec, cuda)
    gargs = args[:5] + [_arr(a) for a in args[5:]]
    assert b(*gargs) is True
    (rec,) = cuda.launches
    got = _decode(rec["buf"], spec.source, spec.cname)
    x, y2, out = args[5:]
    ptr = [a.__array_interface__["data"][0] for a in (x, y2, out)]
    want = {"p_flag": True, "p_k8": -3, "p_h_f": 0.5, "p_n": -7, "p_f": 2.5,
            "x": ptr[0], "x_s0": 10, "x_t0": 1,
            "y2": ptr[1], "y2_s0": 3, "y2_s1": 10, "y2_t0": 1, "y2_t1": 3,
            "out": ptr[2], "out_s0": 10, "out_t0": 2}
    # a shape or stride the kernel body never names is passed as 0; every one it names is the array's
    body = spec.source[spec.source.index("{", spec.source.index(f" {spec.cname}(")):]
    for name, v in want.items():
        if re.search(rf"\b{name}\b", body) or name.startswith("p_") or name in ("x", "y2", "out"):
            assert got[name] == v, name
        else:
            assert got[name] in (v, 0), name
    assert re.search(r"\bout_t0\b", body) and re.search(r"\bout_s0\b", body)   # the strided output's
    assert rec["f"] == 0xF00D and rec["stream"] == 0x5157 and rec["shmem"] == 0 and rec["params"] == 0
    assert rec["block"] == (256, 1, 1) and rec["grid"] == (1, 1, 1)
    assert spec.calls == 1


def test_a_large_domain_unrolls_and_its_grid_covers_it_once():
    n = launch.UNROLL_MIN + 5
    x = np.zeros(n, np.float32)
    y = np.zeros(n, np.float32)
    o = np.zeros(n, np.float32)
    spec = _spec(saxpy, (2.0, x, y, o), ("R", launch.UNROLL, True, True))
    cuda = _Cuda()
    b = _bind(saxpy, spec, cuda)
    assert b(2.0, _arr(x), _arr(y), _arr(o)) is True
    tile = 256 * launch.UNROLL
    assert cuda.launches[0]["grid"] == (-(-n // tile), 1, 1)
    # below UNROLL_MIN the unrolled specialization is not this call's
    s = np.zeros(100, np.float32)
    assert b(2.0, _arr(s), _arr(s[:]), _arr(np.zeros(100, np.float32))) is None
    assert len(cuda.launches) == 1


@pytest.mark.parametrize("change", ["scalar type", "dtype", "ndim", "layout", "device", "overlap", "readonly",
                                    "not an Array", "int out of range"])
def test_a_call_that_differs_from_the_specialization_takes_the_general_path(change, monkeypatch):
    x, y, o = (np.zeros(64, np.float32) for _ in range(3))
    spec = _spec(saxpy, (2.0, x, y, o), ("R", 1, True, True))
    cuda = _Cuda()
    b = _bind(saxpy, spec, cuda)
    args = [2.0, _arr(x), _arr(y), _arr(o)]
    assert b(*args) is True
    if change == "scalar type":
        args[0] = 2
    elif change == "dtype":
        args[1] = _arr(np.zeros(64))
    elif change == "ndim":
        args[1] = _arr(np.zeros((8, 8), np.float32))
    elif change == "layout":
        args[1] = _arr(np.zeros(128, np.float32)[::2])
    elif change == "device":
        args[2] = _arr(y, device=object())
    elif change == "overlap":
        args[3] = args[1]          # out is x: the __restrict__ specialization is not this call's
    elif change == "readonly":
        monkeypatch.setattr("gpk_array._array._any_readonly", True)
        args[1]._ro = True                   # a read-only input is fine
        assert b(*args) is True
        args[3]._ro = True                   # the written one is not
        assert b(*args) is None
        assert len(cuda.launches) == 2 and spec.calls == 2
        return
    elif change == "not an Array":
        args[1] = x
    elif change == "int out of range":
        ik = _spec(mix, _mix_args(), ("R", 1, True, True))
        bi = _bind(mix, ik, cuda)
        margs = _mix_args()
        margs = margs[:5] + [_arr(a) for a in margs[5:]]
        assert bi(*margs) is True
        margs[3] = 2 ** 70
        assert bi(*margs) is None
        return
    assert b(*args) is None
    assert len(cuda.launches) == 1 and spec.calls == 1


def test_aliased_specialization_only_takes_aliased_calls():
    x, o = np.zeros(64, np.float32), np.zeros(64, np.float32)
    spec = _spec(saxpy, (2.0, x, x, x), ("R", 1, False, True))
    cuda = _Cuda()
    b = _bind(saxpy, spec, cuda)
    ax = _arr(x)
    assert b(2.0, ax, ax, ax) is True
    assert b(2.0, ax, ax, _arr(o)) is None       # no overlap: the __restrict__ specialization's call
    half = _arr(x[32:])
    assert b(2.0, _arr(x[:40]), half, _arr(o[:32])) is None
    assert len(cuda.launches) == 1


def test_explicit_geometry_and_empty_domains():
    x = np.zeros(64, np.float32)
    o = np.zeros(64, np.float32)
    spec = _spec(saxpy, (2.0, x, x, o), ("R", 1, True, False))     # an explicit geometry need not cover
    cuda = _Cuda()
    b = _bind(saxpy, spec, cuda)
    assert b(2.0, _arr(x), _arr(x), _arr(o)) is None                # the implicit call is the covering one's
    covering = _bind(saxpy, _spec(saxpy, (2.0, x, x, o), ("R", 1, True, True)), cuda)
    assert covering(2.0, _arr(x), _arr(x), _arr(o), _geom=((3, 1, 1), (32, 1, 1))) is None
    assert b(2.0, _arr(x), _arr(x), _arr(o), _geom=((3, 1, 1), (32, 1, 1))) is True
    assert cuda.launches[-1]["grid"] == (3, 1, 1) and cuda.launches[-1]["block"] == (32, 1, 1)
    assert b(2.0, _arr(x), _arr(x), _arr(o), _geom=()) is True     # k[(0, b)]: nothing to run
    e = np.zeros(0, np.float32)
    spec0 = _spec(saxpy, (2.0, e, e, e), ("R", 1, True, True))
    b0 = _bind(saxpy, spec0, cuda)
    assert b0(2.0, _arr(e), _arr(e), _arr(e)) is True
    assert len(cuda.launches) == 1 and spec.calls == 2 and spec0.calls == 1


def test_two_d_domain_and_several_devices():
    u = np.zeros((37, 53))
    out = np.zeros((37, 53))
    spec = _spec(stencil, (u, out), ("R", 1, True, True))
    cuda = _Cuda()
    b = _bind(stencil, spec, cuda)
    assert b(_arr(u), _arr(out)) is True
    grid, block = stencil._geometry([u, out], None)
    assert cuda.launches[0]["grid"] == grid and cuda.launches[0]["block"] == block
    multi = _Cuda(devices=2)
    multi.runtime.getDevice = lambda: 1          # another device is current: the general path switches to it
    bm = _bind(stencil, spec, multi)
    assert bm(_arr(u), _arr(out)) is None and not multi.launches


def test_no_binder_for_complex_numbers_or_without_a_device():
    x = np.zeros(4)
    spec = _spec(saxpy, (2.0 + 1j, x.astype(np.complex128), x.astype(np.complex128), x.astype(np.complex128)),
                 ("R", 1, True, True))
    assert launch.make_binder(saxpy, spec, 0, types.SimpleNamespace(ptr=1), DEV, cuda=_Cuda()) is None
    spec = _spec(saxpy, (2.0, x, x, x), ("R", 1, False, True))
    assert launch.make_binder(saxpy, spec, 0, types.SimpleNamespace(ptr=1), "cuda:0", cuda=_Cuda()) is None


@pytest.mark.parametrize("lclass", [("R", u, a, c) for u in (1, 4) for a in (False, True) for c in (False, True)])
def test_launch_class_source(lclass):
    x = np.zeros(8, np.float32)
    _, key, _, _ = saxpy._prepare((2.0, x, x, x))
    src = Generator(saxpy._info, key + (lclass,), "gpk_t").source()
    head = re.search(r'void gpk_t\((.*?)\)', src).group(1)
    assert (head.count("__restrict__") == 3) is lclass[2]
    assert ("#pragma unroll" in src) is (lclass[1] > 1)
    if lclass[1] > 1:
        assert f"blockDim.x * {lclass[1]}" in src
    assert ("gridDim" in src) is not lclass[3]     # a covering launch strides nowhere


def test_launch_class_of_calls():
    """What the general path puts in the key: unroll from the domain's size, noalias from the arrays' memory,
    cover from the launch form and the grid limits."""
    from gpk_array._pykernel.types import normalize
    x, o = np.zeros(100, np.float32), np.zeros(100, np.float32)
    big = np.zeros(launch.UNROLL_MIN, np.float32)

    def lc(args, geometry=None, k=saxpy):
        return k._launch_class([normalize(a, p) for a, p in zip(args, k.params)], geometry)
    assert lc((2.0, x, x, o)) == ("R", 1, True, True)
    assert lc((2.0, x, x, x)) == ("R", 1, False, True)
    assert lc((2.0, x, o[:50], o[25:75])) == ("R", 1, False, True)
    assert lc((2.0, big, big, big[:])) == ("R", launch.UNROLL, False, True)
    assert lc((2.0, x, x, o), ((64,), (32,))) == ("R", 1, True, False)
    u = np.zeros((10, 10))
    assert lc((u, np.zeros((10, 10))), k=stencil) == ("R", 1, True, True)
    tall = np.zeros((65535 * 8 + 1, 1), np.float32)     # more rows than a grid's y blocks of 8 cover
    assert lc((tall, np.zeros_like(tall)), k=stencil) == ("R", 1, True, False)


def test_span_of_negative_strides():
    a = np.zeros((4, 6))
    v = a[::-1, 1::2]
    lo, hi = launch.span(v)
    base = a.__array_interface__["data"][0]
    touched = [base + 8 * (r * 6 + c) for r in range(4) for c in range(1, 6, 2)]
    assert lo == min(touched) and hi == max(touched) + 8
    assert launch.span(np.zeros(0))[0] == launch.span(np.zeros(0))[1]


def test_explicit_geometry_before_a_later_helper_is_defined(tmp_path, monkeypatch):
    """k[(total, block)] of a kernel whose helper is defined below it works before the first call (the launcher
    checks its geometry without the analysis, which waits for the helper)."""
    import importlib
    (tmp_path / "later_mod.py").write_text(
        "import gpk_array as gk\n"
        "@gk.kernel\n"
        "def later(x):\n"
        "    i = gk.kernel.global_id(0)\n"
        "    if i < x.shape[0]:\n"
        "        x[i] = _twice(x[i])\n"
        "LAUNCHER = later[(8, 4)]\n"
        "def _twice(v):\n"
        "    return 2 * v\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("later_mod")
    assert mod.LAUNCHER.checked == ((2, 1, 1), (4, 1, 1))
    x = np.arange(8.0)
    mod.LAUNCHER(x)
    np.testing.assert_array_equal(x, 2 * np.arange(8.0))
    assert mod.later[(0, 4)].checked == ()
