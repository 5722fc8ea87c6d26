"""Reading kernel signatures and simple structs out of CUDA C++ source, without a compiler.

``kernels(source)`` finds every ``__global__`` function and tells whether it has C linkage (``extern "C"``, on the
declaration or around it in an ``extern "C" { ... }`` block); ``Param`` says what each parameter is: a pointer (and
to what), a scalar of a known size (its NumPy dtype), a struct defined in the source (its NumPy structured dtype),
or something this reader does not know (passed through unchecked). ``structs(source)`` turns plain C structs of
scalar and fixed-size array fields into NumPy structured dtypes with C layout (``align=True``).

Templates: ``instantiate(kernel, "scale<float, 2>")`` substitutes the template arguments into the parameter types
and gives the explicit instantiation line and the mangled (Itanium ABI) symbol the cubin will hold, so name
expressions work with NVRTC and nvcc alike. This is a reader for the declarations people write, not a C++ parser:
what it cannot read it reports as unknown, never guesses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

# C type spellings (after dropping qualifiers) -> NumPy dtype. ``long`` is 64-bit (LP64: Linux, where CUDA runs).
_SCALARS = {
    "bool": np.bool_, "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8,
    "short": np.int16, "short int": np.int16, "signed short": np.int16, "unsigned short": np.uint16,
    "unsigned short int": np.uint16, "int": np.int32, "signed": np.int32, "signed int": np.int32,
    "unsigned": np.uint32, "unsigned int": np.uint32, "long": np.int64, "long int": np.int64,
    "signed long": np.int64, "unsigned long": np.uint64, "unsigned long int": np.uint64, "long long": np.int64,
    "long long int": np.int64, "signed long long": np.int64, "unsigned long long": np.uint64,
    "unsigned long long int": np.uint64, "int8_t": np.int8, "uint8_t": np.uint8, "int16_t": np.int16,
    "uint16_t": np.uint16, "int32_t": np.int32, "uint32_t": np.uint32, "int64_t": np.int64, "uint64_t": np.uint64,
    "size_t": np.uint64, "ptrdiff_t": np.int64, "ssize_t": np.int64, "float": np.float32, "double": np.float64,
    "half": np.float16, "__half": np.float16,
    "complex<float>": np.complex64, "complex<double>": np.complex128, "cuFloatComplex": np.complex64,
    "cuComplex": np.complex64, "cuDoubleComplex": np.complex128,
}
_BFLOAT16 = ("__nv_bfloat16", "nv_bfloat16", "bfloat16")
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "struct",
               "typename"}
# bytes a pointer of these points to are any dtype's (char* and void* are the byte views of C)
BYTE_POINTEES = {"void", "char", "signed char", "unsigned char", "int8_t", "uint8_t"}

# Itanium ABI codes of the builtin types (template arguments of name expressions)
_MANGLE = {"void": "v", "bool": "b", "char": "c", "signed char": "a", "unsigned char": "h", "short": "s",
           "unsigned short": "t", "int": "i", "unsigned": "j", "unsigned int": "j", "long": "l",
           "unsigned long": "m", "long long": "x", "unsigned long long": "y", "float": "f", "double": "d",
           "int8_t": "a", "uint8_t": "h", "int16_t": "s", "uint16_t": "t", "int32_t": "i", "uint32_t": "j",
           "int64_t": "l", "uint64_t": "m", "size_t": "m"}


def scalar_dtype(ctype: str):
    """The NumPy dtype of a C scalar type spelling (qualifiers dropped), or None when it is not one we know."""
    t = _normalize(ctype)
    t = t[len("thrust::"):] if t.startswith("thrust::") else t
    t = t[len("cuda::std::"):] if t.startswith("cuda::std::") else t
    if t in _BFLOAT16:
        return np.dtype(_ml_bfloat16())
    d = _SCALARS.get(t)
    return None if d is None else np.dtype(d)


def _ml_bfloat16():
    import ml_dtypes
    return ml_dtypes.bfloat16


def _normalize(ctype: str) -> str:
    words = [w for w in re.split(r"\s+", ctype.replace("<", " < ").replace(">", " > ").strip()) if w]
    words = [w for w in words if w not in _QUALIFIERS]
    return " ".join(words).replace(" < ", "<").replace(" > ", ">").replace("< ", "<").replace(" >", ">")


@dataclass
class Param:
    """One kernel parameter: ``kind`` is "pointer", "scalar", "struct" or "unknown"; ``dtype`` the NumPy dtype of
    the scalar, of the struct, or of what the pointer points to (None where unknown or a byte pointer);
    ``ctype`` the declared type as written, less the name."""
    name: str
    ctype: str
    kind: str
    dtype: object = None
    pointee: str = ""

    def describe(self) -> str:
        """``name (type)`` as error messages print it."""
        return f"{self.name!r} ({self.ctype})"


@dataclass
class Kernel:
    """A ``__global__`` function: its name, whether it has C linkage, its parameters (None when the list could not
    be read), its template parameters (names, for templates) and the source offset of its declaration."""
    name: str
    extern_c: bool
    params: list | None
    template: list = field(default_factory=list)   # (name, is a type, declaration) per template parameter
    namespace: tuple = ()
    raw_params: list = field(default_factory=list)


def strip_comments(source: str) -> str:
    """``source`` with comments replaced by spaces (newlines kept, so line numbers stay) and string literals
    kept."""
    out = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "/" and i + 1 < n and source[i + 1] == "/":
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and i + 1 < n and source[i + 1] == "*":
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in source[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
            out.append(source[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _match(text: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``text[i]``, or -1."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur)
    if tail.strip() or parts:
        parts.append(tail)
    return [p.strip() for p in parts]


def _extern_c_ranges(text: str) -> list[tuple[int, int]]:
    ranges = []
    for m in re.finditer(r'extern\s+"C"\s*\{', text):
        end = _match(text, m.end() - 1, "{", "}")
        ranges.append((m.end(), end if end >= 0 else len(text)))
    return ranges


def _namespaces(text: str) -> list[tuple[int, int, str]]:
    out = []
    for m in re.finditer(r"\bnamespace\s+([A-Za-z_]\w*)\s*\{", text):
        end = _match(text, m.end() - 1, "{", "}")
        out.append((m.end(), end if end >= 0 else len(text), m.group(1)))
    return out


_DECL = re.compile(r"\b__global__\b")


def kernels(source: str) -> list[Kernel]:
    """Every ``__global__`` function declared in ``source`` (definitions and declarations, each name once, in
    order)."""
    text = strip_comments(source)
    ranges = _extern_c_ranges(text)
    spaces = _namespaces(text)
    found: dict[str, Kernel] = {}
    for m in _DECL.finditer(text):
        start = m.start()
        # the declaration's beginning: after the previous ';', '{' or '}'
        b = max(text.rfind(";", 0, start), text.rfind("{", 0, start), text.rfind("}", 0, start)) + 1
        head = text[b:start]
        paren = text.find("(", m.end())
        if paren < 0:
            continue
        # skip __launch_bounds__(...) and similar attributes between __global__ and the name
        between = text[m.end():paren]
        while re.search(r"\b(__launch_bounds__|__cluster_dims__|__maxnreg__)\s*$", between):
            close = _match(text, paren, "(", ")")
            paren = text.find("(", close + 1)
            between = text[m.end():paren]
        names = re.findall(r"[A-Za-z_]\w*", between)
        if not names:
            continue
        name = names[-1]
        close = _match(text, paren, "(", ")")
        if close < 0:
            continue
        extern_c = bool(re.search(r'extern\s+"C"', head)) or any(lo <= start < hi for lo, hi in ranges)
        template = []
        tm = re.search(r"template\s*<(.*)>\s*$", head, re.S)
        if tm:
            for part in _split_top(tm.group(1)):
                pm = re.match(r"(?:typename|class)\s+([A-Za-z_]\w*)|.*?\b([A-Za-z_]\w*)\s*(?:=.*)?$", part, re.S)
                if pm:
                    template.append((pm.group(1) or pm.group(2), part.split()[0] in ("typename", "class"), part))
        ns = tuple(s for lo, hi, s in spaces if lo <= start < hi)
        raw = _split_top(text[paren + 1:close])
        if raw == ["void"]:
            raw = []
        params = _params(raw, source_structs(text)) if not template else None
        if name not in found:
            found[name] = Kernel(name, extern_c, params, template, ns, raw)
    return list(found.values())


def _params(raw: list[str], struct_types: dict) -> list[Param] | None:
    out = []
    for i, decl in enumerate(raw):
        decl = re.sub(r"=.*$", "", decl, flags=re.S).strip()           # default arguments
        decl = re.sub(r"__align__\s*\(\s*\d+\s*\)", "", decl)
        if not decl or decl == "...":
            return None
        array = decl.endswith("]")
        if array:
            decl = decl[:decl.index("[")].strip()
        m = re.match(r"(.*?)([A-Za-z_]\w*)$", decl, re.S)
        if m and m.group(1).strip() and m.group(1).strip() not in _QUALIFIERS:
            ctype, name = m.group(1).strip(), m.group(2)
        else:                                                           # an unnamed parameter
            ctype, name = decl, f"arg{i}"
        stars = ctype.count("*") + (1 if array else 0)
        if "&" in ctype:
            out.append(Param(name, ctype, "unknown"))
            continue
        base = _normalize(ctype.replace("*", " "))
        if stars:
            pointee = base
            dt = None if pointee in BYTE_POINTEES or stars > 1 else (scalar_dtype(pointee)
                                                                     or struct_types.get(pointee))
            out.append(Param(name, ctype, "pointer", dt, pointee if stars == 1 else "void*"))
        else:
            dt = scalar_dtype(base)
            if dt is not None:
                out.append(Param(name, ctype, "scalar", dt))
            elif base in struct_types:
                out.append(Param(name, ctype, "struct", struct_types[base]))
            else:
                out.append(Param(name, ctype, "unknown"))
    return out


def source_structs(text: str) -> dict:
    """``{name: numpy structured dtype}`` of the plain structs in comment-free ``text`` (see ``structs``)."""
    out: dict = {}
    aligns: dict = {}   # name -> the struct's alignment in C (its __align__, or its widest field's)
    for m in re.finditer(r"\b(typedef\s+)?struct\s+(?:__align__\s*\(\s*(\d+)\s*\)\s*)?([A-Za-z_]\w*)?\s*\{", text):
        end = _match(text, m.end() - 1, "{", "}")
        if end < 0:
            continue
        name = m.group(3)
        if m.group(1):                                                  # typedef struct {...} Name;
            tail = re.match(r"\s*([A-Za-z_]\w*)\s*;", text[end + 1:])
            if tail:
                name = tail.group(1)
        if not name:
            continue
        made = _struct_dtype(text[m.end():end], out, aligns, int(m.group(2)) if m.group(2) else None)
        if made is not None:
            out[name], aligns[name] = made
    return out


def _struct_dtype(body: str, known: dict, aligns: dict, align: int | None):
    """(dtype, alignment) of a struct body with C's layout: each field at the next multiple of its alignment
    (a nested struct's is its own ``__align__``, which NumPy's dtypes do not carry), the size a multiple of the
    struct's alignment; None where a field is not plain."""
    fields = []   # (name, dtype, dims, alignment)
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        if "(" in decl or "{" in decl or decl.startswith(("static", "template", "using", "typedef")):
            return None                                                 # methods, nested types: not plain
        m = re.match(r"(.*?)((?:[A-Za-z_]\w*\s*(?:\[\s*\d+\s*\])*\s*,\s*)*[A-Za-z_]\w*\s*(?:\[\s*\d+\s*\])*)$",
                     decl, re.S)
        if not m or not m.group(1).strip():
            return None
        base = _normalize(m.group(1))
        if "*" in base:
            dt, a = np.dtype(np.uint64), 8                              # a pointer field: 8 bytes
        else:
            dt = scalar_dtype(base)
            a = None if dt is None else dt.alignment
            if dt is None and base in known:
                dt, a = known[base], aligns[base]
        if dt is None:
            return None
        for item in m.group(2).split(","):
            fm = re.match(r"\s*([A-Za-z_]\w*)\s*((?:\[\s*\d+\s*\])*)", item)
            dims = tuple(int(d) for d in re.findall(r"\d+", fm.group(2)))
            fields.append((fm.group(1), dt, dims, a))
    if not fields:
        return None
    offsets, off, amax = [], 0, 1
    for _, dt, dims, a in fields:
        off = -(-off // a) * a
        offsets.append(off)
        off += dt.itemsize * int(np.prod(dims, dtype=np.int64))
        amax = max(amax, a)
    if align:
        amax = max(amax, align)
    dt = np.dtype({"names": [f[0] for f in fields], "formats": [(f[1], f[2]) if f[2] else f[1] for f in fields],
                   "offsets": offsets, "itemsize": -(-off // amax) * amax})
    return dt, amax


def structs(source: str) -> dict:
    """``{name: numpy structured dtype}`` for each plain struct in ``source`` (fields of known scalar types, nested
    plain structs, pointers as uint64 and fixed-size arrays; C layout and alignment, ``__align__(n)`` honoured).
    Structs with methods or fields of unknown types are left out."""
    return source_structs(strip_comments(source))


# ----------------------------------------------------------------------------------------------
# templates (name expressions)

def parse_expression(expr: str) -> tuple[str, list[str]]:
    """``"ns::scale<float, 2>"`` -> ``("ns::scale", ["float", "2"])``; a name without arguments -> ``(name, [])``."""
    expr = expr.strip()
    i = expr.find("<")
    if i < 0:
        return expr, []
    if not expr.endswith(">"):
        raise ValueError(f"gpk_array: cannot read the name expression {expr!r}")
    return expr[:i].strip(), _split_top(expr[i + 1:-1])


def _mangle_type(t: str) -> str:
    t = _normalize(t)
    if t.endswith("*"):
        return "P" + _mangle_type(t[:-1])
    code = _MANGLE.get(t)
    if code is None:
        if re.fullmatch(r"[A-Za-z_]\w*", t):
            return f"{len(t)}{t}"
        raise ValueError(f"gpk_array: cannot resolve the template argument {t!r} of a name expression "
                         "(builtin types, pointers to them, plain type names and integer constants are supported)")
    return code


def _mangle_arg(arg: str, is_type: bool, decl: str) -> str:
    if is_type:
        return _mangle_type(arg)
    s = arg.strip()
    if s in ("true", "false"):
        return f"Lb{int(s == 'true')}E"
    m = re.fullmatch(r"(-?)(\d+)([uUlL]*)", s)
    if not m:
        raise ValueError(f"gpk_array: cannot resolve the non-type template argument {arg!r} (integer constants only)")
    ptype = _normalize(decl.rsplit(None, 1)[0]) if len(decl.split()) > 1 else "int"
    code = _MANGLE.get(ptype, "i")
    return f"L{code}{'n' if m.group(1) else ''}{int(m.group(2))}E"


def _substitute(ctype: str, mapping: dict) -> str:
    return re.sub(r"[A-Za-z_]\w*", lambda m: mapping.get(m.group(0), m.group(0)), ctype)


def instantiate(kernel: Kernel, expr: str, struct_types: dict | None = None) -> tuple[str, list | None, str]:
    """(explicit instantiation line, typed parameters, mangled symbol) of the template ``kernel`` at the name
    expression ``expr``. Raises ValueError for what it cannot resolve."""
    base, args = parse_expression(expr)
    if len(args) != len(kernel.template):
        raise ValueError(f"gpk_array: {expr!r} gives {len(args)} template argument(s); {kernel.name} takes "
                         f"{len(kernel.template)}")
    mapping = {t[0]: a for t, a in zip(kernel.template, args)}
    raw = [_substitute(p, mapping) for p in kernel.raw_params]
    params = _params(raw, struct_types or {})
    decl_types = []
    for p in raw:
        p = re.sub(r"=.*$", "", p, flags=re.S).strip()
        m = re.match(r"(.*?)([A-Za-z_]\w*)$", p, re.S)
        decl_types.append(m.group(1).strip() if m and m.group(1).strip() else p)
    qual = "::".join(kernel.namespace + (kernel.name,))
    line = f"template __global__ void {qual}<{', '.join(args)}>({', '.join(decl_types)});"
    targs = "".join(_mangle_arg(a, is_type, d) for a, (_, is_type, d) in zip(args, kernel.template))
    if kernel.namespace:
        name = "N" + "".join(f"{len(s)}{s}" for s in kernel.namespace) + f"{len(kernel.name)}{kernel.name}I{targs}EE"
    else:
        name = f"{len(kernel.name)}{kernel.name}I{targs}E"
    return line, params, "_Z" + name
