#!/usr/bin/env python3
"""Make the extra official goldens in this folder (configurations the shared fixtures lack).

Runs the *unmodified* official network code of NVlabs/stylegan2-ada-pytorch (commit d72cc7d0)
and NVlabs/stylegan3 (commit c233a919, training/networks_stylegan2.py) on the CPU in float32,
imported from checkouts given on the command line (their code is not part of sg2):

    /usr/bin/python3 make_goldens.py --ada /tmp/ada --sg3 /tmp/sg3

Needs torch (Debian python3-torch 1.13) and numpy. Writes one folder per case with
network-snapshot.pkl (the official persistence pickle; the embedded module source replaced by a
one-line placeholder, as in ../fixtures), z/c/ws/img .npy files, uint8 PNGs (official
conversion) and manifest.json in the fixtures' format.
"""
import argparse, copy, hashlib, importlib, json, os, pickle, sys

import numpy as np

CASES = [
    # name, repo, Generator kwargs, seeds
    dict(name="ada_resnet32_rgba_cond", repo="ada", res=32, z_dim=16, w_dim=16, c_dim=3, img_channels=4,
         channel_base=512, channel_max=32, mapping_layers=3, architecture="resnet", conv_clamp=256,
         num_fp16_res=2, resample_filter=[1, 3, 3, 1]),
    dict(name="ada_orig32_gray", repo="ada", res=32, z_dim=16, w_dim=16, c_dim=0, img_channels=1,
         channel_base=512, channel_max=24, mapping_layers=8, architecture="orig", conv_clamp=None,
         num_fp16_res=0, resample_filter=[1, 3, 3, 1]),
    dict(name="sg3_resnet64", repo="sg3", res=64, z_dim=16, w_dim=16, c_dim=0, img_channels=3,
         channel_base=256, channel_max=16, mapping_layers=2, architecture="resnet", conv_clamp=256,
         num_fp16_res=4, resample_filter=[1, 3, 3, 1]),
    dict(name="sg3_skip16_filter", repo="sg3", res=16, z_dim=8, w_dim=12, c_dim=2, img_channels=3,
         channel_base=256, channel_max=16, mapping_layers=2, architecture="skip", conv_clamp=None,
         num_fp16_res=0, resample_filter=[1, 2, 4, 1]),
]
SEEDS = [0, 5]
PLACEHOLDER = "# placeholder: source code of module '{}' intentionally omitted from this fixture\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True, help="checkout of NVlabs/stylegan2-ada-pytorch")
    ap.add_argument("--sg3", required=True, help="checkout of NVlabs/stylegan3")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    for case in CASES:
        root = args.ada if case["repo"] == "ada" else args.sg3
        for m in [k for k in sys.modules if k.split(".")[0] in ("training", "torch_utils", "dnnlib")]:
            del sys.modules[m]
        sys.path.insert(0, root)
        make_case(case, args.out, torch)
        sys.path.remove(root)


