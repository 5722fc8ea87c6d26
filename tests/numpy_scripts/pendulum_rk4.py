"""A damped, driven pendulum integrated with RK4 for a batch of initial angles at once."""
theta0 = np.linspace(0.1, 3.0, 12)
state = np.stack([theta0, np.zeros_like(theta0)])
g_l, damping, drive, omega = 9.81, 0.3, 1.2, 2.0 / 3.0


def deriv(t, s):
    th, w = s
    return np.stack([w, -g_l * np.sin(th) - damping * w + drive * np.cos(omega * t)])


dt = 0.01
t = 0.0
energies = []
for step in range(1500):
    k1 = deriv(t, state)
    k2 = deriv(t + dt / 2, state + dt / 2 * k1)
    k3 = deriv(t + dt / 2, state + dt / 2 * k2)
    k4 = deriv(t + dt, state + dt * k3)
    state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    t += dt
    if step % 300 == 0:
        energies.append(0.5 * state[1] ** 2 + g_l * (1 - np.cos(state[0])))
result = {"final": state, "energies": np.array(energies), "wrapped": np.mod(state[0] + np.pi, 2 * np.pi) - np.pi}
