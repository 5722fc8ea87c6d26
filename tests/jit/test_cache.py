"""The jit compile cache with a real compiler (nvcc here, NVRTC where CuPy has it; no GPU): keys, the reason each
miss records, hits across processes, two processes compiling one entry, compile errors, name expressions, warmup.
Oracles: the cubin's own ELF symbol table, the compiler's log, the file system."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import gpk_array as gp
from gpk_array._jit import cache
from gpk_array._kernels import loader

from .conftest import requires_compiler

pytestmark = requires_compiler

SRC = r'''
extern "C" __global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
'''
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_compile_writes_a_cubin_with_the_kernel(cache_dir):
    e = cache.compile(SRC, name="scale.cu", arch="90")
    assert not e.cached and e.reason == "new source"
    assert e.path.parent == cache_dir / "sm_90" and e.path.name == f"{e.key}.cubin"
    assert "scale" in loader.cubin_symbols(e.path.read_bytes())
    info = gp.kernel_cache_info()
    assert info["misses"] == 1 and info["hits"] == 0 and info["dir"] == str(cache_dir)
    assert info["compiles"][0]["reason"] == "new source" and info["reasons"] == {"new source": 1}
    # the same inputs again in this process: no second lookup on disk
    assert cache.compile(SRC, name="scale.cu", arch="90") is e and gp.kernel_cache_info()["memory_hits"] == 1


def test_each_miss_says_why(cache_dir, monkeypatch):
    ident = dict(name="scale.cu", identity="jit:scale")
    assert cache.compile(SRC, arch="90", **ident).reason == "new source"
    src2 = SRC.replace("*= a", "*= 2 * a")
    assert cache.compile(src2, arch="90", **ident).reason == "source changed"
    assert cache.compile(src2, arch="90", options=("-DFOO=1",), **ident).reason == "options changed"
    assert cache.compile(src2, arch="80", options=("-DFOO=1",), **ident).reason == "arch changed"
    monkeypatch.setattr(cache, "_versions", cache.versions() + ";cudart=99999")
    e = cache.compile(src2, arch="80", options=("-DFOO=1",), **ident)
    assert e.reason == "toolkit changed"
    # the same inputs with the cubin deleted (another process cleaned the cache)
    e.path.unlink()
    cache.cache_clear()
    assert cache.compile(src2, arch="80", options=("-DFOO=1",), **ident).reason == "not in cache"
    reasons = [c["reason"] for c in gp.kernel_cache_info()["compiles"]]
    assert reasons == ["not in cache"]


def test_keys_hash_content_not_names(cache_dir):
    a = cache.compile(SRC, name="a.cu", arch="90")
    b = cache.compile(SRC, name="b.cu", arch="90", identity="other")
    assert b is a                                       # same content, same cubin (already loaded)
    c = cache.compile(SRC + "\n", name="a.cu", arch="90")
    assert c.key != a.key


def _run_py(code, cache_dir, extra_env=None):
    env = {**os.environ, "GPK_CACHE_DIR": str(cache_dir), "PYTHONPATH": ROOT, "GPK_DEVICE": "cpu",
           **(extra_env or {})}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


_CHILD = r'''
import json, sys, time
from gpk_array._jit import cache
src = sys.argv[1] if len(sys.argv) > 1 else None
SRC = {src!r}
real = cache._compile
def slow(*a, **k):          # hold the entry's lock long enough for the other process to arrive
    time.sleep(1.5)
    return real(*a, **k)
cache._compile = slow
open({marker!r} + str(__import__("os").getpid()), "w").close()
e = cache.compile(SRC, name="scale.cu", arch="90")
info = cache.cache_info()
print(json.dumps({{"path": str(e.path), "hits": info["hits"], "misses": info["misses"]}}))
'''


def test_two_processes_compile_one_entry_once(cache_dir, tmp_path):
    marker = str(tmp_path / "started.")
    code = _CHILD.format(src=SRC, marker=marker)
    procs = [_run_py(code, cache_dir) for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert outs[0]["path"] == outs[1]["path"]
    assert sorted(o["misses"] for o in outs) == [0, 1] and sorted(o["hits"] for o in outs) == [0, 1]
    cubins = list((cache_dir / "sm_90").glob("*.cubin"))
    assert len(cubins) == 1 and "scale" in loader.cubin_symbols(cubins[0].read_bytes())
    assert not list((cache_dir / "sm_90").glob("*.tmp"))


def test_a_new_process_hits_the_disk_cache(cache_dir):
    first = cache.compile(SRC, name="scale.cu", arch="90")
    code = f"""
    import json
    from gpk_array._jit import cache
    e = cache.compile({SRC!r}, name="scale.cu", arch="90")
    print(json.dumps({{"key": e.key, "cached": e.cached, "hits": cache.cache_info()["hits"],
                       "misses": cache.cache_info()["misses"]}}))
    """
    p = _run_py(code, cache_dir)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    got = json.loads(out.strip().splitlines()[-1])
    assert got == {"key": first.key, "cached": True, "hits": 1, "misses": 0}


def test_compile_error_carries_log_and_line(cache_dir):
    bad = SRC.replace("x[i] *= a;", "x[i] *= b;")
    with pytest.raises(gp.KernelCompileError) as ei:
        gp.jit(bad, "scale").compile("90")
    err = ei.value
    assert isinstance(err, gp.GpkArrayError) and isinstance(err, RuntimeError)
    assert err.line == 4 and err.source_line.strip() == "if (i < n) x[i] *= b;"
    assert '"b"' in err.log and "line 4" in str(err) and err.arch == "90"
    assert gp.KernelCompileError is gp._kernels.KernelCompileError       # one class for the whole library
    assert gp.kernel_cache_info()["misses"] == 0 and not list(cache_dir.rglob("*.cubin"))


def test_name_expressions_resolve_to_the_compiled_symbols(cache_dir):
    src = r'''
    template <typename T, int N>
    __global__ void tscale(T* x, T f, int n) { int i = threadIdx.x; if (i < n) x[i] *= f * N; }
    namespace ns { template <typename T> __global__ void fill(T* x, T v) { x[threadIdx.x] = v; } }
    '''
    exprs = ("tscale<float, 2>", "tscale<double, 3>", "ns::fill<int>")
    e = cache.compile(src, name="t.cu", arch="90", name_expressions=exprs)
    names = loader.cubin_symbols(e.path.read_bytes())
    resolved = [cache.resolve_symbol(e, x) for x in exprs]
    assert all(r in names for r in resolved) and len(set(resolved)) == 3
    assert resolved[0].startswith("_Z6tscaleIfLi2EE") and resolved[2].startswith("_ZN2ns4fillIiEE")
    k = gp.jit(src, "tscale<double, 3>")
    assert [p.dtype.name for p in k.params] == ["float64", "float64", "int32"]


def test_warmup_compiles_in_parallel(cache_dir):
    srcs = [SRC.replace("*= a", f"*= a + {i}") for i in range(3)]
    ks = [gp.jit(s, "scale") for s in srcs]
    entries = cache.warmup(ks + [(SRC, ("-DX=1",))], arch="90")
    assert [e.cached for e in entries] == [False] * 4
    assert len({e.key for e in entries}) == 4 and gp.kernel_cache_info()["misses"] == 4
    assert all(k.compile("90").cached is False for k in ks)   # the same entries, already made by warmup
    assert gp.kernel_cache_info()["misses"] == 4
    with pytest.raises(TypeError, match="warmup takes"):
        cache.warmup([3])
    with pytest.raises(gp.KernelCompileError):
        cache.warmup([SRC, "this is not CUDA"], arch="90")


def test_a_disk_hit_updates_the_last_inputs(cache_dir):
    """Going back to a source whose cubin is still on disk is a hit; the next change is judged against it."""
    ident = dict(name="scale.cu", identity="jit:toggle")
    cache.compile(SRC, arch="90", **ident)
    cache.compile(SRC, arch="90", options=("-DA=1",), **ident)
    cache.cache_clear()                                        # a new process, in effect
    assert cache.compile(SRC, arch="90", **ident).cached       # back to the first: on disk
    e = cache.compile(SRC, arch="80", **ident)
    assert e.reason == "arch changed"                          # not "options changed": compared with the hit


def test_python_kernels_compile_through_this_cache(cache_dir):
    """@gpk_array.kernel's CUDA goes through this cache (its lock, its records): the first compile of a
    specialization is a miss named by the kernel and its key, the source changing (another launch class) says so,
    gk.kernel.cache_info() shows it under "disk"."""
    import numpy as np
    sys.path.insert(0, ROOT)
    from tests.kernels_user.examples import saxpy
    from gpk_array._pykernel.api import Specialization
    from gpk_array._pykernel.backend import _compile_entry
    x = np.zeros(8, np.float32)
    _, key, _, _ = saxpy._prepare((2.0, x, x, x))
    spec = Specialization(saxpy, key + (("R", 1, True, True),), 0)
    e = _compile_entry(spec.source, "90", spec.cname, spec.identity)
    assert not e.cached and e.reason == "new source" and spec.cname in loader.cubin_symbols(e.path.read_bytes())
    assert spec.identity.startswith("@kernel tests.kernels_user.examples.saxpy ((")
    other = Specialization(saxpy, key + (("R", 1, False, True),), 0)   # another source under that identity
    e2 = _compile_entry(other.source, "90", other.cname, spec.identity)
    assert e2.reason == "source changed" and e2.path.parent == cache_dir / "sm_90"
    disk = gp.kernel.cache_info()["disk"]
    assert [r["identity"] for r in disk["compiles"]] == [spec.identity, spec.identity]