def make_case(case, out_root, torch):
    from torch_utils import persistence
    if case["repo"] == "ada":
        networks = importlib.import_module("training.networks")
        modname = "training.networks"
        G = networks.Generator(z_dim=case["z_dim"], c_dim=case["c_dim"], w_dim=case["w_dim"],
                               img_resolution=case["res"], img_channels=case["img_channels"],
                               mapping_kwargs=dict(num_layers=case["mapping_layers"]),
                               synthesis_kwargs=dict(channel_base=case["channel_base"], channel_max=case["channel_max"],
                                                     num_fp16_res=case["num_fp16_res"], conv_clamp=case["conv_clamp"],
                                                     architecture=case["architecture"],
                                                     resample_filter=case["resample_filter"]))
    else:
        networks = importlib.import_module("training.networks_stylegan2")
        modname = "training.networks_stylegan2"
        G = networks.Generator(z_dim=case["z_dim"], c_dim=case["c_dim"], w_dim=case["w_dim"],
                               img_resolution=case["res"], img_channels=case["img_channels"],
                               mapping_kwargs=dict(num_layers=case["mapping_layers"]),
                               channel_base=case["channel_base"], channel_max=case["channel_max"],
                               num_fp16_res=case["num_fp16_res"], conv_clamp=case["conv_clamp"],
                               architecture=case["architecture"], resample_filter=case["resample_filter"])
    G.eval().requires_grad_(False)
    # Randomise every term so that none is silently zero (as the fixtures do).
    gen = torch.Generator().manual_seed(sum(map(ord, case["name"])))
    rnd = lambda *s: torch.randn(*s, generator=gen)
    with torch.no_grad():
        for name, p in G.named_parameters():
            if name.endswith("noise_strength"):
                p.copy_(0.3 * rnd(p.shape))
            elif name.endswith("affine.bias"):
                p.copy_(1 + 0.25 * rnd(p.shape))
            elif name.endswith(".bias"):
                p.add_(0.1 * rnd(p.shape))
            elif "torgb.weight" in name:
                p.mul_(0.5)
        if case["conv_clamp"] is not None:  # engage the clamp: some conv0 channels near +-256 after the gain
            for res in G.synthesis.block_resolutions[-2:]:  # the top two blocks, as the fixtures
                b = getattr(G.synthesis, f"b{res}").conv0.bias
                b[: max(1, b.numel() // 8)] = 181.0
        zs = rnd([256, case["z_dim"]])
        cs = torch.zeros([256, case["c_dim"]])
        if case["c_dim"]:
            cs[torch.arange(256), torch.arange(256) % case["c_dim"]] = 1
        G.mapping.w_avg.copy_(G.mapping(zs, cs)[:, 0].mean(0) + 0.1 * rnd([case["w_dim"]]))
        # Scale the ToRGB layers so that images have a std of about 0.5, like trained networks.
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
    with open(os.path.join(out, "network-snapshot.pkl"), "wb") as f:
        pickle.dump(dict(G=G, D=None, G_ema=G_ema, training_set_kwargs=None, augment_pipe=None), f, protocol=4)
    for cls, src in saved.items():
        cls._orig_module_src = src
    goldens, files = [], {}

    def save(name, arr):
        np.save(os.path.join(out, name), arr)
        files[name] = dict(dtype=str(arr.dtype), shape=list(arr.shape))

    def png(name, img):
        from PIL import Image
        u8 = (img.permute(0, 2, 3, 1) * 127.5 + 128).clamp(0, 255).to(torch.uint8)[0].numpy()
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[u8.shape[2]]
        Image.fromarray(u8[:, :, 0] if mode == "L" else u8, mode).save(os.path.join(out, name))

    for seed in SEEDS:
        z = np.random.RandomState(seed).randn(1, case["z_dim"])
        save(f"z_s{seed}.npy", z)
        c = np.zeros([1, case["c_dim"]], np.float32)
        cls = None
        if case["c_dim"]:
            cls = (seed + 1) % case["c_dim"]
            c[0, cls] = 1
            save(f"c_s{seed}.npy", c)
        zt, ct = torch.from_numpy(z), torch.from_numpy(c)
        for psi, cutoff in [(1.0, None), (0.7, None), (0.5, 3)]:
            ptag = f"psi{psi:g}" + (f"_cut{cutoff}" if cutoff is not None else "")
            kw = dict(truncation_psi=psi, truncation_cutoff=cutoff)
            ws = G.mapping(zt, ct, **kw)
            save(f"ws_s{seed}_{ptag}.npy", ws.numpy())
            for noise in ["const", "none"]:
                img = G(zt, ct, noise_mode=noise, force_fp32=True, **kw)
                assert torch.equal(img, G.synthesis(ws, noise_mode=noise, force_fp32=True))
                save(f"img_s{seed}_{ptag}_{noise}.npy", img.numpy())
                png(f"seed{seed:04d}_{ptag}_{noise}.png", img)
                goldens.append(dict(type="image", seed=seed, psi=psi, truncation_cutoff=cutoff, noise_mode=noise,
                                    class_idx=cls, z=f"z_s{seed}.npy", c=f"c_s{seed}.npy" if case["c_dim"] else None,
                                    ws=f"ws_s{seed}_{ptag}.npy", img=f"img_s{seed}_{ptag}_{noise}.npy",
                                    png=f"seed{seed:04d}_{ptag}_{noise}.png"))
    for name in sorted(os.listdir(out)):
        if name in files or name.endswith(".png") or name.endswith(".pkl"):
            with open(os.path.join(out, name), "rb") as f:
                files.setdefault(name, {})["sha256"] = hashlib.sha256(f.read()).hexdigest()
    cfg = {k: case[k] for k in case if k not in ("name", "repo")}
    cfg["num_ws"] = G.num_ws
    cfg["channels"] = {str(r): getattr(G.synthesis, f"b{r}").conv1.weight.shape[0] for r in G.synthesis.block_resolutions}
    manifest = dict(case=case["name"], format="stylegan2-ada-pytorch pickle" if case["repo"] == "ada" else
                    "stylegan3-repo pickle (training.networks_stylegan2)", model_file="network-snapshot.pkl",
                    config=cfg, source=dict(repo="NVlabs/stylegan2-ada-pytorch@d72cc7d0" if case["repo"] == "ada"
                                            else "NVlabs/stylegan3@c233a919"),
                    what_ran=dict(device="cpu", force_fp32=True, torch=torch.__version__, numpy=np.__version__,
                                  png="(img*127.5+128).clamp(0,255).to(uint8), PIL"),
                    goldens=goldens, files=files)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(case["name"], "ok:", len(goldens), "goldens,", os.path.getsize(os.path.join(out, "network-snapshot.pkl")), "bytes")


if __name__ == "__main__":
    main()
