"""Encode time of long pieces (runs of one repeated character, and others) with gpk_array's GPT-2 tokenizer vs
Hugging Face ``tokenizers``, each checked against ``tokenizers``' ids.

A timing script, not a test. Each input is one text of --n characters (most of them one pre-tokenized piece),
and the last the tokenizer tests' mixed corpus (short pieces); the piece cache is emptied before each run, so that
every run merges. ``--against REV`` times the
gpk_array/llm/tokenizer.py of a git revision too, in alternating rounds.

    python benchmarks/diag/tokenizer_long_pieces.py [--n 100000] [--repeat 3] [--against REV [--rounds 3]]
"""
import argparse
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.tokenizer_bench import best, corpus, load_revision  # noqa: E402
from gpk_array.llm import tokenizer as tokmod  # noqa: E402

DATA = ROOT / "tests" / "llm" / "data" / "gpt2-tokenizer"
EOT = "<|endoftext|>"


def inputs(n):
    rng = random.Random(0)
    return {
        '"!" * n': "!" * n,
        '"a" * n': "a" * n,
        '" " * n': " " * n,
        '"\\n" * n': "\n" * n,
        '"9" * n': "9" * n,
        '"=" * n': "=" * n,
        '"\u00e9" * n (2 bytes)': "\u00e9" * n,
        '"\u4e2d" * n (3 bytes)': "\u4e2d" * n,
        '"\U0001f600" * n (4 bytes)': "\U0001f600" * n,
        '"ab" * (n/2)': "ab" * (n // 2),
        "random a-j, n": "".join(rng.choice("abcdefghij") for _ in range(n)),
        "random a-z, n": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n)),
        "test corpus x20 (short pieces)": "\n".join(corpus() * 20),
    }


def hf_tokenizer():
    import tokenizers
    from tokenizers import AddedToken, decoders, models, pre_tokenizers, processors

    tok = tokenizers.Tokenizer(models.BPE.from_file(str(DATA / "vocab.json"), str(DATA / "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOT, special=True, normalized=False)])
    return tok


def cold_encode(tok, text):
    tok._cache.clear()
    return tok.encode(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="characters of each input")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per measurement (best is kept)")
    ap.add_argument("--against", metavar="REV", help="also time tokenizer.py of this git revision")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    args = ap.parse_args()
    hf = hf_tokenizer()
    modules = {"working tree": tokmod}
    if args.against:
        modules = {args.against: load_revision(args.against), **modules}
    toks = {label: m.Tokenizer.from_vocab_merges(DATA / "vocab.json", DATA / "merges.txt")
            for label, m in modules.items()}
    texts = inputs(args.n)
    times, same = {}, {}
    for name, text in texts.items():
        want = hf.encode(text).ids
        for label, tok in toks.items():
            same[label, name] = cold_encode(tok, text) == want
    for _ in range(args.rounds):
        for name, text in texts.items():
            for label, fn in [("tokenizers", lambda: hf.encode(text))] + [
                    (label, lambda tok=tok: cold_encode(tok, text)) for label, tok in toks.items()]:
                seconds = best(fn, args.repeat)
                times[label, name] = min(times.get((label, name), seconds), seconds)
    labels = [*toks, "tokenizers"]
    print(f"n = {args.n:,}; ms, best of {args.repeat} x {args.rounds} rounds; ratio: ours / tokenizers; "
          "ids: equal to tokenizers'")
    rows = [["input", *(f"{label} ms" for label in labels), *(f"{label} ratio" for label in toks), "ids"]]
    for name in texts:
        hf_seconds = times["tokenizers", name]
        rows.append([name, *(f"{times[label, name] * 1e3:.1f}" for label in labels),
                     *(f"{times[label, name] / hf_seconds:.2f}" for label in toks),
                     "yes" if all(same[label, name] for label in toks) else "NO"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print("| " + " | ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                                for i, (cell, w) in enumerate(zip(row, widths))) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")

if __name__ == "__main__":
    main()
