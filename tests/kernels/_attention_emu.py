"""NumPy emulations of the fused attention kernel (gpk_array/_kernels/cuda/attention.cu), for CPU tests.

Two levels, each written from the kernel's source, not from its output:

- ``emulate(q, k, v, causal, scale)``: the algorithm as the kernel runs it, CTA tile by CTA tile and key tile by
  key tile in the kernel's order, with its roundings: S = Q K^T accumulated in float32 over 16-wide k-steps,
  scaled to the log2 domain, masked with -inf only on the tiles the kernel masks, the running max / sum with the
  kernel's -inf guard, each row's sum kept as four partial sums (the four lanes of a quad, columns 2t and 2t+1 of
  every 8-column block) added at the end, P rounded to the input dtype before O += P V in float32, o = O * (1/l)
  rounded once. Against a float64 reference this proves the tiling, the masking and the online softmax.
- The warp level: shared memory as the kernel lays it out (``load_tile``'s thread-to-chunk map and the XOR
  swizzle), ``ldmatrix`` (.x4, .trans) and ``mma.sync.m16n8k16`` by the PTX ISA's fragment layouts, driven by the
  kernel's lane address formulas (``warp_tile``), so a wrong formula shows as a wrong product; and the bank
  groups each 8-lane phase touches (``phase_conflicts``).
"""

from __future__ import annotations

import numpy as np

BM = BN = 64
F32 = np.float32


def _exp2(x):
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp2(x).astype(F32)


def emulate(q, k, v, causal, scale, bm=64):
    """The kernel's result for q (B, H, Lq, D), k, v (B, H, Lk, D) of one 16-bit dtype (causal needs Lq <= Lk),
    with bm queries per CTA (64 or 128)."""
    dt = q.dtype
    B, H, Lq, D = q.shape
    Lk = k.shape[2]
    assert not causal or Lq <= Lk
    sl2 = F32(F32(scale) * F32(1.4426950408889634))
    out = np.empty(q.shape, dtype=dt)
    off = Lk - Lq
    for b in range(B):
        for h in range(H):
            qf, kf, vf = (a[b, h].astype(F32) for a in (q, k, v))
            for m0 in range(0, Lq, bm):
                out[b, h, m0:m0 + bm] = _cta(qf, kf, vf, m0, Lq, Lk, off, causal, sl2, D, dt, bm)
    return out


