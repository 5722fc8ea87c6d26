"""Small kernels for the specialization, bad-input and compile tests (module level: kernels need a source file)."""
import math

import gpk_array as gk

K = gk.kernel
SCALE = 3


@gk.kernel
def scale_add(x, s, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * s + out[i]


def _sq(v):
    return v * v


def _norm2(a, b):
    return math.sqrt(_sq(a) + _sq(b))       # a helper calling a helper


class Geometry:
    @staticmethod
    def hyp(a, b):
        return _norm2(a, b)


@gk.kernel
def hypot_k(x, y, out):
    for i in range(out.shape[0]):
        out[i] = Geometry.hyp(x[i], y[i])


@gk.kernel
def where_k(m, x, out):
    for i in range(out.shape[0]):
        out[i] = x[i] if m[i] else -x[i]


@gk.kernel
def cmul(a, b, out):
    for i in range(out.shape[0]):
        out[i] = a[i] * b[i] + 1j


@gk.kernel
def intops(a, b, out):
    """Python's floor division, modulo and power on integers (C's differ for negative operands)."""
    for i in range(out.shape[0]):
        out[i, 0] = a[i] // b[i]
        out[i, 1] = a[i] % b[i]
        out[i, 2] = a[i] ** 2 - (a[i] << 1) + (a[i] & 7)


@gk.kernel
def gid_fill(out, v):
    K.work_size(out.shape[0])
    i = K.global_id()
    out[i] = v + i * SCALE


@gk.kernel
def atomics(x, acc):
    K.work_size(x.shape[0])
    i = K.global_id()
    K.atomic_min(acc, 0, x[i])
    K.atomic_max(acc, 1, x[i])
    K.atomic_add(acc, 2, x[i])


@gk.kernel
def cas_first(x, slot):
    """slot[0] ends up holding the index of some thread (exactly one wins the compare-and-swap)."""
    K.work_size(x.shape[0])
    i = K.global_id()
    old = K.atomic_cas(slot, 0, -1, i)
    if old == -1:
        K.atomic_exch(x, i, 1)


@gk.kernel
def strided_3d(a, out):
    for i, j, k in gk.ndindex(out.shape):
        acc = 0.0
        for t in range(a.shape[2]):
            acc += a[i, j, t] * (k + 1)
        out[i, j, k] = acc


@gk.kernel
def annotated(x: gk.float32, n: int, out: gk.Array):
    for i in range(n):
        out[i] = x[i] + 1


@gk.kernel
def alias_writer(src, dst):
    for i in range(src.shape[0]):
        d = dst
        d[i] = src[i]


def _store(a, i, v):
    a[i] = v


@gk.kernel
def helper_writer(src, dst):
    for i in range(src.shape[0]):
        _store(dst, i, src[i] * 2)


@gk.kernel
def xor_bcast(x, out):
    """out[i] = the value of lane i ^ 1 plus lane 0's value (shfl_xor and shfl)."""
    i = K.global_id()
    v = x[i]
    a = K.shfl_xor(v, 1)
    b = K.shfl(v, 0)
    out[i] = a + b


@gk.kernel
def no_domain(x):
    i = K.global_id()
    x[i] = 1.0


@gk.kernel
def oob(x, out):
    for i in range(out.shape[0]):
        out[i] = x[i + 1]


BIG = 20000


@gk.kernel
def big_shared(x):
    s = K.shared(BIG, x.dtype)
    i = K.thread_id()
    s[i] = x[i]
    K.barrier()
    x[i] = s[i]


@gk.kernel
def diverge(x):
    i = K.thread_id()
    if i < 3:
        K.barrier()
    else:
        K.barrier()
    x[i] = 1.0


@gk.kernel
def control_flow(x, out):
    """while / if-elif-else / break / continue / conditional expressions / chained comparisons / min, max, abs."""
    n, m = out.shape
    for i in range(n):
        for j in range(m):
            v = x[i, j]
            if v < -1.0:
                out[i, j] = -1.0
            elif -1.0 <= v < 0.0:
                out[i, j] = abs(v)
            else:
                k = 0
                acc = 0.0
                while True:
                    k += 1
                    if k % 2 == 0:
                        continue
                    acc += v / k
                    if k > 6:
                        break
                out[i, j] = max(acc, 0.25) if j != m - 1 else min(acc, v, 2.0)
    out[-1, -1] = 7.0   # a literal negative index counts from the end (runs once per thread)


@gk.kernel
def casts(x, out):
    for i in range(x.shape[0]):
        f = float(x[i])
        t = int(f * 3.7)
        b = bool(t & 1) and not (t < 0)
        out[i, 0] = t
        out[i, 1] = 1 if b else 0
        out[i, 2] = gk.int8(t)
        out[i, 3] = math.floor(x[i] * 2.5) + math.fmod(x[i], 0.75)


@gk.kernel
def step_range(x, out):
    for i in range(out.shape[0] - 1, -1, -2):
        out[i] = x[i] * 2


@gk.kernel
def local_update(x, out):
    for i in range(out.shape[0]):
        t = x[i]
        t += 1.0          # must not write into x
        out[i] = t * 2


@gk.kernel
def shift_copy(src, dst):
    for i in range(dst.shape[0]):
        dst[i] = src[i] + 1.0


def _lerp(a, b, t):
    return a + (b - a) * t          # works on vectors and numbers alike


@gk.kernel
def vectors(p, q, out):
    """float4 / float2 values: constructors, components, swizzles, componentwise arithmetic, a vector helper."""
    for i in range(out.shape[0]):
        a = K.float4(p[i, 0], p[i, 1], p[i, 2], p[i, 3])
        b = K.float4(q[i, 0], q[i, 1], q[i, 2], q[i, 3])
        c = _lerp(a, b, 0.25) * 2.0 - a / 4
        s = c.wzyx + -b
        d = s.xy * K.float2(1.5, 0.5)
        out[i, 0] = s.x
        out[i, 1] = s.y
        out[i, 2] = s.z
        out[i, 3] = s.w
        out[i, 4] = d.x + d.y


@gk.kernel
def uses_later(x, out):
    for i in range(x.shape[0]):
        out[i] = _defined_later(x[i])


def _defined_later(v):      # a helper below the kernel that calls it: resolved at the first call
    return v * 3 + 1


from .other_module import soft_step  # noqa: E402


@gk.kernel
def imported_helper(x, out):
    for i in range(x.shape[0]):
        out[i] = soft_step(x[i])


def make_affine(scale, offset):
    """A kernel factory: the kernel captures the numbers and a local helper."""
    def shift(v):
        return v + offset

    @gk.kernel
    def affine(x, out):
        for i in range(x.shape[0]):
            out[i] = shift(x[i] * scale)
    return affine


affine_2_1 = make_affine(2.0, 1.0)


@gk.kernel
def unpack_2d(x, y, out):
    """Tuple unpacking (its temporaries) inside a 2-D domain."""
    for i, j in gk.ndindex(out.shape):
        a, b = x[i, j], y[i, j]
        a, b = b, a
        out[i, j] = a - b


@gk.kernel
def warp_sums(x, out):
    """out[w] = the sum of warp w's values of x (0 past its end): kernel.warp_sum."""
    i = K.global_id()
    v = x[0] * 0
    if i < x.shape[0]:
        v = x[i]
    s = K.warp_sum(v)
    if K.lane_id() == 0:
        out[i // 32] = s


@gk.kernel
def warp_extrema(x, lo, hi):
    """lo[w], hi[w] = the least and greatest of warp w's values of x: kernel.warp_min / warp_max."""
    i = K.global_id()
    v = x[i]
    a = K.warp_min(v)
    b = K.warp_max(v)
    if K.lane_id() == 0:
        lo[i // 32] = a
        hi[i // 32] = b
