"""Bad input to @gpk_array.kernel: a clear exception before anything runs, naming the line and the construct
(unsupported Python), the argument (count, types, read-only, devices) or the limit (launch sizes, shared
memory); GPK_KERNEL_DEBUG bounds checks on the CPU device."""
import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpk_array as gk

from . import kernels as KS

K = gk.kernel


def _line_of(func, text):
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("case", ["string", "dict", "list", "try", "raise", "lambda", "nested", "with",
                                  "fstring", "slice"])
def test_unsupported_syntax_names_line_and_construct(case):
    def k_string(x):
        for i in range(x.shape[0]):
            x[i] = len("abc")

    def k_dict(x):
        for i in range(x.shape[0]):
            x[i] = {1: 2}[1]

    def k_list(x):
        for i in range(x.shape[0]):
            x[i] = [1, 2][0]

    def k_try(x):
        for i in range(x.shape[0]):
            try:
                x[i] = 1
            except ValueError:
                pass

    def k_raise(x):
        for i in range(x.shape[0]):
            raise ValueError

    def k_lambda(x):
        for i in range(x.shape[0]):
            x[i] = (lambda v: v)(1)

    def k_nested(x):
        def inner():
            pass
        for i in range(x.shape[0]):
            x[i] = 1

    def k_with(x):
        for i in range(x.shape[0]):
            with x:
                x[i] = 1

    def k_fstring(x):
        for i in range(x.shape[0]):
            x[i] = f"{i}"

    def k_slice(x):
        for i in range(x.shape[0]):
            x[i:] = 1

    func = locals()[f"k_{case}"]
    marker = {"string": '"abc"', "dict": "{1: 2}", "list": "[1, 2]", "try": "try:", "raise": "raise ValueError",
              "lambda": "lambda v", "nested": "def inner", "with": "with x", "fstring": 'f"', "slice": "x[i:]"}[case]
    words = {"string": "strings", "dict": "dicts", "list": "lists", "try": "exceptions", "raise": "exceptions",
             "lambda": "lambdas", "nested": "nested functions", "with": "with statements", "fstring": "f-strings",
             "slice": "slices"}[case]
    with pytest.raises(SyntaxError) as e:
        gk.kernel(func)
    assert words in str(e.value) and e.value.lineno == _line_of(func, marker), (str(e.value), e.value.lineno)
    assert e.value.filename == __file__


def test_return_value_recursion_and_mutable_closures_are_type_errors():
    def returns(x):
        for i in range(x.shape[0]):
            x[i] = 1
        return x

    with pytest.raises(TypeError, match=r"returns no value.*line %d" % _line_of(returns, "return x")):
        gk.kernel(returns)

    def rec(v):
        return rec(v - 1) if v > 0 else v

    def uses_rec(x):
        for i in range(x.shape[0]):
            x[i] = rec(3)

    with pytest.raises(TypeError, match="recursion is not supported"):
        gk.kernel(uses_rec)

    table = [1.0, 2.0]

    def closes(x):
        for i in range(x.shape[0]):
            x[i] = table[0]

    with pytest.raises(TypeError, match=r"'table' is a list captured.*closures over mutable state.*line %d"
                       % _line_of(closes, "table[0]")):
        gk.kernel(closes)

    def unknown(x):
        for i in range(x.shape[0]):
            x[i] = no_such_name  # noqa: F821

    k = gk.kernel(unknown)      # maybe defined later in the module: the first call decides
    with pytest.raises(NameError, match="'no_such_name' is not defined"):
        k(np.zeros(2))

    def method(x):
        for i in range(x.shape[0]):
            x[i] = x.sum()

    with pytest.raises(TypeError, match=r"methods of arrays.*x\.sum"):
        gk.kernel(method)

    def sync_in_loop(x):
        for i in range(x.shape[0]):
            K.barrier()

    with pytest.raises(TypeError, match="loop-domain kernel"):
        gk.kernel(sync_in_loop)


def test_wrong_argument_count_and_types():
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"scale_add\(\) takes 3 arguments \('x', 's', 'out'\) but 2 were given"):
        KS.scale_add(x, x)
    with pytest.raises(TypeError, match="argument 's' is a str"):
        KS.scale_add(x, "2", x)
    with pytest.raises(TypeError, match="argument 'x' is a list"):
        KS.scale_add([1.0], 2.0, x)
    with pytest.raises(TypeError, match="indexes or writes 'out'.*got a number"):
        KS.scale_add(x, 2.0, 3.0)
    with pytest.raises(TypeError, match="unsupported dtype"):
        KS.scale_add(np.zeros(2, "U3"), 1.0, x)
    with pytest.raises(TypeError, match="at least one array"):
        gk.kernel(KS.gid_fill.__wrapped__)(1.0, 2.0)


