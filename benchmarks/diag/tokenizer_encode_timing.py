"""Encode time of gpk_array's GPT-2 tokenizer on the mixed-language CORPUS of tests/llm/test_tokenizer.py.

A timing script, not a test: pre-tokenization and encoding (warm piece cache, best of --repeat runs) of the
corpus as one long text, as many short texts, and of its ASCII-only part. ``--against REV`` times the
gpk_array/llm/tokenizer.py of a git revision too (loaded alone, as before the generated class tables), in
alternating rounds.

    python benchmarks/diag/tokenizer_encode_timing.py [--copies 50] [--repeat 15] [--against REV [--rounds 5]]
"""
import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.tokenizer_bench import best, corpus, load_revision  # noqa: E402
from gpk_array.llm import tokenizer as tokmod  # noqa: E402

DATA = ROOT / "tests" / "llm" / "data" / "gpt2-tokenizer"


def measure(module, copies, repeat):
    """[(what, UTF-8 bytes, best seconds)] for the tokenizer module ``module``."""
    texts = corpus() * copies
    long_text = "\n".join(texts)
    ascii_text = "\n".join(t for t in texts if t.isascii())
    tok = module.Tokenizer.from_vocab_merges(DATA / "vocab.json", DATA / "merges.txt")
    tok.encode(long_text)  # fill the piece cache
    rows = [
        ("pretokenize, one text", long_text, lambda: module._pretokenize(long_text)),
        ("encode, one text", long_text, lambda: tok.encode(long_text)),
        ("encode, short texts", long_text, lambda: [tok.encode(t) for t in texts]),
        ("pretokenize, ASCII text", ascii_text, lambda: module._pretokenize(ascii_text)),
        ("encode, ASCII text", ascii_text, lambda: tok.encode(ascii_text)),
    ]
    return [(name, len(text.encode("utf-8")), best(fn, repeat)) for name, text, fn in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=50, help="copies of the corpus")
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per measurement (best is kept)")
    ap.add_argument("--against", metavar="REV", help="also time tokenizer.py of this git revision")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds with --against")
    args = ap.parse_args()
    texts = corpus() * args.copies
    print(f"corpus x{args.copies}: {len(chr(10).join(texts)):,} characters in {len(texts)} texts; "
          f"best of {args.repeat}" + (f" x {args.rounds} rounds" if args.against else ""))
    if not args.against:
        for name, nbytes, seconds in measure(tokmod, args.copies, args.repeat):
            print(f"  {name:26s} {seconds * 1e3:8.2f} ms  {nbytes / seconds / 1e6:6.2f} MB/s")
        return
    modules = {args.against: load_revision(args.against), "working tree": tokmod}
    best_times = {}
    for _ in range(args.rounds):
        for label, module in modules.items():
            for name, _, seconds in measure(module, args.copies, args.repeat):
                best_times[label, name] = min(best_times.get((label, name), seconds), seconds)
    print(f"  {'':26s} {args.against:>12s} {'working tree':>12s}")
    for name in dict.fromkeys(name for _, name in best_times):
        before, after = best_times[args.against, name], best_times["working tree", name]
        print(f"  {name:26s} {before * 1e3:9.2f} ms {after * 1e3:9.2f} ms  x{before / after:.2f}")


if __name__ == "__main__":
    main()
