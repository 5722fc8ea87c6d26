"""Exactness figures of GPT-2 124M (random weights) against Hugging Face transformers on the same GPU.

    python -m benchmarks.diag.llm_exactness

Prints the largest float32 logit error relative to the logits' scale for prompts of 1 to 1,000 tokens (the whole prompt
at once, and its last 8 tokens one at a time through the KV cache), how many of 64 greedy tokens match transformers'
(with and without CUDA graphs), and the float16 / bfloat16 logit errors. tests/llm/test_model.py asserts the same
comparisons (1e-4) on the GPU machine."""
import tempfile

import numpy as np


def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def host(a):
    import gpk_array as gp
    return np.asarray(gp.astype(a, gp.float64).to_device("cpu"))


def main():
    import torch
    import transformers

    import gpk_array as gp
    from gpk_array.llm import GPT2, generate
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
    d = tempfile.mkdtemp()
    hf.save_pretrained(d)
    hf = hf.to("cuda")
    m = GPT2.from_pretrained(d, device="cuda:0")
    rng = np.random.default_rng(0)
    for n in (1, 17, 200, 1000):
        prompt = rng.integers(0, 50257, n)
        with torch.no_grad():
            want = hf(torch.tensor(prompt[None], device="cuda")).logits[0].double().cpu().numpy()
        full = rel(host(m(prompt[None]))[0], want)
        kv = float("nan")
        if n > 8:
            cache = m.new_cache(1, 1024)
            got = [host(m(prompt[None, :n - 8], cache=cache))[0]]
            for t in range(n - 8, n):
                got.append(host(m(prompt[None, t:t + 1], [[t]], cache=cache, kv_len=1024))[0])
            kv = rel(np.concatenate(got), want)
        print(f"float32 logits, prompt {n:4d}: max rel err {full:.2e} (no cache), "
              f"{kv:.2e} (last 8 through the KV cache)")
    prompt = rng.integers(0, 50257, 12).tolist()
    ids, ref = list(prompt), []
    with torch.no_grad():
        out = hf(torch.tensor([ids], device="cuda"), use_cache=True)
        for _ in range(64):
            ref.append(int(out.logits[0, -1].argmax()))
            kv = {"cache": out["cache"]} if "cache" in out else {"past_key_values": out["past_key_values"]}
            out = hf(torch.tensor([[ref[-1]]], device="cuda"), **kv, use_cache=True)
    for graphs in (None, False):
        ours = generate(m, prompt, max_new_tokens=64, cuda_graphs=graphs)
        same = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), 64)
        print(f"greedy 64 tokens, cuda_graphs={graphs}: identical for {same} of 64")
    for dt in (gp.float16, gp.bfloat16):
        half = GPT2.from_pretrained(d, device="cuda:0", dtype=dt)
        prompt = rng.integers(0, 50257, 64)
        with torch.no_grad():
            want = hf(torch.tensor(prompt[None], device="cuda")).logits[0].double().cpu().numpy()
        err = rel(host(half(prompt[None]))[0], want)
        print(f"{dt} logits vs transformers float32, prompt 64: max rel err {err:.2e}")


if __name__ == "__main__":
    main()
