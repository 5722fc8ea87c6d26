"""MkDocs hook of gpk_array's site: pages that are computed from the repository at build time.

Markers a page may hold (each on a line of its own):

- ``<!-- gpk:benchmarks -->``: tables of the newest H200 results under ``benchmarks/results`` (per benchmark kind,
  the JSON file written by ``python -m benchmarks KIND --json`` whose ``env.time`` is the latest), and the GEMM
  plot of the same run where one exists (copied into the site).
- ``<!-- gpk:members SECTION -->``: a mkdocstrings block for the names of ``gpk_array.__all__`` that one standard
  section defines (SECTION: a module of ``gpk_array._ops``, such as ``creation``), so the reference pages follow
  the code.
- ``<!-- gpk:module NAME -->``: a mkdocstrings block for the functions and classes a public module (``NAME``,
  such as ``gpk_array.fft``) lists and gpk_array defines.
- ``<!-- gpk:numpy-members -->``: the same for NumPy's functions and classes (``gpk_array._numpy``),
  ``<!-- gpk:ufuncs -->`` a table of NumPy's ufunc objects, ``<!-- gpk:testing -->`` one of gpk_array.testing.

Run as a script, ``python docs/hooks/gpk_docs.py [--out FILE]`` prints (or writes) the benchmark page's generated
part, to look at it without building the site.
"""
import datetime
import glob
import json
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
IMG_DIR = "benchmarks"  # where the plots go in the site, beside benchmarks.md

# the columns shown per benchmark kind (those present in the chosen file, in this order)
COLUMNS = {
    "gemm": ["dtype", "m", "k", "n", "ours_tflops", "cublas_cupy_tflops", "torch_tflops", "ratio_vs_cublas",
             "gpu_ratio_vs_cublas"],
    "linear": ["dtype", "activation", "m", "k", "n", "ours_ms", "bare_gemm_ms", "torch_linear_gelu_ms",
               "ours_over_bare", "graph_ours_over_bare"],
    "reduction": ["op", "dtype", "shape", "ours_us", "cupy_us", "ours_gbs", "cupy_gbs", "ratio", "ok"],
    "elementwise": ["op", "dtype", "shape", "ours_us", "cupy_us", "ours_gbs", "cupy_gbs", "ratio", "ok"],
    "overhead": ["device", "op", "gpk_us", "baseline", "baseline_us", "ratio"],
    "llm": ["benchmark", "gpk_array", "transformers_fp16", "transformers_fp32", "unit", "note"],
}
ORDER = ["gemm", "linear", "elementwise", "reduction", "overhead", "sched", "llm", "cutlass", "tokenizer"]
WHAT = {
    "gemm": "Matrix products through the namespace (`a @ b`), TFLOP/s, beside cuBLAS (CuPy's `matmul`) and torch "
            "in the same run; ratios above 1 mean gpk_array is faster.",
    "linear": "`gpk_array.linear(x, w, bias, activation)` against a bare GEMM of the same shape and torch's "
              "linear + activation; times in ms, `*_over_bare` is the fused call's time over the bare GEMM's.",
    "elementwise": "Element-wise ops through the namespace against CuPy's, GB/s of bytes read and written; "
                   "ratio = CuPy's time / ours.",
    "reduction": "Reductions through the namespace against CuPy's, GB/s of bytes read; ratio = CuPy's time / ours.",
    "overhead": "Host time per small call, gpk_array against the backend it calls (NumPy on the CPU, CuPy on "
                "CUDA); ratio = gpk_array's time / the baseline's.",
    "sched": "The scheduler: a guaranteed context's step latency alone and with best-effort contexts running, "
             "and the host cost of entering a context.",
    "llm": "GPT-2 124M (float16) generation throughput beside Hugging Face transformers in the same run.",
}


# --- the newest evidence -----------------------------------------------------------------------------------
def _runs():
    """[(time, path, data)] of every ``python -m benchmarks`` JSON of the H200 under benchmarks/results."""
    out = []
    for p in sorted(glob.glob(str(RESULTS / "h200_*.json"))):
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and isinstance(d.get("env"), dict) and isinstance(d.get("results"), dict):
            out.append((str(d["env"].get("time") or ""), pathlib.Path(p), d))
    return out


