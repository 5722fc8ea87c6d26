"""Argument checking and launch-size checks of jit kernels, without a GPU: converting arguments never touches the
device, so fake CUDA arrays (objects with ``__cuda_array_interface__``) stand in for device memory."""
import numpy as np
import pytest

import gpk_array as gp
from gpk_array._jit.kernel import JitKernel, check_launch, kernel_params

SRC = r'''
#include <cuda_fp16.h>
extern "C" __global__ void saxpy(const float* x, float* y, float a, int n) {}
extern "C" __global__ void hk(__half* p, __half s, unsigned char u, bool flag, double d) {}
extern "C" __global__ void anyptr(void* p, unsigned long long n) {}
__global__ void cpp(int a) {}
template <typename T> __global__ void tk(T* x, T v) {}
'''


class FakeCuda:
    """Device memory as another library would hand it over: only the CUDA array interface."""

    def __init__(self, dtype, n=4, ptr=0x7f0000001000):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": np.dtype(dtype).str, "data": (ptr, False),
                                         "version": 3, "strides": None}


def kernel(name, src=SRC):
    return JitKernel(None, name, kernel_params(src, name))


def test_pointer_and_scalar_conversion():
    k = kernel("saxpy")
    vals, dev = k.convert((FakeCuda(np.float32, ptr=16), FakeCuda(np.float32, ptr=32), 2, 10))
    # pointers as addresses (the packed launch), scalars as the parameter's dtype
    assert [type(v) for v in vals] == [int, int, np.float32, np.int32]
    assert vals == [16, 32, 2.0, 10] and dev is None
    vals, _ = k.convert((None, FakeCuda(np.float32), np.float64(0.5), np.int64(3)))
    assert int(vals[0]) == 0 and vals[2].dtype == np.float32 and vals[3].dtype == np.int32


def test_packed_parameters_follow_the_c_layout():
    """The packed launch's buffer read back through a ctypes Structure of the C parameter list (ctypes lays it
    out as the C ABI does): pointers, a 1-byte bool, a 2-byte half and a double after them land where C puts them."""
    import ctypes
    src = 'extern "C" __global__ void mixed(const float* x, bool flag, __half h, double d, char c, float* y) {}'
    k = JitKernel(None, "mixed", kernel_params(src, "mixed"))
    vals, _ = k.convert((FakeCuda(np.float32, ptr=0x1000), True, np.float16(1.5), 2.25, np.int8(-4),
                         FakeCuda(np.float32, ptr=0x2000)))
    p = k._packed
    p.pack(p.buf, 0, *vals)

    class C(ctypes.Structure):
        _fields_ = [("x", ctypes.c_void_p), ("flag", ctypes.c_bool), ("h", ctypes.c_uint16), ("d", ctypes.c_double),
                    ("c", ctypes.c_byte), ("y", ctypes.c_void_p)]
    assert p.size.value == ctypes.sizeof(C)
    got = C.from_buffer_copy(ctypes.string_at(p.buf, p.size.value))
    assert (got.x, got.flag, got.d, got.c, got.y) == (0x1000, True, 2.25, -4, 0x2000)
    assert got.h == np.array(1.5, np.float16).view(np.uint16)
    structs = 'struct P { int a; float b; }; extern "C" __global__ void s(P p, float* y) {}'
    assert JitKernel(None, "s", kernel_params(structs, "s"))._packed is None   # CuPy's launch for structs


def test_wrong_count_names_the_parameters():
    with pytest.raises(TypeError, match=r"takes 4 argument\(s\) \(x, y, a, n\), got 3"):
        kernel("saxpy").convert((FakeCuda(np.float32), FakeCuda(np.float32), 1.0))


@pytest.mark.parametrize("args,match", [
    ((FakeCuda(np.float64), FakeCuda(np.float32), 1.0, 4), r"'x' \(const float\*\) points to float32, got .*float64"),
    ((FakeCuda(np.float32), FakeCuda(np.float32), 1.0, 4.5), r"'n' \(int\) is an integer, got a float"),
    ((FakeCuda(np.float32), FakeCuda(np.float32), 1.0, np.float32(4)), r"'n' \(int\) is int32, got a NumPy float32"),
    ((FakeCuda(np.float32), FakeCuda(np.float32), FakeCuda(np.float32), 4), r"'a' \(float\) is a scalar"),
    ((FakeCuda(np.float32), 3, 1.0, 4), r"'y' \(float\*\) must be a CUDA array"),
    ((FakeCuda(np.float32), FakeCuda(np.float32), "1", 4), r"'a' \(float\) takes a Python or NumPy scalar"),
    ((FakeCuda(np.float32), FakeCuda(np.float32), 1j, 4), r"'a' \(float\) is real"),
])
def test_type_errors_name_the_parameter(args, match):
    with pytest.raises(TypeError, match=match):
        kernel("saxpy").convert(args)