def test_read_only_writes_refused_before_running():
    x = np.arange(4, dtype=np.float32)
    out = np.ones(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"writes its argument 'out' \(line \d+\), which is read-only"):
        KS.scale_add(x, 2.0, out)
    w = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="'out'.*read-only"):
        KS.scale_add(x, 2.0, K.readonly(w))
    np.testing.assert_array_equal(w, 1.0)          # nothing ran
    ro = np.arange(4, dtype=np.float32)
    ro.flags.writeable = False
    KS.scale_add(ro, 2.0, w)                       # reading a read-only array is fine
    KS.scale_add(K.readonly(x), 2.0, w)
    with pytest.raises(ValueError, match="writes its argument 'dst', declared read-only"):
        gk.kernel(readonly=("dst",))(KS.helper_writer.__wrapped__)   # through a helper
    with pytest.raises(ValueError, match="not a parameter"):
        gk.kernel(readonly="nope")(KS.scale_add.__wrapped__)


def test_no_launch_domain_is_an_error_not_a_guess():
    x = np.zeros(4)
    with pytest.raises(TypeError, match="no launch domain.*range.*ndindex.*work_size.*k\\[\\(total, block\\)\\]"):
        KS.no_domain(x)
    KS.no_domain[(4, 4)](x)
    np.testing.assert_array_equal(x, 1.0)


def test_launch_sizes_and_shared_memory_limits():
    x = np.zeros(4)
    with pytest.raises(ValueError, match="over the limit of 1024"):
        KS.no_domain[(4096, 2048)]
    with pytest.raises(ValueError, match="over the limit of 1024"):
        KS.no_domain[((64, 64), (64, 32))]
    with pytest.raises(ValueError, match="along z is over the limit of 64"):
        KS.no_domain[((1, 1, 128), (1, 1, 128))]
    with pytest.raises(ValueError, match="block must be positive"):
        KS.no_domain[(4, 0)]
    with pytest.raises(TypeError, match=r"k\[\(total, block\)\]"):
        KS.no_domain[4]
    with pytest.raises(TypeError, match="tuple of 1 to 3 ints"):
        KS.no_domain[(4.0, 4)]
    with pytest.raises(ValueError, match="over the 49152-byte limit"):
        KS.big_shared[(32, 32)](np.zeros(32))
    KS.no_domain[(0, 32)](x)                        # nothing to run
    np.testing.assert_array_equal(x, 0.0)


def test_barrier_divergence_is_reported():
    with pytest.raises(RuntimeError, match=r"different synchronization points \(barrier\(\) of line \d+, "
                                           r"barrier\(\) of line \d+\)"):
        KS.diverge[(8, 8)](np.zeros(8))


def test_numpy_and_cpu_arrays_are_one_device():
    """NumPy arrays and gpk_array Arrays on the CPU device mix (one device); CUDA mixing: test_gpu.py."""
    x = np.ones(4, np.float32)
    out = gk.asarray(np.zeros(4, np.float32), device="cpu")
    KS.scale_add(x, 1.0, out)
    np.testing.assert_array_equal(np.asarray(out), 1.0)


