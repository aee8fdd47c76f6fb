# Writes this folder's pattern PNGs with PIL's default save (README.md). The 256x192 crop was written
# the same way from rows 384-575, columns 400-655 of seed 0 of the official random ffhq1024 pickle
# (tools/e2e_official.py), as sg2 generated it.
import numpy as np
import PIL.Image

rng = np.random.RandomState(7)


def pattern(h, w, c):
    y, x = np.mgrid[0:h, 0:w]
    base = (128 + 90 * np.sin(x / 7.0) * np.cos(y / 5.0))[..., None] + 40 * np.arange(c)[None, None, :]
    return np.clip(base + rng.normal(0, 6, (h, w, c)), 0, 255).astype(np.uint8)


for name, h, w, c, mode in [("rgb_96x64", 64, 96, 3, "RGB"), ("gray_50x37", 37, 50, 1, "L"),
                            ("rgba_33x20", 20, 33, 4, "RGBA"), ("la_17x9", 9, 17, 2, "LA")]:
    a = pattern(h, w, c)
    PIL.Image.fromarray(a[..., 0] if c == 1 else a, mode).save(f"{name}.png")


# Narrow rows of small values: the filters' sums often tie, so the order they are tried in (None,
# Up, Sub, Paeth; the earlier kept) decides the bytes.
PIL.Image.fromarray(rng.randint(0, 4, (200, 3)).astype(np.uint8), "L").save("ties_3x200.png")
PIL.Image.fromarray(rng.randint(0, 3, (300, 2, 3)).astype(np.uint8), "RGB").save("ties_rgb_2x300.png")