def newest_per_kind():
    """{kind: (path, env, rows)}: for each benchmark kind, the run with the latest time that has its results."""
    best = {}
    for t, p, d in _runs():
        for kind, rows in d["results"].items():
            if isinstance(rows, dict) and "error" in rows:
                continue
            if kind not in best or t > best[kind][0]:
                best[kind] = (t, p, d["env"], rows)
    return {k: v[1:] for k, v in best.items()}


def _plot_for(kind, env):
    """The PNG plot of ``kind`` from the same commit's run, else the newest one of that kind, or None."""
    pngs = sorted(RESULTS.glob(f"h200_*{kind}*.png"))
    if not pngs:
        return None
    commit = (env.get("commit") or "")[:7]
    same = [p for p in pngs if commit and commit in p.name]
    if same:
        return same[-1]

    def key(p):
        m = re.match(r"h200_(\d{4}-\d{2}-\d{2})(?:_s(\d+))?", p.name)
        return (m.group(1), int(m.group(2) or 0), p.stat().st_mtime) if m else ("", 0, 0)
    return max(pngs, key=key)


def _fmt(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return "nan"
        a = abs(v)
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 100:
            return f"{v:.1f}"
        return f"{v:.3g}"
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(str(x) for x in v) + (",)" if len(v) == 1 else ")")
    if v is None:
        return ""
    return _md(str(v))


def _md(text):
    """text for a Markdown table cell: pipes and brackets escaped (a benchmark named ``k[total, block](...)`` is
    no link)."""
    return text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def _table(rows, cols):
    lines = ["| " + " | ".join(_md(c.replace("_", " ")) for c in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |")
    return "\n".join(lines)


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        elif not isinstance(v, list):
            out[name] = v
    return out


def _kind_section(kind, path, env, rows):
    when = str(env.get("time", ""))[:16].replace("T", " ")
    head = [f"## {kind}", "", WHAT.get(kind, ""), "",
            f"From `benchmarks/results/{path.name}`: GPU {env.get('gpu') or '?'}, commit "
            f"`{(env.get('commit') or '?')[:7]}`, {when} UTC, CuPy {env.get('cupy', '?')}, "
            f"NumPy {env.get('numpy', '?')}.", ""]
    if isinstance(rows, list) and rows and isinstance(rows[0], dict):
        cols = [c for c in COLUMNS.get(kind, []) if any(c in r for r in rows)]
        if not cols:
            cols = [c for c, v in rows[0].items() if not isinstance(v, (dict, list))][:10]
        body = _table(rows, cols)
    elif kind == "sched" and isinstance(rows, dict) and isinstance(rows.get("isolation"), dict):
        body = _sched_tables(rows)
    elif isinstance(rows, dict):
        parts = []
        for name, v in rows.items():
            if isinstance(v, dict):
                flat = _flatten(v)
                if flat:
                    parts += [f"**{name}**", "", "| figure | value |", "|---|---|"]
                    parts += [f"| {_md(k)} | {_fmt(x)} |" for k, x in flat.items()]
                    parts.append("")
                runs = v.get("runs")
                if isinstance(runs, list) and runs and isinstance(runs[0], dict):
                    flat_runs = [_flatten(r) for r in runs]
                    cols = list(dict.fromkeys(c for r in flat_runs for c in r))[:10]
                    parts += [f"**{name}: runs**", "", _table(flat_runs, cols), ""]
            elif not isinstance(v, list):
                parts += [f"- {name}: {_fmt(v)}", ""]
        body = "\n".join(parts)
    else:
        body = f"`{_fmt(rows)}`"
    return "\n".join(head) + "\n" + body + "\n"


def _sched_tables(rows):
    """sched_bench's results: one row per isolation variant, the GPU-only runs, the host overhead, the stress."""
    iso = rows["isolation"]
    out = [f"Isolation: a guaranteed context's step ({iso.get('small_gemm', '?')}) alone and while best-effort "
           f"contexts run {iso.get('big_gemm', '?')}, {iso.get('steps', '?')} steps; times in us, "
           "`p99 ratio` = contended p99 / alone p99.", ""]
    cols = ["launch", "variant", "alone p50", "alone p99", "contended p50", "contended p99", "gpu alone p99",
            "gpu contended p99", "p99 ratio", "best-effort TFLOP/s"]
    table = []
    for launch, variants in iso.items():
        if not isinstance(variants, dict):
            continue
        for name, v in variants.items():
            if not (isinstance(v, dict) and "alone" in v and "contended" in v):
                continue
            a, c = v["alone"], v["contended"]
            table.append({"launch": launch, "variant": name, "alone p50": a.get("p50_us"),
                          "alone p99": a.get("p99_us"), "contended p50": c.get("p50_us"),
                          "contended p99": c.get("p99_us"), "gpu alone p99": a.get("gpu_p99_us"),
                          "gpu contended p99": c.get("gpu_p99_us"), "p99 ratio": v.get("p99_ratio"),
                          "best-effort TFLOP/s": v.get("best_effort_tflops")})
    out += [_table(table, cols), ""]
    gi = rows.get("gpu_isolation")
    if isinstance(gi, dict) and isinstance(gi.get("runs"), list):
        runs = [{"mode": r.get("mode"), "rep": r.get("rep"), "sm target": r.get("sm_target"),
                 "contended p99": (r.get("contended") or {}).get("p99_us"),
                 "gpu contended p99": (r.get("contended") or {}).get("gpu_p99_us"),
                 "p99 ratio": r.get("p99_ratio"), "gpu p99 ratio": r.get("gpu_p99_ratio")} for r in gi["runs"]]
        out += [f"GPU-side isolation ({gi.get('steps', '?')} steps, {gi.get('queued_per_context', '?')} "
                "best-effort GEMMs queued per context before the loop):", "",
                _table(runs, list(runs[0]) if runs else []), ""]
    for name in ("overhead", "stress"):
        v = rows.get(name)
        if isinstance(v, dict):
            flat = _flatten(v)
            out += [f"{name.capitalize()}:", "", "| figure | value |", "|---|---|"]
            out += [f"| {_md(k)} | {_fmt(x)} |" for k, x in flat.items()]
            out.append("")
    return "\n".join(out)


def benchmark_markdown(plots=None):
    """The generated part of the benchmarks page. ``plots``: {kind: site path} of the plots copied in."""
    found = newest_per_kind()
    if not found:
        return "No H200 results under `benchmarks/results/` yet.\n"
    kinds = [k for k in ORDER if k in found] + sorted(k for k in found if k not in ORDER)
    out = ["| benchmark | newest run | commit |", "|---|---|---|"]
    for k in kinds:
        path, env, _ = found[k]
        out.append(f"| [{k}](#{k}) | `{path.name}` | `{(env.get('commit') or '?')[:7]}` |")
    out.append("")
    for k in kinds:
        path, env, rows = found[k]
        out.append(_kind_section(k, path, env, rows))
        if plots and k in plots:
            out.append(f"![{k} on the H200: ours beside cuBLAS and torch]({plots[k]})\n")
    return "\n".join(out)


# --- reference pages ---------------------------------------------------------------------------------------
def _members_block(names, module="gpk_array"):
    if not names:
        return "(none)\n"
    lines = [f"::: {module}", "    options:", "      members:"]
    lines += [f"        - {n}" for n in names]
    return "\n".join(lines) + "\n"


def section_members(section):
    import importlib

    import gpk_array
    mod = importlib.import_module(f"gpk_array._ops.{section}")
    public = set(gpk_array.__all__)
    names = [n for n, v in vars(mod).items() if n in public and callable(v) and not n.startswith("_")
             and getattr(v, "__module__", None) == mod.__name__]
    return names


def numpy_members():
    import gpk_array
    import gpk_array._numpy as npm
    std = set()
    for sec in ("creation", "data_type", "elementwise", "indexing", "linalg_basic", "manipulation", "searching",
                "sets", "sorting", "statistical"):
        std.update(section_members(sec))
    out = []
    for n in npm.__all__:
        v = getattr(gpk_array, n, None)
        if n in std or v is None or isinstance(v, type(sys)):
            continue
        mod = getattr(v, "__module__", "") or ""
        if (callable(v) and (isinstance(v, type) or hasattr(v, "__code__") or hasattr(v, "__wrapped__"))
                and mod.startswith("gpk_array")):
            out.append(n)
    return sorted(dict.fromkeys(out))


def module_members(modname):
    """The public functions and classes of a gpk_array module (its ``__all__``, else its public names) that
    gpk_array defines, minus names that are also submodules (``gpk_array.llm.generate``)."""
    import importlib
    import types
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    out = []
    for n in names:
        v = getattr(mod, n, None)
        if not isinstance(v, (types.FunctionType, type)) or not (getattr(v, "__module__", "") or "").startswith(
                "gpk_array"):
            continue
        if importlib.util.find_spec(f"{modname}.{n}") is not None if hasattr(mod, "__path__") else False:
            continue
        out.append(n)
    return out


def testing_table():
    import gpk_array.testing as t
    lines = ["| name | what |", "|---|---|"]
    for n in t.__all__:
        v = getattr(t, n)
        if callable(v) and not isinstance(v, type):
            lines.append(f"| `{n}` | `numpy.testing.{n}` with every gpk_array Array argument (any device) copied "
                         "to the host first |")
        else:
            lines.append(f"| `{n}` | `numpy.testing.{n}` |")
    return "\n".join(lines) + "\n"


def ufunc_table():
    import gpk_array
    from gpk_array._numpy.ufuncs import ufunc
    rows = {}
    for n in gpk_array.__all__:
        v = getattr(gpk_array, n)
        if isinstance(v, ufunc):
            rows.setdefault(id(v), [v, []])[1].append(n)
    lines = ["| ufunc | also named | inputs, outputs | computes |", "|---|---|---|---|"]
    for v, names in sorted(rows.values(), key=lambda r: r[0].__name__):
        other = [n for n in names if n != v.__name__]
        inner = (getattr(v._fn, "__doc__", None) or "").strip().splitlines()
        what = inner[0] if inner else f"the backend's `{v._bname}`"
        lines.append(f"| `{v.__name__}` | {', '.join(f'`{n}`' for n in other)} | {v.nin}, {v.nout} | "
                     f"{what.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


# --- MkDocs events -----------------------------------------------------------------------------------------
_PLOTS = {}


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File
    _PLOTS.clear()
    for kind, (path, env, rows) in newest_per_kind().items():
        png = _plot_for(kind, env)
        if png is None:
            continue
        uri = f"{IMG_DIR}/{png.name}"
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(png)))
        _PLOTS[kind] = uri
    return files


_MEMBERS = re.compile(r"^<!-- gpk:members (\w+) -->$", re.M)
_MODULE = re.compile(r"^<!-- gpk:module ([\w.]+) -->$", re.M)


def on_page_markdown(markdown, page, config, files, **kwargs):
    if "<!-- gpk:benchmarks -->" in markdown:
        markdown = markdown.replace("<!-- gpk:benchmarks -->", benchmark_markdown(_PLOTS))
    if "<!-- gpk:numpy-members -->" in markdown:
        markdown = markdown.replace("<!-- gpk:numpy-members -->", _members_block(numpy_members()))
    if "<!-- gpk:ufuncs -->" in markdown:
        markdown = markdown.replace("<!-- gpk:ufuncs -->", ufunc_table())
    if "<!-- gpk:testing -->" in markdown:
        markdown = markdown.replace("<!-- gpk:testing -->", testing_table())
    markdown = _MODULE.sub(lambda m: _members_block(module_members(m.group(1)), m.group(1)), markdown)
    return _MEMBERS.sub(lambda m: _members_block(section_members(m.group(1))), markdown)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="print the benchmark page's generated part")
    ap.add_argument("--out", help="write it here instead of stdout")
    a = ap.parse_args()
    plots = {}
    for kind, (path, env, rows) in newest_per_kind().items():
        png = _plot_for(kind, env)
        if png is not None:
            plots[kind] = os.path.relpath(png, ROOT)
    text = benchmark_markdown(plots)
    if a.out:
        pathlib.Path(a.out).write_text(text)
    else:
        sys.stdout.write(text)
    print(f"generated {datetime.datetime.now().isoformat(timespec='seconds')}", file=sys.stderr)
