"""ndarray subclasses as in NumPy recipes: a named array carried through views, and a symmetric matrix whose
item assignment mirrors itself."""
class NamedArray(np.ndarray):
    def __new__(cls, array, name="no name"):
        obj = np.asarray(array).view(cls)
        obj.name = name
        return obj

    def __array_finalize__(self, obj):
        if obj is None:
            return
        self.name = getattr(obj, "name", "no name")


class Symmetric(np.ndarray):
    def __setitem__(self, index, value):
        i, j = index
        super().__setitem__((i, j), value)
        super().__setitem__((j, i), value)


def symmetric(Z):
    return np.asarray(Z + Z.T - np.diag(Z.diagonal())).view(Symmetric)


np.random.seed(0)
temps = NamedArray(np.random.normal(15, 5, size=12), "monthly_temp")
names = [temps.name, temps.view(NamedArray).name]
S = symmetric(np.random.randint(0, 10, (5, 5)))
S[2, 3] = 42
S[0, 4] = -1
result = {"names": names, "temps": np.asarray(temps), "anomaly": np.asarray(temps - temps.mean()),
          "is_nd": isinstance(temps, np.ndarray), "S": np.asarray(S), "symmetric": bool((S == S.T).all()),
          "trace": np.trace(np.asarray(S))}
