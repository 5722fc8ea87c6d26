"""Encoding throughput (MB/s of UTF-8 input) of gpk_array's GPT-2 tokenizer vs Hugging Face ``tokenizers``.

Corpora are built locally and deterministically: English prose (docstrings of the Python standard
library), Python code (its sources), and multilingual text (Zipf-distributed synthetic words in
Latin, Cyrillic, Greek, Arabic, Devanagari, CJK and Hangul scripts, with digits, punctuation and emoji).

    python benchmarks/tokenizer_bench.py [--mb 1] [--repeat 3] [--json out.json]
"""
import argparse
import ast
import json
import os
import pathlib
import platform
import random
import sys
import sysconfig
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from gpk_array.llm.tokenizer import Tokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
# GPT-2's tokenizer files: ../shared/data where present, else the copy in the repository (vocab.json, merges.txt)
_SHARED = ROOT.parent / "shared" / "data" / "gpt2-tokenizer"
DEFAULT_DATA = _SHARED if (_SHARED / "vocab.json").is_file() else ROOT / "tests" / "llm" / "data" / "gpt2-tokenizer"


def _stdlib_files():
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if "site-packages" not in p.relative_to(root).parts)


def _take(documents, limit):
    """Leading documents totalling about ``limit`` UTF-8 bytes."""
    out, size = [], 0
    for doc in documents:
        if size >= limit:
            break
        out.append(doc)
        size += len(doc.encode("utf-8"))
    return out


def _docstrings():
    for path in _stdlib_files():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef)))]
        text = "\n\n".join(d for d in map(ast.get_docstring, nodes) if d)
        if text:
            yield text


def prose(limit):
    return _take(_docstrings(), limit)


def code(limit):
    return _take((p.read_text(encoding="utf-8", errors="replace") for p in _stdlib_files()), limit)


def multilingual(limit, seed=0):
    rng = random.Random(seed)
    scripts = [(0x61, 0x7A), (0xE0, 0xFF), (0x430, 0x44F), (0x3B1, 0x3C9), (0x627, 0x64A), (0x915, 0x939),
               (0x4E00, 0x9FFF), (0xAC00, 0xD7A3)]
    words = []
    for first, last in scripts:
        for _ in range(3000):
            words.append("".join(chr(rng.randint(first, last)) for _ in range(rng.randint(1, 8))))
    words += ["\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "2024", "3.14"]
    weights = [1 / (rank + 1) for rank in range(len(words))]
    rng.shuffle(words)
    docs = []
    while sum(len(d.encode("utf-8")) for d in docs) < limit:
        picked = rng.choices(words, weights, k=2000)
        docs.append("".join(w + rng.choice("     ,.\n") for w in picked))
    return docs


def hf_tokenizer(tokenizers, data_dir):
    """Hugging Face's GPT-2 tokenizer: the directory's tokenizer.json, else built from vocab.json and merges.txt
    (ByteLevel BPE with GPT-2's settings; tokenizers writes the same tokenizer.json from it)."""
    if (data_dir / "tokenizer.json").is_file():
        return tokenizers.Tokenizer.from_file(str(data_dir / "tokenizer.json"))
    from tokenizers import AddedToken, decoders, models, pre_tokenizers, processors

    tok = tokenizers.Tokenizer(models.BPE.from_file(str(data_dir / "vocab.json"), str(data_dir / "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    return tok


def _mbps(nbytes, seconds):
    return nbytes / seconds / 1e6


def best(fn, repeat):
    """The shortest of ``repeat`` timed calls of fn, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


_best = best


def corpus():
    """The CORPUS list of the tokenizer tests, read from the source (no pytest / hypothesis import)."""
    tree = ast.parse((ROOT / "tests" / "llm" / "test_tokenizer.py").read_text(encoding="utf-8"))
    namespace = {"EOT": "<|endoftext|>"}
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["CORPUS"]:
            return eval(compile(ast.Expression(node.value), "CORPUS", "eval"), namespace)  # noqa: S307
    raise LookupError("CORPUS not found")


def load_revision(rev):
    """gpk_array/llm/tokenizer.py of git revision ``rev``, as a module of the gpk_array.llm package."""
    import importlib.util
    import subprocess
    import tempfile
    source = subprocess.run(["git", "show", f"{rev}:gpk_array/llm/tokenizer.py"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    path = pathlib.Path(tempfile.mkdtemp()) / "tokenizer_at_rev.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("gpk_array.llm.tokenizer_at_rev", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench(name, docs, data_dir, hf, repeat):
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    ours = Tokenizer.from_dir(data_dir)
    start = time.perf_counter()
    ids = [ours.encode(d) for d in docs]  # empty cache: every new piece runs BPE
    row = {"corpus": name, "mb": nbytes / 1e6, "documents": len(docs),
           "ours_cold": _mbps(nbytes, time.perf_counter() - start),
           "ours_encode": _mbps(nbytes, _best(lambda: [ours.encode(d) for d in docs], repeat)),
           "ours_encode_batch": _mbps(nbytes, _best(lambda: ours.encode_batch(docs), repeat))}
    if hf is not None:
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        row["hf_encode"] = _mbps(nbytes, _best(lambda: [hf.encode(d) for d in docs], repeat))
        row["hf_encode_batch_1thread"] = _mbps(nbytes, _best(lambda: hf.encode_batch(docs), repeat))
        os.environ["TOKENIZERS_PARALLELISM"] = "true"
        row["hf_encode_batch_parallel"] = _mbps(nbytes, _best(lambda: hf.encode_batch(docs), repeat))
        row["ids_match"] = ids == [e.ids for e in hf.encode_batch(docs)]
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=pathlib.Path, default=DEFAULT_DATA, help="GPT-2 tokenizer directory")
    parser.add_argument("--mb", type=float, default=1.0, help="size of each corpus in MB")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measurement (best is kept)")
    parser.add_argument("--json", type=pathlib.Path, help="write the results here")
    args = parser.parse_args()
    try:
        import tokenizers
        hf = hf_tokenizer(tokenizers, args.data)
    except ImportError:
        tokenizers, hf = None, None
    limit = int(args.mb * 1e6)
    rows = [bench(name, make(limit), args.data, hf, args.repeat)
            for name, make in (("prose", prose), ("code", code), ("multilingual", multilingual))]
    rows.append(bench("all", [d for make in (prose, code, multilingual) for d in make(limit)], args.data, hf,
                      args.repeat))

    columns = [c for c in rows[0] if c != "documents"]
    cells = [[f"{row[c]:.2f}" if isinstance(row[c], float) else str(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    for line in [columns, *cells]:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))
    print("MB/s of UTF-8 input; 'cold' starts with an empty piece cache; others best of", args.repeat)
    if args.json:
        info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                "tokenizers": getattr(tokenizers, "__version__", None), "repeat": args.repeat}
        args.json.write_text(json.dumps({"environment": info, "results": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
