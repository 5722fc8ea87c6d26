"""Broadcast evaluation with nditer: an allocated output over (column, row) operands, external_loop chunks, and
the c_index / f_index of each element."""
a = np.arange(4.0).reshape(4, 1)
b = np.linspace(0.0, 1.0, 5)
it = np.nditer([a, b, None])
with it:
    for x, y, z in it:
        z[...] = x ** 2 + np.sin(y)
    table = it.operands[2]
chunks = [c.copy() for c in np.nditer(np.arange(12).reshape(3, 4), flags=["external_loop"], order="F")]
m = np.arange(6).reshape(2, 3) * 10
c_idx = []
it = np.nditer(m, flags=["c_index"])
while not it.finished:
    c_idx.append((int(it[0]), it.index))
    it.iternext()
f_idx = []
it = np.nditer(m, flags=["f_index"])
for v in it:
    f_idx.append((int(v), it.index))
result = {"table": table, "direct": a ** 2 + np.sin(b), "chunks": np.stack(chunks), "c_idx": np.array(c_idx),
          "f_idx": np.array(f_idx)}
