"""Generation: greedy decoding against transformers' reference, batches, stop tokens, sampling, streaming, CLI."""
import pathlib

import numpy as np
import pytest

import gpk_array as gp
from gpk_array.llm import (GPT2, Engine, SamplingParams, Sequence, TextStream, Tokenizer, generate, generate_stream,
                           sample)
from gpk_array.llm.cli import main as cli_main

from ..conftest import requires_gpu

DATA = pathlib.Path(__file__).parent / "data"
TINY = DATA / "tiny-gpt2"


@pytest.fixture(scope="module")
def ref():
    return dict(np.load(DATA / "tiny_gpt2_reference.npz"))


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_dir(TINY)


_models = {}


def model(device, dtype=gp.float32):
    key = (str(device), np.dtype(dtype).name)
    if key not in _models:
        _models[key] = GPT2.from_pretrained(TINY, device=device, dtype=dtype)
    return _models[key]


def test_greedy_matches_transformers(device, ref):
    out = generate(model(device), ref["greedy_prompt"].tolist(), max_new_tokens=64)
    assert out == ref["greedy_tokens"].tolist()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.filterwarnings("ignore:CUDA graph capture failed")
def test_greedy_with_and_without_cuda_graphs(ref):
    m = model("cuda:0")
    prompt = ref["greedy_prompt"].tolist()
    want = ref["greedy_tokens"].tolist()
    assert generate(m, prompt, max_new_tokens=64, cuda_graphs=False) == want
    engine = Engine(m, max_batch=3, max_len=128)
    assert engine.graphs is not None
    assert list(generate_stream(m, prompt, max_new_tokens=64, engine=engine)) == want  # with or without graphs
    if engine.graphs is None and "cuBLAS" in engine.graph_error:
        pytest.xfail(f"the decode step is not capturable yet: {engine.graph_error} (gpk_array._gpu's GEMMs "
                     "must not go through CuPy's cuBLAS wrappers)")
    assert engine.graphs is not None, engine.graph_error
    assert {("prefill", 16), ("decode", 128)} <= set(engine.graphs.graphs)  # both were captured, and replayed


def test_batched_prompts_of_different_lengths(device, ref):
    prompts = [ref[f"batch_prompt_{i}"].tolist() for i in range(3)]
    want = [ref[f"batch_tokens_{i}"].tolist() for i in range(3)]
    assert generate(model(device), prompts, max_new_tokens=24) == want
    # fewer slots than prompts: the third joins when a slot frees (continuous batching)
    long_first = [prompts[0], prompts[1], prompts[2]]
    assert generate(model(device), long_first, max_new_tokens=24, max_batch=2) == want


def test_engine_mixes_joining_and_running_sequences(ref):
    m = model("cpu")
    prompts = [ref[f"batch_prompt_{i}"].tolist() for i in range(3)]
    want = [ref[f"batch_tokens_{i}"].tolist() for i in range(3)]
    engine = Engine(m, max_batch=2, max_len=64)
    a = Sequence(prompts[0], max_new_tokens=24)
    b = Sequence(prompts[1], max_new_tokens=5)
    c = Sequence(prompts[2], max_new_tokens=24)
    engine.add([a, b])
    for _ in range(7):
        engine.step()
    assert b.done and b.finish_reason == "length" and b.tokens == want[1][:5] and engine.free == 1
    engine.add([c])  # joins while a is half way
    while engine.active:
        engine.step()
    assert a.tokens == want[0] and c.tokens == want[2]
    assert engine.max_active == 2


def test_stop_tokens_and_limits(ref):
    m = model("cpu")
    prompt, want = ref["greedy_prompt"].tolist(), ref["greedy_tokens"].tolist()
    stop = want[10]
    k = want.index(stop)
    assert generate(m, prompt, max_new_tokens=64, stop_tokens=[stop]) == want[:k]
    assert generate(m, prompt, max_new_tokens=3) == want[:3]
    s = Sequence(prompt, max_new_tokens=64, stop_tokens=[stop])
    engine = Engine(m, max_batch=1, max_len=80)
    engine.add([s])
    while engine.active:
        engine.step()
    assert s.finish_reason == "stop" and engine.free == 1
    with pytest.raises(ValueError, match="context length"):
        generate(m, prompt, max_new_tokens=300)
    with pytest.raises(ValueError):
        Sequence([], max_new_tokens=3)
    with pytest.raises(ValueError):
        Engine(m, max_batch=1).check(Sequence([5000], max_new_tokens=3))


