#!/usr/bin/env python3
"""Make the rosinality-format non-square golden in this folder with StyleGAN-Human's own code.

StyleGAN-Human (github.com/stylegan-human/StyleGAN-Human, commit a6a162a6) ships, beside its ADA
training code, a fork of rosinality's stylegan2-pytorch `model.py`: `torch_utils/models.py`. Its
`ConstantInput` is [1, C, size, size // 2] (4x2) and its noise buffers `noises.noise_{i}` are
[1, 1, 2^res, 2^res // 2], so a Generator(size=1024) draws 1024x512 people. `edit.py` and
`insetgan.py` run it on checkpoints that `legacy.convert` writes from the ADA pickle: a
`torch.save` of {'g_ema': state_dict, 'latent_avg': mapping.w_avg} (rosinality's convert_weight.py
layout).

This script imports that *unmodified* module from an export of the repository given on the
command line (not part of sg2), builds a tiny random Generator on the CPU in float32, saves it in
that layout and writes the goldens in the layout of ../../fixtures/rosinality64 (manifest.json with
`goldens`, which tests/test_goldens.cpp iterates):

    git --git-dir=STYLEGAN_HUMAN_GIT archive HEAD torch_utils | tar -x -C /tmp/sghr
    /usr/bin/python3 make_stylegan_human_rosinality.py --repo /tmp/sghr

Needs torch (Debian python3-torch 1.13) and numpy. Two things are changed around the module, not
in it:
  * torch_utils/op_edit compiles its CUDA ops with torch.utils.cpp_extension.load at import time.
    That function is replaced by one returning a placeholder before the import; the ops' own CPU
    paths (op_edit's upfirdn2d_native and fused_leaky_relu's F.leaky_relu(x + b, 0.2) * sqrt(2))
    run for CPU tensors and never touch it.
  * The Generator's channel table is hard-coded (512..., or 64 with small=True). To keep the file
    small, the layer constructors the Generator calls (ConstantInput, StyledConv, ToRGB) are wrapped
    to map the channel count 64 to 8 (small=True), as ../../fixtures/rosinality64 did for 512 / 256.
    The forward code is untouched.
"""
import argparse, hashlib, importlib, json, os, sys

import numpy as np

CASE = dict(name="human_rosinality32x16", size=32, style_dim=12, n_mlp=2, small=True, channels_from=64,
            channels_to=8)
SEEDS = [0, 5]
TRUNC = 0.7
COMMIT = "a6a162a66ff539ea3070b7c4d391bf20932d2532"


def load_models(repo, torch):
    import torch.utils.cpp_extension as cpp

    class NoCudaOps:
        def __getattr__(self, name):
            raise RuntimeError(f"CUDA op '{name}' called: only the CPU paths may run here")

    cpp.load = lambda *a, **k: NoCudaOps()
    sys.path.insert(0, repo)
    return importlib.import_module("torch_utils.models")


