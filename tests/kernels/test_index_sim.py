"""CPU simulation of the kernels' index arithmetic (no GPU): Python transliterations of the loops in
binary.cu / unary.cu / reduce.cu, driven by the real launch planners, must visit every element
exactly once and write every output (or partial) exactly once. This desk-checks the tiling, tails,
alignment heads, splits and grid-stride loops that the GPU tests exercise numerically."""

import numpy as np
import pytest

from gpk_array._kernels import _common, reduction


def sim_vector_kernel(n, itemsize, unroll, threads, grid):
    """binary_contig / unary_contig: which elements each launch touches."""
    N = 16 // itemsize
    U = _common.unroll_for(unroll, itemsize)
    seen = np.zeros(n, dtype=np.int64)
    nvec = n // N
    tile = threads * U
    for bx in range(grid):
        for tx in range(threads):
            base = bx * tile + tx
            while base < nvec:
                for u in range(U):
                    v = base + u * threads
                    if v < nvec:
                        seen[v * N:(v + 1) * N] += 1
                base += grid * tile
            t = nvec * N + bx * threads + tx
            if t < n:
                seen[t] += 1
    return seen


@pytest.mark.parametrize("n", [0, 1, 3, 15, 16, 17, 255, 1000, 4097, 65536 + 5])
@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_vector_kernel_covers_each_element_once(n, itemsize):
    threads = 64
    for unroll in (2, 4):
        nvec = n // (16 // itemsize)
        tiles = -(-nvec // (threads * _common.unroll_for(unroll, itemsize)))
        for cap in (1, 3, 1000):
            grid = max(1, min(tiles, cap))
            seen = sim_vector_kernel(n, itemsize, unroll, threads, grid)
            assert (seen == 1).all(), (n, itemsize, unroll, grid)


def row_unroll(unroll, itemsize):
    return (unroll + 1) // 2 if itemsize == 1 else unroll


def sim_thread_reduce_row(rowbase_addr, itemsize, start, end, gtid, G, unroll, stages=0):
    """Indices (within the row) that one thread of a group folds in, as in thread_reduce_row / row_vectors
    (stages > 1: the cp.async pipeline's batches)."""
    N = 16 // itemsize
    U = row_unroll(unroll, itemsize)
    out = []
    length = end - start
    if length <= 0:
        return out
    mis = ((rowbase_addr + start * itemsize) & 15) // itemsize
    head = (N - mis) if mis else 0
    head = min(head, length)
    if gtid < head:
        out.append(start + gtid)
    b0 = start + head
    assert (rowbase_addr + b0 * itemsize) % 16 == 0 or b0 == end
    nv = (end - b0) // N
    k = b0 + gtid * N
    left = nv - gtid
    STEP = G * N
    if stages > 1:
        nb = -(-left // (U * G)) if left > 0 else 0
        for b in range(nb):
            for u in range(U):
                if left - b * U * G > u * G:
                    out.extend(range(k + (b * U + u) * STEP, k + (b * U + u) * STEP + N))
    else:
        while left > (U - 1) * G:
            for u in range(U):
                out.extend(range(k + u * STEP, k + u * STEP + N))
            left -= U * G
            k += U * STEP
        if left > 0:
            for u in range(U):
                if left > u * G:
                    out.extend(range(k + u * STEP, k + u * STEP + N))
    t = b0 + nv * N + gtid
    if t < end:
        out.append(t)
    return out


def sim_row_kernel(outer, K, plan, itemsize, base_addr, stages=0):
    seen = np.zeros((outer, K), dtype=np.int64)
    writes = {}
    threads = plan["block"][0]
    grid = plan["grid"][0]
    splits, seg_len, warp_mode = plan["splits"], plan["seg_len"], plan["warp_mode"]
    nseg = outer * splits
    nwarps = threads // 32
    groups = [(bx * nwarps + w, 32) for bx in range(grid) for w in range(nwarps)] if warp_mode \
        else [(bx, threads) for bx in range(grid)]
    gstep = grid * nwarps if warp_mode else grid
    for g0, G in groups:
        seg = g0
        while seg < nseg:
            row, s = divmod(seg, splits)
            start = s * seg_len
            end = min(start + seg_len, K)
            for gtid in range(G):
                for k in sim_thread_reduce_row(base_addr + row * K * itemsize, itemsize, start, end, gtid, G,
                                               reduction.CONFIG["unroll"], stages):
                    assert start <= k < end
                    seen[row, k] += 1
            key = ("out", row) if splits == 1 else ("partial", s * outer + row)
            writes[key] = writes.get(key, 0) + 1
            seg += gstep
    return seen, writes


def sim_col_kernel(outer, K, inner, plan, U=8):
    seen = np.zeros((outer, K, inner), dtype=np.int64)
    writes = {}
    TX, TY = plan["block"]
    grid = plan["grid"][0]
    splits, kchunk = plan["splits"], plan["kchunk"]
    nout = outer * inner
    ntiles = -(-nout // TX)
    nwork = ntiles * splits
    for bx in range(grid):
        w = bx
        while w < nwork:
            tile, s = divmod(w, splits)
            for tx in range(TX):
                j = tile * TX + tx
                if j < nout:
                    o, i = divmod(j, inner)
                    k0 = s * kchunk
                    k1 = min(k0 + kchunk, K)
                    for ty in range(TY):
                        k = k0 + ty
                        while k + (U - 1) * TY < k1:
                            for u in range(U):
                                seen[o, k + u * TY, i] += 1
                            k += U * TY
                        while k < k1:
                            seen[o, k, i] += 1
                            k += TY
                    key = ("out", j) if splits == 1 else ("partial", s * nout + j)
                    writes[key] = writes.get(key, 0) + 1
            w += grid
    return seen, writes


def sim_colv_kernel(outer, K, inner, plan, V, U=4):
    """colv_kernel: thread (tx, ty) of a tile owns the V adjacent outputs j0 = (tile * TX + tx) * V ..."""
    seen = np.zeros((outer, K, inner), dtype=np.int64)
    writes = {}
    TX, TY = plan["block"]
    grid = plan["grid"][0]
    splits, kchunk = plan["splits"], plan["kchunk"]
    nout = outer * inner
    assert inner % V == 0
    nvec = nout // V
    ntiles = -(-nvec // TX)
    assert plan["units"] == ntiles
    for bx in range(grid):
        w = bx
        while w < ntiles * splits:
            tile, s = divmod(w, splits)
            for tx in range(TX):
                g = tile * TX + tx
                if g < nvec:
                    j0 = g * V
                    o, i = divmod(j0, inner)
                    k0, k1 = s * kchunk, min(s * kchunk + kchunk, K)
                    for ty in range(TY):
                        k = k0 + ty
                        while k + (U - 1) * TY < k1:
                            for u in range(U):
                                seen[o, k + u * TY, i:i + V] += 1
                            k += U * TY
                        for u in range(U):
                            if k + u * TY < k1:
                                seen[o, k + u * TY, i:i + V] += 1
                    for c in range(V):
                        key = ("out", j0 + c) if splits == 1 else ("partial", s * nout + j0 + c)
                        writes[key] = writes.get(key, 0) + 1
            w += grid
    return seen, writes


COLV_CASES = [(1, 1000, 8), (1, 64, 4096), (10, 7, 32), (3, 300, 16), (2, 5000, 8), (1, 33, 24)]


@pytest.mark.parametrize("outer,K,inner", COLV_CASES)
@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_colv_kernel_covers_each_element_once(outer, K, inner, itemsize):
    V = reduction.col_vec_width(itemsize)
    if inner % V:
        pytest.skip("not a vector layout")
    for col_tx, sms, occ in ((32, 1, 2), (8, 2, 4), (16, 3, 1)):
        cfg = dict(reduction.CONFIG, col_min_iters=2, col_tx=col_tx)
        plan = reduction.plan_launch(outer, K, inner, sms, occ, cfg, vec=V)
        assert plan["kind"] == "colv"
        seen, writes = sim_colv_kernel(outer, K, inner, plan, V)
        assert (seen == 1).all(), plan
        nout = outer * inner
        want = {("out", j) for j in range(nout)} if plan["splits"] == 1 else \
            {("partial", i) for i in range(nout * plan["splits"])}
        assert set(writes) == want and set(writes.values()) == {1}


ROW_CASES = [(1, 5000), (1, 100003), (3, 5000), (7, 40), (64, 1000), (2, 70000), (5, 33), (40, 2049)]


@pytest.mark.parametrize("outer,K", ROW_CASES)
@pytest.mark.parametrize("itemsize", [1, 2, 4, 8])
def test_row_kernel_covers_each_element_once(outer, K, itemsize):
    cfg = dict(reduction.CONFIG, block_min_seg=512, threads=64)
    for sms, occ in ((1, 2), (3, 4)):
        plan = reduction.plan_launch(outer, K, 1, sms, occ, cfg)
        if plan["kind"] != "row":
            continue
        for base_off, stages in ((0, 0), (itemsize, 0), (16 - itemsize, 0), (itemsize, 3)):
            seen, writes = sim_row_kernel(outer, K, plan, itemsize, 4096 + base_off, stages)
            assert (seen == 1).all(), (plan, base_off)
            if plan["splits"] == 1:
                assert set(writes) == {("out", r) for r in range(outer)}
            else:
                assert set(writes) == {("partial", i) for i in range(outer * plan["splits"])}
            assert set(writes.values()) == {1}


@pytest.mark.parametrize("outer,K", [(300, 40), (1000, 33), (257, 1000), (64, 2049)])
@pytest.mark.parametrize("dt,itemsize", [("f16", 2), ("bf16", 2), ("f32", 4)])
def test_warp_mode_grid_smaller_than_the_rows(outer, K, dt, itemsize):
    """Warp-mode rows with a grid of fewer warps than rows (warp_waves, or half_warp_waves for 16-bit dtypes, > 0):
    the warps stride over the rows and every element is still read once and every row written once."""
    cfg = dict(reduction.CONFIG, threads=64, warp_waves=1, half_warp_waves=1)
    plan = reduction.plan_launch(outer, K, 1, 1, 2, cfg, dt=dt)
    assert plan["kind"] == "row" and plan["warp_mode"] == 1 and plan["splits"] == 1
    assert plan["grid"][0] * 2 < outer        # 2 warps a block: fewer warps than rows
    for stages in (0, 3):
        seen, writes = sim_row_kernel(outer, K, plan, itemsize, 4096 + itemsize, stages)
        assert (seen == 1).all(), plan
        assert set(writes) == {("out", r) for r in range(outer)} and set(writes.values()) == {1}
    # the 16-bit override: half_warp_waves for f16/bf16 only, warp_waves for the rest
    cfg = dict(reduction.CONFIG, threads=64, warp_waves=0, half_warp_waves=1)
    grid = reduction.plan_launch(outer, K, 1, 1, 2, cfg, dt=dt)["grid"][0]
    assert (grid < -(-outer // 2)) == (itemsize == 2)
    assert reduction.plan_launch(outer, K, 1, 1, 2, cfg)["grid"][0] == -(-outer // 2)   # dt=None: warp_waves


COL_CASES = [(1, 1000, 3), (1, 64, 4096), (10, 7, 33), (3, 1, 5), (100, 4, 1), (2, 300, 40), (1, 5000, 1),
             (4, 31, 1)]


@pytest.mark.parametrize("outer,K,inner", COL_CASES)
def test_col_kernel_covers_each_element_once(outer, K, inner):
    cfg = dict(reduction.CONFIG, col_min_iters=2)
    for sms, occ in ((1, 2), (2, 4)):
        plan = reduction.plan_launch(outer, K, inner, sms, occ, cfg)
        if plan["kind"] != "col":
            plan = dict(reduction.kernel_shape(outer, K, inner, sms, dict(cfg, row_min_k=1 << 62)))
            plan.update(splits=1, kchunk=K, grid=(3,))
        for U in (8, 4):
            seen, writes = sim_col_kernel(outer, K, inner, plan, U)
            assert (seen == 1).all(), plan
        nout = outer * inner
        if plan["splits"] == 1:
            assert set(writes) == {("out", j) for j in range(nout)}
        else:
            assert set(writes) == {("partial", i) for i in range(nout * plan["splits"])}
        assert set(writes.values()) == {1}


@pytest.mark.parametrize("nout,splits", [(1, 792), (3, 17), (4096, 6), (33, 2), (1, 2)])
def test_fin_kernel_covers_each_partial_once(nout, splits):
    f = reduction.plan_fin(nout, splits, 2)
    TX, TY = f["block"]
    grid = f["grid"][0]
    assert TY & (TY - 1) == 0 and TX * TY <= 256
    seen = np.zeros((splits, nout), dtype=np.int64)
    ntiles = -(-nout // TX)
    for bx in range(grid):
        w = bx
        while w < ntiles:
            for tx in range(TX):
                j = w * TX + tx
                if j < nout:
                    for ty in range(TY):
                        for s in range(ty, splits, TY):
                            seen[s, j] += 1
            w += grid
    assert (seen == 1).all()


def sim_nd(shape, strides_list, n_threads=37, grid=3):
    """binary_nd / unary_nd: offsets produced with the fast division, for every index."""
    cshape, cstrides = shape, strides_list
    p = _common.nd_params(int(np.prod(shape)) if shape else 1, cshape, cstrides)[0]
    n = int(p["n"])
    nd = int(p["ndim"])
    out = {}
    step = n_threads * grid
    for start in range(step):
        i = start
        while i < n:
            r = i
            offs = [0] * len(strides_list)
            for d in range(7, -1, -1):
                if d < nd:
                    q = _common.emulate_fast_div(r, int(p["magic"][d]), int(p["shift"][d]))
                    idx = r - q * int(p["shape"][d])
                    for k in range(len(strides_list)):
                        offs[k] += idx * int(p["stride"][k][d])
                    r = q
            out[i] = tuple(offs)
            i += step
    return out


def test_nd_offsets_match_numpy_order():
    rng = np.random.default_rng(2)
    for _ in range(30):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.integers(1, 6, nd))
        strides = [tuple(int(s) for s in rng.integers(-7, 8, nd)) for _ in range(3)]
        cshape, cstr = _common.collapse_dims(shape, strides)
        got = sim_nd(cshape, cstr)
        for lin, idx in enumerate(np.ndindex(*shape)):
            expect = tuple(sum(i * s for i, s in zip(idx, st)) for st in strides)
            assert got[lin] == expect
