"""Randomized stress: 1,000 allocate/free sequences over 4 contexts, checked against an independent model."""

import random

import numpy as np
import pytest

from gpk_array import sched

CAPACITY = 1_000_000


def _model_fits(ctx_name, n, used, budgets, qos):
    """Independent re-statement of the policy for this fixed set-up (no partitions, no caches)."""
    if used[ctx_name] + n > budgets[ctx_name]:
        return False
    if qos[ctx_name] == "guaranteed":
        return True
    free = CAPACITY - sum(used.values())
    headroom = sum(max(0, budgets[c] - used[c]) for c in budgets if qos[c] == "guaranteed")
    return n <= free - headroom


@pytest.mark.parametrize("seed", [0, 1])
def test_random_allocate_free_sequences(seed, alloc):
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=CAPACITY, wait_timeout=0)
    try:
        qos = {"g1": "guaranteed", "g2": "guaranteed", "b": "burstable", "be": "best_effort"}
        budgets = {"g1": 250_000, "g2": 150_000, "b": 500_000, "be": 700_000}
        ctxs = {name: sched.create_context(name, budgets[name], qos=qos[name]) for name in budgets}
        rng = random.Random(seed)
        live = {name: [] for name in budgets}
        used = {name: 0 for name in budgets}
        granted = refused = over_budget = mismatches = 0
        for _ in range(1000):  # one sequence: a burst of allocations in one context, then some frees
            name = rng.choice(list(budgets))
            ctx = ctxs[name]
            with ctx:
                for _ in range(rng.randint(1, 6)):
                    n = rng.choice([64, 512, 4096, 20_000, 60_000, 150_000])
                    expect = _model_fits(name, n, used, budgets, qos)
                    try:
                        arr = alloc(n)
                    except MemoryError:
                        refused += 1
                        mismatches += expect
                    else:
                        granted += 1
                        mismatches += not expect
                        live[name].append(arr)
                        used[name] += n
                    if ctx.used_bytes() > budgets[name]:
                        over_budget += 1
            for other in rng.sample(list(budgets), k=rng.randint(0, 4)):
                arrays = live[other]
                for _ in range(rng.randint(0, len(arrays))):
                    arr = arrays.pop(rng.randrange(len(arrays)))
                    used[other] -= arr.nbytes
                    del arr
            # the ledger matches the live buffers exactly, and never exceeds a budget or the device
            for cname, c in ctxs.items():
                assert c.used_bytes() == used[cname] == sum(a.nbytes for a in live[cname])
                assert c.used_bytes() <= budgets[cname]
            assert sum(used.values()) <= CAPACITY
        assert over_budget == 0
        assert mismatches == 0
        assert granted > 500 and refused > 50  # both paths were exercised
        st = sched.stats()["contexts"]
        assert sum(st[c]["refusals"] for c in st) == refused
        for arrays in live.values():
            arrays.clear()
        assert all(c.used_bytes() == 0 for c in ctxs.values())
    finally:
        sched.shutdown()


def test_stress_through_views(wrap):
    """Views of charged buffers never add to the ledger, whatever the order of frees."""
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=CAPACITY)
    try:
        ctx = sched.create_context("v", 200_000)
        rng = random.Random(7)
        live = []
        with ctx:
            for _ in range(1000):
                if live and rng.random() < 0.5:
                    live.pop(rng.randrange(len(live)))
                    continue
                if live and rng.random() < 0.5:
                    a = live[rng.randrange(len(live))]
                    live.append(wrap(a[rng.randrange(max(1, a.size)):]))
                    continue
                try:
                    live.append(wrap(np.empty(rng.choice([100, 1000, 10_000]), np.uint8)))
                except MemoryError:
                    pass
                owners = {}
                for a in live:
                    o = a
                    while o.base is not None:
                        o = o.base
                    owners[id(o)] = o.nbytes
                assert ctx.used_bytes() == sum(owners.values()) <= 200_000
                a = o = None  # drop the loop's references
        a = o = None
        live.clear()
        assert ctx.used_bytes() == 0
    finally:
        sched.shutdown()
