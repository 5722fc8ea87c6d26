"""RGB image manipulations: channel statistics, grayscale, crops, flips, rotations, tiling, transposes."""
np.random.seed(44)
img = np.random.randint(0, 256, size=(32, 48, 3)).astype(np.uint8)
gray = (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).round().astype(np.uint8)
channel_means = img.reshape(-1, 3).mean(axis=0)
crop = img[8:24, 12:36]
flipped = np.flip(crop, axis=1)
rot = np.rot90(gray, k=1)
chw = np.transpose(img, (2, 0, 1))
tiled = np.tile(gray[:4, :4], (2, 3))
inverted = 255 - img
brighter = np.clip(img.astype(np.int16) + 40, 0, 255).astype(np.uint8)
small = img[::2, ::2].mean(axis=2)
pooled = img[:, :, 0].reshape(16, 2, 24, 2).max(axis=(1, 3))
result = {"gray": gray, "channel_means": channel_means, "flipped_sum": int(flipped.sum()), "rot_shape": rot.shape,
          "rot": rot, "chw": chw[:, :2, :2], "tiled": tiled, "inverted_mean": inverted.mean(),
          "brighter": brighter[:2, :2], "small": small[:3, :3], "pooled": pooled,
          "fliplr": np.fliplr(gray)[:2], "flipud": np.flipud(gray)[:2]}
