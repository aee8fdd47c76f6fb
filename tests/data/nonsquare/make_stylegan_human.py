#!/usr/bin/env python3
"""Make the non-square goldens in this folder with StyleGAN-Human's own network code.

StyleGAN-Human (github.com/stylegan-human/StyleGAN-Human, commit a6a162a6) trains 1024x512 people
with a modified stylegan2-ada-pytorch: `training_scripts/sg2/training/networks.py` adds a `square`
kwarg (False = rectangle) to Generator, SynthesisNetwork, SynthesisBlock and SynthesisLayer; a
rectangle network's const is [C, 4, 2] and every block's maps (and noise_const buffers) are
[res, res // 2]. Its released pickles are the ADA persistence format with those classes.

This script imports that *unmodified* code from a checkout given on the command line (it is not
part of sg2), builds tiny random rectangle networks on the CPU in float32, pickles them as the
training loop does, and saves z / ws / images as .npy with a manifest.json in the format of
../official_extra (which tests/test_goldens.cpp reads):

    git -C STYLEGAN_HUMAN_GIT archive HEAD torch_utils dnnlib training_scripts/sg2 | tar -x -C /tmp/sgh
    /usr/bin/python3 make_stylegan_human.py --repo /tmp/sgh

Needs torch (Debian python3-torch 1.13) and numpy. The module source that torch_utils.persistence
embeds is replaced by a one-line placeholder, as in ../fixtures.
"""
import argparse, copy, hashlib, importlib, json, os, pickle, sys

import numpy as np

CASES = [
    # 32x16 (height x width), skip, no clamp
    dict(name="human_skip32x16", res=32, z_dim=12, w_dim=12, img_channels=3, channel_base=128, channel_max=8,
         mapping_layers=2, architecture="skip", conv_clamp=None),
    # 16x8, resnet, conv_clamp 256 engaged in the top block
    dict(name="human_resnet16x8", res=16, z_dim=8, w_dim=8, img_channels=3, channel_base=64, channel_max=8,
         mapping_layers=2, architecture="resnet", conv_clamp=256),
]
SEEDS = [0, 5]
PLACEHOLDER = "# placeholder: source code of module '{}' intentionally omitted from this fixture\n"
COMMIT = "a6a162a66ff539ea3070b7c4d391bf20932d2532"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="checkout of StyleGAN-Human (torch_utils, dnnlib, training_scripts/sg2)")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, os.path.join(args.repo, "training_scripts", "sg2"))  # training.networks
    sys.path.insert(1, args.repo)  # torch_utils, dnnlib
    for case in CASES:
        make_case(case, args.out, torch)


