#!/usr/bin/env python3
"""The official StyleGAN2 generator (stylegan3's training/networks_stylegan2.py, custom ops built) timed on the GPU,
the anchor that sg2 bench is compared with in the same device call.

Method (docs/performance.md §2): random seeded weights (official init; noise_strength ~ N(0, 0.3^2), non-affine
biases += N(0, 0.1^2), w_avg ~ N(0, 0.5^2)), noise_mode='const', mapping included, cudnn.benchmark on; each cell is the
best of fused/non-fused modulation x eager/CUDA-graph replay; CUDA events, median of ITERS after warm-up.

  python3 bench_official.py --sg3 .cache/sg3 --configs ffhq1024-f --batches 1,8,32 --modes fp16,auto,tf32,fp32 --json out.json
"""
import argparse, json, os, sys, time, statistics

CONFIGS = {  # res, channel_base, num_fp16_res used by 'auto' (the checkpoint's own fp16 blocks)
    'ffhq1024-f': (1024, 32768), 'paper512': (512, 32768), 'paper256': (256, 16384)}
MODES = {  # name: (num_fp16_res or None for 'all', conv_clamp, tf32)
    'fp32': (0, None, False), 'tf32': (0, None, True), 'auto': (4, 256, True), 'fp16': ('all', 256, True)}


def build(res, cbase, mode, torch, Generator, seed=0):
    fp16, clamp, _ = MODES[mode]
    nres = (res.bit_length() - 1) if fp16 == 'all' else fp16
    G = Generator(z_dim=512, c_dim=0, w_dim=512, img_resolution=res, img_channels=3,
                  mapping_kwargs=dict(num_layers=8),
                  channel_base=cbase, channel_max=512, num_fp16_res=nres, conv_clamp=clamp)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in G.named_parameters():
            if name.endswith('noise_strength'):
                p.copy_(torch.randn([], generator=g) * 0.3)
            elif name.endswith('bias') and '.affine.' not in name:
                p.add_(torch.randn(p.shape, generator=g) * 0.1)
        G.mapping.w_avg.copy_(torch.randn(G.mapping.w_avg.shape, generator=g) * 0.5)
    return G.eval().requires_grad_(False).cuda()


def time_cell(G, n, fused, graph, iters, torch):
    z = torch.randn([n, 512], generator=torch.Generator().manual_seed(n)).cuda()
    c = torch.zeros([n, 0], device='cuda')
    f = lambda: G(z, c, truncation_psi=1, noise_mode='const', fused_modconv=fused)
    with torch.no_grad():
        for _ in range(3):
            out = f()
        torch.cuda.synchronize()
        if graph:
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2): f()
            torch.cuda.current_stream().wait_stream(s)
            cg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(cg):
                out = f()
            run = cg.replay
        else:
            run = f
        for _ in range(2): run()
        torch.cuda.synchronize()
        ts = []
        for _ in range(iters):
            a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
            a.record(); run(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    assert torch.isfinite(out).all(), 'non-finite output'
    return statistics.median(ts), min(ts), max(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sg3', required=True)
    ap.add_argument('--configs', default='ffhq1024-f')
    ap.add_argument('--batches', default='1,8,32')
    ap.add_argument('--modes', default='auto,fp16,tf32,fp32')
    ap.add_argument('--iters', type=int, default=20)
    ap.add_argument('--json')
    a = ap.parse_args()
    sys.path.insert(0, a.sg3)
    import torch
    from training.networks_stylegan2 import Generator
    from torch_utils import custom_ops
    custom_ops.verbosity = os.environ.get('OFF_VERBOSITY', 'brief')
    import torch.utils.cpp_extension as cpp_ext
    _load = cpp_ext.load
    def load_and_register(name, **kw):  # torch 2.11's load() no longer leaves the module importable by name
        mod = _load(name=name, **kw); sys.modules[name] = mod; return mod
    cpp_ext.load = load_and_register
    torch.backends.cudnn.benchmark = True
    rows = []
    print(f'official networks_stylegan2 on {torch.cuda.get_device_name()}, torch {torch.__version__}', flush=True)
    print(f'{"config":11} {"mode":5} {"N":>4} {"best ms":>9} {"img/s":>8} {"variant":14} {"peak GiB":>8}', flush=True)
    for cfg in a.configs.split(','):
        res, cbase = CONFIGS[cfg]
        for mode in a.modes.split(','):
            tf32 = MODES[mode][2]
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            G = build(res, cbase, mode, torch, Generator)
            for n in map(int, a.batches.split(',')):
                variants = {}
                torch.cuda.reset_peak_memory_stats()
                for fused in (True, False):
                    for graph in (False, True):
                        key = f'{"fused" if fused else "nonfused"}-{"graph" if graph else "eager"}'
                        try:
                            variants[key] = time_cell(G, n, fused, graph, a.iters, torch)[0]
                        except Exception as e:  # OOM at a large batch: that variant is not available
                            variants[key] = None
                            print(f'  {cfg} {mode} N={n} {key}: {type(e).__name__}: {str(e)[:100]}', flush=True)
                            torch.cuda.empty_cache()
                ok = {k: v for k, v in variants.items() if v is not None}
                if not ok:
                    continue
                best = min(ok, key=ok.get)
                peak = torch.cuda.max_memory_allocated() / 2**30
                row = dict(config=cfg, mode=mode, batch=n, variants=variants, best=best, best_ms=ok[best],
                           img_per_s=n * 1000 / ok[best], peak_GiB=peak)
                rows.append(row)
                print(f'{cfg:11} {mode:5} {n:4d} {ok[best]:9.3f} {row["img_per_s"]:8.1f} {best:14} {peak:8.2f}', flush=True)
            del G; torch.cuda.empty_cache()
    if a.json:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), open(a.json, 'w'), indent=1)


if __name__ == '__main__':
    main()
