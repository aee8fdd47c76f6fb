"""Helpers of the sg2 serve tests (standard library only): a server process on the loopback that is
always stopped, HTTP requests with timeouts, .npy files written by hand (no numpy on CI)."""
import http.client
import os
import re
import signal
import struct
import subprocess
import tempfile
import time


class Server:
    """`sg2 serve --port 0 --device DEVICE ...` on 127.0.0.1 (DEVICE: cpu unless given); the listening line
    gives the port. Use as a context manager: the process is stopped (SIGTERM, then SIGKILL after 20 s)
    however the block ends."""

    def __init__(self, sg2, *args, env=None, start_timeout=60, device='cpu'):
        self.log = tempfile.NamedTemporaryFile(prefix='sg2_serve_', suffix='.log', delete=False)
        self.log.close()  # the server appends to it; read back by name
        log = open(self.log.name, 'wb')
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([sg2, 'serve', '--port', '0', '--device', device, *args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=log, env=e)
        log.close()
        self.port = None
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            m = re.search(r'sg2 serve: listening on http://127\.0\.0\.1:(\d+)', self.stderr())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if self.port is None:
            self.kill()
            raise RuntimeError('sg2 serve did not start: ' + self.stderr()[-2000:])

    def stderr(self):
        with open(self.log.name, errors='replace') as f:
            return f.read()

    def request(self, method, path, body=None, headers=None, timeout=30):
        """(status, headers dict with lower-case names, body bytes)."""
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def post(self, path, body, **kw):
        return self.request('POST', path, body=body, headers={'Content-Type': 'application/octet-stream'}, **kw)

    def terminate(self, timeout=20):
        """SIGTERM, then the exit status (SIGKILL and None when it does not end within timeout)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.terminate()
        if os.path.exists(self.log.name):
            os.unlink(self.log.name)


def npy_bytes(shape, values, dtype='<f4'):
    """A version 1.0 .npy file of `values` (C order) with `shape`."""
    dims = ', '.join(str(s) for s in shape) + (',' if len(shape) == 1 else '')
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (dtype, dims)
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    fmt = {'<f4': 'f', '<f8': 'd', '<i4': 'i', '<f2': 'e'}[dtype]
    return (b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode() +
            struct.pack('<%d%s' % (len(values), fmt), *values))


def run_cli(sg2, *args, timeout=120):
    """Runs `sg2 ARGS` (CPU), raising with its stderr when it fails."""
    r = subprocess.run([sg2, *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f'sg2 {" ".join(args)} failed ({r.returncode}): {r.stderr.decode(errors="replace")}')
    return r
