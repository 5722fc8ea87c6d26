"""Linear interpolation of irregular samples onto a grid, resampling and integration."""
np.random.seed(18)
xs = np.sort(np.random.uniform(0, 10, 25))
ys = np.sin(xs) + 0.1 * xs
grid = np.linspace(0, 10, 101)
yi = np.interp(grid, xs, ys)
yi_clamped = np.interp(grid, xs, ys, left=0.0, right=-1.0)
area = np.trapezoid(yi, grid)
angles = np.linspace(0, 4 * np.pi, 9)
periodic = np.interp(angles, [0, np.pi / 2, np.pi, 3 * np.pi / 2], [0.0, 1.0, 0.0, -1.0], period=2 * np.pi)
result = {"yi": yi, "clamped": yi_clamped[[0, 1, -2, -1]], "area": area, "periodic": periodic,
          "max_abs_err": np.max(np.abs(yi - (np.sin(grid) + 0.1 * grid))[(grid > xs[0]) & (grid < xs[-1])])}
