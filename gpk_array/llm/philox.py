"""Philox4x32-10, the counter-based random generator of the token sampler, in NumPy.

Philox (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011) maps a 128-bit
counter and a 64-bit key to 128 random bits with ten rounds of 32 x 32 -> 64-bit multiplications, XORs and a Weyl
sequence on the key. Nothing is carried from one draw to the next, so a draw is a pure function of (key, counter):
the CUDA sampler (``gpk_array/_kernels/cuda/sampling.cu``) computes the same function with the same integer
arithmetic, and both devices draw the same bits, in any order and batch.

The sampler's stream: the draw for token ``i`` (0 for the first generated token) of a sequence with seed ``s``
(an integer in [0, 2**64)) is ``philox4x32_10(counter=(i mod 2**32, i >> 32, 0, 0), key=(s mod 2**32, s >> 32))``,
and its first two output words make the 64-bit integer ``out[0] + out[1] * 2**32`` (see sampling.py for how that
picks a token). Counter words 2 and 3 are 0, reserved for other uses of a sequence's key.

Everything here is vectorized over any number of (key, counter) pairs with uint64 arithmetic (a product of two
32-bit words fits 64 bits exactly); the known-answer vectors of the Random123 reference implementation check it
(tests/llm/test_philox.py).
"""
import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57   # the round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85   # the key's Weyl increments (golden ratio, sqrt(3) - 1)
ROUNDS = 10
_LO = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def philox4x32(counter, key, rounds=ROUNDS):
    """Philox4x32 of ``counter`` (..., 4) and ``key`` (..., 2), unsigned 32-bit words (broadcast against each
    other): the (..., 4) uint32 output words. ``rounds``: 10 for Philox4x32-10 (the sampler's)."""
    counter = np.asarray(counter, dtype=np.uint64)
    key = np.asarray(key, dtype=np.uint64)
    if counter.shape[-1:] != (4,) or key.shape[-1:] != (2,):
        raise ValueError(f"counter must have 4 words and key 2 in the last axis, got {counter.shape} and {key.shape}")
    if (counter > _LO).any() or (key > _LO).any():
        raise ValueError("counter and key words must be 32-bit unsigned integers")
    c0, c1, c2, c3 = (counter[..., i] for i in range(4))
    k0, k1 = key[..., 0], key[..., 1]
    m0, m1 = np.uint64(M0), np.uint64(M1)
    for r in range(rounds):
        if r:
            k0 = (k0 + np.uint64(W0)) & _LO
            k1 = (k1 + np.uint64(W1)) & _LO
        p0 = m0 * c0  # < 2**64: exact
        p1 = m1 * c2
        c0, c1, c2, c3 = ((p1 >> _S32) ^ c1 ^ k0, p1 & _LO, (p0 >> _S32) ^ c3 ^ k1, p0 & _LO)
    return np.stack(np.broadcast_arrays(c0, c1, c2, c3), axis=-1).astype(np.uint32)


def split_seed(seed):
    """The Philox key words (low, high) of 64-bit seeds (any shape): a (..., 2) uint64 array of 32-bit words."""
    s = np.asarray(seed, dtype=np.uint64)
    return np.stack([s & _LO, s >> _S32], axis=-1)


def token_bits(seed, step):
    """The sampler's 64 random bits for token ``step`` of a sequence seeded ``seed`` (arrays broadcast): uint64."""
    seed, step = np.broadcast_arrays(np.asarray(seed, dtype=np.uint64), np.asarray(step, dtype=np.uint64))
    counter = np.zeros(step.shape + (4,), dtype=np.uint64)
    counter[..., 0] = step & _LO
    counter[..., 1] = step >> _S32
    out = philox4x32(counter, split_seed(seed)).astype(np.uint64)
    return out[..., 0] | (out[..., 1] << _S32)


def mulhi64(a, b):
    """floor(a * b / 2**64) of uint64 arrays, exactly (four 32 x 32-bit partial products, as CUDA's __umul64hi)."""
    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)
    a_lo, a_hi, b_lo, b_hi = a & _LO, a >> _S32, b & _LO, b >> _S32
    ll, lh, hl, hh = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (ll >> _S32) + (lh & _LO) + (hl & _LO)  # < 3 * 2**32: no overflow
    return hh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)
