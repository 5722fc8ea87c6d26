"""Box blur and Sobel edge magnitude on a synthetic grayscale image, with edge padding."""
h, w = 48, 64
yy, xx = np.mgrid[0:h, 0:w]
img = ((xx - 32) ** 2 + (yy - 24) ** 2 < 15 ** 2).astype(np.float64) * 200 + 20
img += 10 * np.sin(xx / 5.0)
padded = np.pad(img, 1, mode="edge")
blur = np.zeros_like(img)
for dy in range(3):
    for dx in range(3):
        blur += padded[dy:dy + h, dx:dx + w]
blur /= 9.0
kx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=float)
ky = kx.T
gx = np.zeros_like(img)
gy = np.zeros_like(img)
for dy in range(3):
    for dx in range(3):
        patch = padded[dy:dy + h, dx:dx + w]
        gx += kx[dy, dx] * patch
        gy += ky[dy, dx] * patch
mag = np.hypot(gx, gy)
edges = mag > 0.5 * mag.max()
result = {"blur": blur, "magnitude": mag, "edge_count": int(edges.sum()), "blur_mean": blur.mean()}
