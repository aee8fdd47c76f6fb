#!/usr/bin/env python3
"""sg2 serve with several GPU workers in one process (ctest Serve.MultiGpu; label gpu).

    python3 tests/serve/test_serve_gpu.py build/sg2
    SG2_REQUIRE_GPU=1 python3 tests/serve/test_serve_gpu.py build/sg2   # on a GPU machine: no GPU is a failure

`--device cuda:0,0` runs two workers, each with its own generator and batches, on one card: concurrent
clients in random interleavings (batches padded to powers of two, up to --max-batch 8) must get exactly the
PNGs that `sg2 generate --device cuda:0` and `sg2 mix --device cuda:0` write for the same options, and JPEGs
identical to the device's first answer; /v1/model lists both workers, /metrics counts every image, no failed
batch, and reports the card's memory (sg2_gpu_memory_bytes{device="cuda:0"}). Where a second GPU is usable,
`--device cuda:0,1` is checked the same way, each answer against the CLI's file on the device that made it
(X-Sg2-Device), and both devices must answer and appear in /metrics.

Exits 77 (ctest: skipped) where no GPU is usable (a build without CUDA, no driver, no GPU), as in CI,
unless SG2_REQUIRE_GPU=1. Standard library only; every server is stopped however a test ends.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import Server, npy_bytes, run_cli  # noqa: E402

SG2 = None
TMP = None


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def gpu_unusable(device):
    """None when `sg2 generate --device DEVICE` runs; the reason when sg2 says the GPU cannot be used (its
    device errors end with the hint 'use --device cpu'); raises on any other failure."""
    out = tempfile.mkdtemp(prefix='probe_', dir=TMP)
    r = subprocess.run([SG2, 'generate', '--device', device, '--seeds', '0', '--class', '0', '-q', '--outdir', out],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    if r.returncode == 0:
        return None
    err = r.stderr.decode(errors='replace')
    if 'use --device cpu' in err:
        return err.strip().splitlines()[0]
    raise RuntimeError(f'sg2 generate --device {device} failed ({r.returncode}): {err}')


def gpu_names():
    """The GPUs nvidia-smi lists (names), or [] without it."""
    if not shutil.which('nvidia-smi'):
        return []
    r = subprocess.run(['nvidia-smi', '--query-gpu=name', '--format=csv,noheader'], capture_output=True, timeout=60)
    return [l.strip() for l in r.stdout.decode(errors='replace').splitlines() if l.strip()] if r.returncode == 0 else []


# The requests: (key, method, path, body). Their expected bytes come from the CLI on each device.
GROUPS = [  # (CLI command and options, seeds, query)
    (['generate', '--class', '3'], list(range(12)), 'class=3'),
    (['generate', '--class', '1', '--trunc', '0.7', '--trunc-cutoff', '4'], [20, 21, 22, 23],
     'class=1&trunc=0.7&trunc-cutoff=4'),
    (['generate', '--class', '5', '--noise-mode', 'random', '--noise-seed', '5'], [30, 31, 4294967295],
     'class=5&noise-mode=random&noise-seed=5'),
    (['generate', '--class', '0', '--noise-mode', 'none'], [40, 41], 'class=0&noise-mode=none'),
]
MIX = (['--rows', '50,51', '--cols', '52', '--styles', '0-3', '--trunc', '0.8', '--class', '2'],
       [(50, 52), (51, 52)], 'styles=0-3&trunc=0.8&class=2')
WS = npy_bytes([1, 8, 512], [random.Random(24).gauss(0, 1) for _ in range(8 * 512)])


def cli_files(device):
    """{(method, path, body): PNG bytes} written by sg2 generate / mix on `device`."""
    ref = {}
    base = tempfile.mkdtemp(prefix='cli_' + device.replace(':', '') + '_', dir=TMP)
    for i, (cmd, seeds, query) in enumerate(GROUPS):
        out = os.path.join(base, f'g{i}')
        run_cli(SG2, cmd[0], '--seeds', ','.join(map(str, seeds)), *cmd[1:], '--device', device, '--outdir', out, '-q',
                timeout=300)
        for s in seeds:
            ref[('GET', f'/v1/generate?seed={s}&{query}', None)] = read(os.path.join(out, f'seed{s:04d}.png'))
    opts, pairs, query = MIX
    out = os.path.join(base, 'mix')
    run_cli(SG2, 'mix', *opts, '--device', device, '--outdir', out, '-q', timeout=300)
    for r, c in pairs:
        ref[('GET', f'/v1/generate?row-seed={r}&col-seed={c}&{query}', None)] = read(os.path.join(out, f'{r}-{c}.png'))
    f = os.path.join(base, 'w.npy')
    with open(f, 'wb') as fh:
        fh.write(WS)
    out = os.path.join(base, 'ws')
    run_cli(SG2, 'generate', '--ws', f, '--device', device, '--outdir', out, '-q', timeout=300)
    ref[('POST', '/v1/generate', WS)] = read(os.path.join(out, 'ws0000.png'))
    return ref


JPEGS = [('GET', f'/v1/generate?seed={s}&class=7&format=jpeg', None) for s in (60, 61, 62, 63)]


class MultiWorker:
    """Checks shared by both layouts; `devices` is the --device list, `refs` {device: {spec: PNG}}."""

    def run_server(self, devices, refs):
        specs = list(refs['cuda:0'].keys()) + JPEGS
        names = devices.split(':')[1].split(',')
        with Server(SG2, '--max-batch', '8', '--jobs', '4', device=devices, start_timeout=300) as srv:
            # /v1/model and the start line name every worker
            s, _, b = srv.get('/v1/model')
            self.assertEqual(s, 200, b)
            self.assertEqual(json.loads(b)['devices'], ['cuda:' + n for n in names])
            self.assertIn(','.join('cuda:' + n for n in names), srv.stderr())

            # alone: one request at a time (a JPEG has no CLI file: the first answer of each device is its reference)
            jpeg = {}
            for spec in specs:
                s, h, b = srv.request(*spec[:2], body=spec[2])
                self.assertEqual((s, h.get('x-sg2-batch')), (200, '1'), f'{spec[1]}: {b[:200]!r}')
                dev = h.get('x-sg2-device')
                self.assertIn(dev, refs if spec not in JPEGS else ['cuda:' + n for n in names], spec[1])
                if spec in JPEGS:
                    jpeg[(spec, dev)] = b
                else:
                    self.assertEqual(b, refs[dev][spec], f'{spec[1]} on {dev}: not the CLI\'s file')

            # concurrent: random interleavings, batched together on the workers
            rnd = random.Random(7)
            errors, batches, devs = [], [], []
            lock = threading.Lock()
            answered = [0]

            def client(order):
                for spec in order:
                    try:
                        s, h, b = srv.request(*spec[:2], body=spec[2], timeout=120)
                    except OSError as e:
                        with lock:
                            errors.append(f'{spec[1]}: {e}')
                        continue
                    dev = h.get('x-sg2-device')
                    with lock:
                        want = jpeg.setdefault((spec, dev), b) if spec in JPEGS else refs.get(dev, {}).get(spec)
                        answered[0] += 1
                        batches.append(int(h.get('x-sg2-batch', 0)))
                        devs.append(dev)
                        if s != 200 or b != want:
                            errors.append(f'{spec[1]} on {dev}: status {s}, '
                                          f'{"same" if b == want else "DIFFERENT"} bytes')

            for _ in range(3):
                threads = [threading.Thread(target=client, args=([rnd.choice(specs) for _ in range(16)],))
                           for _ in range(32)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout=300)
            self.assertEqual(errors[:20], [])
            self.assertEqual(answered[0], 3 * 32 * 16)
            self.assertGreater(max(batches), 1, 'no request shared a batch: the test proves nothing')

            # /metrics: every image counted, no failed batch, the GPU memory of each device
            s, _, b = srv.get('/metrics')
            text = b.decode()
            value = {l.rsplit(' ', 1)[0]: float(l.rsplit(' ', 1)[1]) for l in text.splitlines()
                     if l and not l.startswith('#')}
            self.assertGreaterEqual(value['sg2_images_total'], len(specs) + answered[0])
            self.assertGreater(value['sg2_batches_total'], 0)
            self.assertEqual(value['sg2_batch_failures_total'], 0)
            self.assertEqual(value['sg2_http_requests_total{code="200"}'], len(specs) + answered[0] + 1)
            for n in sorted(set(names)):
                for kind in ('sg2', 'free', 'total'):
                    key = f'sg2_gpu_memory_bytes{{device="cuda:{n}",kind="{kind}"}}'
                    self.assertIn(key, value, f'/metrics has no {key}')
                    self.assertGreater(value[key], 0, key)
            self.assertEqual(srv.terminate(), 0)
            shared = sum(1 for x in batches if x > 1)
            print(f'\n  --device {devices}: {answered[0]} concurrent answers, {shared} from shared batches (largest '
                  f'{max(batches)}), by device {dict((d, devs.count(d)) for d in sorted(set(devs)))}, all identical '
                  'to the CLI files (PNG) and the first answers (JPEG)', file=sys.stderr)
            return devs


class OneGpuTwoWorkers(unittest.TestCase, MultiWorker):
    def test_cuda_0_0(self):
        self.run_server('cuda:0,0', {'cuda:0': cli_files('cuda:0')})


class TwoGpus(unittest.TestCase, MultiWorker):
    def test_cuda_0_1(self):
        why = gpu_unusable('cuda:1')
        if why:
            self.skipTest(f'no second usable GPU: {why}')
        refs = {'cuda:0': cli_files('cuda:0'), 'cuda:1': cli_files('cuda:1')}
        names = gpu_names()
        if len(names) >= 2 and names[0] == names[1]:  # one GPU model: the same bytes on both
            self.assertEqual(refs['cuda:0'], refs['cuda:1'], f'{names[0]}: cuda:0 and cuda:1 give different files')
        devs = self.run_server('cuda:0,1', refs)
        self.assertEqual(sorted(set(devs)), ['cuda:0', 'cuda:1'], 'one device answered every concurrent request')


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit('usage: test_serve_gpu.py PATH/TO/sg2 [unittest arguments]')
    SG2 = os.path.abspath(sys.argv.pop(1))
    with tempfile.TemporaryDirectory(prefix='sg2_serve_gpu_') as tmp:
        TMP = tmp
        why = gpu_unusable('cuda:0')
        if why:
            if os.environ.get('SG2_REQUIRE_GPU') == '1':
                sys.exit(f'test_serve_gpu: SG2_REQUIRE_GPU=1 but no GPU is usable: {why}')
            print(f'test_serve_gpu: skipped: no usable GPU: {why}')
            sys.exit(77)
        prog = unittest.main(verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
