"""Reliability of the CPU budget: what a view is charged, caches that misbehave under eviction, argument
validation, and the budget check made before NumPy allocates (CPU device, the real gpk_array namespace).

Nothing here reads the wall clock: charges are byte counts, evictions are call counts, and the memory a refused
request took is NumPy's traced peak (tracemalloc) or the process's peak resident size (a count of KiB)."""

import asyncio
import gc
import logging
import math
import os
import subprocess
import sys
import textwrap
import threading
import tracemalloc

import numpy as np
import pytest

import gpk_array as xp
from gpk_array import _hooks, sched
from gpk_array.sched import _hook

try:
    from gpk_array.sched import _nptag
except ImportError:  # a scheduler without it fails the tests that need it, not the whole module
    _nptag = None

MiB = 2**20


def _owner(d):
    while d.base is not None:
        d = d.base
    return d


def _owner_bytes(results):
    """Bytes of the distinct NumPy buffers that own the memory of ``results`` (an Array or a sequence of them)."""
    rs = results if isinstance(results, (tuple, list)) else [results]
    owners = {id(_owner(r._data)): _owner(r._data).nbytes for r in rs}
    return sum(owners.values())


@pytest.fixture
def big_cpu():
    """A CPU scheduler with room for the arrays of these tests; torn down afterwards."""
    sched.shutdown()
    s = sched.initialize("cpu", total_vram_budget=256 * MiB, wait_timeout=0.0)
    yield s
    sched.shutdown()
    gc.collect()


# --- 1. views allocate nothing; views of fresh buffers charge the buffer -----------------------------------------

def test_tagging_is_available():
    """The rule below needs NumPy's memory-handler API (NumPy >= 1.22, which gpk_array requires)."""
    assert _nptag.available


# views of arrays allocated outside any context (13 kinds): make(x, m, v, host) -> the view(s)
VIEW_KINDS = {
    "slicing": lambda x, m, v, h: x[1:3, ::2],
    "integer_index": lambda x, m, v, h: x[0],
    "reshape": lambda x, m, v, h: xp.reshape(x, (32, 16)),
    "T": lambda x, m, v, h: m.T,
    "mT": lambda x, m, v, h: x.mT,
    "expand_dims": lambda x, m, v, h: xp.expand_dims(x, axis=0),
    "squeeze": lambda x, m, v, h: xp.squeeze(x[:1], axis=0),
    "broadcast_to": lambda x, m, v, h: xp.broadcast_to(v, (8, 16)),
    "asarray_of_numpy": lambda x, m, v, h: xp.asarray(h),
    "flip": lambda x, m, v, h: xp.flip(x, axis=0),
    "permute_dims": lambda x, m, v, h: xp.permute_dims(x, (2, 0, 1)),
    "moveaxis": lambda x, m, v, h: xp.moveaxis(x, 0, -1),
    "unstack": lambda x, m, v, h: xp.unstack(x, axis=0),
}


@pytest.mark.parametrize("kind", sorted(VIEW_KINDS))
def test_views_of_outside_arrays_charge_nothing(big_cpu, kind):
    ctx = sched.create_context("views", 64 * MiB)
    x = xp.ones((4, 8, 16), device="cpu")  # all allocated outside any context
    m = xp.ones((8, 16), device="cpu")
    v = xp.ones((16,), device="cpu")
    host = np.ones((64, 64))
    with ctx:
        view = VIEW_KINDS[kind](x, m, v, host)
        views = view if isinstance(view, (tuple, list)) else [view]
        sources = (x._data, m._data, v._data, host)
        assert all(any(np.shares_memory(w._data, o) for o in sources) for w in views)  # (views indeed)
        assert ctx.used_bytes() == 0
    del view, views
    gc.collect()
    assert ctx.used_bytes() == 0
    assert ctx.stats()["peak"] == 0  # never charged, not even for a moment


def test_views_through_the_hook_of_outside_buffers_charge_nothing(cpu_sched, wrap):
    """The hook itself (as the core calls it): a pre-existing buffer's views are never charged."""
    a = sched.create_context("a", 100)
    base = np.ones(4000, dtype=np.uint8)  # outside: far over the budget, and never the context's
    with a:
        v1 = wrap(base[100:200])
        v2 = wrap(base.reshape(40, 100)[::2].T)
        v3 = wrap(np.broadcast_to(base[:10], (50, 10)))
        assert a.used_bytes() == 0
    del v1, v2, v3
    assert a.used_bytes() == 0


