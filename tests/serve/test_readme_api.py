#!/usr/bin/env python3
"""The README's sg2 serve examples, run as written (ctest Serve.Readme).

    python3 tests/serve/test_readme_api.py build/sg2

The first fenced block after README.md's heading `### serve:` is read line by line: `$ build/sg2 serve ...`
starts a server (here on a free port, on the CPU, with the bundled model, as the README's line has it); any
other `$ build/sg2 ...` line runs with this sg2; every `$ curl ...` line runs with the real curl binary, its
`http://127.0.0.1:8080` replaced by the test server's address, in a scratch folder holding `out/` (the tour's
folder). Each curl must exit 0 with HTTP 200 and a plausible body for its path: a 32x32 PNG or a JPEG from
/v1/generate, JSON of the model from /v1/model, {"status":"ok"} from /healthz, Prometheus text from /metrics.
A served PNG must also be the CLI's file for the same options (sg2 generate, sg2 mix, generate --ws), as the
README says. The block must keep an example of each route the API has; any other line fails the test, so a
broken or new example cannot go untested.
"""
import json
import os
import shlex
import struct
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import Server, run_cli  # noqa: E402

SG2 = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
README = os.path.join(ROOT, 'README.md')
HEADING = '### serve:'
README_URL = 'http://127.0.0.1:8080'


def readme_block():
    """The command lines ('$ ' stripped) of the first fenced block after HEADING, with their line numbers."""
    with open(README, encoding='utf-8') as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith(HEADING)), None)
    if start is None:
        raise AssertionError(f'README.md has no heading starting with {HEADING!r}')
    fence = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('```')), None)
    if fence is None or any(lines[i].startswith('#') for i in range(start + 1, fence)):
        raise AssertionError(f'README.md: no fenced block in the section {HEADING!r}')
    out = []
    for i in range(fence + 1, len(lines)):
        if lines[i].startswith('```'):
            return out
        if lines[i].strip():
            out.append((i + 1, lines[i]))
    raise AssertionError('README.md: the serve block is not closed')


def png_size(data):
    if not data.startswith(b'\x89PNG\r\n\x1a\n') or data[12:16] != b'IHDR':
        return None
    return struct.unpack('>II', data[16:24])


def read(path):
    with open(path, 'rb') as f:
        return f.read()