def _cta(qf, kf, vf, m0, Lq, Lk, off, causal, sl2, D, dt, bm):
    rows = np.arange(m0, m0 + bm)
    qt = np.zeros((bm, D), F32)                       # rows past Lq are zero-filled
    qt[:max(0, min(bm, Lq - m0))] = qf[m0:m0 + bm]
    kv_end = min(Lk, m0 + bm + off) if causal else Lk
    n_tiles = -(-kv_end // BN)
    acc = np.zeros((bm, D), F32)
    m = np.full(bm, -np.inf, F32)
    lpart = np.zeros((bm, 4), F32)                    # one partial row sum per lane of the quad
    lane_of_col = (np.arange(BN) % 8) // 2            # column 8j + 2t + e belongs to lane t
    for it in range(n_tiles):
        n0 = it * BN
        kt = np.zeros((BN, D), F32)
        vt = np.zeros((BN, D), F32)
        n = max(0, min(BN, Lk - n0))
        kt[:n], vt[:n] = kf[n0:n0 + n], vf[n0:n0 + n]
        s = np.zeros((bm, BN), F32)
        for kk in range(D // 16):
            s = (s + qt[:, 16 * kk:16 * kk + 16] @ kt[:, 16 * kk:16 * kk + 16].T).astype(F32)
        s = (s * sl2).astype(F32)
        need_mask = n0 + BN > Lk or (causal and n0 + BN - 1 > m0 + off)
        if need_mask:
            keys = np.arange(n0, n0 + BN)
            bad = keys[None, :] >= Lk
            if causal:
                bad = bad | (keys[None, :] > rows[:, None] + off)
            s = np.where(bad, F32(-np.inf), s)
        mx = np.maximum(m, s.max(axis=1))
        base = np.where(mx == -np.inf, F32(0), mx).astype(F32)
        alpha = _exp2(m - base)
        m = mx
        p = _exp2(s - base[:, None])
        ps = np.stack([p[:, lane_of_col == t].sum(axis=1, dtype=F32) for t in range(4)], axis=1)
        lpart = (lpart * alpha[:, None] + ps).astype(F32)
        acc = (acc * alpha[:, None]).astype(F32)
        pr = p.astype(dt).astype(F32)
        for kk in range(BN // 16):
            acc = (acc + pr[:, 16 * kk:16 * kk + 16] @ vt[16 * kk:16 * kk + 16]).astype(F32)
    l = ((lpart[:, 0] + lpart[:, 1]) + (lpart[:, 2] + lpart[:, 3])).astype(F32)  # shfl_xor 1, then 2
    with np.errstate(divide="ignore"):
        inv = np.where(l > 0, F32(1) / l, F32(0)).astype(F32)
    o = (acc * inv[:, None]).astype(dt)
    return o[:max(0, min(bm, Lq - m0))]


def reference(q, k, v, causal, scale):
    """softmax(q k^T * scale + causal mask) v in float64 (queries attend keys j <= i + Lk - Lq when causal)."""
    qd, kd, vd = (a.astype(np.float64) for a in (q, k, v))
    s = np.einsum("bhid,bhjd->bhij", qd, kd) * scale
    Lq, Lk = q.shape[2], k.shape[2]
    if causal:
        keep = np.arange(Lk)[None, :] <= np.arange(Lq)[:, None] + (Lk - Lq)
        s = np.where(keep, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", p, vd)


# --- the warp level ----------------------------------------------------------------------------------------------

THREADS = 128


def swz(row, chunk, D):
    """attention.cu swz<D>: element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile."""
    return row * D + ((chunk ^ (row & 7)) << 3)


def load_tile(mat, R, D):
    """attention.cu load_tile: the flat shared tile (R * D elements) the 128 threads' cp.async writes produce from
    rows 0..R-1 of mat (rows past mat's end zero-filled), and for each pass the byte addresses each warp's lanes
    write (for the bank check)."""
    cpr = D // 8
    rpp = THREADS // cpr
    sm = np.full(R * D, np.nan, dtype=mat.dtype)
    writes = []
    for p in range(R // rpp):
        addrs = []
        for tid in range(THREADS):
            c, r_in = tid % cpr, tid // cpr
            r = p * rpp + r_in
            src = mat[r, 8 * c:8 * c + 8] if r < mat.shape[0] else np.zeros(8, mat.dtype)
            o = swz(r, c, D)
            assert np.all(np.isnan(sm[o:o + 8])), "two threads write one chunk"
            sm[o:o + 8] = src
            addrs.append(2 * o)
        writes.append(addrs)
    assert not np.any(np.isnan(sm)), "a chunk of the tile is never written"
    return sm, writes


def ldmatrix_x4(sm, lane_offsets, trans=False):
    """ldmatrix.sync.aligned.m8n8.x4[.trans].b16: lane_offsets[l] (elements) is the row address lanes 8i..8i+7
    give for matrix i. Returns regs[lane][i] = (lo, hi) element pair of matrix i held by that lane."""
    mats = []
    for i in range(4):
        rows = [sm[lane_offsets[8 * i + r]:lane_offsets[8 * i + r] + 8] for r in range(8)]
        mats.append(np.stack(rows))  # (8 rows, 8 cols) as stored
    regs = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        if trans:
            regs.append([(mats[i][2 * t, g], mats[i][2 * t + 1, g]) for i in range(4)])
        else:
            regs.append([(mats[i][g, 2 * t], mats[i][g, 2 * t + 1]) for i in range(4)])
    return regs


def mma_16816(a, b, c):
    """mma.sync.aligned.m16n8k16.row.col with the PTX fragment layouts: a[lane] 4 pairs, b[lane] 2 pairs,
    c[lane] 4 floats; returns d[lane] (float32, products of the 16-bit values summed in float64 then rounded)."""
    A = np.zeros((16, 16))
    Bm = np.zeros((16, 8))
    C = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for i, (r, c0) in enumerate(((g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8))):
            A[r, c0], A[r, c0 + 1] = (float(x) for x in a[lane][i])
        for i, k0 in enumerate((2 * t, 2 * t + 8)):
            Bm[k0, g], Bm[k0 + 1, g] = (float(x) for x in b[lane][i])
        C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1] = c[lane]
    Dm = (A @ Bm + C).astype(F32)
    return [[Dm[lane // 4, 2 * (lane % 4)], Dm[lane // 4, 2 * (lane % 4) + 1],
             Dm[lane // 4 + 8, 2 * (lane % 4)], Dm[lane // 4 + 8, 2 * (lane % 4) + 1]] for lane in range(32)]


def _gather_c(frags, nblocks):
    """(16, 8 * nblocks) matrix from per-lane C fragments frags[n][lane] = 4 floats."""
    out = np.zeros((16, 8 * nblocks), F32)
    for n in range(nblocks):
        for lane in range(32):
            g, t = lane // 4, lane % 4
            c = frags[n][lane]
            out[g, 8 * n + 2 * t], out[g, 8 * n + 2 * t + 1] = c[0], c[1]
            out[g + 8, 8 * n + 2 * t], out[g + 8, 8 * n + 2 * t + 1] = c[2], c[3]
    return out


def warp_tile(q_tile, k_tile, v_tile, p_tile, warp, D, mt=1, t=0):
    """m-tile t of one warp's S = Q K^T and O = P V for one key tile, through shared memory, ldmatrix and mma
    exactly as attention.cu addresses them with mt m-tiles per warp: q_tile (64 mt, D), k_tile, v_tile (BN, D) and
    p_tile (16, BN) in a 16-bit dtype. Returns (S (16, BN), O (16, D), the staged output read back as the kernel's
    16-byte stores do (16, D))."""
    bm = 64 * mt
    wrow = warp * 16 * mt + 16 * t
    sQ, _ = load_tile(q_tile, bm, D)
    sK, _ = load_tile(k_tile, BN, D)
    sV, _ = load_tile(v_tile, BN, D)
    kd, nb = D // 16, BN // 8
    lanes = range(32)
    mi = [lane >> 3 for lane in lanes]
    l8 = [lane & 7 for lane in lanes]
    qf = [ldmatrix_x4(sQ, [swz(wrow + (mi[x] & 1) * 8 + l8[x], 2 * kk + (mi[x] >> 1), D) for x in lanes])
          for kk in range(kd)]
    s = [[[0.0] * 4 for _ in lanes] for _ in range(nb)]
    for kk in range(kd):
        for jj in range(nb // 2):
            regs = ldmatrix_x4(sK, [swz(16 * jj + (mi[x] >> 1) * 8 + l8[x], 2 * kk + (mi[x] & 1), D)
                                    for x in lanes])
            s[2 * jj] = mma_16816(qf[kk], [r[0:2] for r in regs], s[2 * jj])
            s[2 * jj + 1] = mma_16816(qf[kk], [r[2:4] for r in regs], s[2 * jj + 1])
    S = _gather_c(s, nb)
    # P as C fragments (the layout S has), packed pairwise into A fragments as the kernel does
    pc = [[None] * 32 for _ in range(nb)]
    for j in range(nb):
        for lane in lanes:
            g, t = lane // 4, lane % 4
            pc[j][lane] = (p_tile[g, 8 * j + 2 * t], p_tile[g, 8 * j + 2 * t + 1],
                           p_tile[g + 8, 8 * j + 2 * t], p_tile[g + 8, 8 * j + 2 * t + 1])
    acc = [[[0.0] * 4 for _ in lanes] for _ in range(D // 8)]
    for kk in range(BN // 16):
        a = [[(pc[2 * kk][x][0], pc[2 * kk][x][1]), (pc[2 * kk][x][2], pc[2 * kk][x][3]),
              (pc[2 * kk + 1][x][0], pc[2 * kk + 1][x][1]), (pc[2 * kk + 1][x][2], pc[2 * kk + 1][x][3])]
             for x in lanes]
        for dd in range(kd):
            regs = ldmatrix_x4(sV, [swz(16 * kk + (mi[x] & 1) * 8 + l8[x], 2 * dd + (mi[x] >> 1), D) for x in lanes],
                               trans=True)
            acc[2 * dd] = mma_16816(a, [r[0:2] for r in regs], acc[2 * dd])
            acc[2 * dd + 1] = mma_16816(a, [r[2:4] for r in regs], acc[2 * dd + 1])
    O = _gather_c(acc, D // 8)
    # staging: 4-byte stores of (row g / g + 8, chunk n, columns 2t, 2t + 1), then 16-byte reads
    sO = np.full(bm * D, np.nan, F32)
    for n in range(D // 8):
        for lane in lanes:
            g, t4 = lane // 4, lane % 4
            o = swz(wrow + g, n, D) + 2 * t4
            sO[o:o + 2] = acc[n][lane][0:2]
            o = swz(wrow + g + 8, n, D) + 2 * t4
            sO[o:o + 2] = acc[n][lane][2:4]
    cpr = D // 8
    staged = np.full((16, D), np.nan, F32)
    w0 = warp * 16 * mt          # the kernel's store loop covers the warp's 16 mt rows; this m-tile's are 16 of them
    for lane in lanes:
        for i in range(lane, 16 * mt * cpr, 32):
            r, c = i // cpr, i % cpr
            if w0 + r - wrow in range(16):
                o = swz(w0 + r, c, D)
                staged[w0 + r - wrow, 8 * c:8 * c + 8] = sO[o:o + 8]
    return S, O, staged


def phase_conflicts(byte_addrs, width=16):
    """Shared-memory wavefronts beyond one per 8-lane phase of `width`-byte accesses (0: conflict-free): each phase
    of 8 lanes (a quarter warp for 16-byte accesses) must touch 8 distinct 16-byte bank groups."""
    extra = 0
    for p in range(0, len(byte_addrs), 8):
        groups = [(a // 16) % 8 for a in byte_addrs[p:p + 8]]
        extra += 8 // len(set(groups)) - 1 if len(set(groups)) else 0
    return extra


def ldmatrix_phase_addrs(kind, D, warp=0, kk=0, jj=0, mt=1, t=0):
    """Byte addresses the 32 lanes give one ldmatrix.x4 of the kernel (kind "q", "k" or "v")."""
    out = []
    for lane in range(32):
        mi, l8 = lane >> 3, lane & 7
        if kind == "q":
            o = swz(warp * 16 * mt + 16 * t + (mi & 1) * 8 + l8, 2 * kk + (mi >> 1), D)
        elif kind == "k":
            o = swz(16 * jj + (mi >> 1) * 8 + l8, 2 * kk + (mi & 1), D)
        else:
            o = swz(16 * kk + (mi & 1) * 8 + l8, 2 * jj + (mi >> 1), D)
        out.append(2 * o)
    return out
