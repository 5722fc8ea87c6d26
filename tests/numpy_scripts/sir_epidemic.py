"""SIR epidemic model with forward Euler; peak time, final size, and an R0 sweep."""
def simulate(beta, gamma, days=160, dt=0.1, N=1e6, I0=10.0):
    steps = int(days / dt)
    S, I, R = N - I0, I0, 0.0
    out = np.empty((steps, 3))
    for k in range(steps):
        new_inf = beta * S * I / N * dt
        new_rec = gamma * I * dt
        S, I, R = S - new_inf, I + new_inf - new_rec, R + new_rec
        out[k] = (S, I, R)
    return out


traj = simulate(0.3, 0.1)
peak_day = np.argmax(traj[:, 1]) * 0.1
finals = np.array([simulate(b, 0.1, days=100, dt=0.5)[-1, 2] for b in np.linspace(0.15, 0.45, 4)])
result = {"peak_day": peak_day, "peak_I": traj[:, 1].max(), "final_R": traj[-1, 2], "sweep": finals,
          "conserved": np.abs(traj.sum(axis=1) - 1e6).max()}