def _vecdot(a, b, m, h):
    return xp.vecdot(a, b)  # inside: xp.matmul(a[..., None, :], b[..., :, None])[..., 0, 0], a view of a temporary


FRESH_OPS = {
    "vecdot": _vecdot,
    "add_then_reshape": lambda a, b, m, h: xp.reshape(a + b, (32, 16)),
    "matmul_then_T": lambda a, b, m, h: (m @ m).T,
    "matmul_then_mT": lambda a, b, m, h: xp.matmul(a, xp.permute_dims(b, (0, 2, 1))).mT,
    "diagonal_of_product": lambda a, b, m, h: xp.linalg.diagonal(m @ m),
    "reshape_needing_a_copy": lambda a, b, m, h: xp.reshape(xp.permute_dims(a, (2, 0, 1)), (-1,)),
    "boolean_mask": lambda a, b, m, h: a[a > 0],
    "index_array": lambda a, b, m, h: a[xp.asarray([0, 2])],
    "asarray_of_numpy_made_inside": lambda a, b, m, h: xp.asarray(np.add(h, h).reshape(-1)),
    "astype": lambda a, b, m, h: xp.astype(a, xp.float32),
    "unstack_of_sum": lambda a, b, m, h: xp.unstack(a + b, axis=0),
    "flip_of_zeros": lambda a, b, m, h: xp.flip(xp.zeros((64, 3)), axis=0),
}


@pytest.mark.parametrize("op", sorted(FRESH_OPS))
def test_views_of_fresh_buffers_charge_exactly_the_buffer(big_cpu, op):
    ctx = sched.create_context("fresh", 64 * MiB)
    a = xp.ones((4, 8, 16), device="cpu")
    b = xp.full((4, 8, 16), 2.0, device="cpu")
    m = xp.ones((8, 8), device="cpu")
    host = np.ones((64, 64))
    with ctx:
        r = FRESH_OPS[op](a, b, m, host)
        expected = _owner_bytes(r)
        assert expected > 0
        assert ctx.used_bytes() == expected
    del r
    gc.collect()
    assert ctx.used_bytes() == 0


def test_fresh_temporary_viewed_through_the_hook_is_charged(cpu_sched, wrap):
    a = sched.create_context("a", 10_000)
    x = np.ones(1000, dtype=np.uint8)  # outside
    y = np.ones(1000, dtype=np.uint8)
    with a:
        v = wrap(np.add(x, y).reshape(10, 100))  # the owner is the (unwrapped) temporary made here
        w = wrap(np.add(x, y)[::3])
        assert a.used_bytes() == 2000
    del v, w
    assert a.used_bytes() == 0


def test_view_of_a_destroyed_contexts_buffer_is_not_charged_elsewhere(cpu_sched, wrap, alloc):
    a = sched.create_context("a", 1000)
    with a:
        x = alloc(900)
    sched.destroy_context(a)
    b = sched.create_context("b", 100)
    with b:
        v = wrap(x[10:])  # x was allocated (in a), not now
        assert b.used_bytes() == 0
    del x, v
    gc.collect()
    assert b.used_bytes() == 0 and not any(r.ctx is a for r in _hook.charged.values())


def test_tagging_is_per_thread_and_undone_on_exit(cpu_sched, wrap):
    """Only the thread inside the context allocates tagged memory; an array another thread makes meanwhile is
    outside, and the handler is NumPy's again after the context exits, also after an exception."""
    from numpy._core.multiarray import get_handler_name

    default = get_handler_name()
    assert default != _nptag.NAME
    a = sched.create_context("a", 100_000)
    inside, outside = threading.Event(), threading.Event()
    made = {}

    def other():
        inside.wait(5)
        made["x"] = np.ones(5000, dtype=np.uint8)
        made["name"] = get_handler_name()
        outside.set()

    t = threading.Thread(target=other)
    t.start()
    with a:
        assert get_handler_name() == _nptag.NAME
        inside.set()
        assert outside.wait(5)
        v = wrap(made["x"][1:])
        assert a.used_bytes() == 0
        own = wrap(np.ones(300, dtype=np.uint8)[1:])
        assert a.used_bytes() == 300
    t.join(5)
    assert made["name"] == default
    assert get_handler_name() == default
    with pytest.raises(ZeroDivisionError):
        with a:
            1 / 0
    assert get_handler_name() == default
    del v, own