def narrow_channels(models, frm, to):
    m = lambda c: to if c == frm else c

    class ConstantInput(models.ConstantInput):
        def __init__(self, channel, *a, **k):
            super().__init__(m(channel), *a, **k)

    class StyledConv(models.StyledConv):
        def __init__(self, in_channel, out_channel, *a, **k):
            super().__init__(m(in_channel), m(out_channel), *a, **k)

    class ToRGB(models.ToRGB):
        def __init__(self, in_channel, *a, **k):
            super().__init__(m(in_channel), *a, **k)

    models.ConstantInput, models.StyledConv, models.ToRGB = ConstantInput, StyledConv, ToRGB


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="export of StyleGAN-Human (its torch_utils folder)")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    models = load_models(args.repo, torch)
    narrow_channels(models, CASE["channels_from"], CASE["channels_to"])
    D, size = CASE["style_dim"], CASE["size"]
    torch.manual_seed(sum(map(ord, CASE["name"])))  # the constructors' torch.randn weights: reproducible
    g = models.Generator(size, D, CASE["n_mlp"], small=CASE["small"])
    g.eval().requires_grad_(False)
    assert list(g.input.input.shape) == [1, CASE["channels_to"], 4, 2]
    gen = torch.Generator().manual_seed(sum(map(ord, CASE["name"])))
    rnd = lambda *s: torch.randn(*s, generator=gen)
    with torch.no_grad():
        for name, p in g.named_parameters():  # every term non-zero (noise.weight, biases start at 0)
            if name.endswith("noise.weight"):
                p.copy_(0.3 * rnd(p.shape))
            elif name.endswith("modulation.bias"):
                p.copy_(1 + 0.25 * rnd(p.shape))
            elif name.endswith("bias"):
                p.add_(0.1 * rnd(p.shape))
        for name, b in g.noises.named_buffers():  # new draws from the seeded generator
            b.copy_(rnd(b.shape))
        zs = rnd([256, D])
        latent_avg = g.style(zs).mean(0) + 0.1 * rnd([D])  # legacy.convert stores mapping.w_avg [D]
        img, _ = g([zs[:8]], randomize_noise=False)
        scale = 0.5 / float(img.std())
        for rgb in [g.to_rgb1, *g.to_rgbs]:
            rgb.conv.weight.mul_(scale)
            rgb.bias.mul_(scale)
    out = os.path.join(args.out, CASE["name"])
    os.makedirs(out, exist_ok=True)
    sd = g.state_dict()
    torch.save(dict(g_ema=sd, latent_avg=latent_avg.clone()), os.path.join(out, "checkpoint.pt"))
    # The checkpoint loads back into a fresh Generator as edit.py loads it (strict load_state_dict).
    g2 = models.Generator(size, D, CASE["n_mlp"], small=CASE["small"]).eval().requires_grad_(False)
    ck = torch.load(os.path.join(out, "checkpoint.pt"))
    g2.load_state_dict(ck["g_ema"])
    goldens, files = [], {}

    def save(name, arr):
        np.save(os.path.join(out, name), arr)
        files[name] = dict(dtype=str(arr.dtype), shape=list(arr.shape))

    save("latent_avg.npy", latent_avg.numpy())
    save("noise_l1.npy", g.noises.noise_1.numpy())
    H, W = size, size // 2
    with torch.no_grad():
        for seed in SEEDS:
            z = np.random.RandomState(seed).randn(1, D)
            save(f"z_s{seed}.npy", z)
            zt = torch.from_numpy(z.astype(np.float32))
            calls = [(1, "fixednoise", f"g_ema([z], randomize_noise=False)", {}),
                     (TRUNC, "fixednoise", f"g_ema([z], truncation={TRUNC}, truncation_latent=latent_avg, "
                                           "randomize_noise=False)",
                      dict(truncation=TRUNC, truncation_latent=latent_avg)),
                     (1, "zeronoise", "g_ema([z], noise=[zeros])",
                      dict(noise=[torch.zeros_like(b) for _, b in g.noises.named_buffers()]))]
            for trunc, tag, call, kw in calls:
                kw = dict(kw)
                if "noise" not in kw:
                    kw["randomize_noise"] = False
                img, latents = g([zt], return_latents=True, **kw)
                img2, _ = g2([zt], **kw)  # the reloaded checkpoint: the same bits
                assert torch.equal(img, img2)
                assert list(img.shape) == [1, 3, H, W]
                ttag = f"trunc{trunc:g}"
                name = f"img_s{seed}_{ttag}_{tag}.npy"
                save(name, img.numpy())
                if tag == "fixednoise":
                    save(f"latents_s{seed}" + ("" if trunc == 1 else f"_{ttag}") + ".npy", latents.numpy())
                entry = dict(type="image", seed=seed, z=f"z_s{seed}.npy", call=call, truncation=trunc, img=name)
                if trunc == 1 and tag == "fixednoise":
                    save(f"w_s{seed}.npy", g.get_latent(zt).numpy())
                    # input_is_latent with the W+ rows equals the z path exactly
                    wimg, _ = g([latents], input_is_latent=True, randomize_noise=False)
                    assert torch.equal(wimg, img)
                goldens.append(entry)
            # W+ with a different row per layer: g_ema([wplus], input_is_latent=True, randomize_noise=False)
            wplus = g.get_latent(zt).unsqueeze(1).repeat(1, g.n_latent, 1) + 0.5 * rnd([1, g.n_latent, D])
            save(f"wplus_s{seed}.npy", wplus.numpy())
            img, _ = g([wplus], input_is_latent=True, randomize_noise=False)
            save(f"img_s{seed}_wplus_fixednoise.npy", img.numpy())
            goldens.append(dict(type="image", seed=seed, wplus=f"wplus_s{seed}.npy",
                                call="g_ema([wplus], input_is_latent=True, randomize_noise=False)",
                                img=f"img_s{seed}_wplus_fixednoise.npy"))
    for name in sorted(os.listdir(out)):
        with open(os.path.join(out, name), "rb") as f:
            files.setdefault(name, {})["sha256"] = hashlib.sha256(f.read()).hexdigest()
    cfg = dict(size=size, style_dim=D, n_mlp=CASE["n_mlp"], channel_multiplier=1, lr_mlp=0.01, blur_kernel=[1, 3, 3, 1],
               small=CASE["small"], img_height=H, img_width=W, n_latent=g.n_latent, num_layers=g.num_layers,
               const_shape=list(g.input.input.shape),
               noise_shapes=[list(b.shape) for _, b in g.noises.named_buffers()],
               channels={str(2 ** i): int(g.convs[2 * i - 6].conv.weight.shape[1]) if i > 2 else
                         int(g.conv1.conv.weight.shape[1]) for i in range(2, g.log_size + 1)},
               channel_table=f"small=True's 64 remapped to {CASE['channels_to']} at construction "
                             "(ConstantInput, StyledConv, ToRGB wrapped); forward code untouched")
    manifest = dict(case=CASE["name"], format="StyleGAN-Human torch_utils/models.py checkpoint (rosinality fork, "
                                              "torch.save)",
                    model_file="checkpoint.pt",
                    checkpoint=dict(layout="legacy.convert / convert_weight.py layout: {'g_ema': state_dict, "
                                           "'latent_avg': tensor[style_dim]}", keys=["g_ema", "latent_avg"]),
                    config=cfg,
                    source=dict(repo="stylegan-human/StyleGAN-Human@" + COMMIT[:8], code="torch_utils/models.py, "
                                "torch_utils/op_edit (CPU paths)"),
                    what_ran=dict(device="cpu", ops="op_edit CPU paths: upfirdn2d_native, F.leaky_relu(x+b,0.2)*sqrt(2);"
                                  " cpp_extension.load replaced by a placeholder (never called)",
                                  torch=torch.__version__, numpy=np.__version__),
                    verification="the checkpoint reloaded into a fresh Generator (strict load_state_dict) gives "
                                 "the same bits; input_is_latent with the returned latents equals the z path",
                    goldens=goldens, files=files)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(CASE["name"], "ok:", len(goldens), "goldens,", os.path.getsize(os.path.join(out, "checkpoint.pt")), "bytes")


if __name__ == "__main__":
    main()