def test_debug_mode_bounds_checks(tmp_path):
    """GPK_KERNEL_DEBUG=1: an out-of-bounds index raises IndexError naming the kernel, the argument, the index."""
    code = textwrap.dedent("""
        import numpy as np, sys
        sys.path.insert(0, %r)
        from tests.kernels_user import kernels as KS
        x = np.zeros(5)
        out = np.zeros(5)
        try:
            KS.oob(x, out)
        except IndexError as e:
            print("IndexError:", e)
    """ % str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    env = dict(__import__("os").environ, GPK_KERNEL_DEBUG="1", GPK_DEVICE="cpu")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "IndexError: gpk_array.kernel 'oob': index 5 is out of bounds for argument 'x' of shape (5,)" in r.stdout, \
        r.stdout + r.stderr
    # without debug mode NumPy raises its own IndexError (the loop runs as Python); with debug= on the decorator
    k = gk.kernel(debug=True)(KS.oob.__wrapped__)
    with pytest.raises(IndexError, match=r"'oob': index 5 .* argument 'x' of shape \(5,\) \(line \d+\)"):
        k(np.zeros(5), np.zeros(5))
    neg = gk.kernel(debug=True)(KS.scale_add.__wrapped__)
    neg(np.zeros(3), 1.0, np.zeros(3))


def _module(tmp_path, monkeypatch, name, text):
    """Import ``text`` as module ``name`` from a file (kernels need their source on disk)."""
    import importlib
    (tmp_path / f"{name}.py").write_text("import numpy as np\nimport gpk_array as gk\n" + textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_captured_array_and_classmethod_name_the_line(tmp_path, monkeypatch):
    """A NumPy array captured from the module is refused naming it and the line (it raised NumPy's 'truth value
    of an array is ambiguous' before); a classmethod called from a kernel is refused naming it (it failed with a
    missing argument), a staticmethod works."""
    with pytest.raises(TypeError, match=r"'TABLE' is a ndarray captured from outside the kernel.*line 8"):
        _module(tmp_path, monkeypatch, "captured_arr", """
            TABLE = np.arange(4.0)
            @gk.kernel
            def uses_table(out):
                for i in range(out.shape[0]):
                    out[i] = TABLE[i]
        """)
    with pytest.raises(TypeError, match=r"C\.cm is a classmethod.*staticmethod.*line 11"):
        _module(tmp_path, monkeypatch, "class_cm", """
            class C:
                @classmethod
                def cm(cls, v):
                    return v * 2
            @gk.kernel
            def uses_cm(x, out):
                for i in range(out.shape[0]):
                    out[i] = C.cm(x[i])
        """)
    m = _module(tmp_path, monkeypatch, "class_sm", """
        class C:
            @staticmethod
            def sm(v):
                return v * 3
        @gk.kernel
        def uses_sm(x, out):
            for i in range(out.shape[0]):
                out[i] = C.sm(x[i])
    """)
    out = np.zeros(3)
    m.uses_sm(np.arange(3.0), out)
    np.testing.assert_array_equal(out, 3 * np.arange(3.0))


def test_debug_mode_checks_atomic_indices_on_the_cpu(tmp_path, monkeypatch):
    """GPK_KERNEL_DEBUG's checks cover atomics too (NumPy raised its own IndexError, and a negative index
    wrapped)."""
    m = _module(tmp_path, monkeypatch, "atomic_oob", """
        @gk.kernel(debug=True)
        def bad_atomic(x, acc, off):
            for i in range(x.shape[0]):
                gk.kernel.atomic_add(acc, i + off, x[i])
    """)
    with pytest.raises(IndexError, match=r"'bad_atomic': index 4 is out of bounds for argument 'acc' of shape "
                                         r"\(4,\) \(line 7\)"):
        m.bad_atomic(np.ones(4), np.zeros(4), 3)
    with pytest.raises(IndexError, match=r"index -1 is out of bounds for argument 'acc'"):
        m.bad_atomic(np.ones(4), np.zeros(4), -1)
    acc = np.zeros(4)
    m.bad_atomic(np.ones(4), acc, 0)
    np.testing.assert_array_equal(acc, np.ones(4))


def test_writes_through_tuple_and_conditional_aliases_are_seen(tmp_path, monkeypatch):
    """``a, b = out, x`` and ``t = out if flag else x`` make aliases of ``out``: its write is found, and an array
    passed read-only for it is refused before running (the CPU device wrote into it)."""
    m = _module(tmp_path, monkeypatch, "alias_forms", """
        @gk.kernel
        def tuple_alias(x, out):
            for i in range(out.shape[0]):
                a, b = out, x
                a[i] = b[i] + 1
        @gk.kernel
        def cond_alias(x, out, flag):
            for i in range(out.shape[0]):
                t = out if flag else x
                t[i] = 5.0
        @gk.kernel
        def chain_alias(x, out):
            for i in range(out.shape[0]):
                for k in range(2):
                    if k == 1:
                        c[i] = 7.0
                    c = b
                    b = out
    """)
    assert m.tuple_alias.effects == {"x": "R", "out": "W"}
    assert m.chain_alias.effects["out"] == "W"   # c = b before b = out, in a loop
    assert m.cond_alias.effects["out"] == "W" and "W" in m.cond_alias.effects["x"]
    for k, args in ((m.tuple_alias, (np.zeros(3),)), (m.cond_alias, (np.zeros(3), True))):
        frozen = np.zeros(3)
        with pytest.raises(ValueError, match="'out'.*read-only"):
            k(np.zeros(3), gk.kernel.readonly(frozen), *args[1:])
        assert (frozen == 0).all()
