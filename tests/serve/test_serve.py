#!/usr/bin/env python3
"""sg2 serve on the CPU backend with the bundled model, on the loopback (ctest Serve.Api).

    python3 tests/serve/test_serve.py build/sg2

Each answer is checked byte for byte against the files the CLI writes for the same options (generate,
mix, generate --ws, --save-ws); many concurrent clients in random interleavings get exactly the
sequential answers while their requests are batched together; bad input gets 400/404/405/413 with a
one-line JSON error and the server answers the next request; a failed batch (an injected device fault,
NaN pixels from one request) fails only its requests; the queue bound, timeouts, slow and vanishing
clients, SIGTERM with requests in flight, the metrics, and a bounded stress run with
tools/serve_load.py. Every server is stopped however a test ends.
"""
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import Server, npy_bytes, run_cli  # noqa: E402

SG2 = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CLASS = 'class'  # the bundled digits32 model is conditional (10 classes)


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def one_line_json_error(test, status, body, needle=None):
    text = body.decode()
    test.assertTrue(text.endswith('\n') and text.count('\n') == 1, f'not one line: {text!r}')
    err = json.loads(text)['error']
    if needle:
        test.assertIn(needle, err, f'status {status}: {err}')
    return err


class Main(unittest.TestCase):
    """One server for the API checks (--max-batch 16 so that concurrent requests share batches)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix='sg2_serve_test_')
        cls.dir = cls.tmp.name
        cls.srv = Server(SG2, '--max-batch', '16', '--idle-timeout-s', '2', '--max-body', '65536', '--jobs', '2')

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)
        cls.tmp.cleanup()

    def cli(self, name, *args):
        out = os.path.join(self.dir, name)
        run_cli(SG2, *args, '--device', 'cpu', '--outdir', out, '-q')
        return out

    def ok(self, method, path, body=None):
        s, h, b = self.srv.request(method, path, body=body) if body is None else self.srv.post(path, body)
        self.assertEqual(s, 200, f'{method} {path}: {s} {b[:300]!r}')
        return h, b

    # --- byte-identical to the CLI -------------------------------------------------------------

    def test_generate_png_identical(self):
        cases = [  # (CLI options, query, seeds)
            (['--class', '3'], 'class=3', [0, 1, 2, 3]),
            (['--class', '1', '--trunc', '0.7', '--trunc-cutoff', '4'], 'class=1&trunc=0.7&trunc-cutoff=4', [7, 8]),
            (['--class', '5', '--noise-mode', 'random', '--noise-seed', '5'],
             'class=5&noise-mode=random&noise-seed=5', [9, 4294967295]),
            (['--class', '0', '--noise-mode', 'none', '--trunc', '-0.5'], 'class=0&noise-mode=none&trunc=-0.5', [10]),
            (['--class', '2', '--png-level', 'fast'], 'class=2&png-level=fast', [11]),
            (['--class', '9', '--noise-mode', 'random'], 'class=9&noise-mode=random', [12, 13]),
        ]
        for i, (opts, query, seeds) in enumerate(cases):
            out = self.cli(f'gen{i}', 'generate', '--seeds', ','.join(map(str, seeds)), *opts)
            for s in seeds:
                _, body = self.ok('GET', f'/v1/generate?seed={s}&{query}')
                self.assertEqual(body, read(os.path.join(out, f'seed{s:04d}.png')), f'{opts} seed {s}')

    def test_ws_identical_to_save_ws(self):
        out = self.cli('savews', 'generate', '--seeds', '12,13', '--class', '4', '--trunc', '0.5', '--save-ws')
        for s in (12, 13):
            h, body = self.ok('GET', f'/v1/ws?seed={s}&class=4&trunc=0.5')
            self.assertEqual(body, read(os.path.join(out, f'seed{s:04d}_ws.npy')))
            self.assertEqual(h['content-type'], 'application/octet-stream')

    def test_mix_identical(self):
        out = self.cli('mix1', 'mix', '--rows', '5,6', '--cols', '7', '--styles', '0-3', '--trunc', '0.8', '--class',
                       '2')
        for r, c in ((5, 7), (6, 7), (5, 5), (7, 7)):
            _, body = self.ok('GET', f'/v1/generate?row-seed={r}&col-seed={c}&styles=0-3&trunc=0.8&class=2')
            self.assertEqual(body, read(os.path.join(out, f'{r}-{c}.png')), f'{r}-{c}')
        out = self.cli('mix2', 'mix', '--rows', '3', '--cols', '4', '--class', '6', '--noise-mode', 'random',
                       '--noise-seed', '2')
        _, body = self.ok('GET', '/v1/generate?row-seed=3&col-seed=4&class=6&noise-mode=random&noise-seed=2')
        self.assertEqual(body, read(os.path.join(out, '3-4.png')))

    def test_post_ws_identical(self):
        rnd = random.Random(1)
        wplus = [rnd.gauss(0, 1) for _ in range(8 * 512)]
        w = [rnd.gauss(0, 1) for _ in range(512)]
        cases = [  # (file bytes, CLI options, query)
            (npy_bytes([1, 8, 512], wplus), [], ''),
            (npy_bytes([1, 512], w), [], ''),
            (npy_bytes([1, 512], w, '<f8'), ['--noise-mode', 'random', '--noise-seed', '3'],
             'noise-mode=random&noise-seed=3'),
            (npy_bytes([8, 512], wplus), ['--ws-as', 'w+'], 'ws-as=w%2B'),
            (npy_bytes([1, 8, 512], wplus, '<f2'), ['--noise-mode', 'none'], 'noise-mode=none'),
        ]
        for i, (data, opts, query) in enumerate(cases):
            f = os.path.join(self.dir, f'ws{i}.npy')
            with open(f, 'wb') as fh:
                fh.write(data)
            out = self.cli(f'ws{i}', 'generate', '--ws', f, *opts)
            _, body = self.ok('POST', '/v1/generate' + (f'?{query}' if query else ''), data)
            self.assertEqual(body, read(os.path.join(out, 'ws0000.png')), f'case {i}: {opts}')

    def test_post_with_expect_continue(self):
        # curl sends "Expect: 100-continue" for bodies over 1 KiB and waits up to 1 s for the go-ahead.
        body = npy_bytes([1, 8, 512], [0.25] * 4096)
        f = os.path.join(self.dir, 'expect.npy')
        with open(f, 'wb') as fh:
            fh.write(body)
        _, want = self.ok('POST', '/v1/generate', body)
        t0 = time.monotonic()
        r = subprocess.run(['curl', '-s', '-H', 'Expect: 100-continue', '--data-binary', '@' + f,
                            f'http://127.0.0.1:{self.srv.port}/v1/generate'], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, want)
        self.assertLess(time.monotonic() - t0, 0.8, 'the server made curl wait for 100 Continue')

    def test_jpeg(self):
        h, a = self.ok('GET', '/v1/generate?seed=20&class=1&format=jpeg')
        self.assertEqual(h['content-type'], 'image/jpeg')
        self.assertTrue(a.startswith(b'\xff\xd8') and a.endswith(b'\xff\xd9'))
        # where the time went: W3C Server-Timing, milliseconds per stage
        m = re.fullmatch(r'queue;dur=(\d+\.\d{3}), generate;dur=(\d+\.\d{3}), encode;dur=(\d+\.\d{3})',
                         h.get('server-timing', ''))
        self.assertIsNotNone(m, h.get('server-timing'))
        self.assertGreater(float(m.group(2)), 0)
        self.assertGreater(float(m.group(3)), 0)
        _, b = self.ok('GET', '/v1/generate?seed=20&class=1&format=jpeg')
        self.assertEqual(a, b)
        _, c = self.ok('GET', '/v1/generate?seed=21&class=1&format=jpeg&quality=50')
        self.assertNotEqual(a, c)

    # --- batching never changes a byte ----------------------------------------------------------

    def test_concurrent_equals_sequential(self):
        rnd = random.Random(24)
        specs = []
        for s in range(12):
            specs.append(('GET', f'/v1/generate?seed={s}&class={s % 10}', None))
        for s in range(6):
            specs.append(('GET', f'/v1/generate?seed={100 + s}&class=3&trunc=0.6&trunc-cutoff=3&format=jpeg', None))
        for s in range(5):  # random noise, two noise seeds: they cannot share a batch
            specs.append(('GET', f'/v1/generate?seed={200 + s}&class=8&noise-mode=random&noise-seed={s % 2}', None))
        for s in range(4):
            specs.append(('GET', f'/v1/generate?row-seed={300 + s}&col-seed={400 + s}&styles=2-5&class=4', None))
        specs.append(('GET', '/v1/generate?seed=5&class=5&noise-mode=none', None))
        specs.append(('GET', '/v1/ws?seed=77&class=7&trunc=0.9', None))
        for s in range(3):
            vals = [random.Random(s).gauss(0, 1) for _ in range(8 * 512)]
            specs.append(('POST', '/v1/generate?noise-mode=random', npy_bytes([1, 8, 512], vals)))
        alone = {}
        for spec in specs:  # one at a time: each runs alone
            s, h, b = self.srv.request(spec[0], spec[1], body=spec[2])
            self.assertEqual((s, h.get('x-sg2-batch')), (200, '1'), spec[1])
            alone[spec] = b
        batches = []
        errors = []
        lock = threading.Lock()

        def client(order):
            for spec in order:
                try:
                    s, h, b = self.srv.request(spec[0], spec[1], body=spec[2])
                    with lock:
                        batches.append(int(h.get('x-sg2-batch', 0)))
                        if s != 200 or b != alone[spec]:
                            errors.append(f'{spec[1]}: status {s}, {"same" if b == alone[spec] else "DIFFERENT"} bytes')
                except OSError as e:
                    with lock:
                        errors.append(f'{spec[1]}: {e}')

        for rounds in range(3):  # several random interleavings
            threads = []
            for k in range(24):
                order = [specs[rnd.randrange(len(specs))] for _ in range(12)]
                threads.append(threading.Thread(target=client, args=(order,)))
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
        self.assertEqual(errors, [])
        self.assertEqual(len(batches), 3 * 24 * 12)
        self.assertGreater(max(batches), 1, 'no request shared a batch: the test proves nothing')
        shared = sum(1 for b in batches if b > 1)
        print(f'\n  concurrent: {len(batches)} answers, {shared} from shared batches (largest {max(batches)}), '
              'all identical to the sequential ones', file=sys.stderr)

    # --- bad input ------------------------------------------------------------------------------

    def test_bad_input(self):
        huge = 'x' * 20000
        cases = [  # (method, path, body, status, part of the message)
            ('GET', '/v1/generate?seed=-1&class=1', None, 400, "bad seed '-1'"),
            ('GET', '/v1/generate?seed=4294967296&class=1', None, 400, 'out of range'),
            ('GET', '/v1/generate?seed=1,2&class=1', None, 400, 'one seed per request'),
            ('GET', '/v1/generate?seed=1', None, 400, 'class=K is required'),
            ('GET', '/v1/generate?seed=1&class=10', None, 400, 'class 10 is out of range'),
            ('GET', '/v1/generate?seed=1&class=1&trunc=nan', None, 400, 'trunc:'),
            ('GET', '/v1/generate?seed=1&class=1&trunc=inf', None, 400, 'not a finite number'),
            ('GET', '/v1/generate?seed=1&class=1&trunc=0.5x', None, 400, "trunc: '0.5x' is not a number"),
            ('GET', '/v1/generate?seed=1&class=1&trunc-cutoff=-1', None, 400, 'trunc-cutoff'),
            ('GET', '/v1/generate?seed=1&class=1&noise-mode=loud', None, 400, "unknown noise mode 'loud'"),
            ('GET', '/v1/generate?seed=1&class=1&noise-seed=3', None, 400, 'only used with noise-mode random'),
            ('GET', '/v1/generate?seed=1&class=1&format=gif', None, 400, "unknown format 'gif'"),
            ('GET', '/v1/generate?seed=1&class=1&format=jpeg&quality=0', None, 400, 'quality'),
            ('GET', '/v1/generate?seed=1&class=1&png-level=12', None, 400, 'png-level'),
            ('GET', '/v1/generate?seed=1&class=1&color=red', None, 400, "unknown parameter 'color'"),
            ('GET', '/v1/generate?seed=1&seed=2&class=1', None, 400, 'given twice'),
            ('GET', '/v1/generate?seed=%zz&class=1', None, 400, 'malformed query'),
            ('GET', '/v1/generate?seed=%1b%5b31m&class=1', None, 400, '\\x1b'),
            ('GET', '/v1/generate?row-seed=1&col-seed=2&class=1&trunc-cutoff=2', None, 400, 'does not apply'),
            ('GET', '/v1/generate?row-seed=1&class=1', None, 400, 'both row-seed and col-seed'),
            ('GET', '/v1/generate?row-seed=1&col-seed=2&class=1&styles=0-8', None, 400, 'ws row 8 does not exist'),
            ('GET', '/v1/ws?seed=1&class=1&format=png', None, 400, 'does not apply'),
            ('GET', '/v1/generate?seed=1&class=1&' + huge, None, 400, 'larger than 16 KiB'),
            ('GET', '/nothing', None, 404, 'no such path'),
            ('GET', '/../../etc/passwd', None, 404, 'no such path'),
            ('GET', '/%2e%2e/%2e%2e/etc/passwd', None, 404, 'no such path'),
            ('GET', '/v1/generate/../../../etc/passwd', None, 404, 'no such path'),
            ('POST', '/v1/model', b'{}', 405, 'not allowed'),
            ('POST', '/v1/ws', b'x', 405, 'not allowed'),
            ('POST', '/v1/generate', b'', 400, 'body: empty'),
            ('POST', '/v1/generate', b'not a npy file', 400, 'body'),
            ('POST', '/v1/generate', npy_bytes([1, 512], list(range(512)), '<i4'), 400, 'body'),
            ('POST', '/v1/generate', npy_bytes([1, 3], [1.0, 2.0, 3.0]), 400, 'does not fit this model'),
            ('POST', '/v1/generate', npy_bytes([2, 512], [0.5] * 1024), 400, 'holds 2 latents'),
            ('POST', '/v1/generate', npy_bytes([8, 512], [0.5] * 4096), 400, 'ambiguous'),
            ('POST', '/v1/generate', npy_bytes([1, 512], [float('nan')] * 512), 400, 'NaN or infinite'),
            ('POST', '/v1/generate', npy_bytes([1, 512], [0.5] * 512)[:-10], 400, 'body'),
            ('POST', '/v1/generate?class=1', npy_bytes([1, 512], [0.5] * 512), 400, 'does not apply to ws input'),
            ('POST', '/v1/generate', npy_bytes([1, 8, 512], [0.1] * 4096) + b'\0' * 70000, 413, 'larger than --max-body'),
        ]
        for method, path, body, status, needle in cases:
            if method == 'POST':
                s, h, b = self.srv.post(path, body)
            else:
                s, h, b = self.srv.get(path)
            self.assertEqual(s, status, f'{method} {path[:80]}: {b[:200]!r}')
            self.assertEqual(h['content-type'], 'application/json')
            one_line_json_error(self, s, b, needle)
            s, _, b = self.srv.get('/healthz')  # still up, and answering
            self.assertEqual((s, b), (200, b'{"status":"ok"}\n'), f'after {path[:80]}')

    def test_raw_garbage_and_vanishing_clients(self):
        # Not HTTP at all: 400 and the connection closed; then clients that send a request and leave
        # before their answer, beside clients that wait for theirs.
        with socket.create_connection(('127.0.0.1', self.srv.port), timeout=10) as s:
            s.sendall(b'\x16\x03\x01\x00\xa5garbage\r\n\r\n')
            data = s.recv(65536)
            self.assertTrue(data.startswith(b'HTTP/1.1 400'), data[:100])
        want = self.ok('GET', '/v1/generate?seed=31&class=3')[1]
        results = []

        def patient():
            results.append(self.srv.get('/v1/generate?seed=31&class=3'))

        threads = [threading.Thread(target=patient) for _ in range(6)]
        leavers = []
        for i in range(8):
            c = socket.create_connection(('127.0.0.1', self.srv.port), timeout=10)
            c.sendall(f'GET /v1/generate?seed={40 + i}&class=1 HTTP/1.1\r\nHost: x\r\n\r\n'.encode())
            leavers.append(c)
        for t in threads:
            t.start()
        for c in leavers:
            c.close()
        for t in threads:
            t.join(timeout=60)
        self.assertEqual([(s, b == want) for s, _, b in results], [(200, True)] * 6)

    def test_slow_client_does_not_block_and_is_cut_off(self):
        slow = socket.create_connection(('127.0.0.1', self.srv.port), timeout=10)
        slow.sendall(b'GET /v1/generate?seed=1&class=1 HTTP/1.1\r\nHo')  # and nothing more
        t0 = time.monotonic()
        for s in range(5):
            self.ok('GET', f'/v1/generate?seed={s}&class=2&format=jpeg')
        self.assertLess(time.monotonic() - t0, 10)
        slow.settimeout(10)
        t1 = time.monotonic()
        try:
            data = slow.recv(1024)  # closed by --idle-timeout-s 2
        except ConnectionResetError:
            data = b''
        self.assertEqual(data, b'')
        self.assertLess(time.monotonic() - t1, 8)
        slow.close()

    # --- the other routes -----------------------------------------------------------------------

    def test_model_health_explorer(self):
        h, b = self.ok('GET', '/v1/model')
        m = json.loads(b)
        self.assertEqual((m['resolution'], m['channels'], m['num_ws'], m['c_dim'], m['precision']), (32, 3, 8, 10, 'auto'))
        self.assertEqual(m['devices'], ['cpu'])
        h, b = self.ok('GET', '/')
        self.assertTrue(h['content-type'].startswith('text/html'))
        self.assertIn(b'<title>sg2 explorer</title>', b)
        self.assertNotIn(b'http://', b.replace(b'http://127.0.0.1', b''))  # nothing from elsewhere

    def test_metrics(self):
        self.ok('GET', '/v1/generate?seed=3&class=3')
        self.srv.get('/v1/generate?seed=x')
        _, b = self.ok('GET', '/metrics')
        text = b.decode()
        for name in ('sg2_http_requests_total{code="200"}', 'sg2_http_requests_total{code="400"}',
                     'sg2_request_duration_seconds_bucket{le="0.005"}', 'sg2_request_duration_seconds_count',
                     'sg2_batch_size_bucket{le="1"}', 'sg2_batch_size_count', 'sg2_queue_depth ', 'sg2_images_total ',
                     'sg2_images_per_second ', 'sg2_batch_failures_total ', '# TYPE sg2_batch_size histogram',
                     'sg2_stage_seconds_sum{stage="encode"}', 'sg2_stage_seconds_count{stage="generate"} '):
            self.assertIn(name, text)
        for line in text.splitlines():  # the exposition format: comments, or NAME{LABELS} VALUE
            if line and not line.startswith('#'):
                name, value = line.rsplit(' ', 1)
                float(value)
                self.assertRegex(name, r'^[a-z0-9_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})?$')

    def test_access_log(self):
        self.ok('GET', '/v1/generate?seed=6&class=6&format=jpeg')
        time.sleep(0.2)
        self.assertRegex(self.srv.stderr(), r'sg2 serve: 127\.0\.0\.1:\d+ "GET /v1/generate\?seed=6&class=6&format=jpeg" '
                                            r'200 \d+ [0-9.]+ ms batch \d+ cpu')


class Faults(unittest.TestCase):
    def test_failed_batches_fail_only_their_requests(self):
        with Server(SG2, env={'SG2_SERVE_FAULT_EVERY': '3'}) as srv:
            statuses = []
            for s in range(9):
                st, _, b = srv.get(f'/v1/generate?seed={s}&class=1')
                statuses.append(st)
                if st == 500:
                    self.assertIn('injected device fault', json.loads(b)['error'])
            self.assertEqual(statuses, [200, 200, 500] * 3)
            self.assertEqual(srv.get('/healthz')[0], 200)
            _, _, b = srv.get('/metrics')
            self.assertIn(b'sg2_batch_failures_total 3', b)

    def test_nan_request_fails_alone(self):
        # Latents this large give NaN pixels (as `sg2 generate --ws` says for them): that request's batch
        # is rerun one request at a time, so only it gets the 400 and its batch mates their images.
        huge = npy_bytes([1, 512], [3e38] * 512)
        with Server(SG2, '--batch-window-ms', '300') as srv:
            want = {s: srv.get(f'/v1/generate?seed={s}&class=2')[2] for s in range(6)}
            out = {}

            def go(key, method, path, body=None):
                out[key] = srv.request(method, path, body=body)

            threads = [threading.Thread(target=go, args=(s, 'GET', f'/v1/generate?seed={s}&class=2')) for s in range(6)]
            threads.append(threading.Thread(target=go, args=('bad', 'POST', '/v1/generate', huge)))
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            self.assertEqual(out['bad'][0], 400)
            self.assertIn('NaN or infinite pixels', json.loads(out['bad'][2])['error'])
            for s in range(6):
                self.assertEqual((out[s][0], out[s][2] == want[s]), (200, True), f'seed {s}')

    def test_queue_bound(self):
        with Server(SG2, '--max-queue', '2', '--batch-window-ms', '600') as srv:
            out = []
            lock = threading.Lock()

            def go(s):
                r = srv.get(f'/v1/generate?seed={s}&class=4')
                with lock:
                    out.append(r)

            threads = [threading.Thread(target=go, args=(s,)) for s in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            codes = sorted(s for s, _, _ in out)
            self.assertEqual(codes.count(200), 2, codes)
            self.assertEqual(codes.count(503), 10, codes)
            for s, h, b in out:
                if s == 503:
                    self.assertEqual(h.get('retry-after'), '1')
                    self.assertIn('queue is full', json.loads(b)['error'])
            self.assertEqual(srv.get('/v1/generate?seed=1&class=4')[0], 200)

    def test_request_timeout(self):
        with Server(SG2, '--request-timeout-s', '0.3', '--batch-window-ms', '2000') as srv:
            t0 = time.monotonic()
            s, h, b = srv.get('/v1/generate?seed=1&class=4')
            self.assertEqual(s, 503)
            self.assertIn('no answer within --request-timeout-s', json.loads(b)['error'])
            self.assertLess(time.monotonic() - t0, 1.5)
            self.assertEqual(srv.get('/healthz')[0], 200)

    def test_sigterm_finishes_requests_in_flight(self):
        srv = Server(SG2, '--batch-window-ms', '700')
        try:
            out = []

            def go(s):
                out.append(srv.get(f'/v1/generate?seed={s}&class=5'))

            threads = [threading.Thread(target=go, args=(s,)) for s in range(4)]
            for t in threads:
                t.start()
            time.sleep(0.25)  # the requests wait in the batch window
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.15)
            with self.assertRaises(OSError):  # no new connections
                srv.get('/healthz', timeout=2)
            for t in threads:
                t.join(timeout=30)
            self.assertEqual(sorted(s for s, _, _ in out), [200] * 4)
            self.assertEqual(srv.proc.wait(timeout=20), 0)
            self.assertIn('SIGTERM: no new connections; finishing 4 requests in flight', srv.stderr())
        finally:
            srv.__exit__(None, None, None)

    def test_sigint_idle_exits_0_and_quiet(self):
        srv = Server(SG2, '-q')
        try:
            self.assertEqual(srv.get('/v1/generate?seed=1&class=1')[0], 200)
            srv.proc.send_signal(signal.SIGINT)
            self.assertEqual(srv.proc.wait(timeout=20), 0)
            self.assertNotIn('"GET /v1/generate', srv.stderr())  # -q: no access log
        finally:
            srv.__exit__(None, None, None)

    def test_bad_options(self):
        for args, needle in ((['--port', '70000'], '--port'), (['--host', 'localhost:x'], 'not an IP address'),
                             (['--max-batch', '0'], '--max-batch'), (['--batch-window-ms', '-1'], '--batch-window-ms'),
                             (['--precision', 'fp16'], 'needs the CUDA backend')):
            r = subprocess.run([SG2, 'serve', '--device', 'cpu', *args], capture_output=True, timeout=60)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(needle, r.stderr.decode())


class Stress(unittest.TestCase):
    def test_bounded_stress(self):
        with Server(SG2, '-q') as srv:
            tool = os.path.join(ROOT, 'tools', 'serve_load.py')
            with tempfile.NamedTemporaryFile(suffix='.json') as j:
                r = subprocess.run([sys.executable, tool, f'http://127.0.0.1:{srv.port}', '--query', 'class=3&format=jpeg',
                                    '--connections', '16', '--duration', '3', '--warmup', '0.5', '--processes', '2',
                                    '--server-pid', str(srv.proc.pid), '--json', j.name],
                                   capture_output=True, timeout=90)
                self.assertEqual(r.returncode, 0, r.stderr.decode())
                with open(j.name) as f:
                    fig = json.load(f)
            print('\n  ' + r.stdout.decode().strip(), file=sys.stderr)
            self.assertGreater(fig['ok'], 0)
            self.assertEqual(fig['ok'], fig['requests'], fig['statuses'])
            self.assertGreater(fig['mean_batch'], 1.0)
            self.assertEqual(srv.get('/healthz')[0], 200)
            self.assertEqual(srv.terminate(), 0)


class NonSquare(unittest.TestCase):
    """A non-square network (StyleGAN-Human's layout, 32 high, 16 wide): /v1/model gives width and height,
    and /v1/generate answers the CLI's PNG bytes."""

    def test_model_and_png(self):
        net = os.path.join(ROOT, 'tests', 'data', 'nonsquare', 'human_skip32x16', 'network-snapshot.pkl')
        with tempfile.TemporaryDirectory(prefix='sg2_serve_ns_') as d, Server(SG2, '--network', net) as srv:
            s, h, b = srv.get('/v1/model')
            self.assertEqual(s, 200, b)
            m = json.loads(b)
            self.assertEqual((m['resolution'], m['width'], m['height']), (32, 16, 32))
            s, h, png = srv.get('/v1/generate?seed=7')
            self.assertEqual(s, 200, png[:300])
            run_cli(SG2, 'generate', '--network', net, '--seeds', '7', '--device', 'cpu', '--outdir', d, '-q')
            self.assertEqual(png, read(os.path.join(d, 'seed0007.png')))


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit('usage: test_serve.py PATH/TO/sg2 [unittest arguments]')
    SG2 = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