def test_int_range_is_checked():
    k = kernel("saxpy")
    with pytest.raises(OverflowError, match=r"'n' \(int\)"):
        k.convert((FakeCuda(np.float32), FakeCuda(np.float32), 1.0, 2 ** 31))
    with pytest.raises(OverflowError):
        kernel("hk").convert((FakeCuda(np.float16), 1.0, 256, True, 1.0))
    vals, _ = k.convert((FakeCuda(np.float32), FakeCuda(np.float32), 1.0, -2 ** 31))
    assert vals[3] == np.int32(-2 ** 31)


def test_half_bool_and_byte_pointers():
    vals, _ = kernel("hk").convert((FakeCuda(np.float16), 1.5, 255, True, 2))
    assert vals[1].dtype == np.float16 and vals[1] == 1.5 and vals[2].dtype == np.uint8 and vals[3].dtype == np.bool_
    assert vals[4].dtype == np.float64
    with pytest.raises(TypeError, match="is a bool"):
        kernel("hk").convert((FakeCuda(np.float16), 1.5, 1, 1, 2.0))
    # void* takes any dtype
    for dt in (np.float32, np.int8, np.complex128):
        kernel("anyptr").convert((FakeCuda(dt), 1))


def test_host_memory_is_refused_clearly():
    k = kernel("saxpy")
    x = gp.ones(4, dtype=gp.float32, device="cpu")
    with pytest.raises(TypeError, match="CPU device; jit kernels run on CUDA only"):
        k.convert((x, x, 1.0, 4))
    with pytest.raises(TypeError, match="NumPy array \\(host memory\\)"):
        k.convert((np.ones(4, np.float32), FakeCuda(np.float32), 1.0, 4))


def test_template_name_expression_types_the_parameters():
    k = kernel("tk<double>")
    vals, _ = k.convert((FakeCuda(np.float64), 2))
    assert vals[1].dtype == np.float64
    with pytest.raises(TypeError, match="points to float64"):
        k.convert((FakeCuda(np.float32), 2.0))


def test_names_that_cannot_launch():
    with pytest.raises(ValueError, match="no __global__ function 'nope'"):
        kernel_params(SRC, "nope")
    with pytest.raises(ValueError, match="not extern \"C\""):
        kernel_params(SRC, "cpp")
    with pytest.raises(ValueError, match="is a template"):
        kernel_params(SRC, "tk")


def test_jit_checks_its_own_arguments():
    with pytest.raises(TypeError, match="source must be a str"):
        gp.jit(b"x", "k")
    with pytest.raises(ValueError, match="no __global__ function"):
        gp.jit(SRC, "missing")


@pytest.mark.parametrize("grid,block,shared,match", [
    (0, 128, 0, "grid dimension x = 0"), ((1, 70000), 128, 0, "grid dimension y = 70000"),
    (2 ** 31, 1, 0, "grid dimension x"), (1, 2048, 0, "block dimension x = 2048"),
    (1, (1, 1, 65), 0, "block dimension z = 65"), (1, (64, 32), 0, "2048 threads"),
    (1, 128, -1, "negative"), (1, 128, 300000, "over the device's limit of 232448"),
])
def test_launch_limits(grid, block, shared, match):
    with pytest.raises(ValueError, match=match):
        check_launch(grid, block, shared, max_threads=1024, max_shared=232448)


def test_launch_sizes_normalized_and_type_checked():
    assert check_launch(4, (32, 2), 1024) == ((4, 1, 1), (32, 2, 1), 1024)
    assert check_launch((2 ** 31 - 1, 65535, 65535), (1024,), 0)[0] == (2 ** 31 - 1, 65535, 65535)
    with pytest.raises(ValueError, match="over this kernel's limit of 256"):
        check_launch(1, 512, max_threads=256)
    for bad in (1.5, (1, 2, 3, 4), "8", True):
        with pytest.raises(TypeError):
            check_launch(bad, 1)


def test_total_block_form_checks_before_any_launch():
    k = kernel("saxpy")
    launcher = k[1000, 256]
    assert launcher.grid == 4 and launcher.block == 256 and k[1000, 256] is launcher
    assert k[1024, 256].grid == 4 and k[1025, 256].grid == 5
    with pytest.raises(ValueError, match="at least 1"):
        k[0, 256]
    with pytest.raises(TypeError, match="must be an int"):
        k[10.0, 256]
    with pytest.raises(TypeError, match=r"k\[total, block\]"):
        k[10]


def test_struct_by_value_bytes_match_ctypes(monkeypatch):
    """A struct parameter takes a dtype scalar, a tuple or a dict; the bytes handed to the launch are the C
    struct's (ctypes as the oracle). The CuPy wrapper around them is replaced by the buffer itself here."""
    import ctypes

    from gpk_array._jit import kernel as K
    monkeypatch.setattr(K, "_held", lambda buf: buf)
    src = 'struct P { char c; double d; int n; };\nextern "C" __global__ void k(P p, int m) {}'
    k = kernel("k", src)
    dt = k.params[0].dtype

    class P(ctypes.Structure):
        _fields_ = [("c", ctypes.c_char), ("d", ctypes.c_double), ("n", ctypes.c_int)]

    want = bytes(P(b"\x07", 2.5, -3))
    for arg in ((7, 2.5, -3), {"c": 7, "d": 2.5, "n": -3}, np.array((7, 2.5, -3), dt)[()]):
        vals, _ = k.convert((arg, 1))
        assert vals[0].tobytes() == want
    with pytest.raises(TypeError, match="no field 'x'"):
        k.convert(({"x": 1}, 1))
    with pytest.raises(TypeError, match="is a struct"):
        k.convert((3.0, 1))


