"""Misuse: wrong nesting, destroyed contexts, bad arguments; no deadlock under concurrent use."""

import threading
import time

import numpy as np
import pytest

from gpk_array import sched
from gpk_array.sched import ContextDestroyedError


def poll_until(ready, polls=60_000):
    """Poll ready() every millisecond, at most ``polls`` times: a bound against a hang (a deadlock then fails the
    test's own assertions), not a timing assertion; no clock is read."""
    for _ in range(polls):
        if ready():
            return
        time.sleep(0.001)


def test_nesting_contexts_of_different_devices_raises(cpu_sched):
    a = sched.create_context("a", 1000)
    b = sched.create_context("b", 1000)
    b.device = "cuda:7"  # pretend b lives elsewhere (a real CPU/GPU pair is covered by the GPU tests)
    with a:
        with pytest.raises(ValueError, match="same device"):
            with b:
                pass
        assert sched.current_context() is a  # the failed enter left nothing behind
    assert sched.current_context() is None


def test_destroyed_context_refuses_everything(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    sched.destroy_context("a")
    assert a.destroyed
    with pytest.raises(ContextDestroyedError):
        with a:
            pass
    with pytest.raises(ContextDestroyedError):
        a.launch(lambda: None)
    with pytest.raises(ContextDestroyedError):
        a.pace()
    with pytest.raises(ContextDestroyedError):
        a.wait_idle()
    with pytest.raises(ContextDestroyedError):
        a.register_cache("c", lambda: None)
    with pytest.raises(ContextDestroyedError):
        with sched.context_session(a):
            pass
    with pytest.raises(KeyError):
        sched.get_context("a")
    with pytest.raises(KeyError):
        sched.destroy_context("a")
    sched.destroy_context(a)  # destroying the object twice is a no-op
    assert issubclass(ContextDestroyedError, RuntimeError)


def test_destroy_while_entered(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    with a:
        x = alloc(10)
        sched.destroy_context(a)
        with pytest.raises(ContextDestroyedError):
            alloc(10)
    assert sched.current_context() is None
    del x


def test_destroy_runs_cache_evictions(cpu_sched):
    a = sched.create_context("a", 1000)
    called = []
    a.register_cache("kv", lambda: called.append("kv"))
    a.register_cache("bad", lambda: 1 / 0)  # a failing cache does not stop the destroy
    sched.destroy_context(a)
    assert called == ["kv"]


def test_exit_out_of_order_raises(cpu_sched):
    a = sched.create_context("a", 1000)
    b = sched.create_context("b", 1000)
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="out of order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert sched.current_context() is None


def test_same_context_reentrant(cpu_sched, alloc):
    a = sched.create_context("a", 1000)
    with a:
        with a:
            x = alloc(10)
        assert sched.current_context() is a
    assert a.stats()["sessions"] == 0
    del x


def test_exceptions_inside_restore_state(cpu_sched):
    a = sched.create_context("a", 1000)
    with pytest.raises(ZeroDivisionError):
        with a:
            1 / 0
    assert sched.current_context() is None
    with pytest.raises(ZeroDivisionError):
        a.launch(lambda: 1 / 0)
    assert sched.current_context() is None


def test_bad_cache_registration(cpu_sched):
    a = sched.create_context("a", 1000)
    with pytest.raises(TypeError):
        a.register_cache("x", "not callable")
    assert a.touch_cache("missing") is False
    assert a.unregister_cache("missing") is False
    a.register_cache("x", lambda: None)
    assert a.unregister_cache("x") is True


def test_concurrent_threads_no_deadlock(cpu_sched, alloc):
    """Threads allocating, freeing, evicting, waiting and destroying at once all finish: each worker runs rounds
    until told to stop; one context is destroyed once every worker has run 50 rounds (so while all of them run),
    and the others then run 50 more."""
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=200_000, wait_timeout=0.05)
    ctxs = [
        sched.create_context("g", 50_000),
        sched.create_context("b", 100_000, qos="burstable"),
        sched.create_context("be1", 150_000, qos="best_effort", bandwidth=0.5),
        sched.create_context("be2", 150_000, qos="best_effort"),
    ]
    stop = threading.Event()
    rounds = [0] * len(ctxs)
    ended = {}
    errors = []

    def worker(i, ctx):
        rng = np.random.default_rng(i)
        keep = []
        try:
            while not stop.is_set():
                with ctx:
                    try:
                        keep.append(alloc(int(rng.integers(1, 20_000))))
                    except MemoryError:
                        pass
                    if ctx.qos != "guaranteed" and rng.random() < 0.2:
                        store = keep
                        ctx.register_cache(f"c{len(keep)}", store.clear)
                    if rng.random() < 0.4:
                        try:
                            keep.pop(0)
                        except IndexError:  # an eviction from another thread emptied it
                            pass
                    ctx.pace()
                rounds[i] += 1
            ended[ctx.name] = "stopped"
        except ContextDestroyedError:
            ended[ctx.name] = "destroyed"
        except Exception as e:  # pragma: no cover
            errors.append(e)

    def wait_rounds(want, which):
        poll_until(lambda: all(rounds[i] >= want[i] for i in which) or errors)

    threads = [threading.Thread(target=worker, args=(i, c), daemon=True) for i, c in enumerate(ctxs)]
    for t in threads:
        t.start()
    try:
        wait_rounds([50] * 4, range(4))
        assert min(rounds) >= 50, ("stuck before the destroy", rounds, errors)
        sched.destroy_context("be2")  # destroyed under load
        wait_rounds([r + 50 for r in rounds], range(3))
        assert min(rounds[:3]) >= 50 + 50, ("stuck after the destroy", rounds, errors)
        poll_until(lambda: "be2" in ended or errors)  # be2's worker meets its destroyed context
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors
    assert ended == {"g": "stopped", "b": "stopped", "be1": "stopped", "be2": "destroyed"}
    for c in ctxs[:3]:
        assert c.used_bytes() <= c.max_vram
    sched.shutdown()


@pytest.mark.parametrize("kind", ["context", "partition"])
def test_contexts_and_partitions_report_names_alike(cpu_sched, kind):
    """Contexts and partitions are looked up by name the same way (one registry): a name that is not a non-empty
    string is a TypeError, a name taken a ValueError, a name not live (or None) a KeyError, each naming the kind."""
    create = sched.create_context if kind == "context" else sched.create_partition
    get = sched.get_context if kind == "context" else sched.get_partition
    destroy = sched.destroy_context if kind == "context" else sched.destroy_partition
    listed = sched.list_contexts if kind == "context" else sched.list_partitions
    for bad in ("", 3, None):
        with pytest.raises(TypeError, match=f"^{kind} name must be a non-empty string"):
            create(bad, 1000)
    first = create("x", 1000)
    with pytest.raises(ValueError, match=f"^a {kind} named 'x' already exists$"):
        create("x", 1000)
    assert get("x") is first and listed() == [first]
    for missing in ("y", None):
        with pytest.raises(KeyError, match=f"no {kind} named {missing!r}"):
            destroy(missing)
    with pytest.raises(KeyError, match=f"no {kind} named 'y'"):
        get("y")
    destroy("x")
    assert listed() == []
    with pytest.raises(KeyError, match=f"no {kind} named 'x'"):
        get("x")
    destroy(first)  # the object itself, destroyed already: a no-op