def test_tagging_is_per_task(cpu_sched, wrap):
    """Two asyncio tasks on one thread: the one inside the context sees its allocations charged, the other's
    arrays (made between the first one's awaits) are outside."""
    from numpy._core.multiarray import get_handler_name

    a = sched.create_context("a", 100_000)
    made = {}

    async def inside():
        async with a:
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            made["in"] = wrap(np.ones(200, dtype=np.uint8)[2:])
            made["view"] = wrap(made["out"][5:])
            return a.used_bytes()

    async def outside():
        await asyncio.sleep(0)
        made["out"] = np.ones(7000, dtype=np.uint8)
        made["name"] = get_handler_name()

    async def main():
        return await asyncio.gather(inside(), outside())

    used, _ = asyncio.run(main())
    assert used == 200
    assert made["name"] != _nptag.NAME
    made.clear()
    assert a.used_bytes() == 0


def test_nested_contexts_keep_a_program_handler(cpu_sched, alloc):
    """A memory handler the program set itself: contexts allocate with its functions (under our name), and it is
    the program's again after them."""
    import ctypes

    from numpy._core.multiarray import get_handler_name

    program = _nptag._copy(_nptag._default)  # stands for a handler of the program's own: not ours, its own name
    del _nptag._ours[id(program)]
    ctypes.memmove(_nptag._capsule_get_pointer(program, b"mem_handler"), b"program\0", 8)
    prev = _nptag._set_handler(program)
    try:
        assert get_handler_name() == "program"
        a = sched.create_context("a", 10_000)
        b = sched.create_context("b", 10_000)
        with a:
            x = alloc(100)
            assert get_handler_name() == _nptag.NAME
            with b:
                y = alloc(200)
                assert get_handler_name() == _nptag.NAME
            z = alloc(300)
        assert get_handler_name() == "program"
        assert (a.used_bytes(), b.used_bytes()) == (400, 200)
        wrapper = _nptag._wrappers[id(program)][1]
        assert _nptag._capsule_get_pointer(wrapper, b"mem_handler") != _nptag._capsule_get_pointer(
            _nptag._tag, b"mem_handler")
    finally:
        _nptag._set_handler(prev)
    del x, y, z


# --- 2. misbehaving caches; argument validation -------------------------------------------------------------------

def _reregistering(ctx, name, calls, limit=50):
    """An evict() that frees nothing and registers its cache again (after ``limit`` calls it raises, so that a
    scheduler that keeps evicting it fails instead of hanging)."""
    def evict():
        calls.append(name)
        if len(calls) > limit:
            raise RuntimeError("evicted forever")
        ctx.register_cache(name, evict, nbytes=100)
    ctx.register_cache(name, evict, nbytes=100)


def test_cache_reregistering_itself_does_not_livelock_the_budget(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    calls = []
    _reregistering(a, "kv", calls)
    with a:
        x = alloc(900)
        with pytest.raises(sched.OutOfMemoryError, match="exceeds its budget"):
            alloc(500)
    assert calls == ["kv"]  # evicted once for this request
    assert a.stats()["refusals"] == 1
    with a, pytest.raises(sched.OutOfMemoryError):
        alloc(500)  # a new request may evict it again, once
    assert calls == ["kv", "kv"]
    del x


def test_cache_reregistering_itself_does_not_livelock_device_admission(cpu_sched, alloc):
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000, wait_timeout=0.0)
    g = sched.create_context("g", 600)
    b = sched.create_context("b", 600, qos="burstable")
    be = sched.create_context("be", 1000, qos="best_effort")
    calls = []
    _reregistering(b, "own", calls)
    _reregistering(be, "lower", calls)
    with b:
        with pytest.raises(sched.OutOfMemoryError, match="unreserved free"):
            alloc(500)  # only 400 unreserved
    assert sorted(calls) == ["lower", "own"]
    del g


