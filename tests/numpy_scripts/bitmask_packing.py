"""Sparse boolean masks stored as bits: packbits/unpackbits round trips along axes, population counts, and the
binary representation of small integers."""
np.random.seed(4)
mask = np.random.rand(6, 21) < 0.2
packed = np.packbits(mask, axis=1)
restored = np.unpackbits(packed, axis=1, count=mask.shape[1]).astype(bool)
packed_little = np.packbits(mask.ravel(), bitorder="little")
ones_per_byte = np.bitwise_count(packed)
bytes_ = np.array([3, 96, 255, 0], dtype=np.uint8)
bits = np.unpackbits(bytes_).reshape(-1, 8)
powers = 2 ** np.arange(7, -1, -1)
values = bits @ powers
labels = [np.binary_repr(v, width=8) for v in range(0, 40, 7)]
result = {"packed": packed, "roundtrip": bool((restored == mask).all()), "little": packed_little,
          "ones": ones_per_byte.sum(axis=1), "density": mask.mean(), "values": values, "bits": bits,
          "labels": labels}
