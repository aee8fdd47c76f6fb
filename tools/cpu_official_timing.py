#!/usr/bin/env python3
"""The official generator on the CPU beside `sg2 bench --device cpu` (docs/performance.md section 6):
tools/cpu_official.py with repeats and process CPU seconds. Times NVlabs stylegan3's
networks_stylegan2 generator (force_fp32, const noise) on N seeds in one batch, R times after one
untimed image; prints each run's wall and process-CPU seconds per image, then the medians.
   python3 tools/cpu_official_timing.py --sg3 STYLEGAN3_CHECKOUT --network paper256.pkl --n 4 --threads 2 --reps 3
(needs torch: Debian's python3-torch; a random pickle: tools/e2e_official.py --res 256 --cbase 16384)"""
import argparse, sys, time, statistics
import numpy as np
ap = argparse.ArgumentParser(); ap.add_argument('--sg3', required=True); ap.add_argument('--network', required=True)
ap.add_argument('--n', type=int, default=4); ap.add_argument('--threads', type=int, default=2); ap.add_argument('--reps', type=int, default=3)
a = ap.parse_args(); sys.path.insert(0, a.sg3)
import torch, legacy
torch.set_num_threads(a.threads)
with open(a.network, 'rb') as f:
    G = legacy.load_network_pkl(f)['G_ema'].float()
z = torch.from_numpy(np.stack([np.random.RandomState(s).randn(G.z_dim) for s in range(a.n)])).float()
c = torch.zeros([a.n, G.c_dim])
walls, cpus = [], []
with torch.no_grad():
    G(z[:1], c[:1], noise_mode='const', force_fp32=True)
    for r in range(a.reps):
        t, p = time.time(), time.process_time()
        G(z, c, noise_mode='const', force_fp32=True)
        walls.append((time.time() - t) / a.n); cpus.append((time.process_time() - p) / a.n)
        print(f'run {r}: wall {walls[-1]:.3f} s/img, cpu {cpus[-1]:.3f} s/img', flush=True)
print(f'official threads {a.threads} batch {a.n}: median wall {statistics.median(walls):.3f} s/img, median cpu {statistics.median(cpus):.3f} s/img (torch {torch.__version__}, threads {torch.get_num_threads()})')