def test_failing_evict_reported_as_the_cause_of_out_of_memory(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    calls = []

    def broken():
        calls.append("broken")
        raise ValueError("disk on fire")

    a.register_cache("broken", broken, nbytes=100)
    with a:
        x = alloc(900)
        with pytest.raises(sched.OutOfMemoryError) as ei:
            alloc(500)
    err = ei.value
    assert isinstance(err.__cause__, ValueError) and str(err.__cause__) == "disk on fire"
    assert "'broken'" in str(err) and "ValueError: disk on fire" in str(err) and "budget" in str(err)
    assert calls == ["broken"]
    assert a.unregister_cache("broken") is False  # it is unregistered: no later request calls it again
    del x


def test_failing_evict_does_not_stop_other_evictions(cpu_sched, alloc, caplog):
    a = sched.create_context("a", 1000)
    held = {}
    with a:
        held["good"] = alloc(600)

    def broken():
        raise KeyError("lost")

    a.register_cache("good", held.clear, nbytes=600)
    a.register_cache("broken", broken, nbytes=100)
    a.touch_cache("good")  # "broken" is the least recently used: evicted first
    with caplog.at_level(logging.WARNING, logger="gpk_array.sched"), a:
        x = alloc(700)  # fits once "good" is gone: admitted, and the failure is logged
    assert held == {} and a.used_bytes() == 700
    assert any("'broken'" in r.getMessage() and "KeyError" in r.getMessage() for r in caplog.records)
    del x


@pytest.mark.parametrize("kwargs, exc, word", [
    ({"wait_timeout": "x"}, TypeError, "wait_timeout"),
    ({"wait_timeout": -1}, ValueError, "wait_timeout"),
    ({"wait_timeout": math.nan}, ValueError, "wait_timeout"),
    ({"wait_timeout": True}, TypeError, "wait_timeout"),
    ({"bandwidth": "x"}, TypeError, "bandwidth"),
    ({"bandwidth": "0.5"}, TypeError, "bandwidth"),
    ({"bandwidth": True}, TypeError, "bandwidth"),
    ({"bandwidth": 0}, ValueError, "bandwidth"),
    ({"bandwidth": 1.5}, ValueError, "bandwidth"),
    ({"bandwidth": math.nan}, ValueError, "bandwidth"),
    ({"qos": ["guaranteed"]}, TypeError, "qos"),
    ({"qos": None}, TypeError, "qos"),
    ({"qos": "gold"}, ValueError, "qos"),
    ({"max_vram": "x"}, ValueError, "max_vram"),
    ({"max_vram": [1]}, TypeError, "max_vram"),
    ({"max_vram": True}, TypeError, "max_vram"),
    ({"max_vram": 0}, ValueError, "max_vram"),
    ({"max_vram": -5}, ValueError, "max_vram"),
    ({"max_vram": math.inf}, ValueError, "max_vram"),
    ({"partition": 3}, TypeError, "partition"),
])
def test_create_context_validates_its_arguments(cpu_sched, kwargs, exc, word):
    args = {"name": "c", "max_vram": 1000, **kwargs}
    with pytest.raises(exc, match=word):
        sched.create_context(**args)
    assert sched.list_contexts() == []


def test_valid_arguments_still_accepted(cpu_sched):
    c = sched.create_context("c", "1KiB", qos="best_effort", bandwidth=np.float32(0.5), wait_timeout=np.int64(2))
    assert (c.max_vram, c.bandwidth, c.wait_timeout) == (1024, 0.5, 2.0)
    d = sched.create_context("d", 10, wait_timeout=0, bandwidth=1)
    assert (d.wait_timeout, d.bandwidth) == (0.0, 1.0)


@pytest.mark.parametrize("kwargs, exc, word", [
    ({"wait_timeout": "x"}, TypeError, "wait_timeout"),
    ({"wait_timeout": -0.5}, ValueError, "wait_timeout"),
    ({"overcommit": "x"}, TypeError, "overcommit"),
    ({"overcommit": 0.5}, ValueError, "overcommit"),
])
def test_initialize_validates_its_arguments(kwargs, exc, word):
    sched.shutdown()
    with pytest.raises(exc, match=word):
        sched.initialize("cpu", total_vram_budget=1000, **kwargs)


def test_compute_share_and_wait_for_memory_timeout_validated(cpu_sched):
    with pytest.raises(TypeError, match="compute_share"):
        sched.create_partition("p", 1000, compute_share="x")
    c = sched.create_context("c", 1000)
    with pytest.raises(TypeError, match="timeout"):
        asyncio.run(c.wait_for_memory(10, timeout="x"))


# --- 3. the budget is checked before NumPy allocates --------------------------------------------------------------

REQUEST = 8 * MiB  # bytes each refused creation below asks for, in a 1 MiB context

CREATIONS = {
    "zeros": lambda: xp.zeros(REQUEST // 8, device="cpu"),
    "ones": lambda: xp.ones(REQUEST // 8, device="cpu"),
    "empty": lambda: xp.empty(REQUEST // 8, device="cpu"),
    "zeros_fortran": lambda: xp.zeros((REQUEST // 64, 8), order="F", device="cpu"),
    "full": lambda: xp.full(REQUEST // 8, 2.0, device="cpu"),
    "full_array_fill": lambda row: xp.full((REQUEST // 64, 8), row, device="cpu"),
    "zeros_like": lambda small: xp.zeros_like(small),
    "ones_like": lambda small: xp.ones_like(small),
    "empty_like": lambda small: xp.empty_like(small),
    "full_like": lambda small: xp.full_like(small, 3.0),
    "arange_int": lambda: xp.arange(REQUEST // 8, device="cpu"),
    "arange_float": lambda: xp.arange(0.0, REQUEST // 8, 1.0, device="cpu"),
    "linspace": lambda: xp.linspace(0.0, 1.0, REQUEST // 8, device="cpu"),
    "eye": lambda: xp.eye(1024, 1024, device="cpu"),
    "asarray_copy": lambda src: xp.asarray(src, copy=True),
    "asarray_numpy_copy": lambda src: xp.asarray(src._data, copy=True),
    "asarray_dtype_change": lambda src32: xp.asarray(src32, dtype=xp.float64),
    "array": lambda src: xp.array(src),
    "copy": lambda src: src.copy(),
    "astype": lambda src: xp.astype(src, xp.complex128),
    "random_generator": lambda: xp.random.default_rng(0).random(REQUEST // 8),
    "random_normal_size": lambda: xp.random.default_rng(0).normal(0.0, 1.0, size=(REQUEST // 64, 8)),
    "random_legacy": lambda: xp.random.rand(REQUEST // 64, 8),
    "random_fast": lambda: xp.random.fast_rng(0, device="cpu").standard_normal(REQUEST // 8),
    # results of computations on small (or broadcast, allocation-free) operands
    "unary": lambda small: xp.exp(small),
    "binary": lambda small: xp.add(small, small),
    "binary_mixed_dtypes": lambda small, row32: xp.multiply(small, row32),
    "binary_scalar": lambda small: xp.subtract(small, 1.0),
    "operator": lambda small: small * small,
    "operator_scalar": lambda small: small + 2,
    "comparison": lambda wide: xp.less(wide, wide),
    "matmul_outer": lambda col, row2: xp.matmul(col, row2),
    "matmul_batched": lambda col3, row2: col3 @ row2,
}


@pytest.fixture
def small_ctx():
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=64 * MiB, wait_timeout=0.0)
    ctx = sched.create_context("small", MiB)
    yield ctx
    sched.shutdown()
    gc.collect()


@pytest.mark.parametrize("kind", sorted(CREATIONS))
def test_refused_creation_allocates_nothing(small_ctx, kind):
    """NumPy's traced memory (tracemalloc sees every array buffer, calloc'ed zeros too) never held the request."""
    fn = CREATIONS[kind]
    params = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    # made outside the context: a float64 shape of REQUEST bytes in 8 bytes of memory (for the *_like functions),
    # a float64 array of REQUEST bytes, a float32 NumPy array of half that
    makers = {"small": lambda: xp.broadcast_to(xp.zeros((1, 1), device="cpu"), (REQUEST // 64, 8)),
              "src": lambda: xp.ones(REQUEST // 8, device="cpu"),
              "src32": lambda: np.ones(REQUEST // 8, dtype=np.float32),
              "row": lambda: xp.arange(8.0, device="cpu"),
              "row32": lambda: xp.arange(8.0, dtype=xp.float32, device="cpu"),
              "col": lambda: xp.ones((REQUEST // 64, 1), device="cpu"),
              "col3": lambda: xp.ones((2, REQUEST // 128, 1), device="cpu"),
              "row2": lambda: xp.ones((1, 8), device="cpu"),
              "wide": lambda: xp.broadcast_to(xp.zeros((1, 1), device="cpu"), (REQUEST // 8, 8))}
    call_args = [makers[p]() for p in params]
    gc.collect()
    tracemalloc.start()
    try:
        with small_ctx, pytest.raises(sched.OutOfMemoryError, match="'small'"):
            fn(*call_args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < REQUEST // 4, f"{kind}: {peak} bytes traced for a refused {REQUEST}-byte request"
    assert small_ctx.used_bytes() == 0
    assert small_ctx.stats()["refusals"] == 1  # refused once (before allocating), not twice


def test_refused_creation_does_not_raise_peak_rss():
    """In a fresh process: with a 1 MiB context, 256 MiB creations raise OutOfMemoryError and the process's peak
    resident size (ru_maxrss, KiB) does not grow by the request (zeros alone would not show it: calloc'ed pages
    are only resident once written, so ones, full, arange and a copy are checked too)."""
    code = textwrap.dedent("""
        import resource, sys
        import gpk_array as xp
        from gpk_array import sched
        sched.initialize("cpu")
        ctx = sched.create_context("small", 2**20)
        n = 32 * 2**20
        src = None
        makers = [lambda: xp.zeros(n, device="cpu"), lambda: xp.ones(n, device="cpu"),
                  lambda: xp.full(n, 2.0, device="cpu"), lambda: xp.arange(n, device="cpu"),
                  lambda: xp.random.default_rng(0).random(n)]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        refused = 0
        for make in makers:
            with ctx:
                try:
                    make()
                except xp.OutOfMemoryError:
                    refused += 1
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(refused, after - before)
    """)
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    refused, grew_kib = map(int, out.stdout.split())
    assert refused == 5
    assert grew_kib < 64 * 1024, f"peak RSS grew by {grew_kib} KiB for refused 256 MiB requests"


def test_precheck_evicts_caches_then_allocates(small_ctx):
    held = {}
    with small_ctx:
        held["kv"] = xp.ones(96 * 1024, device="cpu")  # 768 KiB
    small_ctx.register_cache("kv", held.clear, nbytes=768 * 1024)
    with small_ctx:
        x = xp.zeros(64 * 1024, device="cpu")  # 512 KiB: fits once the cache is gone
    assert held == {} and small_ctx.used_bytes() == 512 * 1024
    assert small_ctx.stats()["evictions"] == 1
    del x


def test_prealloc_hook_installed_only_while_a_cpu_context_is_entered(small_ctx):
    assert _hooks.prealloc_hook is None
    other = sched.create_context("other", MiB)
    entered, leave = threading.Event(), threading.Event()

    def worker():
        with other:
            entered.set()
            leave.wait(5)

    with small_ctx:
        assert _hooks.prealloc_hook is not None
        t = threading.Thread(target=worker)
        t.start()
        assert entered.wait(5)
    assert _hooks.prealloc_hook is not None  # the other thread is still inside
    x = xp.zeros(REQUEST // 8, device="cpu")  # this thread is outside every context: not refused
    leave.set()
    t.join(5)
    assert _hooks.prealloc_hook is None
    assert small_ctx.used_bytes() == other.used_bytes() == 0
    del x
    sched.shutdown()
    assert _hooks.prealloc_hook is None


def test_small_creations_inside_a_context_still_charged_exactly(small_ctx):
    with small_ctx:
        xs = [xp.zeros(3, device="cpu"), xp.arange(10, device="cpu"), xp.ones((4, 4), dtype=xp.float32)]
        assert small_ctx.used_bytes() == 24 + 80 + 64
        with pytest.raises(sched.OutOfMemoryError):
            [xp.zeros(60_000, device="cpu") for _ in range(3)]  # 480 KB each: the third does not fit
    del xs
    gc.collect()
    assert small_ctx.used_bytes() == 0
