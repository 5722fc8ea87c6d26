"""The ``gpk`` command as a user meets it, run as a subprocess: --version, help with defaults, user errors as one
line on stderr with exit status 2 (a traceback only with --debug), bugs as tracebacks (exit status 1), missing
optional packages named with their extra, serve's startup lines, info without scikit-learn, generate's defaults."""
import importlib.metadata
import inspect
import json
import pathlib
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import urllib.request

import pytest

import gpk_array
from gpk_array import cli

TINY = pathlib.Path(__file__).parent / "llm" / "data" / "tiny-gpt2"
GPK = [sys.executable, "-m", "gpk_array.cli"]


def gpk(*args, block=(), cwd=None, timeout=300):
    """Run gpk with ``args``; ``block``: modules made unimportable in it (as if not installed)."""
    if block:
        code = (f"import sys; sys.modules.update(dict.fromkeys({list(block)!r})); from gpk_array.cli import main; "
                f"sys.exit(main())")
        cmd = [sys.executable, "-c", code]
    else:
        cmd = GPK
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def one_line_error(r, *needles):
    """r failed as a user error: exit status 2, one line on stderr (no traceback) containing every needle."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and r.stderr.endswith("\n"), r.stderr
    assert re.match(r"gpk( \w+)?: error: ", lines[0]), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def has_gpu():
    from gpk_array._device import cuda_device_count
    return cuda_device_count() > 0


# --- version and help ---------------------------------------------------------------------------------------


def test_version():
    r = gpk("--version")
    assert r.returncode == 0, r.stderr
    want = importlib.metadata.version("gpk_array")
    assert r.stdout.strip() == f"gpk_array {want}"
    assert want == gpk_array.__version__  # pyproject.toml and gpk_array/__init__.py agree


def test_version_through_the_entry_point():
    exe = shutil.which("gpk", path=str(pathlib.Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the gpk script is not installed next to this Python")
    r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == f"gpk_array {importlib.metadata.version('gpk_array')}"


@pytest.mark.parametrize("command, shown", [("info", "(default: 1024)"), ("generate", "(default: 64)"),
                                            ("serve", "(default: 8000)")])
def test_help_shows_defaults(command, shown):
    r = gpk(command, "--help")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert shown in text
    assert "default" in text


def _subparsers(parser):
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return action.choices


@pytest.mark.parametrize("command", ["info", "generate", "serve"])
def test_every_option_says_its_default(command):
    """Each option with a value (not a flag, not required) says its default in its help."""
    sub = _subparsers(cli.build_parser())[command]
    formatter = sub._get_formatter()
    missing = [a.option_strings[0] for a in sub._actions
               if a.option_strings and a.nargs != 0 and not a.required
               and "(default" not in formatter._get_help_string(a)]
    assert not missing, missing


def test_subcommands_exist_without_their_packages():
    """`gpk serve` is a command even when starlette, uvicorn and regex are missing (it was 'invalid choice')."""
    for command in ("generate", "serve"):
        r = gpk(command, "--help", block=("regex", "starlette", "uvicorn"))
        assert r.returncode == 0 and "--model" in r.stdout, r.stderr


# --- user errors: one line, exit status 2 -------------------------------------------------------------------


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """Model directories that each lack one part."""
    root = tmp_path_factory.mktemp("models")
    parts = {"noconfig": ["model.safetensors", "vocab.json", "merges.txt"],
             "noweights": ["config.json", "vocab.json", "merges.txt"],
             "notokenizer": ["config.json", "model.safetensors"]}
    for name, files in parts.items():
        (root / name).mkdir()
        for f in files:
            shutil.copy(TINY / f, root / name / f)
    (root / "torchonly").mkdir()
    shutil.copy(TINY / "config.json", root / "torchonly")
    (root / "torchonly" / "pytorch_model.bin").write_bytes(b"")
    return root


def test_missing_model_dir(tmp_path):
    one_line_error(gpk("generate", "--model", tmp_path / "nope", "--prompt", "x"), "does not exist",
                   str(tmp_path / "nope"))


@pytest.mark.parametrize("name", ["gpt2", "openai-community/gpt2"])
def test_hub_name(tmp_path, name):
    line = one_line_error(gpk("generate", "--model", name, "--prompt", "x", cwd=tmp_path), repr(name),
                          "downloads nothing", "save_checkpoint", "random_weights", "config.json")
    assert line.startswith("gpk generate: error: ")
    one_line_error(gpk("serve", "--model", name, cwd=tmp_path), "downloads nothing")


@pytest.mark.parametrize("which, needle", [("noconfig", "no config.json"), ("noweights", "no model.safetensors"),
                                           ("notokenizer", "no tokenizer files"), ("torchonly", "pytorch_model.bin")])
def test_incomplete_model_dir(dirs, which, needle):
    one_line_error(gpk("generate", "--model", dirs / which, "--prompt", "x", "--device", "cpu"), needle)


def test_model_is_a_file():
    one_line_error(gpk("generate", "--model", TINY / "config.json", "--prompt", "x"), "is a file")


@pytest.mark.skipif("has_gpu()", reason="a CUDA device is usable here")
@pytest.mark.parametrize("command", ["info", "generate"])
def test_cuda_device_without_a_gpu(command):
    args = ["--model", TINY, "--prompt", "x"] if command == "generate" else []
    one_line_error(gpk(command, *args, "--device", "cuda:0"), "cuda:0 is not available", "--device cpu")


def test_unknown_device():
    one_line_error(gpk("generate", "--model", TINY, "--prompt", "x", "--device", "tpu"), "unknown device 'tpu'")


@pytest.mark.parametrize("args, needle", [
    (["generate", "--max-new-tokens", "abc"], "--max-new-tokens: expected an integer, got 'abc'"),
    (["generate", "--max-new-tokens", "0"], "--max-new-tokens: must be >= 1"),
    (["generate", "--temperature", "-1"], "--temperature: must be >= 0"),
    (["generate", "--temperature", "nan"], "--temperature: expected a finite number"),
    (["generate", "--top-p", "0"], "--top-p: must be in (0, 1]"),
    (["generate", "--top-k", "-2"], "--top-k: must be >= 0"),
    (["serve", "--port", "70000"], "--port: must be in [0, 65535]"),
    (["serve", "--max-batch", "0"], "--max-batch: must be >= 1"),
    (["serve", "--context-vram", "lots"], "cannot parse --context-vram 'lots'"),
    (["info", "-n", "-5"], "-n: must be >= 1"),
    (["generate", "--dtype", "int8"], "invalid choice: 'int8'"),
])
def test_bad_arguments(args, needle):
    command, rest = args[0], args[1:]
    model = [] if command == "info" else ["--model", TINY] + (["--prompt", "x"] if command == "generate" else [])
    line = one_line_error(gpk(command, *model, *rest), needle)
    assert line.startswith(f"gpk {command}: error: argument ")


def test_missing_command_and_required_option():
    one_line_error(gpk(), "required: COMMAND")
    one_line_error(gpk("generate", "--model", TINY), "--prompt")


def test_prompt_fills_the_context():
    one_line_error(gpk("generate", "--model", TINY, "--device", "cpu", "--prompt", "ab " * 400),
                   "fills the model's context")


def test_serve_port_in_use():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        one_line_error(gpk("serve", "--model", TINY, "--device", "cpu", "--port", port),
                       f"cannot listen on 127.0.0.1:{port}", "in use", "--port")


def test_serve_more_names_than_models():
    one_line_error(gpk("serve", "--model", TINY, "--model-name", "a", "--model-name", "b"), "2 --model-name")


@pytest.mark.parametrize("command, block, needle", [
    ("serve", ("starlette", "uvicorn"), "needs starlette and uvicorn, not installed: pip install 'gpk_array[serve]'"),
    ("serve", ("regex", "starlette", "uvicorn"), "needs regex, starlette and uvicorn"),
    ("generate", ("regex",), "needs regex, not installed: pip install 'gpk_array[llm]'"),
])
def test_missing_optional_packages(command, block, needle):
    args = ["--model", TINY] + (["--prompt", "x"] if command == "generate" else [])
    one_line_error(gpk(command, *args, block=block), needle)


# --- --debug, and bugs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(tmp_path, where):
    args = ["generate", "--model", tmp_path / "nope", "--prompt", "x"]
    r = gpk(*(["--debug"] + args if where == "before" else args[:1] + ["--debug"] + args[1:]))
    assert r.returncode == 2
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert "CLIError" in r.stderr
    assert r.stderr.splitlines()[-1].startswith("gpk generate: error: no model directory")


def test_a_bug_is_a_traceback():
    code = ("import sys, gpk_array.cli as c\n"
            "def info(args):\n    raise RuntimeError('a bug')\n"
            "c.info = info\nsys.exit(c.main())")
    r = subprocess.run([sys.executable, "-c", code, "info"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" in r.stderr and r.stderr.splitlines()[-1] == "RuntimeError: a bug"


# --- info -----------------------------------------------------------------------------------------------------------


def test_info_on_the_cpu():
    r = gpk("info", "--device", "cpu", "-n", "32")
    assert r.returncode == 0, r.stderr
    assert f"gpk_array {gpk_array.__version__}" in r.stdout and "GEMM 32x32x32 float32 on cpu" in r.stdout


def test_info_without_scikit_learn():
    """README's first command (the cuda13 and serve extras) installs no scikit-learn: info says so, in one line,
    and succeeds."""
    r = gpk("info", "--device", "cpu", "-n", "32", block=("sklearn",))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "scikit-learn not installed: pip install scikit-learn to see the fit"
    assert "Traceback" not in r.stderr


# --- generate: greedy by default, like generate() -----------------------------------------------------------


def test_generate_defaults_agree_with_the_python_api():
    from gpk_array.llm import generate
    sub = _subparsers(cli.build_parser())["generate"]
    args = sub.parse_args(["--model", "m", "--prompt", "p"])
    params = inspect.signature(generate).parameters
    assert args.temperature == params["temperature"].default == 0
    assert params["top_k"].default is None and args.top_k == 0  # both keep every token
    assert params["top_p"].default is None and args.top_p == 1.0


def test_generate_is_greedy_by_default():
    from gpk_array.llm import GPT2, Tokenizer, generate
    tok = Tokenizer.from_dir(TINY)
    model = GPT2.from_pretrained(TINY, device="cpu")
    want = tok.decode(generate(model, tok.encode("Hello, world"), max_new_tokens=12, stop_tokens=[tok.eos_token_id]))
    for _ in range(2):  # the same text each run: no sampling
        r = gpk("generate", "--model", TINY, "--prompt", "Hello, world", "--max-new-tokens", "12", "--device", "cpu")
        assert r.returncode == 0, r.stderr
        assert r.stdout == want + "\n"


# --- serve: what it serves, at startup ----------------------------------------------------------------------


def test_serve_logs_what_it_serves():
    proc = subprocess.Popen(GPK + ["serve", "--model", str(TINY), "--model-name", "tiny", "--device", "cpu",
                                   "--port", "0", "--max-batch", "3"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()

    def read():
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)  # the server exited
    threading.Thread(target=read, daemon=True).start()
    try:
        seen = []
        while not seen or "serving" not in seen[-1]:
            try:
                line = lines.get(timeout=300)  # a safeguard against a hang, not a measurement
            except queue.Empty:
                pytest.fail(f"no 'serving' line; stderr so far: {seen}")
            if line is None:
                pytest.fail(f"the server exited: {seen}")
            seen.append(line)
        text = "".join(seen)
        assert "'tiny'" in text and str(TINY) in text
        assert "device cpu" in text and "dtype float32" in text and "3 slots" in text
        url = re.search(r"on (http://127\.0\.0\.1:\d+)/v1", seen[-1]).group(1)
        assert not url.endswith(":0")
        for _ in range(600):  # the socket is bound; uvicorn starts listening a moment later
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=10) as resp:
                    models = json.load(resp)
                break
            except OSError:
                assert proc.poll() is None, "the server exited"
                threading.Event().wait(0.1)
        else:
            pytest.fail("the server never answered")
        assert [m["id"] for m in models["data"]] == ["tiny"]
    finally:
        proc.terminate()
        proc.wait(60)
