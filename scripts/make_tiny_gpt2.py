"""Build the tiny random-weight GPT-2 of tests/llm/data and its reference outputs, with Hugging Face transformers.

Run once by a developer (CI has no transformers; the outputs are committed):
    pip install torch==2.13.0 transformers
    python scripts/make_tiny_gpt2.py [--tokenizer DIR] [--out tests/llm/data]

--tokenizer: GPT-2's vocab.json and merges.txt; by default ../shared/data/gpt2-tokenizer where present, else the
copy in the repository, tests/llm/data/gpt2-tokenizer.

Writes
  tiny-gpt2/          a model directory as on the hub: config.json, model.safetensors (transformers'
                      save_pretrained), vocab.json + merges.txt (GPT-2's tokenizer cut to its first 1023 tokens,
                      i.e. the 256 bytes and the first 767 merges, with <|endoftext|> as id 1023)
  tiny_gpt2_reference.npz
                      GPT2LMHeadModel's float32 logits for prompts of several lengths, a 64-token greedy
                      continuation (each step's argmax, recomputed from scratch) with the smallest top-1/top-2
                      logit gap along it, and greedy continuations of a batch of prompts of different lengths.
"""
import argparse
import json
import pathlib
import shutil

import numpy as np
import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parent.parent
VOCAB = 1024
CONFIG = dict(vocab_size=VOCAB, n_positions=256, n_embd=64, n_layer=2, n_head=4, activation_function="gelu_new",
              layer_norm_epsilon=1e-5, bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1, initializer_range=0.1)
PROMPT_LENGTHS = (1, 6, 29, 70)
BATCH_LENGTHS = (3, 11, 20)
SEED = 1234


def default_tokenizer_dir():
    """../shared/data/gpt2-tokenizer where it holds GPT-2's files, else the copy in the repository."""
    shared = ROOT.parent / "shared" / "data" / "gpt2-tokenizer"
    return shared if (shared / "vocab.json").is_file() else ROOT / "tests" / "llm" / "data" / "gpt2-tokenizer"


def tiny_tokenizer(src, dst):
    """GPT-2's BPE stopped after VOCAB - 257 merges: ids below VOCAB - 1 are GPT-2's own, then <|endoftext|>."""
    vocab = json.loads((src / "vocab.json").read_text(encoding="utf-8"))
    merges = (src / "merges.txt").read_text(encoding="utf-8").splitlines()[1:VOCAB - 256]
    small = {t: i for t, i in vocab.items() if i < VOCAB - 1}
    small["<|endoftext|>"] = VOCAB - 1
    for r, m in enumerate(merges):  # GPT-2 numbers merge r's result 256 + r, so the cut is consistent
        assert small["".join(m.split(" "))] == 256 + r
    (dst / "vocab.json").write_text(json.dumps(small, ensure_ascii=False), encoding="utf-8")
    (dst / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")


def build_model(seed):
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**CONFIG)).eval()
    with torch.no_grad():  # make every parameter matter: non-trivial layer norms and biases
        for name, p in model.named_parameters():
            if ".ln_" in name or name.startswith("transformer.ln_f"):
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.05 * torch.randn_like(p))
    return model


@torch.no_grad()
def greedy(model, prompt, n):
    """n greedy tokens, each the argmax of a full forward over everything so far; and the smallest gap."""
    ids, gap = list(prompt), np.inf
    for _ in range(n):
        logits = model(torch.tensor([ids])).logits[0, -1].double().numpy()
        top2 = np.sort(logits)[-2:]
        gap = min(gap, (top2[1] - top2[0]) / np.abs(logits).max())
        ids.append(int(logits.argmax()))
    return ids[len(prompt):], gap


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", default=str(default_tokenizer_dir()))
    ap.add_argument("--out", default=str(ROOT / "tests" / "llm" / "data"))
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    model_dir = out / "tiny-gpt2"
    if model_dir.exists():
        shutil.rmtree(model_dir)
    model_dir.mkdir(parents=True)

    model = build_model(SEED)
    model.save_pretrained(model_dir)
    for extra in ("generation_config.json",):
        (model_dir / extra).unlink(missing_ok=True)
    tiny_tokenizer(pathlib.Path(args.tokenizer), model_dir)

    rng = np.random.default_rng(SEED)
    ref = {"torch_version": np.array(torch.__version__), "transformers_version": np.array(transformers.__version__)}
    with torch.no_grad():
        for i, n in enumerate(PROMPT_LENGTHS):
            prompt = rng.integers(0, VOCAB - 1, n)
            ref[f"prompt_{i}"] = prompt
            ref[f"logits_{i}"] = model(torch.tensor(prompt[None])).logits[0].numpy().astype(np.float32)
    prompt = rng.integers(0, VOCAB - 1, 6)
    tokens, gap = greedy(model, prompt, 64)
    ref.update(greedy_prompt=prompt, greedy_tokens=np.array(tokens), greedy_min_gap=np.array(gap))
    for i, n in enumerate(BATCH_LENGTHS):
        prompt = rng.integers(0, VOCAB - 1, n)
        tokens, g = greedy(model, prompt, 24)
        ref[f"batch_prompt_{i}"], ref[f"batch_tokens_{i}"] = prompt, np.array(tokens)
        gap = min(gap, g)
    np.savez_compressed(out / "tiny_gpt2_reference.npz", **ref)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {model_dir} and {out / 'tiny_gpt2_reference.npz'} ({size / 1e6:.2f} MB in {out}); "
          f"smallest greedy top-1/top-2 gap {gap:.2e} of max |logit|")
    if gap < 1e-4:  # our float32 error is about 1e-6 of max |logit|
        raise SystemExit("greedy gap too small for a robust exactness test: pick another SEED")


if __name__ == "__main__":
    main()
