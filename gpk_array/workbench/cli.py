"""``gpk kernels CMD``: the workbench's command line (``gpk_array.cli`` adds it to ``gpk``; the handlers call
``gpk_array.workbench.api``)."""


def register_kernels(subparsers):
    """Add ``gpk kernels CMD`` to ``gpk``'s subparsers; the workbench's modules are imported only when a command
    runs."""
    from ..cli import HelpFormatter, _debug_option, nonnegative_int, positive_int
    k = subparsers.add_parser("kernels", help="the kernel workbench: candidates, evidence, the promotion gate",
                              description="The kernel workbench: create a candidate, validate it against a float64 "
                                          "reference, benchmark it beside the incumbent, promote it into the "
                                          "registry dispatch reads (gpk_array.workbench).",
                              formatter_class=HelpFormatter)
    _debug_option(k)
    ks = k.add_subparsers(dest="kernels_command", required=True, metavar="CMD")

    def add(name, help, func):
        p = ks.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".",
                          formatter_class=HelpFormatter)
        _debug_option(p)
        p.set_defaults(func=func, command=f"kernels {name}")
        return p

    def ws(p):
        p.add_argument("--dir", default=None,
                       help="workspace root (default: GPK_WORKBENCH_DIR, else ~/.cache/gpk_array/workbench)")

    c = add("create", "create a candidate's workspace and metadata contract", cmd_kernels_create)
    c.add_argument("kind", choices=("gemm", "elementwise", "reduction", "kernel"))
    c.add_argument("--name", required=True, help="the candidate's name (its workspace directory)")
    c.add_argument("--dtype", default=None, help="gemm: float16, bfloat16 or tf32 (default float16); elementwise: "
                                                 "one dtype (default float16 and float32); reduction: its dtype")
    c.add_argument("--layout", default="tn", choices=("nn", "tn"), help="gemm: B (K, N) row-major or W (N, K)")
    c.add_argument("--arch", default="sm90", help="gemm: the target architecture")
    c.add_argument("--family", default=None, help="gemm: the emitted instance family (e.g. fr96, co128t, ppt)")
    c.add_argument("--epilogue", default=None,
                   help="gemm: a fused linear's epilogue (bias, bias_relu, bias_gelu, bias_gelu_tanh, bias_silu); "
                        "default none: a plain GEMM")
    c.add_argument("--where", default=None,
                   help="gemm: the shape class it claims, e.g. m=:1024,n=3072:3072 (inclusive; default every shape)")
    c.add_argument("--shapes", default=None,
                   help="MxNxK,... (routing: sizes) to validate and bench (default: the GEMM sweep's shapes in the "
                        "class; routing: around --min-elements)")
    c.add_argument("--ops", default=None, help="elementwise/reduction: comma-separated ops (default add,multiply,exp)")
    c.add_argument("--axis-kind", default=None, choices=("full", "rows", "cols"), help="reduction: the axis kind")
    c.add_argument("--min-elements", type=nonnegative_int, default=None,
                   help="elementwise/reduction: the least size our kernels should take")
    c.add_argument("--source", default=None, help="a hand-written source (not supported yet for gemm)")
    c.add_argument("--tolerance", type=float, default=None,
                   help="relative tolerance override (default: fp32 1e-4, tf32 1e-3, fp16 5e-2, bf16 8e-2)")
    c.add_argument("--force", action="store_true", help="replace an existing candidate of that name")
    ws(c)
    for name, help, func in (("validate", "validate a candidate against float64 references", cmd_kernels_validate),
                             ("bench", "benchmark a candidate beside its incumbent, cuBLASLt and torch",
                              cmd_kernels_bench)):
        p = add(name, help, func)
        p.add_argument("name")
        p.add_argument("--dry-run", action="store_true",
                       help="no GPU: write the planned evidence (cannot be promoted)")
        if name == "bench":
            p.add_argument("--warmup", type=nonnegative_int, default=3, help="calls before timing")
            p.add_argument("--repeats", type=positive_int, default=10, help="timed samples per contender")
        ws(p)
    p = add("profile", "run a profiler command on a candidate and store its output", cmd_kernels_profile)
    p.add_argument("name")
    p.add_argument("--command", required=True, dest="profile_command",
                   help='the command, with {binary} where the candidate runs, e.g. "ncu --set full {binary}"')
    ws(p)
    p = add("promote", "promote a candidate into the registry through the gate", cmd_kernels_promote)
    p.add_argument("name")
    p.add_argument("--validation", required=True, help="the validation evidence record (JSON)")
    p.add_argument("--bench", required=True, help="the benchmark evidence record (JSON)")
    p.add_argument("--bootstrap", action="store_true",
                   help="the selector's first promoted record: within 2%% of the incumbent instead of 2%% faster")
    p.add_argument("--registry", default=None,
                   help="registry directory (default: GPK_KERNEL_REGISTRY, else the package's)")
    ws(p)
    p = add("list", "list the candidates", cmd_kernels_list)
    ws(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p = add("show", "show a candidate and its evidence", cmd_kernels_show)
    p.add_argument("name")
    ws(p)
    p = add("compare", "compare two evidence records", cmd_kernels_compare)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = add("doctor", "toolchain, GPU, driver, and which registry records need re-validation here",
            cmd_kernels_doctor)
    p.add_argument("--registry", default=None,
                   help="registry directory (default: GPK_KERNEL_REGISTRY, else the package's)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _print_json(data):
    import json
    print(json.dumps(data, indent=1, default=str))


def _command(args):
    """The exact command an evidence record stores: ``gpk`` and the arguments main() parsed."""
    return ["gpk"] + list(args.argv)


def cmd_kernels_create(args):
    """``gpk kernels create KIND --name N ...``: the candidate's workspace; prints its path and contract."""
    from . import candidates
    meta = candidates.create(args.kind, args.name, dtype=args.dtype, layout=args.layout, arch=args.arch,
                             family=args.family, epilogue=args.epilogue, where=args.where, shapes=args.shapes,
                             ops=args.ops, axis_kind=args.axis_kind, min_elements=args.min_elements,
                             source=args.source, tolerance=args.tolerance, base=args.dir, force=args.force)
    print(f"created {meta['name']} ({meta['kind']}, {meta['selector']}, {len(meta['shapes'])} shapes, hash "
          f"{meta['hash'][:12]}) in {candidates.workspace(meta['name'], args.dir)}")
    return 0


def cmd_kernels_validate(args):
    """``gpk kernels validate N [--dry-run]``: writes the validation evidence; exit 1 when it fails."""
    from . import api
    path, rec = api.validate(args.name, dry_run=args.dry_run, base=args.dir, command=_command(args))
    s = rec["summary"]
    if rec["planned"]:
        print(f"planned validation ({s['planned_cases']} cases, not run: --dry-run): {path}")
        return 0
    print(f"validation {'passed' if s['passed'] else 'FAILED'}: {s['cases']} cases, {s['failed']} failed, "
          f"{s['declined']} declined, worst rel error {s['worst_rel']}: {path}")
    for f in s["failures"]:
        print(f"  {f}")
    return 0 if s["passed"] else 1


def cmd_kernels_bench(args):
    """``gpk kernels bench N [--dry-run] [--warmup W --repeats R]``: writes the benchmark evidence."""
    from . import api
    path, rec = api.bench(args.name, warmup=args.warmup, repeats=args.repeats, dry_run=args.dry_run,
                          base=args.dir, command=_command(args))
    if rec["planned"]:
        print(f"planned benchmark ({len(rec['shapes'])} shapes, not run: --dry-run): {path}")
        return 0
    for r in rec["rows"]:
        print("  " + " ".join(f"{k}={v}" for k, v in r.items() if k in ("shape", "op", "dtype", "incumbent",
                                                                         "ratio_vs_incumbent", "ratio_vs_cublaslt")))
    print(f"median ratio vs incumbent {rec['summary']['median_ratio_vs_incumbent']} over "
          f"{rec['summary']['shapes_counted']} shapes: {path}")
    return 0


def cmd_kernels_profile(args):
    """``gpk kernels profile N --command "ncu ... {binary}"``: stores the command, its output and return code."""
    from . import api
    path, rec = api.profile(args.name, args.profile_command, base=args.dir)
    print(f"profile command exited {rec['returncode']}: {path}")
    return 0


def cmd_kernels_promote(args):
    """``gpk kernels promote N --validation V --bench B [--bootstrap]``: the gate (refusal: exit 2, every reason)."""
    from . import api
    rec = api.promote(args.name, args.validation, args.bench, bootstrap=args.bootstrap,
                      registry_dir=args.registry, base=args.dir)
    print(f"promoted {rec['id']} for {rec['selector']}: {rec['summary']}")
    return 0


def cmd_kernels_list(args):
    """``gpk kernels list``: the candidates of the workspace root."""
    from . import api
    rows = api.list_candidates(args.dir)
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("no candidates (gpk kernels create ... makes one)")
    for r in rows:
        if "error" in r:
            print(f"{r['name']:24} error: {r['error']}")
            continue
        e = r["evidence"]
        print(f"{r['name']:24} {r['kind']:11} {r['selector']:28} {r['runs']:30} validation {e['validation']} "
              f"bench {e['bench']} profile {e['profile']}")
    return 0


def cmd_kernels_show(args):
    """``gpk kernels show N``: the candidate's contract and its evidence, as JSON."""
    from . import api
    _print_json(api.show(args.name, args.dir))
    return 0


def cmd_kernels_compare(args):
    """``gpk kernels compare A.json B.json``: two evidence records side by side."""
    from . import api
    out = api.compare(args.a, args.b)
    if args.json:
        _print_json(out)
        return 0
    print(f"{out['type']}: a {out['a']['candidate']['name']} ({out['a']['fingerprint']}), b "
          f"{out['b']['candidate']['name']} ({out['b']['fingerprint']})" +
          ("" if out["same_candidate"] else "  [different candidates]"))
    for d in out["fingerprint_diff"]:
        print(f"  fingerprint differs: {d}")
    for r in out["rows"]:
        print("  " + " ".join(f"{k}={v}" for k, v in r.items()))
    return 0


def cmd_kernels_doctor(args):
    """``gpk kernels doctor``: toolchain, GPU, driver, what can run here, records needing re-validation."""
    from . import api
    d = api.doctor(args.registry)
    if args.json:
        _print_json(d)
        return 0
    tc, gpu = d["env"]["toolchain"], d["env"]["gpu"]
    print("toolchain: " + ", ".join(f"{k} {v}" for k, v in tc.items()))
    print(f"cutlass headers: {d['cutlass_headers']}")
    print("gpu: " + ("none usable here" if gpu is None else
                     f"{gpu['name']} sm_{gpu['compute_capability']}, {gpu['sm_count']} SMs, {gpu['clock_mhz']} MHz, "
                     f"driver {gpu['driver']}"))
    print(f"fingerprint: {d['fingerprint']['id']}")
    print("can run here: " + ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in d["can_run"].items()))
    print(f"registry: {d['registry']}")
    for e in d["registry_errors"]:
        print(f"  REFUSED: {e}")
    states = {}
    for r in d["records"]:
        states.setdefault(r["state"], []).append(r)
    for state, rs in states.items():
        print(f"  {len(rs)} record(s): {state}")
        if rs[0]["status"] == "promoted":
            for r in rs:
                print(f"    {r['id']}" + (f" ({'; '.join(r['differs'])})" if r["differs"] else ""))
    return 0
