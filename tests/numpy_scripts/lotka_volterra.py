"""Predator-prey dynamics integrated with classical Runge-Kutta."""
a, b, c, d = 1.1, 0.4, 0.4, 0.1


def f(state):
    x, y = state
    return np.array([a * x - b * x * y, d * x * y - c * y])


dt = 0.01
steps = 3000
traj = np.empty((steps + 1, 2))
traj[0] = [10.0, 5.0]
for i in range(steps):
    s = traj[i]
    k1 = f(s)
    k2 = f(s + dt / 2 * k1)
    k3 = f(s + dt / 2 * k2)
    k4 = f(s + dt * k3)
    traj[i + 1] = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
V = d * traj[:, 0] - c * np.log(traj[:, 0]) + b * traj[:, 1] - a * np.log(traj[:, 1])
result = {"final": traj[-1], "prey_max": traj[:, 0].max(), "pred_max": traj[:, 1].max(),
          "invariant_drift": V.max() - V.min(), "samples": traj[::500]}
