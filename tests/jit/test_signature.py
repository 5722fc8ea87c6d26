"""Reading kernel signatures and structs from CUDA source (no compiler, no GPU). Oracles: the C declarations
themselves (what the parameter is by the language's rules) and ctypes for struct layout."""
import ctypes

import ml_dtypes
import numpy as np
import pytest

from gpk_array._jit import signature as S

from .conftest import requires_compiler

SRC = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// extern "C" __global__ void commented_out(int x) {}
/* extern "C" __global__ void also_commented(int x) {} */
extern "C" __global__ void __launch_bounds__(256, 2) saxpy(const float* __restrict__ x, float* y, float a,
                                                            long n) {}
extern "C" {
__global__ void mixed(__half* p, __half s, unsigned int k, __nv_bfloat16 b, void* raw, double d[], size_t m) {}
__global__ void noargs(void) {}
}
__global__ void cpp_linkage(int a) {}
template <typename T, int N>
__global__ void tscale(T* x, T f, int n) {}
namespace ns { template <typename T> __global__ void nsk(T* x, unsigned long long n) {} }
'''


def by_name(src=SRC):
    return {k.name: k for k in S.kernels(src)}


def test_finds_kernels_and_linkage_ignoring_comments():
    ks = by_name()
    assert set(ks) == {"saxpy", "mixed", "noargs", "cpp_linkage", "tscale", "nsk"}
    assert ks["saxpy"].extern_c and ks["mixed"].extern_c and ks["noargs"].extern_c
    assert not ks["cpp_linkage"].extern_c and not ks["tscale"].extern_c
    assert ks["nsk"].namespace == ("ns",)


def test_parameter_kinds_and_dtypes():
    ks = by_name()
    p = ks["saxpy"].params
    assert [(q.name, q.kind, q.dtype) for q in p] == [
        ("x", "pointer", np.dtype(np.float32)), ("y", "pointer", np.dtype(np.float32)),
        ("a", "scalar", np.dtype(np.float32)), ("n", "scalar", np.dtype(np.int64))]
    m = {q.name: q for q in ks["mixed"].params}
    assert m["p"].kind == "pointer" and m["p"].dtype == np.float16
    assert m["s"].kind == "scalar" and m["s"].dtype == np.float16
    assert m["k"].dtype == np.uint32 and m["b"].dtype == np.dtype(ml_dtypes.bfloat16)
    assert m["raw"].kind == "pointer" and m["raw"].dtype is None          # void*: any dtype
    assert m["d"].kind == "pointer" and m["d"].dtype == np.float64         # double d[] is a pointer
    assert m["m"].dtype == np.uint64
    assert ks["noargs"].params == []


@pytest.mark.parametrize("ctype,expected", [
    ("int", np.int32), ("unsigned", np.uint32), ("long long", np.int64), ("unsigned long long", np.uint64),
    ("short", np.int16), ("unsigned char", np.uint8), ("signed char", np.int8), ("bool", np.bool_),
    ("double", np.float64), ("const int", np.int32), ("int64_t", np.int64), ("uint16_t", np.uint16),
    ("complex<float>", np.complex64), ("thrust::complex<double>", np.complex128)])
def test_scalar_sizes(ctype, expected):
    assert S.scalar_dtype(ctype) == np.dtype(expected)


def test_unknown_types_are_reported_not_guessed():
    ks = by_name('extern "C" __global__ void k(MyType t, float4 v, int& r, int n) {}')
    kinds = [(p.name, p.kind) for p in ks["k"].params]
    assert kinds == [("t", "unknown"), ("v", "unknown"), ("r", "unknown"), ("n", "scalar")]


def test_structs_match_ctypes_layout():
    src = r'''
    struct Particle { float x, y; int id; double w[3]; char tag; };
    typedef struct { char c; double d; short s; } Padded;
    struct Outer { Padded p; int n; };
    struct WithMethod { int a; __device__ int get() const { return a; } };
    '''
    st = S.structs(src)
    assert set(st) == {"Particle", "Padded", "Outer"}                    # methods: not a plain struct

    class Particle(ctypes.Structure):
        _fields_ = [("x", ctypes.c_float), ("y", ctypes.c_float), ("id", ctypes.c_int),
                    ("w", ctypes.c_double * 3), ("tag", ctypes.c_char)]

    class Padded(ctypes.Structure):
        _fields_ = [("c", ctypes.c_char), ("d", ctypes.c_double), ("s", ctypes.c_short)]

    class Outer(ctypes.Structure):
        _fields_ = [("p", Padded), ("n", ctypes.c_int)]

    for name, ct in (("Particle", Particle), ("Padded", Padded), ("Outer", Outer)):
        dt = st[name]
        assert dt.itemsize == ctypes.sizeof(ct), name
        for fname, _ in ct._fields_:
            assert dt.fields[fname][1] == getattr(ct, fname).offset, (name, fname)
    assert st["Particle"]["w"].shape == (3,)
    assert S.structs('struct __align__(16) A { float x; };')["A"].itemsize == 16


def test_struct_parameter():
    ks = by_name('struct P { float x; int n; };\nextern "C" __global__ void k(P p, P* q) {}')
    p, q = ks["k"].params
    assert p.kind == "struct" and p.dtype.names == ("x", "n")
    assert q.kind == "pointer" and q.dtype == p.dtype


def test_template_instantiation_and_mangling():
    ks = by_name()
    line, params, sym = S.instantiate(ks["tscale"], "tscale<float, 2>")
    assert line == "template __global__ void tscale<float, 2>(float*, float, int);"
    assert [(p.name, p.dtype) for p in params] == [("x", np.float32), ("f", np.float32), ("n", np.int32)]
    assert sym == "_Z6tscaleIfLi2EE"             # Itanium ABI: <len>name I <args> E, Li2E for int 2
    line, params, sym = S.instantiate(ks["nsk"], "ns::nsk<double>")
    assert sym == "_ZN2ns3nskIdEE" and params[1].dtype == np.uint64
    with pytest.raises(ValueError, match="template argument"):
        S.instantiate(ks["tscale"], "tscale<float>")
    with pytest.raises(ValueError, match="non-type"):
        S.instantiate(ks["tscale"], "tscale<float, N+1>")


def test_comment_stripping_keeps_line_numbers():
    src = "a /* x\ny */ b // z\nc"
    out = S.strip_comments(src)
    assert out.count("\n") == src.count("\n") and out.split() == ["a", "b", "c"]


STRUCT_LAYOUTS = r'''
struct __align__(16) Particle { float x, y, z; };
struct Pair { Particle a; char c; };
struct Mixed { char c; double d; short s[3]; int* p; };
struct Outer { char tag; Mixed m; Pair pr[2]; unsigned char last; };
typedef struct { float v; char k; } Tiny;
struct WithTiny { Tiny t[3]; double d; };
'''


@requires_compiler
def test_struct_layouts_agree_with_the_compiler():
    """Sizes and field offsets of the structured dtypes (nested ``__align__`` structs included: NumPy's own
    alignment ignored it, so Pair came out 20 bytes instead of C's 32) checked by the CUDA compiler itself:
    static_asserts generated from the dtypes must compile."""
    from gpk_array._pykernel.backend import compile_only
    dts = S.structs(STRUCT_LAYOUTS)
    assert set(dts) == {"Particle", "Pair", "Mixed", "Outer", "Tiny", "WithTiny"}
    asserts = []
    for name, dt in dts.items():
        asserts.append(f"static_assert(sizeof({name}) == {dt.itemsize}, \"{name} size\");")
        for f in dt.names:
            asserts.append(f"static_assert(offsetof({name}, {f}) == {dt.fields[f][1]}, \"{name}.{f}\");")
    src = "#include <cstddef>\n" + STRUCT_LAYOUTS + "\n".join(asserts) + \
        '\nextern "C" __global__ void k(Pair p, Outer o, WithTiny w) {}\n'
    compile_only(src, "90a")
    assert dts["Pair"].itemsize == 32 and dts["Pair"].fields["c"][1] == 16