def test_sampling_is_seeded_and_per_sequence(ref):
    m = model("cpu")
    prompts = [ref[f"batch_prompt_{i}"].tolist() for i in range(3)]
    kw = dict(max_new_tokens=20, temperature=0.9, top_k=40, top_p=0.9)
    a = generate(m, prompts, seed=11, **kw)
    assert a == generate(m, prompts, seed=11, **kw)
    assert a != generate(m, prompts, seed=12, **kw)
    # a sequence draws from its own stream (prompt i of a batch: seed + i): the same alone or in a batch
    assert generate(m, prompts[1], seed=12, **kw) == a[1]
    assert generate(m, prompts[::-1], seed=11, **kw)[2] == generate(m, prompts[0], seed=13, **kw)
    assert generate(m, prompts[0], top_k=1, temperature=1.0, seed=3, max_new_tokens=20) == \
        generate(m, prompts[0], max_new_tokens=20)


def test_sample_distribution():
    """sample() (one row, the engine's algorithm on the host) draws token i of a sequence with probability
    softmax(logits)[i]; filters and temperature as documented."""
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    draws = [sample(logits, SamplingParams(temperature=1.0, seed=0), step) for step in range(4000)]
    freq = np.bincount(draws, minlength=4) / 4000
    assert np.allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.03)
    assert {sample(logits, SamplingParams(1.0, top_k=2, seed=1), i) for i in range(300)} == {0, 1}
    assert {sample(logits, SamplingParams(1.0, top_p=0.75, seed=2), i) for i in range(300)} == {0, 1}
    assert {sample(logits, SamplingParams(1.0, top_p=0.4, seed=3), i) for i in range(50)} == {0}
    cold = [sample(logits, SamplingParams(temperature=0.05, seed=4), i) for i in range(200)]
    assert cold.count(0) > 195
    assert sample(logits, SamplingParams()) == 0
    for bad in (dict(temperature=-1), dict(top_k=-2), dict(top_p=0.0), dict(top_p=1.5)):
        with pytest.raises(ValueError):
            SamplingParams(**bad)


@pytest.mark.gpu
@requires_gpu
def test_cpu_and_gpu_sample_the_same_tokens(ref):
    prompt = ref["greedy_prompt"].tolist()
    kw = dict(max_new_tokens=32, temperature=0.8, top_p=0.95, seed=5)
    assert generate(model("cpu"), prompt, **kw) == generate(model("cuda:0"), prompt, **kw)


def test_stream_ids_and_text(device, ref, tok):
    m = model(device)
    prompt = ref["greedy_prompt"].tolist()
    assert list(generate_stream(m, prompt, max_new_tokens=64)) == ref["greedy_tokens"].tolist()
    pieces = list(generate_stream(m, "Hello, world", tokenizer=tok, max_new_tokens=30))
    ids = generate(m, tok.encode("Hello, world"), max_new_tokens=30, stop_tokens=[tok.eos_token_id])
    assert "".join(pieces) == tok.decode(ids)
    assert generate(m, "Hello, world", tokenizer=tok, max_new_tokens=30) == tok.decode(ids)


def test_closing_a_stream_frees_its_slot(ref):
    m = model("cpu")
    engine = Engine(m, max_batch=1, max_len=128)
    stream = generate_stream(m, ref["greedy_prompt"].tolist(), max_new_tokens=100, engine=engine)
    assert [next(stream) for _ in range(3)] == ref["greedy_tokens"].tolist()[:3]
    assert engine.free == 0
    stream.close()
    assert engine.free == 1


def test_text_stream_waits_for_whole_characters(tok):
    ids = tok.encode("naïve café ☃ ok")
    ts = TextStream(tok)
    pieces = [ts.push([i]) for i in ids] + [ts.flush()]
    assert "".join(pieces) == "naïve café ☃ ok"
    assert all("\ufffd" not in p for p in pieces)


def test_cli_generate(capsys, tok):
    m = model("cpu")
    cli_main(["generate", "--model", str(TINY), "--prompt", "Hello, world", "--max-new-tokens", "12",
              "--temperature", "0", "--device", "cpu"])
    out = capsys.readouterr().out
    want = generate(m, tok.encode("Hello, world"), max_new_tokens=12, stop_tokens=[tok.eos_token_id])
    assert out == tok.decode(want) + "\n"
    cli_main(["generate", "--model", str(TINY), "--prompt", "Hi", "--max-new-tokens", "8", "--seed", "1",
              "--device", "cpu", "--dtype", "bfloat16", "--echo"])
    assert capsys.readouterr().out.startswith("Hi")


