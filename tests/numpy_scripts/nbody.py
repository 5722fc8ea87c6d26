"""A small gravitational N-body system with softened forces and leapfrog integration."""
rng = np.random.default_rng(8)
n = 16
pos = rng.normal(size=(n, 3))
vel = rng.normal(scale=0.1, size=(n, 3))
mass = rng.uniform(0.5, 1.5, size=n)
G, eps, dt = 1.0, 0.1, 0.005


def accel(p):
    diff = p[None, :, :] - p[:, None, :]
    r2 = np.sum(diff ** 2, axis=-1) + eps ** 2
    inv_r3 = r2 ** -1.5
    np.fill_diagonal(inv_r3, 0.0)
    return G * np.einsum("ij,ijk,j->ik", inv_r3, diff, mass)


def energy(p, v):
    kin = 0.5 * np.sum(mass * np.sum(v ** 2, axis=1))
    diff = p[None, :, :] - p[:, None, :]
    r = np.sqrt(np.sum(diff ** 2, axis=-1) + eps ** 2)
    iu = np.triu_indices(n, 1)
    pot = -G * np.sum((mass[:, None] * mass[None, :] / r)[iu])
    return kin + pot


e0 = energy(pos, vel)
acc = accel(pos)
for _ in range(200):
    vel += 0.5 * dt * acc
    pos += dt * vel
    acc = accel(pos)
    vel += 0.5 * dt * acc
result = {"pos": pos, "vel": vel, "energy_drift": energy(pos, vel) - e0,
          "momentum": np.sum(mass[:, None] * vel, axis=0)}
