"""Philox4x32-10 in NumPy (gpk_array/llm/philox.py) against the Random123 known-answer vectors and a scalar
reference written from the paper's round function with Python integers; the sampler's 64-bit draw and mulhi64."""
import numpy as np
import pytest

from gpk_array.llm.philox import mulhi64, philox4x32, split_seed, token_bits

# Random123's tests/kat_vectors, philox4x32 10: counter words 0-3, key words 0-1 -> output words 0-3.
KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def philox_scalar(ctr, key, rounds=10):
    """Philox4x32 of one counter and key, one round at a time (Salmon et al. 2011, section 3.2)."""
    c = list(ctr)
    k0, k1 = key
    mask = 0xFFFFFFFF
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & mask, (k1 + 0xBB67AE85) & mask
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & mask, (p0 >> 32) ^ c[3] ^ k1, p0 & mask]
    return c


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_known_answers(ctr, key, want):
    assert philox4x32(np.array(ctr), np.array(key)).tolist() == list(want)
    assert philox_scalar(ctr, key) == list(want)


def test_vectorized_matches_the_scalar_reference():
    rng = np.random.default_rng(0)
    ctr = rng.integers(0, 2 ** 32, (200, 4), dtype=np.uint64)
    key = rng.integers(0, 2 ** 32, (200, 2), dtype=np.uint64)
    got = philox4x32(ctr, key)
    assert got.dtype == np.uint32 and got.shape == (200, 4)
    for i in range(200):
        assert got[i].tolist() == philox_scalar(ctr[i].tolist(), key[i].tolist())
    # broadcasting: one key for many counters
    assert np.array_equal(philox4x32(ctr, key[0]), np.stack([philox4x32(c, key[0]) for c in ctr]))


def test_bad_words():
    with pytest.raises(ValueError, match="4 words"):
        philox4x32(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="32-bit"):
        philox4x32(np.array([2 ** 32, 0, 0, 0]), np.zeros(2))


def test_token_bits_is_the_documented_stream():
    """Token i of a sequence seeded s: counter (i mod 2**32, i >> 32, 0, 0), key (s mod 2**32, s >> 32), the
    first two output words as the low and high halves of 64 bits."""
    for seed in (0, 1, 2 ** 32 + 5, 2 ** 64 - 1, 0x0123456789ABCDEF):
        for step in (0, 1, 7, 2 ** 32 + 3):
            w = philox_scalar((step & 0xFFFFFFFF, step >> 32, 0, 0), (seed & 0xFFFFFFFF, seed >> 32))
            assert int(token_bits(seed, step)) == w[0] | (w[1] << 32)
    steps = np.arange(100, dtype=np.uint64)
    assert np.array_equal(token_bits(np.uint64(9), steps), [token_bits(9, int(s)) for s in steps])
    assert split_seed(2 ** 64 - 2).tolist() == [2 ** 32 - 2, 2 ** 32 - 1]


def test_mulhi64_is_exact():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2 ** 64, 1000, dtype=np.uint64)
    b = rng.integers(0, 2 ** 64, 1000, dtype=np.uint64)
    edge = np.array([0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1], dtype=np.uint64)
    a, b = np.concatenate([a, edge, edge]), np.concatenate([b, edge, edge[::-1]])
    got = mulhi64(a, b)
    assert [int(g) for g in got] == [(int(x) * int(y)) >> 64 for x, y in zip(a, b)]


def test_draws_look_uniform():
    """The top 8 bits of 64,000 draws of one sequence: a chi-square test against uniform bytes (a generator
    wired wrong, e.g. a dropped round or key bump, fails this; the known answers pin the rest)."""
    scipy = pytest.importorskip("scipy.stats")
    bits = token_bits(np.uint64(12345), np.arange(64000, dtype=np.uint64))
    counts = np.bincount((bits >> np.uint64(56)).astype(np.int64), minlength=256)
    assert scipy.chisquare(counts).pvalue > 1e-4