class ReadmeServeExamples(unittest.TestCase):

    def test_every_line_runs(self):
        block = readme_block()
        routes = set()
        curls = 0
        with tempfile.TemporaryDirectory(prefix='sg2_readme_serve_') as cwd:
            os.mkdir(os.path.join(cwd, 'out'))  # the tour's folder, made by its first command
            srv = None
            try:
                for lineno, line in block:
                    where = f'README.md:{lineno}: {line.strip()}'
                    self.assertTrue(line.startswith('$ '), f'{where}: not a "$ " command line; a new kind of '
                                                           'line needs this test to learn it')
                    argv = shlex.split(line[2:], comments=True)
                    if argv[:2] == ['build/sg2', 'serve']:
                        self.assertIsNone(srv, f'{where}: a second server')
                        self.assertEqual(argv[-1], '&', f'{where}: the server goes to the background')
                        srv = Server(SG2, *argv[2:-1])
                        routes.add('serve')
                    elif argv[0] == 'build/sg2':
                        r = subprocess.run([SG2, *argv[1:]], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                                           timeout=120)
                        self.assertEqual(r.returncode, 0, f'{where}: {r.stderr.decode(errors="replace")}')
                    elif argv[0] == 'curl':
                        self.assertIsNotNone(srv, f'{where}: curl before the server line')
                        routes.add(self.curl(where, argv, srv, cwd))
                        curls += 1
                    else:
                        self.fail(f'{where}: neither build/sg2 nor curl; teach this test the new line')
            finally:
                if srv is not None:
                    srv.__exit__(None, None, None)
        want = {'serve', 'GET /v1/generate png', 'GET /v1/generate png trunc noise', 'GET /v1/generate jpeg',
                'GET /v1/generate mix', 'POST /v1/generate', 'GET /v1/model', 'GET /healthz', 'GET /metrics'}
        self.assertEqual(want - routes, set(), 'the README shows no curl example of these')
        print(f'\n  README.md: {curls} curl examples ran, each 200 with a plausible body', file=sys.stderr)

    def curl(self, where, argv, srv, cwd):
        """Runs one curl line against srv; returns which route (and options) it showed."""
        urls = [a for a in argv if a.startswith(README_URL + '/')]
        self.assertEqual(len(urls), 1, f'{where}: one URL on {README_URL} (the default of sg2 serve)')
        url = urllib.parse.urlsplit(urls[0])
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        live = [a.replace(README_URL, f'http://127.0.0.1:{srv.port}') for a in argv]
        post = any(a.startswith('--data') or a in ('-d', '-F') for a in argv)
        out = argv[argv.index('-o') + 1] if '-o' in argv else None
        h = os.path.join(cwd, 'headers.txt')
        if os.path.exists(h):
            os.unlink(h)
        env = dict(os.environ, no_proxy='127.0.0.1', NO_PROXY='127.0.0.1')  # a proxy setting never takes the loopback
        r = subprocess.run(['curl', '-sS', '--max-time', '30', '-D', h, *live[1:]], cwd=cwd, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60, env=env)
        headers = read(h).decode(errors='replace') if os.path.exists(h) else ''
        self.assertEqual(r.returncode, 0, f'{where}: curl exit {r.returncode}: {r.stderr.decode(errors="replace")}')
        statuses = [l.split()[1] for l in headers.splitlines() if l.startswith('HTTP/')]
        body = read(os.path.join(cwd, out)) if out else r.stdout
        self.assertTrue(statuses and statuses[-1] == '200', f'{where}: HTTP {statuses}: {body[:300]!r}')
        path = url.path
        if path == '/v1/generate':
            if query.get('format') == 'jpeg':
                self.assertTrue(body.startswith(b'\xff\xd8\xff') and body.endswith(b'\xff\xd9'), f'{where}: not a JPEG')
                return 'GET /v1/generate jpeg'
            self.assertEqual(png_size(body), (32, 32), f'{where}: not a 32x32 PNG: {body[:40]!r}')
            self.assertEqual(body, self.cli_png(where, argv, query, post, cwd),
                             f'{where}: not the CLI\'s file for the same options')
            if post:
                return 'POST /v1/generate'
            if 'row-seed' in query:
                return 'GET /v1/generate mix'
            return 'GET /v1/generate png' + (' trunc noise' if 'trunc' in query and 'noise-mode' in query else '')
        if path == '/v1/model':
            m = json.loads(body)
            self.assertEqual((m['resolution'], m['c_dim'], m['num_ws'], m['channels']), (32, 10, 8, 3), where)
        elif path == '/healthz':
            self.assertEqual(json.loads(body), {'status': 'ok'}, where)
        elif path == '/metrics':
            text = body.decode()
            self.assertIn('# TYPE sg2_http_requests_total counter', text, where)
            self.assertIn('sg2_http_requests_total{code="200"}', text, where)
            for l in text.splitlines():
                if l and not l.startswith('#'):
                    float(l.rsplit(' ', 1)[1])
        elif path == '/v1/ws':
            self.assertTrue(body.startswith(b'\x93NUMPY'), f'{where}: not a .npy')
        else:
            self.fail(f'{where}: a path this test does not know; teach it the route')
        return f'GET {path}'

    def cli_png(self, where, argv, query, post, cwd):
        """The PNG the CLI writes for the same request (sg2 generate, sg2 mix, sg2 generate --ws)."""
        d = tempfile.mkdtemp(prefix='cli_', dir=cwd)
        opts = []
        for k in ('class', 'trunc', 'trunc-cutoff', 'noise-mode', 'noise-seed', 'png-level', 'ws-as', 'styles'):
            if k in query:
                opts += ['--' + k, query[k]]
        if post:
            data = next(a for a in argv if a.startswith('--data'))
            f = argv[argv.index(data) + 1]
            self.assertTrue(f.startswith('@'), f'{where}: the POST body is a file, @FILE')
            run_cli(SG2, 'generate', '--ws', os.path.join(cwd, f[1:]), *opts, '--device', 'cpu', '--outdir', d, '-q')
            return read(os.path.join(d, 'ws0000.png'))
        if 'row-seed' in query:
            r, c = query['row-seed'], query['col-seed']
            run_cli(SG2, 'mix', '--rows', r, '--cols', c, *opts, '--device', 'cpu', '--outdir', d, '-q')
            return read(os.path.join(d, f'{r}-{c}.png'))
        s = int(query['seed'])
        run_cli(SG2, 'generate', '--seeds', str(s), *opts, '--device', 'cpu', '--outdir', d, '-q')
        return read(os.path.join(d, f'seed{s:04d}.png'))


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit('usage: test_readme_api.py PATH/TO/sg2 [unittest arguments]')
    SG2 = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
