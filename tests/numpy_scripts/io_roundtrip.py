"""Saving and loading arrays: .npy, .npz, text files and raw binary in a temporary directory."""
import os
import tempfile

np.random.seed(1)
A = np.random.rand(4, 3)
labels = np.arange(4, dtype=np.int32)
with tempfile.TemporaryDirectory() as d:
    np.save(os.path.join(d, "a.npy"), A)
    A2 = np.load(os.path.join(d, "a.npy"))
    np.savez(os.path.join(d, "bundle.npz"), data=A, labels=labels)
    with np.load(os.path.join(d, "bundle.npz")) as z:
        names = sorted(z.files)
        labels2 = z["labels"]
        data2 = z["data"]
    np.savetxt(os.path.join(d, "a.csv"), A, delimiter=",", fmt="%.6f")
    A3 = np.loadtxt(os.path.join(d, "a.csv"), delimiter=",")
    labels.tofile(os.path.join(d, "l.bin"))
    labels3 = np.fromfile(os.path.join(d, "l.bin"), dtype=np.int32)
    with open(os.path.join(d, "a.csv")) as fh:
        text = fh.read()
buf = A.tobytes()
A4 = np.frombuffer(buf, dtype=np.float64).reshape(4, 3)
result = {"npy": A2, "names": str(names), "npz": data2 + labels2[:, None], "txt": A3, "bin": labels3,
          "buffer": A4, "text_len": len(text)}
