"""Which NumPy buffers were allocated inside a CPU scheduler context.

The CPU device charges NumPy buffers to the context current when the core wraps them in an ``Array``
(``_hook.alloc_hook``). Wrapping alone does not say whether memory was allocated: a view (slicing, reshape,
``.T``, ``broadcast_to``, ``asarray`` of a NumPy array, ...) allocates nothing, yet an op may also return a view of
a fresh temporary (``matmul(a, b)[..., 0, 0]``), whose buffer was allocated in the context and must be charged.

The rule used here asks the memory itself: while a CPU context is current, NumPy allocates array data through a
memory handler of ours (NEP 49, ``PyDataMem_SetHandler``: a context variable, so per thread and per asyncio task,
like the scheduler's own current context). It is a copy of the handler that was in place (NumPy's default one
unless the program set another), the same functions under another name, so allocation itself is unchanged. NumPy
records in every array that owns its data the handler that allocated it (``numpy._core.multiarray
.get_handler_name``), so the hook charges an owner only when its data was allocated while a context was current:
a buffer that existed before (a view of an array made outside, a user's NumPy array) is never charged, and a
fresh buffer always is, however many views lie between it and the wrapped array.

NumPy exports ``PyDataMem_SetHandler`` only to C, through its C-API table (``_ARRAY_API``, slots 304-306 since
NumPy 1.22, part of its stable ABI); it is called here through ctypes, once, to find the context variable it sets
(``current_allocator``, NumPy's own), which entering and leaving a context then set directly (a ``ContextVar.set``,
about what setting the scheduler's own current context costs, where a ctypes call costs several times that). When
any of that is unavailable, :data:`available` is False and the hook falls back to charging every owner it has not
charged yet (views of memory allocated outside a context are then charged to the context, as before this module
existed).
"""

import contextvars
import ctypes

import numpy as np

__all__ = ["available", "NAME", "begin", "end", "handler_name"]

NAME = "gpk_array.sched"  # the name our handlers carry (at most 126 bytes)

available = False
handler_name = None  # numpy's get_handler_name(arr): the name of the handler that allocated arr's data, or None

_set_handler = None  # PyDataMem_SetHandler(capsule) -> previous capsule
_var = None  # NumPy's context variable holding the current handler (what PyDataMem_SetHandler sets)
_default = None  # NumPy's default handler capsule
_tag = None  # our copy of the default handler
_ours = {}  # id(capsule) -> capsule, for every handler of ours (the copy of the default and copies of others)
_wrappers = {}  # id(foreign capsule) -> (foreign capsule, our copy of it)
_buffers = []  # addresses of our handler structs (malloc'd, never freed: arrays keep pointers to them)

_CAPSULE_NAME = b"mem_handler"
_HEADER = 128  # char name[127]; uint8_t version
_SIZE = _HEADER + 5 * ctypes.sizeof(ctypes.c_void_p)  # PyDataMemAllocator: ctx, malloc, calloc, realloc, free

_capsule_get_pointer = None
_capsule_get_name = None
_capsule_new = None
_malloc = None


def _copy(capsule):
    """A capsule of ours with ``capsule``'s allocator functions and context, named NAME."""
    src = _capsule_get_pointer(capsule, _CAPSULE_NAME)
    if not src:
        raise ValueError("not a NumPy memory handler")
    version = ctypes.c_uint8.from_address(src + 127).value
    if version != 1:
        raise ValueError(f"NumPy memory handler version {version} (only 1 is known)")
    # The struct and the capsule's name must outlive every array allocated through the handler (arrays hold the
    # capsule and can be freed during interpreter shutdown, after this module's globals are gone, or after a
    # reload): the struct lives in malloc'd memory that is never freed, and the name is NumPy's own static string.
    buf = _malloc(_SIZE)
    if not buf:
        raise MemoryError("cannot allocate a NumPy memory handler")
    ctypes.memmove(buf, src, _SIZE)
    ctypes.memset(buf, 0, 127)
    name = NAME.encode()
    ctypes.memmove(buf, name, len(name))
    cap = _capsule_new(buf, _capsule_get_name(capsule), None)
    _buffers.append(buf)
    _ours[id(cap)] = cap
    return cap


def _setup():
    global available, handler_name, _set_handler, _var, _default, _tag, _capsule_get_pointer, _capsule_new, \
        _capsule_get_name, _malloc
    try:
        from numpy._core import _multiarray_umath as mu  # noqa: PLC0415
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as mu  # noqa: PLC0415
    get_name = mu.get_handler_name
    gp = ctypes.pythonapi.PyCapsule_GetPointer
    gp.restype = ctypes.c_void_p
    gp.argtypes = [ctypes.py_object, ctypes.c_char_p]
    cn = ctypes.pythonapi.PyCapsule_New
    cn.restype = ctypes.py_object
    cn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    gn = ctypes.pythonapi.PyCapsule_GetName
    gn.restype = ctypes.c_void_p
    gn.argtypes = [ctypes.py_object]
    malloc = ctypes.pythonapi.PyMem_RawMalloc
    malloc.restype = ctypes.c_void_p
    malloc.argtypes = [ctypes.c_size_t]
    _capsule_get_pointer, _capsule_new, _capsule_get_name, _malloc = gp, cn, gn, malloc
    table = gp(mu._ARRAY_API, None)
    if not table:
        raise RuntimeError("NumPy's C-API table is not available")
    api = ctypes.cast(table, ctypes.POINTER(ctypes.c_void_p))
    setter = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(api[304])
    default = ctypes.cast(api[306], ctypes.POINTER(ctypes.py_object)).contents.value
    if get_name() is None or _capsule_get_pointer(default, _CAPSULE_NAME) is None:
        raise RuntimeError("NumPy has no memory handlers")
    tag = _copy(default)
    # find NumPy's context variable (set in this context only, and undone), check that setting it works
    prev = setter(tag)
    try:
        found = [v for v, value in contextvars.copy_context().items()
                 if value is tag and getattr(v, "name", None) == "current_allocator"]
    finally:
        setter(prev)
    if len(found) != 1 or found[0].get() is not prev or get_name() == NAME:
        raise RuntimeError("NumPy's current memory handler is not where it was looked for")
    var = found[0]
    var.set(tag)
    try:
        probe = np.empty(1)
        ok = get_name(probe) == NAME and get_name() == NAME
    finally:
        var.set(prev)
    if not ok or get_name() == NAME:
        raise RuntimeError("NumPy's memory handler could not be set")
    _set_handler, _var, _default, _tag, handler_name = setter, var, default, tag, get_name
    available = True


try:
    _setup()
except Exception:  # noqa: BLE001 (anything missing: fall back to charging by ownership alone)
    available = False


def begin():
    """Make NumPy allocate through a handler of ours in the current thread / task; returns what :func:`end` needs
    (None when tagging is unavailable)."""
    var = _var
    if var is None:
        return None
    prev = var.get()
    if prev is _default:
        var.set(_tag)
    elif id(prev) not in _ours:  # a handler of the program's own: allocate with its functions, under our name
        w = _wrappers.get(id(prev))
        if w is None or w[0] is not prev:
            w = _wrappers[id(prev)] = (prev, _copy(prev))
        var.set(w[1])
    # else: an enclosing context's handler, ours already
    return prev


def end(prev):
    """Restore the handler that was in place before the matching :func:`begin`."""
    if prev is not None:
        _var.set(prev)
