#!/usr/bin/env python3
"""The stylegan3-editing way of making an InterFaceGAN latent dataset, timed on a slice: one image at a time in
Python with the official generator, in the loop shape of stylegan3-editing's
editing/interfacegan/generate_latents_and_attribute_scores.py (read there, re-implemented here): per seed
z = RandomState(seed).randn(1, z_dim), w = G.mapping(z, None, truncation_psi), w copied to the host and kept,
img = G.synthesis(w, noise_mode='const'), AdaptiveAvgPool2d to 256x256, and the kept ws saved with np.save every
--save-interval images. Its attribute, age and pose estimators need weights that are not public in the official repos
and are left out (they only add time); instead each image is converted with the official uint8 conversion and
written as a PNG (PIL) into a dataset zip in dataset_tool.py's layout, so that the output matches what
`sg2 generate --outdir NAME.zip --save-latents` writes (--no-png leaves that out).

  python3 tools/interfacegan_official.py --sg3 SG3_DIR --network r256.pkl --seeds 2000 --out DIR [--psi 0.7]
Prints one line: "OFFICIAL-LOOP <n> images in <s> s = <img/s> img/s (...)" after a warm-up of --warmup images.
"""
import argparse, io, os, sys, time, zipfile

ap = argparse.ArgumentParser()
ap.add_argument('--sg3', required=True)
ap.add_argument('--network', required=True)
ap.add_argument('--seeds', type=int, required=True, help='the slice: seeds 0 .. N-1')
ap.add_argument('--out', required=True)
ap.add_argument('--psi', type=float, default=0.7)
ap.add_argument('--save-interval', type=int, default=10000)
ap.add_argument('--warmup', type=int, default=20)
ap.add_argument('--no-png', action='store_true')
a = ap.parse_args()
sys.path.insert(0, a.sg3)
import numpy as np
import torch
import torch.utils.cpp_extension as cpp_ext
_load = cpp_ext.load
def load_and_register(name, **kw):  # as tools/run_official.py: the custom ops stay importable by name
    mod = _load(name=name, **kw); sys.modules[name] = mod; return mod
cpp_ext.load = load_and_register
import dnnlib, legacy
from PIL import Image

device = torch.device('cuda')
with dnnlib.util.open_url(a.network) as f:
    G = legacy.load_network_pkl(f)['G_ema'].to(device)
face_pool = torch.nn.AdaptiveAvgPool2d((256, 256))
os.makedirs(a.out, exist_ok=True)
zf = None if a.no_png else zipfile.ZipFile(os.path.join(a.out, 'official.zip'), 'w', compression=zipfile.ZIP_STORED)


def one(seed, ws):
    z = torch.from_numpy(np.random.RandomState(seed).randn(1, G.z_dim)).to(device)
    w = G.mapping(z, None, truncation_psi=a.psi)
    ws.append(w.detach().cpu().numpy())
    img = G.synthesis(w, noise_mode='const')
    img = face_pool(img)
    if zf is not None:
        u8 = (img.permute(0, 2, 3, 1) * 127.5 + 128).clamp(0, 255).to(torch.uint8)[0].cpu().numpy()
        buf = io.BytesIO()
        Image.fromarray(u8, 'RGB').save(buf, format='png', compress_level=6)
        idx = f'{seed:08d}'
        zf.writestr(f'{idx[:5]}/img{idx}.png', buf.getvalue())
    else:
        img.cpu()  # the loop's estimators read the image: wait for it


with torch.no_grad():
    warm = []
    for s in range(a.warmup):
        one(10**9 + s, warm)  # seeds outside the slice: the custom ops are built and the kernels chosen
    torch.cuda.synchronize()
    t0 = time.time()
    ws, batch_id = [], 0
    for seed in range(a.seeds):
        one(seed, ws)
        if seed % a.save_interval == 0 and seed > 0:  # the script's save step
            np.save(os.path.join(a.out, f'ws_{batch_id}.npy'), np.vstack(ws))
            ws, batch_id = [], batch_id + 1
    if ws:
        np.save(os.path.join(a.out, f'ws_{batch_id}.npy'), np.vstack(ws))
    if zf is not None:
        zf.close()
    torch.cuda.synchronize()
    dt = time.time() - t0
print(f'OFFICIAL-LOOP {a.seeds} images in {dt:.2f} s = {a.seeds / dt:.1f} img/s '
      f'(one image at a time, psi {a.psi}, const noise, {"PNG into a zip" if zf is not None else "no PNG"})')