def test_unknown_parameter_types_take_sized_values_only():
    k = kernel("k", 'extern "C" __global__ void k(float4 v, MyInt m, float* p) {}')
    vals, _ = k.convert((np.float32(1), np.int16(2), FakeCuda(np.float32, ptr=64)))
    assert vals[0].dtype == np.float32 and vals[1].dtype == np.int16 and int(vals[2]) == 64
    with pytest.raises(TypeError, match=r"'m' \(MyInt\) is not known here.*NumPy scalar"):
        k.convert((np.float32(1), 2, None))
    # no readable signature at all (a Module function without one): the same rule, any count
    raw = JitKernel(None, "f", None)
    assert len(raw.convert((np.int32(1), FakeCuda(np.int8), None))[0]) == 3
    with pytest.raises(TypeError, match="NumPy scalar"):
        raw.convert((1.5,))


class _Dev:
    kind, index = "cuda", 0


def _cuda_array(a, dev=_Dev):
    """A gpk_array Array on a stand-in CUDA device: the attributes the direct call reads, over host memory."""
    import types
    from gpk_array._array import Array
    x = object.__new__(Array)
    data = types.SimpleNamespace(dtype=a.dtype, data=types.SimpleNamespace(ptr=a.__array_interface__["data"][0]))
    x._data, x._device, x._base, x._ro = data, dev, None, False
    return x


def _direct(k, checked):
    """The kernel's direct call against a recording launch; returns (call, launches)."""
    import ctypes
    from gpk_array._jit.launch import direct_call
    launches = []

    def launch(f, gx, gy, gz, bx, by, bz, shm, stream, params, extra):
        ex = (ctypes.c_void_p * 5).from_address(extra)
        size = ctypes.c_size_t.from_address(ex[3]).value
        launches.append((f, (gx, gy, gz), (bx, by, bz), shm, stream, ctypes.string_at(ex[1], size)))
    import threading
    import types
    ns = {"Array": __import__("gpk_array._array", fromlist=["Array"]).Array, "CHECKED": checked,
          "FPTR": {0: 0xF00D}, "LOCK": threading.Lock(), "GCS": lambda: types.SimpleNamespace(ptr=7),
          "LAUNCH": launch, "GETDEV": lambda: 0, "MULTI": False}
    src = direct_call(k.params, k._packed, ns)
    exec(compile(src, "<test>", "exec"), ns)
    return ns["call"], launches


def test_direct_call_packs_what_the_general_path_would():
    import ctypes
    k = kernel("saxpy")
    x, y = np.zeros(4, np.float32), np.zeros(4, np.float32)
    checked = {((1,), (32,), 0, 0): ((1, 1, 1), (32, 1, 1), 0)}
    call, launches = _direct(k, checked)
    gx, gy = _cuda_array(x), _cuda_array(y)
    assert call((1,), (32,), (gx, gy, 2.5, 10), 0, None) is True
    f, grid, block, shm, stream, buf = launches[0]
    assert (f, grid, block, shm, stream) == (0xF00D, (1, 1, 1), (32, 1, 1), 0, 7)

    class C(ctypes.Structure):
        _fields_ = [("x", ctypes.c_void_p), ("y", ctypes.c_void_p), ("a", ctypes.c_float), ("n", ctypes.c_int)]
    got = C.from_buffer_copy(buf)
    assert (got.x, got.y, got.a, got.n) == (x.__array_interface__["data"][0], y.__array_interface__["data"][0],
                                            2.5, 10)
    assert call((1,), (32,), (gx, gy, np.float32(1.5), np.int32(3)), 0, None) is True
    assert call((1,), (32,), (gx, gy, 1e300, 3), 0, None) is True        # inf, as numpy.float32(1e300) is
    assert C.from_buffer_copy(launches[-1][-1]).a == np.inf
    # the general path's cases: each returns None and launches nothing
    other = type("_Dev1", (), {"kind": "cuda", "index": 1})
    for args, geo, stream in [((gx, gy, 2.5, 2**31), (1,), None),      # int out of range
                              ((gx, gy, 2, 10), (1,), None),           # an int for a float parameter
                              ((gx, gy, 2.5, np.int64(3)), (1,), None),  # another NumPy dtype
                              ((x, gy, 2.5, 10), (1,), None),          # a NumPy array
                              ((_cuda_array(np.zeros(4)), gy, 2.5, 10), (1,), None),   # float64 for float*
                              ((gx, _cuda_array(y, other), 2.5, 10), (1,), None),      # another device
                              ((gx, gy, 2.5), (1,), None),             # count
                              ((gx, gy, 2.5, 10), (2,), None),         # a launch size not checked yet
                              ((gx, gy, 2.5, 10), (1,), object())]:    # an explicit stream
        assert call(geo, (32,), args, 0, stream) is None
    assert len(launches) == 3
