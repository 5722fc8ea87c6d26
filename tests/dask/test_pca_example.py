"""The chunked standardization + PCA example of docs/dask.md on each device: the page's own code (which checks
its results against NumPy), run with the device under test as the default device, on Dask's synchronous scheduler
(tests/test_docs.py runs it as a script on the CPU)."""
import pathlib
import re

import gpk_array as gp

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "dask.md"


def _example():
    blocks = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.M | re.S)
    (code,) = [b for b in blocks if "da.linalg.svd(Z)" in b]
    return code


def test_pca_example(device, capsys):
    old = gp._device._default
    gp.set_default_device(device)
    try:
        ns = {}
        exec(compile(_example(), str(PAGE), "exec"), ns)
    finally:
        gp._device._default = old
    assert ns["scores"].device == device and type(ns["scores"]) is gp.Array
    assert type(ns["components"]) is gp.Array and ns["components"].device == device
    assert capsys.readouterr().out.split()[:2] == ["Array", str(device)]
