"""Issue 5's integration case: two GPT-2 models, each in its own scheduler context, generating concurrently in one
process; each context's budget is enforced and each model's output is what it gives alone. On the CPU device, and
on cuda:0 (decode steps in CUDA graphs replayed on each context's stream) where a GPU exists."""
import pathlib
import threading

import pytest

import gpk_array as xp
from gpk_array import sched
from gpk_array.llm import GPT2, generate

from .conftest import requires_gpu

MODEL = pathlib.Path(__file__).parent / "llm" / "data" / "tiny-gpt2"


@pytest.fixture
def cpu_scheduler():
    sched.initialize("cpu", total_vram_budget=1 << 30)
    yield
    sched.shutdown()


@pytest.fixture(params=["cpu", pytest.param("cuda:0", marks=[pytest.mark.gpu, requires_gpu])])
def scheduler_device(request):
    sched.initialize(request.param if request.param == "cpu" else 0, total_vram_budget=1 << 30)
    yield request.param
    sched.shutdown()


def test_two_models_generate_concurrently_in_two_contexts(scheduler_device):
    prompts = {"a": [[5, 17, 300, 2], [9, 9]], "b": [[700, 1, 42]]}
    alone = {}
    models = {}
    for name in prompts:
        models[name] = GPT2.from_pretrained(MODEL, device=scheduler_device, dtype=xp.float32)
        alone[name] = generate(models[name], prompts[name], max_new_tokens=12)
    ctxs = {name: sched.create_context(f"tenant-{name}", 256 << 20, qos="guaranteed") for name in prompts}
    results, errors = {}, []

    def run(name):
        try:
            with ctxs[name]:
                results[name] = generate(models[name], prompts[name], max_new_tokens=12)
        except Exception as e:  # reported below: a thread's exception would otherwise vanish
            errors.append(e)

    threads = [threading.Thread(target=run, args=(n,)) for n in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "generation did not finish"
    assert not errors, errors
    assert results == alone
    stats = sched.stats()["contexts"]
    for name in prompts:
        s = stats[f"tenant-{name}"]
        assert s["peak"] > 0  # the generation's arrays were charged to its own context
        assert s["peak"] <= 256 << 20


def test_a_context_budget_stops_a_model_that_does_not_fit(cpu_scheduler):
    model = GPT2.from_pretrained(MODEL, device="cpu", dtype=xp.float32)
    tiny = sched.create_context("tiny", 4096, qos="guaranteed")
    with pytest.raises(xp.OutOfMemoryError, match="tiny"):
        with tiny:
            generate(model, [[1, 2, 3]], max_new_tokens=4)
    assert generate(model, [[1, 2, 3]], max_new_tokens=4)  # and the process goes on working
