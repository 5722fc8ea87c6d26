"""Admission control: deterministic decisions against the device's free memory and reservations (CPU device)."""

import pytest

from gpk_array import _hooks, sched
from gpk_array.sched import AdmissionError


def test_initialize_installs_hook_and_shutdown_removes_it():
    sched.shutdown()
    assert _hooks.alloc_hook is not sched.alloc_hook
    s = sched.initialize("cpu", total_vram_budget="1MiB")
    try:
        assert _hooks.alloc_hook is sched.alloc_hook
        assert s.device == "cpu" and s.capacity == 2**20
        assert sched.get_scheduler() is s and sched.get_scheduler("cpu") is s
    finally:
        sched.shutdown()
    assert _hooks.alloc_hook is not sched.alloc_hook


def test_not_initialized():
    sched.shutdown()
    with pytest.raises(RuntimeError, match="initialize"):
        sched.create_context("x", 100)


def test_cpu_capacity_defaults_to_physical_memory():
    sched.shutdown()
    s = sched.initialize("cpu")
    try:
        assert s.capacity > 0
    finally:
        sched.shutdown()


def test_guaranteed_admitted_only_if_reservation_fits(cpu_sched):
    a = sched.create_context("a", 600_000, qos="guaranteed")
    assert a.qos == "guaranteed" and a.max_vram == 600_000
    sched.create_context("b", 400_000)  # exactly what is left
    with pytest.raises(AdmissionError) as ei:
        sched.create_context("c", 1)
    msg = str(ei.value)
    assert "'c'" in msg and "reservation 1 B" in msg and "0 B" in msg
    # the refused context was not registered
    with pytest.raises(KeyError):
        sched.get_context("c")
    # destroying a reservation makes room again
    sched.destroy_context("a")
    sched.create_context("c", 600_000)


def test_reservation_numbers_in_error(cpu_sched):
    sched.create_context("g", 700_000)
    with pytest.raises(AdmissionError, match=r"reservation 400000 B .* unreserved free memory 300000 B"):
        sched.create_context("g2", 400_000)


def test_burstable_overcommit_ratio(cpu_sched):
    sched.create_context("g", 400_000)
    # free after guaranteed reservations: 600,000; 1.5x = 900,000 of burstable budgets
    sched.create_context("b1", 500_000, qos="burstable")
    sched.create_context("b2", 400_000, qos="burstable")
    with pytest.raises(AdmissionError, match="burstable budgets would sum to 900001 B"):
        sched.create_context("b3", 1, qos="burstable")


def test_burstable_overcommit_configurable():
    sched.shutdown()
    sched.initialize("cpu", total_vram_budget=1000, overcommit=2.0)
    try:
        sched.create_context("b1", 1500, qos="burstable")
        sched.create_context("b2", 500, qos="burstable")
        with pytest.raises(AdmissionError):
            sched.create_context("b3", 1, qos="burstable")
    finally:
        sched.shutdown()
    with pytest.raises(ValueError):
        sched.initialize("cpu", overcommit=0.5)


def test_best_effort_always_admitted(cpu_sched):
    sched.create_context("g", 1_000_000)
    be = sched.create_context("be", 10**15, qos="best_effort")
    assert be.qos == "best_effort"


def test_admission_sees_memory_in_use(cpu_sched, alloc):
    b = sched.create_context("b", 900_000, qos="burstable")
    with b:
        x = alloc(800_000)
    with pytest.raises(AdmissionError):
        sched.create_context("g", 300_000)
    del x
    sched.create_context("g", 300_000)