def test_cli_register():
    import argparse

    from gpk_array.llm.cli import cmd_serve, register
    parser = argparse.ArgumentParser(prog="gpk")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["serve", "--model", "m", "--port", "9000", "--max-batch", "16", "--dtype", "float16"])
    assert args.func is cmd_serve and (args.port, args.max_batch, args.dtype) == (9000, 16, "float16")
    args = parser.parse_args(["serve", "--model", "m1", "--model", "m2", "--model-name", "a", "--model-name", "b",
                              "--context-vram", "2GiB"])
    assert (args.model, args.model_name, args.context_vram) == (["m1", "m2"], ["a", "b"], "2GiB")
    with pytest.raises(SystemExit):
        parser.parse_args(["generate", "--model", "m"])  # --prompt is required


class ReplayGraphs:
    """Stands in for CudaGraphs on the CPU: the first closure per key is run again on every later call, as a
    captured graph replays the same operations on the same buffers (a step that read a Python value changing
    from step to step, or that was not idempotent, would go wrong here as on the GPU)."""

    def __init__(self):
        self.graphs = {}

    def run(self, key, fn):
        if key not in self.graphs:
            fn()  # the warm-up before a capture
            self.graphs[key] = fn
        self.graphs[key]()


def test_graph_steps_replay_on_static_buffers(ref):
    m = model("cpu")
    prompts = [ref[f"batch_prompt_{i}"].tolist() for i in range(3)]
    want = [ref[f"batch_tokens_{i}"].tolist() for i in range(3)]
    engine = Engine(m, max_batch=2, max_len=64, cuda_graphs=ReplayGraphs(), kv_block=16)
    reads, read = [], engine.cache.read
    engine.cache.read = lambda i, n, rows=None: reads.append(rows) or read(i, n, rows)
    seqs = [Sequence(p, max_new_tokens=24) for p in prompts]
    engine.add(seqs[:1])  # single-sequence prefill: through its graph
    engine.add(seqs[1:2])
    for _ in range(10):
        engine.step()
    engine.release(seqs[1], "cancelled")  # leave and let another join mid-way
    engine.add(seqs[2:])
    while engine.active:
        engine.step()
    assert seqs[0].tokens == want[0] and seqs[2].tokens == want[2]
    assert seqs[1].tokens == want[1][:11]
    assert all(r is None for r in reads)  # the cache is never gathered (decode attends it in kv_cache_attention)
    keys = set(engine.graphs.graphs)
    assert {("prefill", 16), ("prefill", 32), ("decode", 16), ("decode", 32), ("decode", 48)} <= keys


def test_step_launched_ahead_is_dropped_when_the_set_changes(ref):
    """A greedy step is launched before the tokens of the one before it are read; when a sequence stops (on a stop
    token the host only sees afterwards) or another joins in its slot, that step is discarded, never reused for the
    new set (whose sequences may even reuse the old ones' ids): the joiner gets its own tokens."""
    m = model("cpu")
    p0, p1 = ref["batch_prompt_0"].tolist(), ref["batch_prompt_1"].tolist()
    want0 = generate(m, p0, max_new_tokens=20, cuda_graphs=False)
    want1 = generate(m, p1, max_new_tokens=12, cuda_graphs=False)
    engine = Engine(m, max_batch=2, max_len=64, cuda_graphs=ReplayGraphs(), kv_block=16)
    a = Sequence(p0, max_new_tokens=20)
    b = Sequence(p1, max_new_tokens=20, stop_tokens=[want1[5]])  # stops at its 6th token
    engine.add([a, b])
    while not b.done:
        engine.step()
        if not b.done:
            assert engine._ahead is not None  # the next step is already on its way
    assert engine._ahead is None and b.tokens == want1[:want1.index(want1[5])]
    c = Sequence(p1, max_new_tokens=12)  # joins in b's slot
    engine.add([c])
    while engine.active:
        engine.step()
    assert a.tokens == want0 and c.tokens == want1


def test_module_docstring_example_runs(tmp_path, monkeypatch, capsys):
    """The example in gpk_array.llm's docstring runs as written (on the default device) and prints 8 token ids."""
    import ast
    import textwrap

    import gpk_array.llm
    doc = gpk_array.llm.__doc__
    assert "::\n" in doc
    block = []
    for line in doc.split("::\n", 1)[1].splitlines():
        if line.strip() and not line.startswith("    "):
            break
        block.append(line)
    code = textwrap.dedent("\n".join(block)).strip()
    assert code.startswith("import gpk_array") and "print(" in code
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "gpk_array.llm docstring", "exec"), {})
    ids = ast.literal_eval(capsys.readouterr().out.strip())
    assert len(ids) == 8 and all(isinstance(i, int) and 0 <= i < 50257 for i in ids)
    assert (tmp_path / "tiny-gpt2" / "config.json").is_file()
