"""Conway's game of life on a torus, neighbour counts with np.roll."""
np.random.seed(1)
grid = (np.random.rand(64, 64) < 0.3).astype(np.int8)
population = []
for step in range(40):
    neighbours = sum(np.roll(np.roll(grid, i, axis=0), j, axis=1)
                     for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
    grid = ((neighbours == 3) | ((grid == 1) & (neighbours == 2))).astype(np.int8)
    population.append(int(grid.sum()))
result = {"grid": grid, "population": np.array(population), "density": grid.mean()}