def test_partitions_group_budgets(cpu_sched):
    p = sched.create_partition("p", 500_000, compute_share=0.5)
    assert sched.get_partition("p") is p
    sched.create_context("a", 300_000, partition="p")
    sched.create_context("b", 200_000, qos="best_effort", partition=p)
    with pytest.raises(AdmissionError, match="partition 'p'"):
        sched.create_context("c", 1, partition=p)
    # the partition's memory is reserved on the device
    with pytest.raises(AdmissionError):
        sched.create_context("g", 500_001)
    sched.create_context("g", 500_000)
    with pytest.raises(AdmissionError):
        sched.create_partition("q", 1)
    st = sched.stats()["partitions"]["p"]
    assert st["committed"] == 500_000 and st["contexts"] == ["a", "b"]
    sched.destroy_partition("p")
    with pytest.raises(KeyError):
        sched.get_context("a")
    assert sched.get_context("g").max_vram == 500_000


def test_partition_validation(cpu_sched):
    with pytest.raises(ValueError):
        sched.create_partition("p", 100, compute_share=0)
    with pytest.raises(ValueError):
        sched.create_partition("p", 100, compute_share=1.5)
    sched.create_partition("p", 100)
    with pytest.raises(ValueError, match="already exists"):
        sched.create_partition("p", 100)
    with pytest.raises(KeyError):
        sched.create_context("x", 10, partition="nope")


def test_argument_validation(cpu_sched):
    with pytest.raises(ValueError, match="qos"):
        sched.create_context("x", 10, qos="premium")
    with pytest.raises(ValueError):
        sched.create_context("x", 0)
    with pytest.raises(ValueError, match="bandwidth"):
        sched.create_context("x", 10, qos="best_effort", bandwidth=0)
    with pytest.raises(ValueError, match="bandwidth"):
        sched.create_context("x", 10, qos="best_effort", bandwidth=1.5)
    with pytest.raises(TypeError):
        sched.create_context("", 10)
    sched.create_context("x", 10)
    with pytest.raises(ValueError, match="already exists"):
        sched.create_context("x", 10)


def test_parse_bytes_and_devices():
    assert sched.parse_bytes(1024) == 1024
    assert sched.parse_bytes("1KiB") == 1024
    assert sched.parse_bytes("1.5 GiB") == 3 * 2**29
    assert sched.parse_bytes("2GB") == 2 * 10**9
    with pytest.raises(ValueError):
        sched.parse_bytes("lots")
    with pytest.raises(ValueError):
        sched.parse_bytes(-1)
    with pytest.raises(TypeError):
        sched.parse_bytes(True)
    from gpk_array.sched._parse import parse_device as _parse_device

    assert _parse_device(0) == ("cuda", 0)
    assert _parse_device("cuda:1") == ("cuda", 1)
    assert _parse_device("cuda") == ("cuda", 0)
    assert _parse_device("cpu") == ("cpu", None)
    assert _parse_device("Device('cuda:2')") == ("cuda", 2)
    with pytest.raises(ValueError):
        _parse_device("tpu")


def test_reinitialize_with_live_contexts_raises(cpu_sched):
    sched.create_context("x", 10)
    with pytest.raises(RuntimeError, match="live contexts"):
        sched.initialize("cpu", total_vram_budget=10)
    sched.destroy_context("x")
    s = sched.initialize("cpu", total_vram_budget=10)
    assert s.capacity == 10


def test_list_get_and_stats(cpu_sched):
    a = sched.create_context("a", 100)
    b = sched.create_context("b", 200, qos="burstable")
    assert sched.list_contexts() == [a, b]
    assert sched.get_context("b") is b
    st = sched.stats()
    assert set(st["contexts"]) == {"a", "b"}
    for key in ("used", "peak", "budget", "evictions", "launches", "queued", "held", "refusals", "steps"):
        assert key in st["contexts"]["a"]
    assert st["contexts"]["b"]["budget"] == 200
    assert st["devices"]["cpu"]["capacity"] == 1_000_000
    assert st["devices"]["cpu"]["reserved_headroom"] == 100


def test_cuda_initialize_without_gpu_is_clean():
    from gpk_array.sched import _cuda

    if _cuda.device_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="no CUDA device"):
        sched.initialize("cuda:0")
