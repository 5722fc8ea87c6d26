"""One-off diagnostic scripts (``python -m benchmarks.diag.NAME``): the measurements behind a routing rule or a
tuning choice, kept to rerun them; not benchmark suites (those are ``python -m benchmarks KIND``). README.md lists
what each is for."""