def make_case(case, out_root, torch):
    networks = importlib.import_module("training.networks")
    modname = "training.networks"
    G = networks.Generator(z_dim=case["z_dim"], c_dim=0, w_dim=case["w_dim"], img_resolution=case["res"],
                           square=False, img_channels=case["img_channels"],
                           mapping_kwargs=dict(num_layers=case["mapping_layers"]),
                           synthesis_kwargs=dict(channel_base=case["channel_base"], channel_max=case["channel_max"],
                                                 num_fp16_res=0, conv_clamp=case["conv_clamp"],
                                                 architecture=case["architecture"]))
    G.eval().requires_grad_(False)
    assert list(G.synthesis.b4.const.shape[1:]) == [4, 2]
    gen = torch.Generator().manual_seed(sum(map(ord, case["name"])))
    rnd = lambda *s: torch.randn(*s, generator=gen)
    with torch.no_grad():
        for name, p in G.named_parameters():  # every term non-zero, as the fixtures do
            if name.endswith("noise_strength"):
                p.copy_(0.3 * rnd(p.shape))
            elif name.endswith("affine.bias"):
                p.copy_(1 + 0.25 * rnd(p.shape))
            elif name.endswith(".bias"):
                p.add_(0.1 * rnd(p.shape))
            elif "torgb.weight" in name:
                p.mul_(0.5)
        if case["conv_clamp"] is not None:  # engage the clamp: some conv0 channels near +-256 after the gain
            b = getattr(G.synthesis, f"b{case['res']}").conv0.bias
            b[: max(1, b.numel() // 8)] = 181.0
        zs = rnd([256, case["z_dim"]])
        cs = torch.zeros([256, 0])
        G.mapping.w_avg.copy_(G.mapping(zs, cs)[:, 0].mean(0) + 0.1 * rnd([case["w_dim"]]))
        scale = 0.5 / float(G(zs[:8], cs[:8], force_fp32=True).std())
        for res in G.synthesis.block_resolutions:
            torgb = getattr(getattr(G.synthesis, f"b{res}"), "torgb", None)
            if torgb is not None:
                torgb.weight.mul_(scale)
                torgb.bias.mul_(scale)
    out = os.path.join(out_root, case["name"])
    os.makedirs(out, exist_ok=True)
    G_ema = copy.deepcopy(G)
    saved = {}
    for cls in vars(networks).values():
        if isinstance(cls, type) and hasattr(cls, "_orig_module_src"):
            saved[cls] = cls._orig_module_src
            cls._orig_module_src = PLACEHOLDER.format(modname)
    with open(os.path.join(out, "network-snapshot.pkl"), "wb") as f:  # G left out: the files stay small
        pickle.dump(dict(G=None, D=None, G_ema=G_ema, training_set_kwargs=None, augment_pipe=None), f, protocol=4)
    for cls, src in saved.items():
        cls._orig_module_src = src
    goldens, files = [], {}

    def save(name, arr):
        np.save(os.path.join(out, name), arr)
        files[name] = dict(dtype=str(arr.dtype), shape=list(arr.shape))

    save("noise_const_b8_conv0.npy", G.synthesis.b8.conv0.noise_const.numpy())
    for seed in SEEDS:
        z = np.random.RandomState(seed).randn(1, case["z_dim"])
        save(f"z_s{seed}.npy", z)
        zt, ct = torch.from_numpy(z), torch.zeros([1, 0])
        for psi in [1.0, 0.7]:
            ptag = f"psi{psi:g}"
            ws = G.mapping(zt, ct, truncation_psi=psi)
            save(f"ws_s{seed}_{ptag}.npy", ws.numpy())
            for noise in ["const", "none"]:
                img = G(zt, ct, truncation_psi=psi, noise_mode=noise, force_fp32=True)
                assert list(img.shape) == [1, case["img_channels"], case["res"], case["res"] // 2]
                assert torch.equal(img, G.synthesis(ws, noise_mode=noise, force_fp32=True))
                save(f"img_s{seed}_{ptag}_{noise}.npy", img.numpy())
                goldens.append(dict(type="image", seed=seed, psi=psi, truncation_cutoff=None, noise_mode=noise,
                                    class_idx=None, z=f"z_s{seed}.npy", c=None, ws=f"ws_s{seed}_{ptag}.npy",
                                    img=f"img_s{seed}_{ptag}_{noise}.npy"))
    for name in sorted(os.listdir(out)):
        if name in files or name.endswith(".pkl"):
            with open(os.path.join(out, name), "rb") as f:
                files.setdefault(name, {})["sha256"] = hashlib.sha256(f.read()).hexdigest()
    cfg = {k: case[k] for k in case if k != "name"}
    cfg.update(square=False, img_height=case["res"], img_width=case["res"] // 2, num_ws=G.num_ws, c_dim=0,
               num_fp16_res=0, resample_filter=[1, 3, 3, 1])
    cfg["channels"] = {str(r): getattr(G.synthesis, f"b{r}").conv1.weight.shape[0] for r in G.synthesis.block_resolutions}
    manifest = dict(case=case["name"], format="StyleGAN-Human pickle (stylegan2-ada-pytorch persistence, square=False)",
                    model_file="network-snapshot.pkl", config=cfg,
                    source=dict(repo="stylegan-human/StyleGAN-Human@" + COMMIT[:8],
                                code="training_scripts/sg2/training/networks.py, torch_utils"),
                    what_ran=dict(device="cpu", force_fp32=True, torch=torch.__version__, numpy=np.__version__),
                    goldens=goldens, files=files)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(case["name"], "ok:", len(goldens), "goldens,", os.path.getsize(os.path.join(out, "network-snapshot.pkl")), "bytes")


if __name__ == "__main__":
    main()
