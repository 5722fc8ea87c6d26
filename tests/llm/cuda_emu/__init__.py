"""The sampler kernel (gpk_array/_kernels/cuda/sampling.cu) built for the host against emu.h, called through ctypes.

``build()`` compiles it once per source content (g++, or None without one); ``Emulated.run`` takes the same
arguments as ``gpk_array.llm.sampling.run_numpy`` (float32 logits) and writes the same outputs.
"""
import ctypes
import hashlib
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parents[2] / "gpk_array" / "_kernels" / "cuda" / "sampling.cu"
SOURCES = (SOURCE, SOURCE.with_name("sampling_cluster.cuh"))
_built = {}


def compiler():
    """The host C++ compiler (g++ or c++), or None."""
    return shutil.which("g++") or shutil.which("c++")


def build():
    """An Emulated kernel, compiled once per content of the sources (None without a C++ compiler)."""
    cxx = compiler()
    if cxx is None:
        return None
    text = b"".join(p.read_bytes() for p in (*SOURCES, HERE / "emu.h", HERE / "driver.cpp"))
    key = hashlib.sha256(text).hexdigest()[:16]
    if key not in _built:
        out = pathlib.Path(tempfile.gettempdir()) / f"gpk_sampler_emu_{key}.so"
        if not out.is_file():
            tmp = out.with_suffix(f".{id(out)}.tmp")
            cmd = [cxx, "-std=c++20", "-O1", "-ffp-contract=off", "-fPIC", "-shared", "-pthread", "-DGPK_EMULATE",
                   "-include", str(HERE / "emu.h"), "-x", "c++", str(HERE / "driver.cpp"), "-o", str(tmp)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"building the emulated sampler failed:\n{r.stdout}\n{r.stderr}")
            tmp.replace(out)
        _built[key] = Emulated(ctypes.CDLL(str(out)))
    return _built[key]


def _p(a):
    return None if a is None else ctypes.c_void_p(a.ctypes.data)


class Emulated:
    """The emulated kernel."""

    def __init__(self, lib):
        self.fn = lib.emu_sample
        self.fn.restype = None
        self.fn_cl = lib.emu_sample_cl
        self.fn_cl.restype = None

    def run(self, logits, table, counts, seen, bias, counted, *, slots=None, tok=None, pos=None, prompt=None,
            out=None, logprobs=None, logprob_ids=None, next_tok=None, next_pos=None, max_pos=0, threads=128,
            work=None, cluster=False):
        """One launch over the rows of logits (float32 (R, V), C-contiguous), writing out etc. in place (work:
        the kernel's scratch, (R, >= V) float32 with rows of a multiple of 4, where sampled rows leave their
        probabilities). cluster: the cluster kernel (gpk_sample_cl_f32, no work buffer) instead."""
        R, V = logits.shape
        assert logits.dtype == np.float32 and logits.flags.c_contiguous
        work = np.zeros((R, -(-V // 4) * 4), dtype=np.float32) if work is None else work
        out = np.zeros(R, dtype=np.int64) if out is None else out
        lp = np.zeros((R, 21), dtype=np.float32) if logprobs is None else logprobs
        ids = np.zeros((R, 20), dtype=np.int32) if logprob_ids is None else logprob_ids
        def i64(a):
            return None if a is None else np.ascontiguousarray(a, dtype=np.int64).reshape(-1)

        slots, tok, pos = i64(slots), i64(tok), i64(pos)
        pr = None if prompt is None else np.ascontiguousarray(prompt, dtype=np.int64)
        for a, dt in ((table, np.uint64), (counts, np.int32), (seen, np.uint8), (bias, np.float32),
                      (counted, np.int64), (out, np.int64), (lp, np.float32), (ids, np.int32)):
            assert a.dtype == dt and a.flags.c_contiguous, (a.dtype, dt)
        if cluster:
            self.fn_cl(ctypes.c_int(threads), ctypes.c_int(R), _p(logits), ctypes.c_longlong(V), ctypes.c_int(V),
                       _p(slots), _p(tok), _p(pos), _p(table), _p(counts), _p(seen), _p(bias), _p(counted), _p(pr),
                       ctypes.c_longlong(0 if pr is None else pr.shape[1]), _p(out), _p(lp), _p(ids), _p(next_tok),
                       _p(next_pos), ctypes.c_longlong(max_pos))
            return out
        self.fn(ctypes.c_int(threads), ctypes.c_int(R), _p(logits), ctypes.c_longlong(V), ctypes.c_int(V), _p(slots),
                _p(tok), _p(pos), _p(table), _p(counts), _p(seen), _p(bias), _p(counted), _p(pr),
                ctypes.c_longlong(0 if pr is None else pr.shape[1]), _p(work), ctypes.c_longlong(work.shape[1]),
                _p(out), _p(lp), _p(ids),
                _p(next_tok), _p(next_pos), ctypes.c_longlong(max_pos))
        return out
